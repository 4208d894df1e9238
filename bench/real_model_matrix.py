"""Every script on every env with the real chat model, on both samplers: two RL steps, the second after a resume.

    python policy.py --get-smollm2 models/smollm2-135m-instruct    # once
    python bench/real_model_matrix.py                              # writes bench/results/real_model_matrix.md

Each of the 32 cells (4 scripts x 4 envs x 2 samplers) runs `SCRIPT --env ENV --model smollm2 --prompt-profile chat
--backend B` with small shapes (COMMON, ALGORITHM below) for one step and stops there (`--stop-at-step 1`, a
checkpoint), then `SCRIPT --resume RUN` does the second step. BranchOPD's teacher is the same model after
`--teacher-sft-steps` steps of chat SFT on 20 episodes of mistake-free demonstrations (built once per env, cached
under cache/). `--max-turns 2` caps every episode at 2 decisions: the model as shipped rarely acts validly, and an
episode that never ends would take the env's whole step limit; 24-token replies and one task per step keep a cell
near a minute. The valid-reply rate counts replies the chat parser read (an `<action>...</action>`; math keeps its
`\\boxed{N}` protocol, so every math reply is read and the env's invalid-action rate says which had no answer).
The table: both exit codes, the seconds of each step (metrics.csv's step_seconds; step 2 includes nothing of
the restart), the valid-reply rate (replies with an `<action>...</action>` the parser read, over both steps'
decisions), the env's invalid-action rate and the whole cell's wall-clock. A cell that fails keeps its stderr's
tail in the table's notes. The seconds are wall-clock of whatever else the machine did: the results file says how it
was run; bench/real_model_steps.py is the idle-machine timing.
"""

from __future__ import annotations

import argparse
import csv
import glob
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

COMMON = ["--model", "smollm2", "--prompt-profile", "chat", "--tasks-per-step", "1", "--max-new-tokens", "24",
          "--max-turns", "2", "--eval-tasks", "1", "--eval-samples", "1", "--eval-every", "0", "--tree-log-every", "1",
          "--total-steps", "2", "--warmup-steps", "0", "--learning-rate", "1e-5"]
ALGORITHM = {"grpo_baseline.py": ["--num-generations", "2"],
             "bpo.py": ["--num-branch-points", "1", "--branch-factor", "2"],
             "treepo.py": ["--num-generations", "2", "--segment-length", "16", "--max-depth", "3"],
             "branchopd.py": ["--num-forks", "1", "--continuations", "1", "--teacher", "smollm2"]}
ENVS = ("math", "webshop", "alfworld", "swe")


def cell_flags(script: str, env: str, backend: str, teacher_sft_steps: int) -> list[str]:
    algorithm = ALGORITHM[script]
    if script == "treepo.py" and env != "math":  # an agent env's segment is one turn: no token segments
        algorithm = ["--num-generations", "2", "--max-depth", "3"]
    flags = ["--env", env, *COMMON, *algorithm, "--backend", backend]
    if script == "branchopd.py":  # a teacher from 20 demonstration episodes (swe's are slow to play)
        flags += ["--teacher-sft-steps", str(teacher_sft_steps), "--sft-episodes", "20"]
    return flags


def cell(script: str, env: str, backend: str, runs_dir: str, teacher_sft_steps: int) -> dict:
    flags = cell_flags(script, env, backend, teacher_sft_steps)
    command = f"python {script} {' '.join(flags)}"
    flags += ["--runs-dir", runs_dir]
    start = time.time()
    first = subprocess.run([sys.executable, script, *flags, "--stop-at-step", "1"], cwd=ROOT, capture_output=True,
                           text=True)
    found = glob.glob(os.path.join(runs_dir, f"{env}__*"))
    result = {"command": command, "codes": [first.returncode], "notes": ""}
    if first.returncode != 0 or len(found) != 1:
        result.update(notes=first.stderr.strip().splitlines()[-1:] or ["no run folder"], wall=time.time() - start)
        return result
    second = subprocess.run([sys.executable, script, "--resume", found[0]], cwd=ROOT, capture_output=True, text=True)
    result["codes"].append(second.returncode)
    if second.returncode != 0:
        result["notes"] = second.stderr.strip().splitlines()[-1:]
    with open(os.path.join(found[0], "metrics.csv")) as f:
        steps = [row for row in csv.DictReader(f) if row.get("decisions")]
    decisions = [int(float(r["decisions"])) for r in steps]
    result.update(
        steps=[int(r["step"]) for r in steps], seconds=[float(r["step_seconds"]) for r in steps],
        valid=1 - sum(float(r["malformed_reply_rate"]) * d for r, d in zip(steps, decisions)) / max(1, sum(decisions)),
        invalid=sum(float(r["invalid_action_rate"]) * d for r, d in zip(steps, decisions)) / max(1, sum(decisions)),
        decisions=sum(decisions), wall=time.time() - start)
    return result


def main() -> None:
    from policy import SMOLLM2_DIR, cpu_model
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scripts", nargs="+", default=list(ALGORITHM), choices=list(ALGORITHM))
    parser.add_argument("--envs", nargs="+", default=list(ENVS), choices=list(ENVS))
    parser.add_argument("--backends", nargs="+", default=["hf", "vllm"], choices=["hf", "vllm"])
    parser.add_argument("--teacher-sft-steps", type=int, default=10, help="BranchOPD's teacher: chat SFT steps")
    parser.add_argument("--how", default="nothing else running", help="what else the machine did (for the file)")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "real_model_matrix.md"))
    cli = parser.parse_args()
    if not os.path.exists(os.path.join(SMOLLM2_DIR, "source.json")):
        raise SystemExit("python policy.py --get-smollm2 models/smollm2-135m-instruct first")
    lines = [f"# Every script x env x sampler with SmolLM2-135M-Instruct: 2 steps, the second after a resume\n",
             f"`python bench/real_model_matrix.py` on {cpu_model()} ({os.cpu_count()} CPUs; {cli.how}). Common flags: "
             f"`{' '.join(COMMON)}`; BranchOPD's teacher: `--teacher smollm2 --teacher-sft-steps "
             f"{cli.teacher_sft_steps} --sft-episodes 20`. Exit codes: the first run (`--stop-at-step 1`), then "
             f"`--resume RUN`.\n",
             "| script | env | sampler | exit codes | s/step (1, 2) | valid replies | invalid actions | decisions | "
             "cell s | command / notes |", "|---|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    kept, after = {}, []  # rows of --out whose command this matrix would run (not run again); the text after them
    if os.path.exists(cli.out):
        with open(cli.out) as f:
            text = f.read().rstrip("\n").split("\n")
        table = [i for i, row in enumerate(text) if row.startswith("| ")]
        kept = {row.split("`")[1]: row for row in text if row.startswith("| ") and "`python " in row}
        after = text[table[-1] + 1:] if table else []
    with tempfile.TemporaryDirectory() as runs_root:
        for env in ENVS:  # the cells asked for run; the others keep their rows
            for script in ALGORITHM:
                for backend in ("hf", "vllm"):
                    runs_dir = os.path.join(runs_root, f"{script}-{env}-{backend}")
                    command = f"python {script} {' '.join(cell_flags(script, env, backend, cli.teacher_sft_steps))}"
                    if command in kept:
                        lines.append(kept[command])
                        print(lines[-1], flush=True)
                        continue
                    if env not in cli.envs or script not in cli.scripts or backend not in cli.backends:
                        continue
                    r = cell(script, env, backend, runs_dir, cli.teacher_sft_steps)
                    seconds = " ".join(f"{s:.1f}" for s in r.get("seconds", [])) or "-"
                    valid = f"{r['valid']:.3f}" if "valid" in r else "-"
                    invalid = f"{r['invalid']:.3f}" if "invalid" in r else "-"
                    notes = " ".join(r["notes"]).replace("|", "/")[:300]
                    line = (f"| {script} | {env} | {backend} | {' '.join(map(str, r['codes']))} | {seconds} | {valid} "
                            f"| {invalid} | {r.get('decisions', '-')} | {r['wall']:.0f} | `{r['command']}` {notes} |")
                    lines.append(line)
                    print(line, flush=True)
                    with open(cli.out, "w") as f:  # rewritten after every cell: an interrupted matrix keeps its rows
                        f.write("\n".join(lines + after) + "\n")


if __name__ == "__main__":
    main()
