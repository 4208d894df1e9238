"""Start and end held-out success of finished runs, per seed and as mean +- std over seeds.

    python bench/summarize_runs.py runs/learning/webshop__grpo_baseline__*
"""

from __future__ import annotations

import argparse
import csv
import json
import os

import numpy as np

KEYS = ("eval_success_sampled", "eval_success_greedy", "eval_reward_sampled", "eval_reward_greedy")


def evaluations(run_dir: str) -> list[dict]:
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        return [r for r in csv.DictReader(f) if r.get("eval_success_greedy")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dirs", nargs="+")
    cli = parser.parse_args()
    table = {key: ([], []) for key in KEYS}
    print(f"{'run':58} {'seed':>4} " + " ".join(f"{k.replace('eval_', ''):>26}" for k in KEYS))
    for run_dir in cli.run_dirs:
        rows = evaluations(run_dir)
        with open(os.path.join(run_dir, "config.json")) as f:
            seed = json.load(f)["seed"]
        cells = []
        for key in KEYS:
            start, end = float(rows[0][key]), float(rows[-1][key])
            table[key][0].append(start)
            table[key][1].append(end)
            cells.append(f"{start:.3f} -> {end:.3f} (step {rows[-1]['step']:>3})")
        print(f"{os.path.basename(run_dir.rstrip('/')):58} {seed:>4} " + " ".join(f"{c:>26}" for c in cells))
    costs = []
    for run_dir in cli.run_dirs:
        with open(os.path.join(run_dir, "metrics.csv")) as f:
            train_rows = [r for r in csv.DictReader(f) if r.get("step_seconds")]
        costs.append([np.mean([float(r[k]) for r in train_rows]) for k in ("step_seconds", "decisions",
                                                                         "trained_decisions")]
                     + [np.mean([float(r["invalid_action_rate"]) for r in part]) for part in (train_rows[:10],
                                                                                            train_rows[-10:])])
    costs = np.array(costs)
    print(f"\nper training step (mean over steps and runs): {costs[:, 0].mean():.1f} s, {costs[:, 1].mean():.0f} "
          f"decisions sampled, {costs[:, 2].mean():.0f} trained on")
    print(f"invalid actions in training rollouts: {costs[:, 3].mean():.3f} (first 10 steps) -> "
          f"{costs[:, 4].mean():.3f} (last 10 steps)")
    snapshot = [float(r["snapshot_percent"]) for run_dir in cli.run_dirs
                for r in csv.DictReader(open(os.path.join(run_dir, "metrics.csv"))) if r.get("snapshot_percent")]
    if snapshot:  # bpo.py runs
        print(f"snapshot + restore time: {np.mean(snapshot):.3f}% of rollout time on average, "
              f"{np.max(snapshot):.3f}% at most ({len(snapshot)} steps)")
    print(f"\nmean +- std over {len(cli.run_dirs)} runs:")
    for key in KEYS:
        start, end = np.array(table[key][0]), np.array(table[key][1])
        gain = end - start
        print(f"  {key:22} start {start.mean():.3f} +- {start.std():.3f}   end {end.mean():.3f} +- {end.std():.3f}   "
              f"gain {gain.mean():+.3f} +- {gain.std():.3f}")


if __name__ == "__main__":
    main()
