"""BPO vs GRPO learning curves at matched N (returns per task), over several seeds.

Runs `grpo_baseline.py --num-generations N` and `bpo.py` (N = 1 + M(K-1) = 7 by default) for each seed
with the same budget, then writes a PNG of held-out success (mean +- std over seeds) and a Markdown
table with the final success and the first evaluated step at which BPO reaches GRPO's final success.

    python bench/matched_compute.py --env webshop --seeds 1 2 3 --total-steps 40
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(command: list[str], log_path: str) -> str:
    """Run one training script; returns its run directory (printed on its last line)."""
    with open(log_path, "w") as log:
        subprocess.run(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, check=True)
    with open(log_path) as log:
        last = [line for line in log if line.startswith("done: ")][-1]
    return last.split("done: ")[1].split(" (")[0].strip()


def eval_curve(run_dir: str, key: str) -> tuple[list[int], list[float]]:
    with open(os.path.join(ROOT, run_dir, "metrics.csv")) as f:
        rows = [r for r in csv.DictReader(f) if r.get(key)]
    return [int(r["step"]) for r in rows], [float(r[key]) for r in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="webshop")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--total-steps", type=int, default=40)
    parser.add_argument("--eval-every", type=int, default=10)
    parser.add_argument("--eval-tasks", type=int, default=200)
    parser.add_argument("--num-generations", type=int, default=7, help="N; BPO's M=2, K=4 gives 7")
    parser.add_argument("--parallel", type=int, default=2, help="runs at a time")
    parser.add_argument("--out-dir", default="bench/results")
    cli = parser.parse_args()
    out_dir = os.path.join(ROOT, cli.out_dir)
    os.makedirs(out_dir, exist_ok=True)
    common = ["--env", cli.env, "--total-steps", str(cli.total_steps), "--eval-every", str(cli.eval_every),
              "--eval-tasks", str(cli.eval_tasks), "--runs-dir", "runs/matched_compute"]
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

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    summary = {}
    for ax, key, title in zip(axes, ("eval_success_sampled", "eval_success_greedy"), ("sampled (T=1)", "greedy")):
        for name, label in (("grpo", f"GRPO, N={cli.num_generations}"), ("bpo", "BPO, M=2 K=4")):
            curves = [eval_curve(run_dirs[(name, seed)], key) for seed in cli.seeds]
            steps = curves[0][0]
            values = np.array([c[1] for c in curves])
            mean, std = values.mean(0), values.std(0)
            ax.plot(steps, mean, marker="o", label=label)
            ax.fill_between(steps, mean - std, mean + std, alpha=0.2)
            summary[(name, key)] = (steps, values)
        ax.set_title(f"{cli.env}: held-out success, {title}")
        ax.set_xlabel("gradient step")
        ax.grid(alpha=0.3)
        ax.legend()
    axes[0].set_ylabel(f"success ({cli.eval_tasks} tasks, mean +- std over {len(cli.seeds)} seeds)")
    fig.tight_layout()
    png = os.path.join(out_dir, f"matched_compute_{cli.env}.png")
    fig.savefig(png, dpi=120)

    lines = [f"# BPO vs GRPO at matched N = {cli.num_generations} on {cli.env}", "",
             f"`python bench/matched_compute.py --env {cli.env} --seeds {' '.join(map(str, cli.seeds))} "
             f"--total-steps {cli.total_steps} --eval-every {cli.eval_every} --eval-tasks {cli.eval_tasks}`", "",
             "| metric | GRPO start | GRPO final | BPO start | BPO final | first BPO step >= GRPO final |",
             "|---|---|---|---|---|---|"]
    for key in ("eval_success_sampled", "eval_success_greedy"):
        steps, grpo = summary[("grpo", key)]
        _, bpo_values = summary[("bpo", key)]
        target = grpo[:, -1].mean()
        reached = [s for s, v in zip(steps, bpo_values.mean(0)) if v >= target]
        fmt = lambda v: f"{v.mean():.3f} +- {v.std():.3f}"
        lines.append(f"| {key} | {fmt(grpo[:, 0])} | {fmt(grpo[:, -1])} | {fmt(bpo_values[:, 0])} | "
                     f"{fmt(bpo_values[:, -1])} | {reached[0] if reached else 'not reached'} (GRPO final at "
                     f"{steps[-1]}) |")
    lines += ["", "Runs: " + ", ".join(f"{name} seed {seed}: `{d}`" for (name, seed), d in sorted(run_dirs.items()))]
    with open(os.path.join(out_dir, f"matched_compute_{cli.env}.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"\nwrote {png}")


if __name__ == "__main__":
    main()
