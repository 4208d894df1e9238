"""Start and end held-out results of finished runs, per seed and over seeds, with a "learns" verdict.

For every held-out split the runs evaluated (`eval_*` columns: the primary split; `eval_ood_*`, ...: the
others) and every metric (success and mean reward, sampled and greedy): start -> end per run, then over
the runs the mean +- std of start and end, and the gain with its standard error
    SE(gain) = sqrt( (mean_i se_start_i^2 + mean_i se_end_i^2) / n  +  var_i(gain_i) / n ),
the binomial (or sample) error of the two evaluations plus the seed spread (conservative: the spread
already contains some evaluation noise). "learns" when gain > 2 SE, "worse" when gain < -2 SE, else
"within noise".

    python bench/summarize_runs.py runs/learning/webshop__grpo_baseline__*
"""

from __future__ import annotations

import argparse
import csv
import json
import os

import numpy as np

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


def difference_se(se_a, se_b, difference) -> float:
    """SE of a mean difference over seeds: the evaluations' errors (se_a, se_b per seed) plus the seed spread."""
    se_a, se_b, difference = np.asarray(se_a, float), np.asarray(se_b, float), np.asarray(difference, float)
    n = len(difference)
    return float(np.sqrt((np.mean(se_a ** 2) + np.mean(se_b ** 2)) / n + difference.var() / n))


def verdict(gain: float, se: float) -> str:
    return "learns" if gain > 2 * se else "worse" if gain < -2 * se else "within noise"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dirs", nargs="+")
    cli = parser.parse_args()
    runs = {run_dir: read_rows(run_dir) for run_dir in cli.run_dirs}
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
    # branchopd.py runs: the teacher's held-out success at the start against the student's first evaluation
    starts = [(next(r for r in rows if r.get("teacher_success_greedy")), next(r for r in rows
                                                                             if r.get("eval_success_greedy")))
              for rows in runs.values() if any(r.get("teacher_success_greedy") for r in rows)]
    for decoding in ("sampled", "greedy") if starts else ():
        teacher = np.array([float(t[f"teacher_success_{decoding}"]) for t, _ in starts])
        student = np.array([float(s[f"eval_success_{decoding}"]) for _, s in starts])
        # both are the same two models on the same tasks in every seed: their evaluation error does not
        # shrink with the number of seeds (difference_se's / n would count one greedy evaluation n times)
        se = float(np.sqrt(np.mean([float(t[f"teacher_success_{decoding}_se"]) ** 2 for t, _ in starts])
                           + np.mean([float(s[f"eval_success_{decoding}_se"]) ** 2 for _, s in starts])
                           + (teacher - student).var() / len(starts)))
        lead = (teacher - student).mean()
        print(f"teacher at the start ({decoding}, primary held-out split): {teacher.mean():.3f}, the student's "
              f"{student.mean():.3f}: lead {lead:+.3f} +- {se:.3f} "
              f"({'beyond twice its SE' if lead > 2 * se else 'within noise'})")
    n = len(runs)
    for prefix in prefixes:
        print(f"\n{prefix}: mean +- std over {n} runs; gain +- SE(gain) (evaluation error and seed spread)")
        for metric in METRICS:
            start, end, se_start, se_end = [], [], [], []
            for rows in runs.values():
                evals = [r for r in rows if r.get(f"{prefix}_success_greedy")]
                key = f"{prefix}_{metric}"
                start.append(float(evals[0][key]))
                end.append(float(evals[-1][key]))
                se_start.append(float(evals[0].get(key + "_se") or 0.0))
                se_end.append(float(evals[-1].get(key + "_se") or 0.0))
            start, end = np.array(start), np.array(end)
            gain = end - start
            se = difference_se(se_start, se_end, gain)
            print(f"  {metric:16} start {start.mean():.3f} +- {start.std():.3f}   end {end.mean():.3f} +- "
                  f"{end.std():.3f}   gain {gain.mean():+.3f} +- {se:.3f}   {verdict(gain.mean(), se)}")


if __name__ == "__main__":
    main()
