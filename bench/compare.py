"""Every algorithm from the same cached warm start, at matched returns per task and matched sampled tokens.

Runs GRPO and RLOO (`grpo_baseline.py --num-generations N`), BPO (`bpo.py`, N = 1 + M(K-1) = 7 by default),
TreePO (`treepo.py --num-generations N`) and BranchOPD (`branchopd.py`, N = 1 + B k = 7 by default; a
distillation method with its own teacher, marked as such) for each seed, then writes
`OUT_DIR/compare_ENV.md` and `compare_ENV.png` (`compare_ENV_ALGO_ALGO.md` for a subset of `--algorithms`).

Matched sampled tokens: a short calibration run of each algorithm from the warm start (`--calibration-steps`,
seed 1) measures its sampled tokens per step (what its sampler decoded, `summarize_runs.sampled_tokens`: for
TreePO every tree dynamic sampling grew, dropped ones included, each shared prefix once); GRPO runs the
script's default step count S (or `--total-steps`), every other algorithm S * (GRPO's tokens per step / its
own), and evaluates at the same fractions of its run. The table states the tokens each one actually sampled,
so the match can be checked.

The tables: each algorithm's steps, sampled tokens, training seconds, its training rollouts' success (mean over
steps) and, for BPO, the share of rollout time its sandbox snapshots and restores took; then final held-out success and reward, sampled and greedy (mean +- std over seeds), each against GRPO
with the standard error of the difference (evaluation error and seed spread, as bench/summarize_runs.py;
"better" / "worse" only beyond twice it), and the step, sampled tokens and training wall-clock at which the
mean curve first reaches GRPO's final value of `--reach-metric`, or "not reached". The PNG has three panels
per decoding: success against steps, against sampled tokens and against training wall-clock (rollouts and
updates, evaluations excluded), one curve per algorithm with a band of one std over seeds.

Resumable: each run's log and run directory are recorded in RUNS_DIR/compare_ENV_runs.json; a finished run is
not run again, and an interrupted one continues from its checkpoint (`--resume`).

    python bench/compare.py --env webshop --seeds 1 2 3
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from summarize_runs import difference_se, eval_curve, read_rows, sampled_tokens, split_prefixes, verdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# algorithm -> (label, script, flags); `{n}` is the matched number of returns per task
ALGORITHMS = {
    "grpo": ("GRPO", "grpo_baseline.py", ["--num-generations", "{n}"]),
    "rloo": ("RLOO", "grpo_baseline.py", ["--num-generations", "{n}", "--advantage", "rloo"]),
    "bpo": ("BPO (M=2, K=4)", "bpo.py", []),
    "treepo": ("TreePO", "treepo.py", ["--num-generations", "{n}"]),
    "branchopd": ("BranchOPD (distillation: teacher signal, no reward)", "branchopd.py", []),
}
METRICS = ("success_sampled", "success_greedy", "reward_sampled", "reward_greedy")


def script_defaults(script: str, env: str) -> dict:
    """The script's per-env defaults (total_steps, eval_every, ...), read from its ENV_DEFAULTS and Args."""
    sys.path.insert(0, ROOT)
    module = __import__(script[:-3])
    return {"total_steps": module.ENV_DEFAULTS[env]["total_steps"], "eval_every": module.Args.eval_every}


STATE_LOCK = threading.Lock()  # jobs run in threads: one writer of the state file at a time


def run(job: dict, state: dict, state_path: str) -> str:
    """Run one job to its end (or continue it); returns its run directory."""
    key, log_path = job["key"], job["log"]
    with STATE_LOCK:
        entry = state.setdefault(key, {})
    if entry.get("done") and os.path.exists(os.path.join(ROOT, entry["run_dir"], "metrics.csv")):
        return entry["run_dir"]
    if entry.get("done"):  # its run directory is gone (another machine, a cleaned runs/): run it again
        with STATE_LOCK:
            entry.clear()
    command = [sys.executable, *job["command"]]
    if entry.get("run_dir") and os.path.exists(os.path.join(ROOT, entry["run_dir"], "config.json")):
        command = [sys.executable, job["command"][0], "--resume", entry["run_dir"]]  # interrupted: continue
    offset = os.path.getsize(log_path) if os.path.exists(log_path) else 0
    with open(log_path, "a") as log:
        process = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                   env={**os.environ, "OMP_NUM_THREADS": "1"})
        while True:  # record the run directory as soon as the run prints it, so a killed comparison resumes it
            returncode = process.poll()
            text = read_log_since(log_path, offset)
            found = re.findall(r"run dir (\S+)", text)
            if found and not entry.get("run_dir"):
                save_state(state, state_path, entry, run_dir=found[0].rstrip(","))
            if returncode is not None:
                break
            time.sleep(2.0)
    if returncode != 0 or not re.search(r"^done: ", text, re.M):
        tail = "\n".join(text.splitlines()[-30:])
        raise SystemExit(f"{tail}\n{key} failed (exit {returncode}); the lines above end {log_path}. Run "
                         f"bench/compare.py again to continue it from its checkpoint.")
    save_state(state, state_path, entry, done=True)
    return entry["run_dir"]


def read_log_since(log_path: str, offset: int) -> str:
    """Only this invocation's output: a log never speaks for another run."""
    with open(log_path, "rb") as log:
        return log.read()[offset:].decode(errors="replace")


def save_state(state: dict, path: str, entry: dict, **fields) -> None:
    """Set `fields` of a job's `entry` in `state` and write the state file atomically, one thread at a time: two
    jobs started together print their run directories together, and once raced on one temporary file (the
    second `os.replace` found it gone) and on the dict being dumped while the other job changed it."""
    with STATE_LOCK:
        entry.update(fields)
        with open(path + ".tmp", "w") as f:
            json.dump(state, f, indent=1, sort_keys=True)
        os.replace(path + ".tmp", path)


def tokens_per_step(run_dir: str) -> float:
    rows = [r for r in read_rows(os.path.join(ROOT, run_dir)) if r.get("decision_tokens")]
    return float(np.mean([sampled_tokens(r) for r in rows]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="webshop", choices=["webshop", "math", "alfworld", "swe"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS), choices=list(ALGORITHMS))
    parser.add_argument("--num-generations", type=int, default=7, help="returns per task N (BPO: 1 + M(K-1) = 7)")
    parser.add_argument("--total-steps", type=int, default=None, help="GRPO's steps (default: the script's)")
    parser.add_argument("--eval-every", type=int, default=None, help="GRPO's evaluation interval (default: the "
                                                                       "script's); the others at the same fractions")
    parser.add_argument("--eval-tasks", type=int, default=None, help="held-out tasks per split (default: the script's)")
    parser.add_argument("--calibration-steps", type=int, default=3, help="steps of each calibration run")
    parser.add_argument("--reach-metric", default="success_greedy", choices=METRICS)
    parser.add_argument("--parallel", type=int, default=2, help="runs at a time (each with one torch thread)")
    parser.add_argument("--runs-dir", default="runs/compare")
    parser.add_argument("--out-dir", default="bench/results")
    parser.add_argument("script_args", nargs=argparse.REMAINDER,
                        help="after `--`: flags passed to every run (e.g. -- --cache-dir DIR --tasks-per-step 4)")
    cli = parser.parse_args()
    cli.script_args = cli.script_args[1:] if cli.script_args[:1] == ["--"] else cli.script_args
    if "grpo" not in cli.algorithms:
        parser.error("--algorithms must include grpo: the others are matched to it")
    out_dir, runs_dir = os.path.join(ROOT, cli.out_dir), os.path.join(ROOT, cli.runs_dir)
    os.makedirs(out_dir, exist_ok=True)
    os.makedirs(os.path.join(runs_dir, "logs"), exist_ok=True)
    state_path = os.path.join(runs_dir, f"compare_{cli.env}_runs.json")  # beside the runs it names
    state = json.load(open(state_path)) if os.path.exists(state_path) else {}
    defaults = script_defaults("grpo_baseline.py", cli.env)
    grpo_steps = cli.total_steps or defaults["total_steps"]
    grpo_eval_every = cli.eval_every if cli.eval_every is not None else defaults["eval_every"]
    common = ["--env", cli.env, "--runs-dir", os.path.relpath(runs_dir, ROOT)] + (
        ["--eval-tasks", str(cli.eval_tasks)] if cli.eval_tasks else [])

    def command(name: str, seed: int, exp_name: str, extra: list[str]) -> list[str]:
        _, script, flags = ALGORITHMS[name]
        return [script, *common, "--seed", str(seed), "--exp-name", exp_name,
                *[f.format(n=cli.num_generations) for f in flags], *extra, *cli.script_args]

    def pool_run(jobs: list[dict], first_alone: bool) -> dict[str, str]:
        # the calibrations: the warm start is built by the first job alone, before the others start
        first, rest = (jobs[:1], jobs[1:]) if first_alone else ([], jobs)
        done = {job["key"]: run(job, state, state_path) for job in first}
        with ThreadPoolExecutor(cli.parallel) as pool:
            futures = {job["key"]: pool.submit(run, job, state, state_path) for job in rest}
        done.update({key: future.result() for key, future in futures.items()})
        return done

    # 1. calibration: sampled tokens per step of each algorithm, from the warm start
    calibration_jobs = []
    for name in cli.algorithms:
        log = os.path.join(runs_dir, "logs", f"{cli.env}_calibrate_{name}.log")
        calibration_jobs.append({"key": f"calibrate_{name}", "log": log,
                                 "command": command(name, 1, f"calibrate_{name}", [
                                     "--total-steps", str(cli.calibration_steps), "--eval-every", "0",
                                     "--eval-tasks", "1"])})
    calibration = pool_run(calibration_jobs, first_alone=True)
    per_step = {name: tokens_per_step(calibration[f"calibrate_{name}"]) for name in cli.algorithms}
    steps = {name: max(1, round(grpo_steps * per_step["grpo"] / per_step[name])) for name in cli.algorithms}
    eval_every = {name: max(1, round(grpo_eval_every * steps[name] / grpo_steps)) if grpo_eval_every else 0
                  for name in cli.algorithms}

    # 2. the runs, GRPO's first
    jobs = []
    for name in cli.algorithms:
        for seed in cli.seeds:
            jobs.append({"key": f"{name}_{seed}", "log": os.path.join(runs_dir, "logs", f"{cli.env}_{name}_{seed}.log"),
                         "command": command(name, seed, f"compare_{name}", ["--total-steps", str(steps[name]),
                                                                            "--eval-every", str(eval_every[name])])})
    run_dirs = pool_run(jobs, first_alone=False)  # the calibrations built everything

    # 3. table and figure
    prefixes = split_prefixes(read_rows(os.path.join(ROOT, run_dirs[f"grpo_{cli.seeds[0]}"])))
    curves = {(name, key): [eval_curve(read_rows(os.path.join(ROOT, run_dirs[f"{name}_{seed}"])), key)
                             for seed in cli.seeds]
              for name in cli.algorithms for key in [f"{p}_{m}" for p in prefixes for m in METRICS]}
    fmt = lambda v: f"{np.mean(v):.3f} +- {np.std(v):.3f}"
    invocation = " ".join(["python bench/compare.py --env", cli.env, "--seeds", *map(str, cli.seeds)] +
                          (["--algorithms", *cli.algorithms] if cli.algorithms != list(ALGORITHMS) else []) +
                          [f"--{k.replace('_', '-')} {v}" for k, v in (
                              ("total_steps", cli.total_steps), ("eval_every", cli.eval_every),
                              ("eval_tasks", cli.eval_tasks), ("calibration_steps", cli.calibration_steps
                                                               if cli.calibration_steps != 3 else None)) if v]
                          + (["--", *cli.script_args] if cli.script_args else []))
    lines = [f"# All algorithms on {cli.env}, matched returns per task (N = {cli.num_generations}) and sampled tokens",
             "", f"`{invocation}` (each run with OMP_NUM_THREADS=1, {cli.parallel} at a time). {len(cli.seeds)} "
             f"seed(s); mean +- std over seeds; differences against GRPO at the end +- their standard error "
             f"(evaluation error and seed spread).", "",
             "| algorithm | steps | sampled tokens per run | training seconds per run | training rollouts won "
             "(mean over steps) | snapshots and restores, % of rollout time (mean; per-step range) |",
             "|---|---|---|---|---|---|"]
    for name in cli.algorithms:
        c = curves[(name, f"eval_{METRICS[0]}")]
        tokens, seconds = [x["tokens"][-1] for x in c], [x["seconds"][-1] for x in c]
        rows = [read_rows(os.path.join(ROOT, run_dirs[f"{name}_{seed}"])) for seed in cli.seeds]
        won = [np.mean([float(r["train_success"]) for r in run_rows if r.get("train_success")]) for run_rows in rows]
        snapshot = [float(r["snapshot_percent"]) for run_rows in rows for r in run_rows if r.get("snapshot_percent")]
        snapshot_cell = (f"{np.mean(snapshot):.1f}; {min(snapshot):.1f}-{max(snapshot):.1f}" if snapshot
                         else "no snapshots")  # BPO's column: the other scripts never restore a sandbox
        lines.append(f"| {ALGORITHMS[name][0]} | {steps[name]} | {np.mean(tokens):.0f} +- {np.std(tokens):.0f} | "
                     f"{np.mean(seconds):.0f} +- {np.std(seconds):.0f} | {fmt(won)} | {snapshot_cell} |")
    with open(os.path.join(ROOT, run_dirs[f"grpo_{cli.seeds[0]}"], "config.json")) as f:
        splits = json.load(f)["eval_splits"]
    sys.path.insert(0, ROOT)
    from grpo_baseline import split_prefix  # the column prefix each script logs a split under

    split_of = {split_prefix(split, i == 0): split for i, split in enumerate(splits)}
    for prefix in prefixes:
        split = split_of.get(prefix, prefix)
        lines += ["", f"## held-out split `{split}` (columns `{prefix}_*`)", "",
                  "| algorithm | " + " | ".join(METRICS) + f" | reaches GRPO's final {cli.reach_metric} at "
                  "(step / tokens / seconds) |", "|---|" + "---|" * (len(METRICS) + 1)]
        start = [fmt(np.array([c["value"][0] for c in curves[("grpo", f"{prefix}_{metric}")]])) for metric in METRICS]
        lines.append("| SFT start (step 0, GRPO's runs) | " + " | ".join(start) + " | |")
        for name in cli.algorithms:
            cells = []
            for metric in METRICS:
                mine, grpo = curves[(name, f"{prefix}_{metric}")], curves[("grpo", f"{prefix}_{metric}")]
                final = np.array([c["value"][-1] for c in mine])
                cell = f"{fmt(final)}"
                gain = final - np.array([c["value"][0] for c in mine])  # against the start, with its SE
                se = difference_se([c["se"][0] for c in mine], [c["se"][-1] for c in mine], gain)
                cell += f" ({gain.mean():+.3f} +- {se:.3f} over the start, {verdict(gain.mean(), se)}"
                if name == "grpo":
                    cell += ")"
                else:
                    difference = final - np.array([c["value"][-1] for c in grpo])
                    se = difference_se([c["se"][-1] for c in grpo], [c["se"][-1] for c in mine], difference)
                    word = {"learns": "better", "worse": "worse"}.get(verdict(difference.mean(), se), "within noise")
                    cell += f"; {difference.mean():+.3f} +- {se:.3f} against GRPO, {word})"
                cells.append(cell)
            mine = curves[(name, f"{prefix}_{cli.reach_metric}")]
            target = np.mean([c["value"][-1] for c in curves[("grpo", f"{prefix}_{cli.reach_metric}")]])
            length = min(len(c["value"]) for c in mine)
            mean = np.mean([c["value"][:length] for c in mine], axis=0)
            hit = next((i for i in range(length) if mean[i] >= target), None)
            reach = "not reached" if hit is None else "at the start" if hit == 0 else (
                f"{mine[0]['steps'][hit]} / {np.mean([c['tokens'][hit] for c in mine]):.0f} / "
                f"{np.mean([c['seconds'][hit] for c in mine]):.0f}")
            lines.append(f"| {ALGORITHMS[name][0]} | " + " | ".join(cells) + f" | {reach} |")
    lines += ["", "Runs: " + ", ".join(f"{k}: `{v}`" for k, v in sorted(run_dirs.items()))]

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(15, 8), sharey="row", squeeze=False)
    for row, decoding in enumerate(("sampled", "greedy")):
        for col, (axis, label) in enumerate((("steps", "gradient step"), ("tokens", "sampled tokens"),
                                             ("seconds", "training wall-clock, s (no evaluations)"))):
            ax = axes[row][col]
            for name in cli.algorithms:
                c = curves[(name, f"eval_success_{decoding}")]
                length = min(len(x["value"]) for x in c)
                x = np.mean([x[axis][:length] for x in c], axis=0)
                values = np.array([x_["value"][:length] for x_ in c])
                ax.plot(x, values.mean(0), marker="o", ms=3, label=ALGORITHMS[name][0])
                ax.fill_between(x, values.mean(0) - values.std(0), values.mean(0) + values.std(0), alpha=0.15)
            ax.set_xlabel(label)
            ax.grid(alpha=0.3)
            if col == 0:
                ax.set_ylabel(f"held-out success, {decoding}")
    axes[0][0].legend(fontsize=8)
    seeds = f"{len(cli.seeds)} seed" + ("s" if len(cli.seeds) > 1 else "")
    fig.suptitle(f"{cli.env}: every algorithm from the same warm start, N = {cli.num_generations} returns per task, "
                 f"matched sampled tokens ({seeds}, band: one std)", fontsize=10)
    fig.tight_layout()
    name = f"compare_{cli.env}" + ("" if cli.algorithms == list(ALGORITHMS) else "_" + "_".join(cli.algorithms))
    png = os.path.join(out_dir, f"{name}.png")
    fig.savefig(png, dpi=110)
    lines += ["", f"![learning curves]({name}.png)"]
    with open(os.path.join(out_dir, f"{name}.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"\nwrote {png}")


if __name__ == "__main__":
    main()
