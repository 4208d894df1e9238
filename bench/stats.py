"""The statistics every table uses: what runs' per-task outcomes (outcomes.jsonl) say, with an interval and a verdict.

Estimand: the held-out tasks a table names (this test set, not the task distribution): a test-set mean is a fixed
number for a given trained policy, and what varies is the RL seed (and, for sampled evaluation, the plays). So a
comparison is over seeds, paired twice: over the shared tasks (a task's difficulty cancels in its difference) and
over the seeds both arms ran (the same seed number: the same warm start and task stream).

For arms A and B, seed s and task t, y is the task's value (its success or reward, the mean over its plays) and
d[s, t] = y_B[s, t] - y_A[s, t] where both have the pair. The estimate is the mean over seeds of the seed means D[s];
its variance per seed is the larger of the seeds' spread var_s(D[s]) (n - 1 degrees of freedom) and the seed x task
noise floor MS_residual / T of the two-way table d[s, t] ((n - 1)(T - 1) degrees of freedom): a handful of seeds can
agree by chance, the task-level noise bounds how well they can. Seeds that only one arm ran are compared unpaired
(Welch, each arm's variance floored alike). One seed per arm has no seed spread: its error is the task-level one and
its verdict at most "inconclusive".

Verdicts at 95%: `better` / `worse` when the interval excludes 0 (in a family, Holm's adjustment of the p-values
decides: `holm`); `equivalent within +-delta` when the interval lies inside (-delta, delta) (delta 0.03 unless
stated); otherwise `inconclusive`, with the seeds per arm that would decide it at 80% power: enough to tell the
observed difference from 0, or to bound it within delta, whichever is fewer (t quantiles at that many seeds'
degrees of freedom; always more seeds than the comparison has).

    python bench/stats.py "runs/x/webshop__grpo_baseline__*" "runs/x/webshop__bpo__*"    # B - A, every metric
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

DELTA = 0.03  # the equivalence margin, in the metric's units (success: 3 points)
METRICS = (("success", "greedy"), ("success", "sampled"), ("reward", "greedy"), ("reward", "sampled"))


# ---------------------------------------------------------------------------------------------------
# Reading runs
# ---------------------------------------------------------------------------------------------------
def load_outcomes(run_dir: str) -> list[dict]:
    """A run's per-task records; an evaluation that was re-run (an interrupted run resumed) replaces its first."""
    path = os.path.join(run_dir, "outcomes.jsonl")
    if not os.path.exists(path):
        raise SystemExit(f"{run_dir}: no outcomes.jsonl (a run made before per-task outcomes were kept: rerun it)")
    with open(path) as f:
        latest = {(r["step"], r["split"], r["decoding"], r["sample"], r["task_id"]): r
                  for r in map(json.loads, filter(str.strip, f))}
    return list(latest.values())


def task_values(records: list[dict], step: int, split: str, decoding: str, metric: str) -> dict[int, float]:
    """task id -> its success (or reward) at `step`, the mean over its plays."""
    plays: dict[int, list[float]] = {}
    for r in records:
        if r["step"] == step and r["split"] == split and r["decoding"] == decoding:
            plays.setdefault(r["task_id"], []).append(float(r["won"] if metric == "success" else r["reward"]))
    return {t: float(np.mean(v)) for t, v in plays.items()}


def evaluated_steps(records: list[dict]) -> list[int]:
    return sorted({r["step"] for r in records})


def runs_by_seed(pattern: str) -> dict[int, str]:
    """seed -> run directory, for the runs matching `pattern` that hold outcomes.jsonl."""
    runs = {}
    for run_dir in sorted(glob.glob(pattern)):
        if os.path.exists(os.path.join(run_dir, "outcomes.jsonl")):
            with open(os.path.join(run_dir, "config.json")) as f:
                runs[json.load(f)["seed"]] = run_dir
    if not runs:
        raise SystemExit(f"no run with outcomes.jsonl matches {pattern}")
    return runs


# ---------------------------------------------------------------------------------------------------
# One comparison
# ---------------------------------------------------------------------------------------------------
@dataclass
class Comparison:
    estimate: float  # B - A
    se: float
    df: float
    low: float  # the 95% interval
    high: float
    p: float  # two-sided, against 0
    seeds: int  # per arm (paired: both)
    tasks: int
    verdict: str = ""
    seeds_needed: int | None = None  # inconclusive: per arm, at 80% power
    note: str = ""

    def cell(self) -> str:
        """`+0.045 [+0.012, +0.078] better` or `... inconclusive (about 9 seeds per arm would decide)`."""
        text = f"{self.estimate:+.3f} [{self.low:+.3f}, {self.high:+.3f}] {self.verdict}"
        if self.verdict == "inconclusive" and self.seeds_needed:
            text += f" (about {self.seeds_needed} seeds per arm would decide)"
        elif self.verdict == "inconclusive" and self.note:
            text += f" ({self.note})"
        return text


NO_SPREAD = "every seed gives every task the same difference: no spread to measure"


def residual_variance(table: np.ndarray) -> float:
    """The seed x task mean square of a (seeds, tasks) two-way table without replication."""
    n, t = table.shape
    if n < 2 or t < 2:
        return float("nan")
    residual = table - table.mean(axis=1, keepdims=True) - table.mean(axis=0, keepdims=True) + table.mean()
    return float((residual ** 2).sum() / ((n - 1) * (t - 1)))


def seed_variance(table: np.ndarray) -> tuple[float, float]:
    """(variance of a seed's test-set mean, its degrees of freedom): the seeds' spread, floored by the seed x task
    noise; one seed: the task-level variance of its values over T (its only measure of noise)."""
    n, t = table.shape
    if n == 1:
        return float(table[0].var(ddof=1) / t) if t > 1 else 0.0, max(1, t - 1)
    spread, floor = float(table.mean(axis=1).var(ddof=1)), residual_variance(table) / t
    return (spread, n - 1) if spread >= floor else (floor, (n - 1) * (t - 1))


def compare(a: dict[int, dict[int, float]], b: dict[int, dict[int, float]], delta: float = DELTA) -> Comparison:
    """B - A over the tasks every run of both arms has; `a`, `b`: seed -> task -> value. Paired by seed where both
    arms ran the same seeds, unpaired (Welch) otherwise."""
    tasks = sorted(set.intersection(*(set(v) for v in list(a.values()) + list(b.values()))))
    if not tasks:
        raise ValueError("the arms share no task")
    shared = sorted(set(a) & set(b))
    if shared and set(a) == set(b):
        table = np.array([[b[s][t] - a[s][t] for t in tasks] for s in shared])
        variance, df = seed_variance(table)
        estimate, n, se = float(table.mean()), len(shared), math.sqrt(variance / len(shared))
    else:
        parts = []
        for arm in (a, b):
            table = np.array([[arm[s][t] for t in tasks] for s in sorted(arm)])
            parts.append((float(table.mean()), *seed_variance(table), len(arm)))
        (mean_a, var_a, df_a, n_a), (mean_b, var_b, df_b, n_b) = parts
        estimate, se = mean_b - mean_a, math.sqrt(var_a / n_a + var_b / n_b)
        df = (var_a / n_a + var_b / n_b) ** 2 / max(1e-300, (var_a / n_a) ** 2 / df_a + (var_b / n_b) ** 2 / df_b)
        n = min(n_a, n_b)
    low, high, p = t_interval(estimate, se, df)
    return decide(Comparison(estimate, se, df, low, high, p, n, len(tasks)), delta, p < 0.05)


def t_interval(estimate: float, se: float, df: float) -> tuple[float, float, float]:
    """(low, high, p): the 95% t interval of `estimate` and the two-sided p of 0; se 0 (all agree) is exact."""
    if se == 0.0:
        return estimate, estimate, 0.0 if estimate != 0 else 1.0
    half = float(scipy_stats.t.ppf(0.975, df)) * se
    return estimate - half, estimate + half, float(2 * scipy_stats.t.sf(abs(estimate) / se, df))


def decide(c: Comparison, delta: float, significant: bool) -> Comparison:
    """The verdict of `c`, given whether its (possibly family-adjusted) test rejects 0."""
    single_seed = c.seeds < 2
    no_spread = c.se == 0.0 and c.estimate == 0.0  # say, every task lost by both arms in every seed
    if no_spread:  # a zero-width interval from zero observed variance bounds nothing: never "equivalent"
        c.verdict, c.note = "inconclusive", NO_SPREAD
    elif significant and not single_seed:
        c.verdict = "better" if c.estimate > 0 else "worse"
    elif -delta < c.low and c.high < delta and not single_seed:
        c.verdict = f"equivalent within +-{delta:g}"
    else:
        c.verdict = "inconclusive"
        per_seed = c.se ** 2 * max(1, c.seeds)  # the variance one seed contributes
        df_per_seed = c.df / (c.seeds - 1) if c.seeds > 1 else 1.0  # n seeds: (n - 1) x this many df
        wanted = [abs(c.estimate)] + ([delta - abs(c.estimate)] if abs(c.estimate) < delta else [])
        usable = math.isfinite(per_seed) and per_seed > 0 and math.isfinite(df_per_seed)  # one shared task: no floor
        needed = [seeds_to_decide(per_seed, w, df_per_seed) for w in wanted if w > 1e-9] if usable else []
        c.seeds_needed = max(c.seeds + 1, min(needed)) if needed else None
        c.note = "one seed per arm: no seed spread measured" if single_seed else c.note
    return c


def seeds_to_decide(per_seed: float, width: float, df_per_seed: float, most: int = 10_000) -> int:
    """The fewest seeds per arm n >= 2 whose 95% interval, at 80% power, excludes 0 when the true difference is
    `width` (or bounds it within the margin, `width` = delta - |estimate|): n >= (t_.975 + t_.80)^2 per_seed / width^2,
    the t quantiles at n's own degrees of freedom (a normal z would promise 2 seeds where 3 did not decide)."""
    n = max(2, math.ceil((1.959964 + 0.841621) ** 2 * per_seed / width ** 2))  # the normal bound: t is wider
    while n < most:
        df = df_per_seed * (n - 1)
        if n >= (scipy_stats.t.ppf(0.975, df) + scipy_stats.t.ppf(0.80, df)) ** 2 * per_seed / width ** 2:
            break
        n += 1
    return n


def mean_over_seeds(per_seed: list[float]) -> Comparison:
    """A logged quantity's mean over seeds against 0 (one value per seed, say a run's mean over steps of BPO's
    pre-branch advantage): t interval with n - 1 df; verdict `above 0` / `below 0` / `inconclusive` (no equivalence
    margin: the quantity has no natural one), with the seeds that would tell it from 0."""
    values = np.array([v for v in per_seed if math.isfinite(v)], dtype=float)
    if len(values) == 0:
        raise ValueError("no finite per-seed value")
    n = len(values)
    estimate = float(values.mean())
    se, df = (float(values.std(ddof=1) / math.sqrt(n)), n - 1.0) if n > 1 else (math.inf, 1.0)
    low, high, p = t_interval(estimate, se, df) if n > 1 else (-math.inf, math.inf, 1.0)
    c = decide(Comparison(estimate, se, df, low, high, p, n, 1), 0.0, p < 0.05)
    c.verdict = {"better": "above 0", "worse": "below 0"}.get(c.verdict, c.verdict)
    if n > 1 and se == 0.0 and estimate == 0.0:  # say, the pre-branch advantage at lambda 0: none by construction
        c.verdict, c.seeds_needed, c.note = "0 in every seed", None, ""
    return c


def holm(comparisons: list[Comparison], delta: float = DELTA, alpha: float = 0.05) -> list[Comparison]:
    """Holm's step-down adjustment over one family (say, every algorithm against GRPO in one table): the verdicts
    `better` / `worse` only where the adjusted test rejects."""
    order = sorted(range(len(comparisons)), key=lambda i: comparisons[i].p)
    rejected, still = [False] * len(comparisons), True
    for rank, i in enumerate(order):
        still = still and comparisons[i].p <= alpha / (len(comparisons) - rank)
        rejected[i] = still
    return [decide(c, delta, r) for c, r in zip(comparisons, rejected)]


# ---------------------------------------------------------------------------------------------------
# Compute to reach a threshold
# ---------------------------------------------------------------------------------------------------
def tokens_to_reach(tokens: list[float], values: list[float], threshold: float) -> float:
    """The sampled tokens at the first evaluation from which the curve stays at or above `threshold` for two
    consecutive evaluations (inf if it never does). The threshold is fixed before the curves are read."""
    for i in range(len(values) - 1):
        if values[i] >= threshold and values[i + 1] >= threshold:
            return float(tokens[i])
    return math.inf


def ratio_interval(ratios: list[float]) -> tuple[float, float, float, int]:
    """(geometric mean, 95% low, high, seeds that never reached) of per-seed token ratios, a t interval on logs."""
    finite = np.log([r for r in ratios if math.isfinite(r) and r > 0])
    missing = sum(1 for r in ratios if not math.isfinite(r))
    if len(finite) < 2:
        value = float(np.exp(finite.mean())) if len(finite) else math.inf
        return value, math.nan, math.nan, missing
    half = float(scipy_stats.t.ppf(0.975, len(finite) - 1)) * finite.std(ddof=1) / math.sqrt(len(finite))
    return float(np.exp(finite.mean())), float(np.exp(finite.mean() - half)), float(np.exp(finite.mean() + half)), \
        missing


def reach_ratio(mine: list[float], grpo: list[float]) -> str:
    """Per seed, the sampled tokens at which a run first holds a threshold (`tokens_to_reach`; inf: never), this
    algorithm's and the same seed's GRPO run's: the geometric mean ratio over the seeds where both held it, with a
    95% interval from two such seeds on, and how many runs of each never held it."""
    pairs = [(m, g) for m, g in zip(mine, grpo) if math.isfinite(m) and math.isfinite(g) and g > 0]
    if len(pairs) >= 2:
        value, low, high, _ = ratio_interval([m / g for m, g in pairs])
        head = f"{value:.2f}x [{low:.2f}, {high:.2f}]"
    else:
        head = f"{pairs[0][0] / pairs[0][1]:.2f}x (no interval from one seed)" if pairs else "no ratio"
    never_mine, never_grpo = sum(not math.isfinite(m) for m in mine), sum(not math.isfinite(g) for g in grpo)
    return (f"{head} over the {len(pairs)} of {len(mine)} seeds where both runs held it; never held it: "
            f"{never_mine} of this algorithm's runs, {never_grpo} of GRPO's")


# ---------------------------------------------------------------------------------------------------
# Command line: two groups of runs, B - A at their last evaluation, and each group's gain over its start
# ---------------------------------------------------------------------------------------------------
def arm(records: dict[int, list[dict]], which: int, split: str, decoding: str,
        metric: str) -> dict[int, dict[int, float]]:
    """seed -> task -> value at each seed's evaluation `which` (0: the start, -1: the last) of `split`. The steps are
    the policy's own evaluations: BranchOPD's teacher records (decoding `teacher_*`, step 0) are not one."""
    values = {}
    for seed, seed_records in records.items():
        steps = evaluated_steps([r for r in seed_records if r["split"] == split
                                 and not r["decoding"].startswith("teacher_")])
        values[seed] = task_values(seed_records, steps[which], split, decoding, metric)
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", help="glob of group A's run directories (quote it)")
    parser.add_argument("b", nargs="?", help="glob of group B's (else: A's gain over its start)")
    parser.add_argument("--delta", type=float, default=DELTA, help="equivalence margin")
    cli = parser.parse_args()
    a = {seed: load_outcomes(run_dir) for seed, run_dir in runs_by_seed(cli.a).items()}
    b = {seed: load_outcomes(run_dir) for seed, run_dir in runs_by_seed(cli.b).items()} if cli.b else None
    splits = list(dict.fromkeys(r["split"] for r in next(iter(a.values()))))
    print(f"A = {cli.a} (seeds {sorted(a)})" + (f"\nB = {cli.b} (seeds {sorted(b)})" if b else ""))
    print("per metric: estimate [95% interval] verdict; the estimand is these tasks, over seeds (bench/stats.py)")
    for split in splits:
        print(f"\n== {split} ==")
        for metric, decoding in METRICS:
            name = f"{metric}, {decoding}"
            gain_a = compare(arm(a, 0, split, decoding, metric), arm(a, -1, split, decoding, metric), cli.delta)
            line = f"  {name:18} A end - start {gain_a.cell()}"
            if b:
                difference = compare(arm(a, -1, split, decoding, metric), arm(b, -1, split, decoding, metric),
                                     cli.delta)
                line += f" | B - A {difference.cell()}"
            print(line)


if __name__ == "__main__":
    main()
