"""Two groups of finished runs against each other: B - A at their last evaluation, with verdicts from bench/stats.py.

    python bench/compare_runs.py "runs/branchopd_math/math__opd_vanilla__*" "runs/branchopd_math/math__opd_branch__*"

For every held-out split and metric (success and reward, sampled and greedy): the mean +- sd (n - 1) over seeds
of A and B at their last evaluation, and B - A from the runs' per-task outcomes (outcomes.jsonl), paired over
tasks, and over seeds where both groups ran the same ones (else unpaired); an estimate [95% interval] and a
verdict (better / worse / equivalent within +-delta / inconclusive with the seeds that would detect a 0.03
difference), each cell on its own: no family adjustment. `--target algorithm` (the default) treats seeds and
tasks as drawn, `--target "test set"` these tasks as fixed (docs/evidence.md).
"""

from __future__ import annotations

import argparse

import numpy as np

import stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", help="glob of group A's run directories (quote it)")
    parser.add_argument("b", help="glob of group B's run directories (quote it)")
    parser.add_argument("--delta", type=float, default=stats.DELTA, help="equivalence margin")
    parser.add_argument("--target", choices=stats.TARGETS, default="algorithm",
                        help="what a verdict is about: the algorithms (tasks drawn) or this test set")
    cli = parser.parse_args()
    a, b = ({seed: stats.load_outcomes(run_dir) for seed, run_dir in stats.runs_by_seed(pattern).items()}
            for pattern in (cli.a, cli.b))
    print(f"A = {cli.a} (seeds {sorted(a)})\nB = {cli.b} (seeds {sorted(b)})\n"
          f"mean +- sd over seeds at the last evaluation; B - A: estimate [95% interval] verdict (bench/stats.py, "
          f"target: {cli.target}; no family adjustment)")
    splits = list(dict.fromkeys(r["split"] for r in next(iter(a.values()))))
    for split in splits:
        print(f"\n== {split} ==")
        for metric, decoding in stats.METRICS:
            ends = [stats.arm(group, -1, split, decoding, metric) for group in (a, b)]
            means = [np.array([np.mean(list(v.values())) for v in end.values()]) for end in ends]
            difference = stats.compare(ends[0], ends[1], cli.delta, cli.target)
            sd = [float(m.std(ddof=1)) if len(m) > 1 else 0.0 for m in means]
            print(f"  {metric + '_' + decoding:16} A {means[0].mean():.3f} +- {sd[0]:.3f}   "
                  f"B {means[1].mean():.3f} +- {sd[1]:.3f}   B - A {difference.cell()}")


if __name__ == "__main__":
    main()
