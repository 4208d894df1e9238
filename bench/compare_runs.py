"""Two groups of finished runs against each other, seed by seed: B - A at the end, with a verdict.

    python bench/compare_runs.py "runs/branchopd_math/math__opd_vanilla__*" "runs/branchopd_math/math__opd_branch__*"

For every held-out split and metric (success and reward, sampled and greedy): the mean +- std over seeds of
A and B at their last evaluation, and B - A paired by seed, with the standard error
    SE = sqrt( (mean_i se_A,i^2 + mean_i se_B,i^2) / n  +  var_i(B_i - A_i) / n )
(the evaluations' binomial errors and the seed spread, as bench/summarize_runs.py); "B better" when the
difference exceeds 2 SE, "A better" below -2 SE, else "within noise". Only seeds present in both groups count.
"""

from __future__ import annotations

import argparse
import glob
import json
import os

import numpy as np

from summarize_runs import METRICS, difference_se, read_rows, split_prefixes, verdict


def last_evals(pattern: str) -> dict[int, list[dict]]:
    """seed -> the run's evaluation rows, for the finished runs (a final_model/) matching `pattern`."""
    runs = {}
    for run_dir in sorted(glob.glob(pattern)):
        if os.path.isdir(os.path.join(run_dir, "final_model")):
            with open(os.path.join(run_dir, "config.json")) as f:
                runs[json.load(f)["seed"]] = [r for r in read_rows(run_dir) if r.get("eval_success_greedy")]
    if not runs:
        raise SystemExit(f"no finished runs match {pattern}")
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", help="glob of group A's run directories (quote it)")
    parser.add_argument("b", help="glob of group B's run directories (quote it)")
    cli = parser.parse_args()
    a, b = last_evals(cli.a), last_evals(cli.b)
    seeds = sorted(set(a) & set(b))
    if not seeds:
        raise SystemExit(f"no seed in both groups (A: {sorted(a)}, B: {sorted(b)})")
    print(f"A = {cli.a}\nB = {cli.b}\nseeds {seeds}; mean +- std over seeds at the last evaluation; B - A +- SE")
    for prefix in split_prefixes(a[seeds[0]]):
        print(f"\n== {prefix} ==")
        for metric in METRICS:
            key = f"{prefix}_{metric}"
            end_a = np.array([float(a[s][-1][key]) for s in seeds])
            end_b = np.array([float(b[s][-1][key]) for s in seeds])
            se_a = np.array([float(a[s][-1].get(key + "_se") or 0.0) for s in seeds])
            se_b = np.array([float(b[s][-1].get(key + "_se") or 0.0) for s in seeds])
            difference = end_b - end_a
            se = difference_se(se_a, se_b, difference)
            word = {"learns": "B better", "worse": "A better", "within noise": "within noise"}[
                verdict(difference.mean(), se)]
            print(f"  {metric:16} A {end_a.mean():.3f} +- {end_a.std():.3f}   B {end_b.mean():.3f} +- {end_b.std():.3f}"
                  f"   B - A {difference.mean():+.3f} +- {se:.3f}   {word}")


if __name__ == "__main__":
    main()
