"""The statistics every table uses: what runs' per-task outcomes (outcomes.jsonl) say, with an interval and a verdict.

Two estimands, named in every table that uses them:
- `algorithm` (the default, for claims such as "BPO beats GRPO"): the difference between the algorithms on the task
  population the test set is drawn from. Seeds and tasks are both random draws, crossed (every seed plays every
  task), so the error has a seed part, a task part (a task one algorithm suits better than the other: the task x
  algorithm effect) and their interaction.
- `test set` (for claims about these held-out tasks only): the tasks are fixed; only the seeds vary.

For arms A and B, seed s and task t, y is the task's value (its success or reward, the mean over its plays) and
d[s, t] = y_B[s, t] - y_A[s, t] where both ran seed s (paired: the same warm start and task stream). From the
two-way table's mean squares (seeds MS_s, tasks MS_t, residual MS_e, n seeds and T tasks):
    Var(mean d) = (MS_s + MS_t - MS_e) / (n T)      target `algorithm`: sigma_s^2 / n + sigma_t^2 / T + sigma_e^2 / (n T)
    Var(mean d) = max(MS_s, MS_e) / (n T)           target `test set`: the seeds' spread, floored by the seed x task noise
each at least its largest lower bound (MS_s / (n T), MS_t / (n T)), always on n - 1 degrees of freedom (the seed
level: a few seeds' agreement is never worth more). Seeds that only one arm ran are compared unpaired (each arm's
seed part, the task part of the difference; Welch's degrees of freedom). One seed per arm has no seed spread: its
verdict is at most "inconclusive". Zero observed variance (every seed gives every task the same difference)
bounds nothing: "inconclusive", whatever the estimate.

Verdicts at 95%: `better` / `worse` when the interval excludes 0 (in a family, Holm's adjustment of the p-values
decides: `holm`); `equivalent within +-delta` when the interval lies inside (-delta, delta) (delta 0.03 unless
stated); otherwise `inconclusive`, with the seeds per arm that would detect a difference of EFFECT (0.03, the smallest
worth detecting, fixed in advance) at 80% power from this comparison's variance (its task part does not shrink with
seeds: where it alone is too wide, no seed count decides, and the cell says so). Cells outside a table's verdict
family are estimates: `estimate()` gives the interval without a verdict.

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
EFFECT = 0.03  # the smallest difference worth detecting: the seed counts of an inconclusive cell are for it
TARGETS = ("algorithm", "test set")
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
    seeds_needed: int | None = None  # inconclusive: per arm, to detect `effect` at 80% power
    note: str = ""
    target: str = "algorithm"
    fixed_variance: float = 0.0  # the part of se^2 that more seeds do not shrink (the task part)
    effect: float = EFFECT

    def interval(self) -> str:
        """`+0.045 [+0.012, +0.078]`: the estimate alone, for a cell outside a table's verdict family."""
        return f"{self.estimate:+.3f} [{self.low:+.3f}, {self.high:+.3f}]"

    def cell(self) -> str:
        """`+0.045 [+0.012, +0.078] better` or `... inconclusive (about 9 seeds per arm would detect a 0.03
        difference)`."""
        text = f"{self.interval()} {self.verdict}"
        if self.verdict == "inconclusive" and self.seeds_needed:
            text += (f" (about {self.seeds_needed} seeds per arm would detect a {self.effect:g} difference)"
                     if self.seeds_needed > self.seeds else
                     f" ({self.seeds} seeds per arm already detect a {self.effect:g} difference at 80% power)")
        elif self.verdict == "inconclusive" and self.note:
            text += f" ({self.note})"
        return text


NO_SPREAD = "every seed gives every task the same difference: no spread to measure"
ONE_SEED = "one seed per arm: no seed spread measured"
TASK_BOUND = "its task part alone is too wide: more tasks, not more seeds, would decide"


def residual_variance(table: np.ndarray) -> float:
    """The seed x task mean square of a (seeds, tasks) two-way table without replication."""
    n, t = table.shape
    if n < 2 or t < 2:
        return float("nan")
    residual = table - table.mean(axis=1, keepdims=True) - table.mean(axis=0, keepdims=True) + table.mean()
    return float((residual ** 2).sum() / ((n - 1) * (t - 1)))


def mean_squares(table: np.ndarray) -> tuple[float, float, float]:
    """(MS_seeds, MS_tasks, MS_residual) of a (seeds, tasks) table; nan where a factor has one level."""
    n, t = table.shape
    ms_seeds = t * float(table.mean(axis=1).var(ddof=1)) if n > 1 else math.nan
    ms_tasks = n * float(table.mean(axis=0).var(ddof=1)) if t > 1 else math.nan
    return ms_seeds, ms_tasks, residual_variance(table)


def paired_variance(table: np.ndarray, target: str) -> tuple[float, float]:
    """(variance of the grand mean of a paired difference table d[s, t], the part of it more seeds do not shrink).
    `algorithm`: (MS_s + MS_t - MS_e) / (n T), the seeds' and tasks' parts, at least the larger of the two lower
    bounds MS_s / (n T), MS_t / (n T); `test set`: max(MS_s, MS_e) / (n T)."""
    n, t = table.shape
    ms_seeds, ms_tasks, ms_residual = mean_squares(table)
    if n == 1:  # one seed: the task-level variance is its only measure of noise
        return (ms_tasks / t if t > 1 else 0.0), 0.0
    if t == 1:
        return ms_seeds / n, 0.0
    if target == "test set":
        return max(ms_seeds, ms_residual) / (n * t), 0.0
    variance = max(ms_seeds + ms_tasks - ms_residual, ms_seeds, ms_tasks) / (n * t)
    return variance, min(variance, max(0.0, ms_tasks - ms_residual) / (n * t))


def unpaired_variance(table_a: np.ndarray, table_b: np.ndarray, target: str) -> tuple[float, float, float]:
    """(variance of mean B - mean A, its fixed part, Welch's degrees of freedom) for arms that ran different seeds
    over the same tasks: each arm's seed part (floored by its seed x task noise for `test set`) and, for
    `algorithm`, the task part of the difference of the task means (less the residual noise it also holds)."""
    parts, residual = [], 0.0
    for table in (table_a, table_b):
        n, t = table.shape
        ms_seeds, _, ms_residual = mean_squares(table)
        seed_part = ms_seeds / (n * t) if n > 1 else float(table[0].var(ddof=1) / t) if t > 1 else 0.0
        floor = ms_residual / (n * t) if math.isfinite(ms_residual) else 0.0
        parts.append((max(seed_part, floor) if target == "test set" else seed_part, n))
        residual += floor
    seed_variance = sum(v for v, _ in parts)
    df = seed_variance ** 2 / max(1e-300, sum(v ** 2 / max(1, n - 1) for v, n in parts)) if seed_variance > 0 \
        else float(min(n for _, n in parts) - 1)
    if target == "test set" or table_a.shape[1] < 2:
        return seed_variance, 0.0, max(1.0, df)
    task_part = float((table_b.mean(axis=0) - table_a.mean(axis=0)).var(ddof=1)) / table_a.shape[1]
    variance = max(seed_variance + task_part - residual, seed_variance, task_part)
    return variance, min(variance, max(0.0, task_part - residual)), max(1.0, df)


def compare(a: dict[int, dict[int, float]], b: dict[int, dict[int, float]], delta: float = DELTA,
            target: str = "algorithm", effect: float = EFFECT) -> Comparison:
    """B - A over the tasks every run of both arms has; `a`, `b`: seed -> task -> value. Paired by seed where both
    arms ran the same seeds, unpaired otherwise. `target`: `algorithm` (tasks drawn from a population) or `test set`
    (these tasks)."""
    tasks = sorted(set.intersection(*(set(v) for v in list(a.values()) + list(b.values()))))
    if not tasks:
        raise ValueError("the arms share no task")
    shared = sorted(set(a) & set(b))
    if shared and set(a) == set(b):
        return paired(np.array([[b[s][t] - a[s][t] for t in tasks] for s in shared]), delta, target, effect)
    return unpaired(*(np.array([[arm[s][t] for t in tasks] for s in sorted(arm)]) for arm in (a, b)), delta, target,
                    effect)


def paired(table: np.ndarray, delta: float = DELTA, target: str = "algorithm", effect: float = EFFECT) -> Comparison:
    """The comparison of a (seeds, tasks) table of paired differences B - A."""
    variance, fixed = paired_variance(table, target)
    n = table.shape[0]
    return finish(float(table.mean()), variance, fixed, max(1.0, n - 1.0), n, table.shape[1], delta, target, effect)


def unpaired(table_a: np.ndarray, table_b: np.ndarray, delta: float = DELTA, target: str = "algorithm",
             effect: float = EFFECT) -> Comparison:
    """B - A for arms that ran different seeds over the same tasks ((seeds, tasks) tables of values)."""
    variance, fixed, df = unpaired_variance(table_a, table_b, target)
    return finish(float(table_b.mean() - table_a.mean()), variance, fixed, df, min(len(table_a), len(table_b)),
                  table_a.shape[1], delta, target, effect)


def finish(estimate: float, variance: float, fixed: float, df: float, seeds: int, tasks: int, delta: float,
           target: str, effect: float) -> Comparison:
    if target not in TARGETS:
        raise ValueError(f"target {target!r}: one of {TARGETS}")
    se = math.sqrt(variance) if variance > 1e-15 else 0.0  # below that, rounding error of a table with no spread
    low, high, p = t_interval(estimate, se, df)
    c = Comparison(estimate, se, df, low, high, p, seeds, tasks, target=target, fixed_variance=fixed, effect=effect)
    return decide(c, delta, p < 0.05)


def t_interval(estimate: float, se: float, df: float) -> tuple[float, float, float]:
    """(low, high, p): the 95% t interval of `estimate` and the two-sided p of 0; se 0 (no variance observed)
    measures nothing: a zero-width interval and p = 1."""
    if se == 0.0:
        return estimate, estimate, 1.0
    half = float(scipy_stats.t.ppf(0.975, df)) * se
    return estimate - half, estimate + half, float(2 * scipy_stats.t.sf(abs(estimate) / se, df))


def decide(c: Comparison, delta: float, significant: bool) -> Comparison:
    """The verdict of `c`, given whether its (possibly family-adjusted) test rejects 0."""
    c.seeds_needed, c.note = None, ""
    if c.se == 0.0:  # zero observed variance bounds nothing, whatever the estimate: never better, never equivalent
        c.verdict, c.note = "inconclusive", NO_SPREAD
    elif c.seeds < 2:
        c.verdict, c.note = "inconclusive", ONE_SEED
    elif significant:
        c.verdict = "better" if c.estimate > 0 else "worse"
    elif -delta < c.low and c.high < delta:
        c.verdict = f"equivalent within +-{delta:g}"
    else:
        c.verdict = "inconclusive"
        c.seeds_needed = seeds_to_detect((c.se ** 2 - c.fixed_variance) * c.seeds, c.fixed_variance, c.effect)
        c.note = "" if c.seeds_needed else TASK_BOUND
    return c


def seeds_to_detect(per_seed: float, fixed: float, effect: float, most: int = 10_000) -> int | None:
    """The fewest seeds per arm n >= 2 whose 95% interval excludes 0 with 80% power when the true difference is
    `effect`: (t_.975 + t_.80)^2 (per_seed / n + fixed) <= effect^2, t at n - 1 degrees of freedom; `per_seed` is the
    variance one seed contributes, `fixed` the task part that no seed count shrinks. None: not even `most` seeds."""
    room = effect ** 2 / (1.959964 + 0.841621) ** 2 - fixed  # what the seeds' part may take, at the normal bound
    if room <= 0:  # even infinitely many seeds leave the task part
        return None
    n = max(2, math.ceil(max(per_seed, 0.0) / room))  # the normal bound: t is wider, so start here and count up
    while n < most:
        if (scipy_stats.t.ppf(0.975, n - 1) + scipy_stats.t.ppf(0.80, n - 1)) ** 2 * \
                (max(per_seed, 0.0) / n + fixed) <= effect ** 2:
            return n
        n += 1
    return None


def mean_over_seeds(per_seed: list[float]) -> Comparison:
    """A logged quantity's mean over seeds against 0 (one value per seed, say a run's mean over steps of BPO's
    pre-branch advantage): t interval with n - 1 df; verdict `above 0` / `below 0` / `inconclusive` (no margin and no
    seed count: the quantity has no natural smallest effect)."""
    values = np.array([v for v in per_seed if math.isfinite(v)], dtype=float)
    if len(values) == 0:
        raise ValueError("no finite per-seed value")
    n = len(values)
    estimate = float(values.mean())
    se, df = (float(values.std(ddof=1) / math.sqrt(n)), n - 1.0) if n > 1 else (math.inf, 1.0)
    low, high, p = t_interval(estimate, se, df) if n > 1 else (-math.inf, math.inf, 1.0)
    c = decide(Comparison(estimate, se, df, low, high, p, n, 1, target="seeds"), 0.0, p < 0.05)
    c.verdict, c.seeds_needed = {"better": "above 0", "worse": "below 0"}.get(c.verdict, c.verdict), None
    c.note = "" if c.note == TASK_BOUND else c.note
    if n > 1 and se == 0.0 and estimate == 0.0:  # say, the pre-branch advantage at lambda 0: none by construction
        c.verdict, c.note = "0 in every seed", ""
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
    parser.add_argument("--target", choices=TARGETS, default="algorithm",
                        help="what a verdict is about: the algorithms (tasks drawn from a population) or this test set")
    cli = parser.parse_args()
    a = {seed: load_outcomes(run_dir) for seed, run_dir in runs_by_seed(cli.a).items()}
    b = {seed: load_outcomes(run_dir) for seed, run_dir in runs_by_seed(cli.b).items()} if cli.b else None
    splits = list(dict.fromkeys(r["split"] for r in next(iter(a.values()))))
    print(f"A = {cli.a} (seeds {sorted(a)})" + (f"\nB = {cli.b} (seeds {sorted(b)})" if b else ""))
    print(f"per metric: estimate [95% interval] verdict; target: {cli.target} (bench/stats.py), unadjusted for the "
          f"{len(METRICS) * 2} cells per split")
    for split in splits:
        print(f"\n== {split} ==")
        for metric, decoding in METRICS:
            name = f"{metric}, {decoding}"
            gain_a = compare(arm(a, 0, split, decoding, metric), arm(a, -1, split, decoding, metric), cli.delta,
                             cli.target)
            line = f"  {name:18} A end - start {gain_a.cell()}"
            if b:
                difference = compare(arm(a, -1, split, decoding, metric), arm(b, -1, split, decoding, metric),
                                     cli.delta, cli.target)
                line += f" | B - A {difference.cell()}"
            print(line)


if __name__ == "__main__":
    main()
