"""BPO vs GRPO learning curves at matched N (returns per task), over several seeds.

Runs `grpo_baseline.py --num-generations N` and `bpo.py` (N = 1 + M(K-1) = 7 by default) for each seed
with the same budget (each run with one torch thread, `--parallel` at a time), then writes a PNG of
held-out success (mean +- std over seeds) and a Markdown table, per held-out split, of start and final
success and reward (sampled and greedy), BPO - GRPO at the end with its standard error (evaluation
error and seed spread, as bench/summarize_runs.py) and the first evaluated step at which BPO reaches
GRPO's final value. Runs that finished (their `done:` line in the log) are not run again.

    python bench/matched_compute.py --env webshop --seeds 1 2 3
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from summarize_runs import METRICS, difference_se, split_prefixes, verdict

BETTER = {"learns": "BPO better", "worse": "GRPO better", "within noise": "within noise"}

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(command: list[str], log_path: str) -> str:
    """Run one training script (unless its log says it finished); returns its run directory."""
    done = os.path.exists(log_path) and any(line.startswith("done: ") for line in open(log_path))
    if not done:
        with open(log_path, "w") as log:
            subprocess.run(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, check=True,
                           env={**os.environ, "OMP_NUM_THREADS": "1"})
    with open(log_path) as log:
        last = [line for line in log if line.startswith("done: ")][-1]
    return last.split("done: ")[1].split(" (")[0].strip()


def eval_curve(run_dir: str, key: str) -> tuple[list[int], list[float], list[float]]:
    with open(os.path.join(ROOT, run_dir, "metrics.csv")) as f:
        rows = [r for r in csv.DictReader(f) if r.get(key)]
    return [int(r["step"]) for r in rows], [float(r[key]) for r in rows], [float(r[key + "_se"]) for r in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="webshop")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--total-steps", type=int, default=None, help="default: the scripts' (per env)")
    parser.add_argument("--eval-every", type=int, default=None, help="default: the scripts'")
    parser.add_argument("--eval-tasks", type=int, default=200)
    parser.add_argument("--num-generations", type=int, default=7, help="N; BPO's M=2, K=4 gives 7")
    parser.add_argument("--parallel", type=int, default=2, help="runs at a time")
    parser.add_argument("--out-dir", default="bench/results")
    cli = parser.parse_args()
    out_dir = os.path.join(ROOT, cli.out_dir)
    os.makedirs(out_dir, exist_ok=True)
    common = ["--env", cli.env, "--eval-tasks", str(cli.eval_tasks), "--runs-dir", "runs/matched_compute"]
    for flag, value in (("--total-steps", cli.total_steps), ("--eval-every", cli.eval_every)):
        common += [flag, str(value)] if value is not None else []
    jobs = []
    for seed in cli.seeds:
        jobs.append(("grpo", seed, [sys.executable, "grpo_baseline.py", *common, "--seed", str(seed),
                                    "--num-generations", str(cli.num_generations), "--exp-name", "grpo_matched"]))
        jobs.append(("bpo", seed, [sys.executable, "bpo.py", *common, "--seed", str(seed)]))
    # build the shared warm start once before running in parallel
    subprocess.run([sys.executable, "policy.py", "--env", cli.env], cwd=ROOT, check=True)
    with ThreadPoolExecutor(cli.parallel) as pool:
        futures = {(name, seed): pool.submit(run, command, os.path.join(out_dir, f"{cli.env}_{name}_{seed}.log"))
                   for name, seed, command in jobs}
    run_dirs = {key: future.result() for key, future in futures.items()}

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(os.path.join(ROOT, run_dirs[("grpo", cli.seeds[0])], "metrics.csv")) as f:
        prefixes = split_prefixes(list(csv.DictReader(f)))
    fig, axes = plt.subplots(len(prefixes), 2, figsize=(11, 4 * len(prefixes)), sharey=True, squeeze=False)
    summary = {}
    for prefix in prefixes:
        for metric in METRICS:
            key = f"{prefix}_{metric}"
            for name in ("grpo", "bpo"):
                curves = [eval_curve(run_dirs[(name, seed)], key) for seed in cli.seeds]
                summary[(name, key)] = (curves[0][0], np.array([c[1] for c in curves]),
                                        np.array([c[2] for c in curves]))
    for row, prefix in enumerate(prefixes):
        for ax, decoding in zip(axes[row], ("sampled", "greedy")):
            key = f"{prefix}_success_{decoding}"
            for name, label in (("grpo", f"GRPO, N={cli.num_generations}"), ("bpo", "BPO, M=2 K=4")):
                steps, values, _ = summary[(name, key)]
                mean, std = values.mean(0), values.std(0)
                ax.plot(steps, mean, marker="o", label=label)
                ax.fill_between(steps, mean - std, mean + std, alpha=0.2)
            ax.set_title(f"{cli.env}: held-out success ({prefix}), {decoding}")
            ax.set_xlabel("gradient step")
            ax.grid(alpha=0.3)
            ax.legend()
        axes[row][0].set_ylabel(f"success (mean +- std over {len(cli.seeds)} seeds)")
    fig.tight_layout()
    png = os.path.join(out_dir, f"matched_compute_{cli.env}.png")
    fig.savefig(png, dpi=120)

    command = " ".join(["python bench/matched_compute.py", "--env", cli.env, "--seeds", *map(str, cli.seeds)]
                       + [f"{flag} {value}" for flag, value in (("--total-steps", cli.total_steps),
                                                                ("--eval-every", cli.eval_every)) if value]
                       + ([f"--eval-tasks {cli.eval_tasks}"] if cli.eval_tasks != 200 else []))
    lines = [f"# BPO vs GRPO at matched N = {cli.num_generations} on {cli.env}", "", f"`{command}` (runs with "
             f"OMP_NUM_THREADS=1, {cli.parallel} at a time); mean +- std over {len(cli.seeds)} seeds; BPO - GRPO at "
             f"the end +- its standard error (evaluation error and seed spread).", "",
             "| split | metric | GRPO start | GRPO final | BPO start | BPO final | BPO - GRPO | first BPO step >= GRPO "
             "final |", "|---|---|---|---|---|---|---|---|"]
    fmt = lambda v: f"{v.mean():.3f} +- {v.std():.3f}"
    for prefix in prefixes:
        for metric in METRICS:
            key = f"{prefix}_{metric}"
            steps, grpo, grpo_se = summary[("grpo", key)]
            _, bpo_values, bpo_se = summary[("bpo", key)]
            difference = bpo_values[:, -1] - grpo[:, -1]
            se = difference_se(grpo_se[:, -1], bpo_se[:, -1], difference)
            reached = [s for s, v in zip(steps, bpo_values.mean(0)) if v >= grpo[:, -1].mean()]
            lines.append(f"| {prefix} | {metric} | {fmt(grpo[:, 0])} | {fmt(grpo[:, -1])} | {fmt(bpo_values[:, 0])} | "
                         f"{fmt(bpo_values[:, -1])} | {difference.mean():+.3f} +- {se:.3f} "
                         f"({BETTER[verdict(difference.mean(), se)]}) "
                         f"| {reached[0] if reached else 'not reached'} (GRPO final at {steps[-1]}) |")
    lines += ["", "Runs: " + ", ".join(f"{name} seed {seed}: `{d}`" for (name, seed), d in sorted(run_dirs.items()))]
    with open(os.path.join(out_dir, f"matched_compute_{cli.env}.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"\nwrote {png}")


if __name__ == "__main__":
    main()
