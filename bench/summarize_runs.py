"""Start and end held-out results of finished runs, per seed and over seeds, with verdicts from bench/stats.py.

Per run: start -> end of every held-out split (`eval_*` columns: the primary split; `eval_ood_*`, ...: the others)
and metric (success and mean reward, sampled and greedy), from metrics.csv. Over the runs (their seeds): each
metric's gain over the start as bench/stats.py gives it from the runs' per-task outcomes (outcomes.jsonl; the
estimand is these tasks, over seeds; paired over tasks and seeds: estimate [95% interval] and a verdict), and, for
branchopd.py runs, the teacher's lead over the student at the start, paired the same way.

    python bench/summarize_runs.py runs/learning/webshop__grpo_baseline__*
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys

import numpy as np

import stats

METRICS = ("success_sampled", "success_greedy", "reward_sampled", "reward_greedy")


def read_rows(run_dir: str) -> list[dict]:
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        return list(csv.DictReader(f))


def sampled_tokens(row: dict) -> float:
    """Tokens the step's sampler decoded: treepo.py's `decoded_tokens` (every tree it grew, the trees dynamic
    sampling dropped included, a shared prefix once); the other scripts' `decision_tokens` (every token they
    sampled, a shared prefix once). treepo.py's own `decision_tokens` counts only the kept trees, leaf by leaf,
    so matching on it gave TreePO the tokens of its dropped rounds for free."""
    return float(row.get("decoded_tokens") or row["decision_tokens"])


def eval_curve(rows: list[dict], key: str) -> dict[str, np.ndarray]:
    """Column `key` at every evaluated step, with its SE (NaN where the column has none), and the cumulative
    sampled tokens (`sampled_tokens`) and training seconds (`step_seconds`) of the steps before it."""
    tokens, seconds, total_tokens, total_seconds = {0: 0.0}, {0: 0.0}, 0.0, 0.0
    for r in sorted((r for r in rows if r.get("decision_tokens")), key=lambda r: int(r["step"])):
        total_tokens += sampled_tokens(r)
        total_seconds += float(r["step_seconds"])
        tokens[int(r["step"])], seconds[int(r["step"])] = total_tokens, total_seconds
    evals = [r for r in rows if r.get(key)]
    steps = [int(r["step"]) for r in evals]
    return {"steps": np.array(steps), "tokens": np.array([tokens.get(s, np.nan) for s in steps]),
            "seconds": np.array([seconds.get(s, np.nan) for s in steps]),
            "value": np.array([float(r[key]) for r in evals]),
            "se": np.array([float(r[key + "_se"]) if r.get(key + "_se") else np.nan for r in evals])}


def split_prefixes(rows: list[dict]) -> list[str]:
    """`eval` (the primary split) first, then e.g. `eval_ood`: every prefix with a `_success_greedy` column."""
    keys = dict.fromkeys(k[: -len("_success_greedy")] for r in rows for k in r
                         if k.endswith("_success_greedy") and k.startswith("eval"))  # not branchopd's teacher_*
    return sorted(keys, key=lambda k: (k != "eval", k))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dirs", nargs="+")
    parser.add_argument("--target", choices=stats.TARGETS, default="algorithm",
                        help="what the gains' verdicts are about: the algorithm (tasks drawn) or this test set")
    cli = parser.parse_args()
    empty = [d for d in cli.run_dirs if not os.path.exists(os.path.join(d, "metrics.csv"))]
    if empty:  # a run stopped before its first evaluation wrote nothing to summarize
        print(f"skipped (no metrics.csv): {', '.join(empty)}", file=sys.stderr)
    runs = {run_dir: read_rows(run_dir) for run_dir in cli.run_dirs if run_dir not in empty}
    if not runs:
        raise SystemExit("none of these run directories has a metrics.csv")
    prefixes = split_prefixes(next(iter(runs.values())))
    for prefix in prefixes:
        print(f"\n== {prefix} ==")
        print(f"{'run':58} {'seed':>4} " + " ".join(f"{m:>26}" for m in METRICS))
        for run_dir, rows in runs.items():
            evals = [r for r in rows if r.get(f"{prefix}_success_greedy")]
            with open(os.path.join(run_dir, "config.json")) as f:
                seed = json.load(f)["seed"]
            cells = [f"{float(evals[0][f'{prefix}_{m}']):.3f} -> {float(evals[-1][f'{prefix}_{m}']):.3f} "
                     f"(step {evals[-1]['step']:>3})" for m in METRICS]
            print(f"{os.path.basename(run_dir.rstrip('/')):58} {seed:>4} " + " ".join(f"{c:>26}" for c in cells))
    costs = []
    for rows in runs.values():
        train_rows = [r for r in rows if r.get("step_seconds")]
        costs.append([np.mean([float(r[k]) for r in train_rows]) for k in ("step_seconds", "decisions",
                                                                         "trained_decisions")]
                     + [np.mean([float(r["invalid_action_rate"]) for r in part]) for part in (train_rows[:10],
                                                                                            train_rows[-10:])])
    costs = np.array(costs)
    print(f"\nper training step (mean over steps and runs): {costs[:, 0].mean():.1f} s, {costs[:, 1].mean():.0f} "
          f"decisions sampled, {costs[:, 2].mean():.0f} trained on")
    print(f"invalid actions in training rollouts: {costs[:, 3].mean():.3f} (first 10 steps) -> "
          f"{costs[:, 4].mean():.3f} (last 10 steps)")
    snapshot = [float(r["snapshot_percent"]) for rows in runs.values() for r in rows if r.get("snapshot_percent")]
    if snapshot:  # bpo.py runs
        print(f"snapshot + restore time: {np.mean(snapshot):.3f}% of rollout time on average, "
              f"{np.max(snapshot):.3f}% at most ({len(snapshot)} steps)")
    if any(r.get("student_tokens_per_task") for rows in runs.values() for r in rows):  # branchopd.py runs
        tokens = [float(r["student_tokens_per_task"]) for rows in runs.values() for r in rows
                  if r.get("student_tokens_per_task")]
        ratio = [float(r["student_tokens_vs_seven"]) for rows in runs.values() for r in rows
                 if r.get("student_tokens_vs_seven")]
        kl = [[float(r["eval_kl_sampled"]) for r in rows if r.get("eval_kl_sampled")] for rows in runs.values()]
        print(f"student tokens per task: {np.mean(tokens):.1f}" + (f" ({np.mean(ratio):.3f} of seven independent "
              "trajectories of the main's length)" if ratio else "") + "; held-out teacher-student KL (k3, "
              f"sampled): {np.mean([k[0] for k in kl]):.3f} at the start -> {np.mean([k[-1] for k in kl]):.3f} "
              "at the end")
    # over seeds, from the per-task outcomes: each metric's gain, and (branchopd.py) the teacher's lead at the start
    by_seed = {}
    for run_dir in runs:
        with open(os.path.join(run_dir, "config.json")) as f:
            config = json.load(f)
        by_seed[config["seed"]] = (run_dir, config.get("eval_splits") or [])
    records = {seed: stats.load_outcomes(run_dir) for seed, (run_dir, _) in by_seed.items()}
    splits = next(iter(by_seed.values()))[1] or list(dict.fromkeys(r["split"] for r in next(iter(records.values()))))

    teacher = all(any(r["decoding"] == "teacher_greedy" for r in seed_records) for seed_records in records.values())
    for decoding in ("sampled", "greedy") if teacher else ():
        lead = stats.compare(stats.arm(records, 0, splits[0], decoding, "success"),
                             stats.arm(records, 0, splits[0], f"teacher_{decoding}", "success"), target=cli.target)
        print(f"teacher at the start ({decoding}, split {splits[0]}): lead over the student {lead.cell()}")
    n = len(records)
    for split in splits:
        print(f"\n{split}: gain over the start over {n} seed(s), from the per-task outcomes (bench/stats.py, target: "
              f"{cli.target}; each cell on its own)")
        for metric, decoding in stats.METRICS:
            gain = stats.compare(stats.arm(records, 0, split, decoding, metric),
                                 stats.arm(records, -1, split, decoding, metric), target=cli.target)
            print(f"  {metric + '_' + decoding:16} {gain.cell()}")


if __name__ == "__main__":
    main()
