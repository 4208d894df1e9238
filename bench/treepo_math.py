"""TreePO vs GRPO on math at equal sampled tokens: a table and a plot from finished runs, 3 seeds per arm.

Arms (run them first, same SFT start, same seeds; each writes its own run directory):

    python grpo_baseline.py --env math --seed S --num-generations 16 --exp-name grpo16 --runs-dir runs/treepo_math
    python treepo.py --env math --seed S --advantage flat --exp-name treepo_flat --runs-dir runs/treepo_math
    python treepo.py --env math --seed S --runs-dir runs/treepo_math
    python bench/treepo_math.py runs/treepo_math

Sampled tokens per step are `decoded_tokens` for treepo.py (each shared segment once, tokens of tasks that
dynamic sampling dropped included) and `decision_tokens` for grpo_baseline.py (every token it sampled). The
budget is the smallest arm's mean total; each run is then read at its last evaluation whose cumulative
sampled tokens are within the budget. Differences to GRPO come from the runs' per-task outcomes at those
evaluations, as bench/stats.py gives them (paired over tasks and seeds: estimate [95% interval] verdict).
"""

from __future__ import annotations

import argparse
import csv
import glob
import json
import os
from collections import defaultdict

import numpy as np

import stats
from summarize_runs import METRICS

ARMS = {"grpo16": "GRPO (grpo_baseline.py, N=16)", "treepo_flat": "tree sampling + flat advantage",
        "treepo": "TreePO (tree sampling + tree advantage)"}


def read_run(run_dir: str) -> dict:
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        rows = list(csv.DictReader(f))
    with open(os.path.join(run_dir, "config.json")) as f:
        config = json.load(f)
    cumulative, evals = 0.0, []
    for row in rows:
        if row.get("step_seconds"):  # a training step
            cumulative += float(row.get("decoded_tokens") or row["decision_tokens"])
        if row.get("eval_success_greedy"):
            evals.append((int(row["step"]), cumulative, {m: (float(row[f"eval_{m}"]), float(row[f"eval_{m}_se"]))
                                                          for m in METRICS}))
    train = [r for r in rows if r.get("step_seconds")]
    tree_stats = {key: float(np.mean([float(r[key]) for r in train])) for key in
                  ("token_saving", "sampling_rounds", "dropped_tasks", "returns_per_task") if train[0].get(key)}
    return {"seed": config["seed"], "exp_name": config["exp_name"], "evals": evals, "tokens": cumulative,
            "run_dir": run_dir,
            "steps": len(train), "tree_stats": tree_stats}


def at_budget(run: dict, budget: float) -> tuple[int, float, dict]:
    return [e for e in run["evals"] if e[1] <= budget * 1.0001][-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs_dir", nargs="?", default="runs/treepo_math")
    parser.add_argument("--out-dir", default="bench/results")
    cli = parser.parse_args()
    arms = defaultdict(list)
    for run_dir in sorted(glob.glob(os.path.join(cli.runs_dir, "math__*"))):
        if os.path.exists(os.path.join(run_dir, "final_model")):  # finished runs only
            run = read_run(run_dir)
            if run["exp_name"] in ARMS:
                arms[run["exp_name"]].append(run)
    missing = [name for name in ARMS if not arms[name]]
    if missing:
        raise SystemExit(f"no finished runs of {missing} under {cli.runs_dir}; run the commands in --help first")
    budget = min(np.mean([r["tokens"] for r in runs]) for runs in arms.values())
    lines = [f"# TreePO vs GRPO on math at equal sampled tokens (`python bench/treepo_math.py {cli.runs_dir}`)", "",
             f"Budget: {budget:,.0f} sampled tokens (the smallest arm's mean total); each run read at its last "
             "evaluation within it. Mean +- std over seeds; held-out test split.", "",
             "| arm | seeds | steps | sampled tokens / step | metric | SFT start | at equal tokens (step) | "
             "final (all steps) | - GRPO at equal tokens |", "|---|---|---|---|---|---|---|---|---|"]
    reference = {r["seed"]: r for r in arms["grpo16"]}
    every_eval = [e[2] for runs in arms.values() for r in runs for e in r["evals"]]
    same = all(e[f"reward_{d}"][0] == e[f"success_{d}"][0] for e in every_eval for d in ("sampled", "greedy"))
    metrics = [m for m in METRICS if not (same and m.startswith("reward"))]  # math: reward = success
    if same:
        lines.insert(3, "Reward equals success here (a 0/1 reward), so only success is shown.")
    for name, label in ARMS.items():
        runs = sorted(arms[name], key=lambda r: r["seed"])
        per_step = np.mean([r["tokens"] / r["steps"] for r in runs])
        for metric in metrics:
            start = np.array([r["evals"][0][2][metric][0] for r in runs])
            final = np.array([r["evals"][-1][2][metric][0] for r in runs])
            cut = [at_budget(r, budget) for r in runs]
            value = np.array([c[2][metric][0] for c in cut])
            cell = lambda v: f"{v.mean():.3f} +- {v.std():.3f}"
            difference = ""
            if name != "grpo16":
                kind, decoding = metric.split("_")
                values = lambda run, step: stats.task_values(stats.load_outcomes(run["run_dir"]), step, "test",
                                                             decoding, kind)
                mine = {r["seed"]: values(r, c[0]) for c, r in zip(cut, runs) if r["seed"] in reference}
                grpo = {seed: values(reference[seed], at_budget(reference[seed], budget)[0]) for seed in mine}
                difference = stats.compare(grpo, mine).cell()
            steps = "/".join(str(c[0]) for c in cut)
            lines.append(f"| {label} | {len(runs)} | {runs[0]['steps']} | {per_step:,.0f} | {metric} | {cell(start)} | "
                         f"{cell(value)} ({steps}) | {cell(final)} | {difference} |")
    lines += ["", "Per step, mean over steps and seeds (tree arms): leaf tokens / decoded tokens, sampling rounds, "
              "tasks dropped by dynamic sampling, leaves per kept task.", ""]
    for name in ("treepo_flat", "treepo"):
        stats = {key: np.mean([r["tree_stats"][key] for r in arms[name]]) for key in arms[name][0]["tree_stats"]}
        lines.append(f"- {ARMS[name]}: " + ", ".join(f"{key} {value:.2f}" for key, value in stats.items()))
    print("\n".join(lines))
    os.makedirs(cli.out_dir, exist_ok=True)
    with open(os.path.join(cli.out_dir, "treepo_math.md"), "w") as f:
        f.write("\n".join(lines) + "\n")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, decoding in zip(axes, ("sampled", "greedy")):
        for name, label in ARMS.items():
            runs = arms[name]
            n = min(len(r["evals"]) for r in runs)
            tokens = np.mean([[e[1] for e in r["evals"][:n]] for r in runs], axis=0)
            values = np.array([[e[2][f"success_{decoding}"][0] for e in r["evals"][:n]] for r in runs])
            ax.plot(tokens, values.mean(0), marker="o", label=label)
            ax.fill_between(tokens, values.mean(0) - values.std(0), values.mean(0) + values.std(0), alpha=0.2)
        ax.axvline(budget, color="grey", linestyle="--", linewidth=1)
        ax.set_title(f"math: held-out success, {decoding}")
        ax.set_xlabel("cumulative sampled tokens")
        ax.grid(alpha=0.3)
        ax.legend()
    axes[0].set_ylabel(f"success (mean +- std over {len(arms['grpo16'])} seeds)")
    fig.tight_layout()
    png = os.path.join(cli.out_dir, "treepo_math.png")
    fig.savefig(png, dpi=120)
    print(f"\nwrote {png}")


if __name__ == "__main__":
    main()
