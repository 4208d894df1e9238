"""bench/stats.py on hand-built per-task outcomes whose answers are worked out here (a gain every seed shares
exactly, which the old seed-level formula called noise; equivalence; an inconclusive pair with the seeds that would
detect the stated effect, or none where the task part alone is too wide; a single seed; unpaired seeds; no spread at
all; Holm's adjustment; a diagnostic against 0; compute to a threshold), and the intervals' coverage of a known truth
in simulated experiments with a task x algorithm effect."""

import math
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))

import stats  # noqa: E402


def difference_se(se_a, se_b, difference) -> float:
    """The formula the tables used before (bench/summarize_runs.py until per-task outcomes were kept): the evaluations'
    binomial errors divided by the seeds, plus the seed spread (ddof 0)."""
    se_a, se_b, difference = np.asarray(se_a, float), np.asarray(se_b, float), np.asarray(difference, float)
    n = len(difference)
    return float(np.sqrt((np.mean(se_a ** 2) + np.mean(se_b ** 2)) / n + difference.var() / n))


def verdict(gain: float, se: float) -> str:  # the old rule: beyond twice the SE
    return "learns" if gain > 2 * se else "worse" if gain < -2 * se else "within noise"


def start_and_end():
    """100 tasks, 4 seeds. The start (one greedy warm start) wins tasks 0-49 in every seed; each seed's end wins
    those and 6 more, a different 6 per seed: the gain on this test set is exactly +0.06 in every seed."""
    start = {s: {t: float(t < 50) for t in range(100)} for s in range(4)}
    end = {s: {t: float(t < 50 or 50 + 6 * s <= t < 56 + 6 * s) for t in range(100)} for s in range(4)}
    return start, end


def mean_squares_by_hand(d: np.ndarray):
    """The two-way ANOVA mean squares, written out (seeds, tasks, residual)."""
    n, t = d.shape
    rows, cols, grand = d.mean(1), d.mean(0), d.mean()
    residual = ((d - rows[:, None] - cols[None, :] + grand) ** 2).sum() / ((n - 1) * (t - 1))
    return t * ((rows - grand) ** 2).sum() / (n - 1), n * ((cols - grand) ** 2).sum() / (t - 1), residual


def test_a_gain_every_seed_shares_is_better_where_the_old_formula_said_noise():
    start, end = start_and_end()
    d = np.array([[end[s][t] - start[s][t] for t in range(100)] for s in range(4)])
    ms_seeds, ms_tasks, ms_residual = mean_squares_by_hand(d)
    # the seeds agree exactly (MS_s 0); 24 tasks gained once in four seeds: MS_t = 4 var(task means), MS_e 0.0606
    assert ms_seeds == pytest.approx(0) and ms_residual == pytest.approx(24 * 0.75 / (3 * 99))
    c = stats.compare(start, end)  # target `algorithm`: max(MS_s + MS_t - MS_e, MS_s, MS_t) / (n T), n - 1 df
    assert c.estimate == pytest.approx(0.06) and c.se == pytest.approx(math.sqrt(ms_tasks / 400))
    assert c.df == 3 and c.verdict == "better" and c.low > 0.02 and c.target == "algorithm"
    c = stats.compare(start, end, target="test set")  # max(MS_s, MS_e) / (n T): the seed x task floor
    assert c.se == pytest.approx(math.sqrt(ms_residual / 400)) and c.df == 3 and c.verdict == "better"
    # before: binomial errors of both evaluations (divided by the seeds) plus the seed spread: 2 SE > 0.06
    se_start, se_end = math.sqrt(0.5 * 0.5 / 100), math.sqrt(0.56 * 0.44 / 100)
    old = difference_se([se_start] * 4, [se_end] * 4, [0.06] * 4)
    assert old == pytest.approx(0.0352, abs=1e-4) and verdict(0.06, old) == "within noise"


def test_equivalent_within_delta_and_the_delta_is_stated():
    """6 seeds, 100 tasks, A wins 0-49; B is A with task 50 won in even seeds and task 0 lost in odd ones:
    differences +0.01 and -0.01 alternately, mean 0, interval inside +-0.03 for either target."""
    a = {s: {t: float(t < 50) for t in range(100)} for s in range(6)}
    b = {s: {t: float((t < 50 and not (s % 2 and t == 0)) or (s % 2 == 0 and t == 50)) for t in range(100)}
         for s in range(6)}
    for target in stats.TARGETS:
        c = stats.compare(a, b, target=target)
        assert c.estimate == pytest.approx(0.0) and -0.03 < c.low < c.high < 0.03 and c.df == 5
        assert c.verdict == "equivalent within +-0.03" and c.seeds_needed is None
    assert stats.compare(a, b, delta=0.005).verdict == "inconclusive"  # a tighter margin cannot be claimed


def test_inconclusive_says_how_many_seeds_would_detect_the_stated_effect():
    """2 seeds, 50 tasks; B wins 1 and 3 more tasks than A. For the test set: the seeds' spread (MS_s 0.04 beats
    MS_e) gives se 0.02 on 1 df; the seeds that detect 0.03 at 80% power: n >= (t_.975 + t_.80)^2 * 0.0008 / 0.03^2
    at n - 1 df: 9 give (2.306 + 0.889)^2 / 9 * 0.0008 = 0.00091 > 0.0009, 10 give 0.00088 -> 10. For the
    algorithm, the task part (MS_t - MS_e) / (n T) = 0.000384 alone exceeds 0.03^2 / (1.96 + 0.84)^2 = 0.000115:
    no seed count decides; more tasks would."""
    a = {s: {t: float(t < 25) for t in range(50)} for s in range(2)}
    b = {0: {t: float(t < 26) for t in range(50)}, 1: {t: float(t < 28) for t in range(50)}}
    c = stats.compare(a, b, target="test set")
    assert c.estimate == pytest.approx(0.04) and c.df == 1 and c.se == pytest.approx(0.02)
    assert c.verdict == "inconclusive" and c.seeds_needed == 10
    assert "about 10 seeds per arm would detect a 0.03 difference" in c.cell()
    c = stats.compare(a, b)
    ms_seeds, ms_tasks, ms_residual = mean_squares_by_hand(np.array([[0.0] * 25 + [1.0] + [0.0] * 24,
                                                                     [0.0] * 25 + [1.0] * 3 + [0.0] * 22]))
    assert c.fixed_variance == pytest.approx((ms_tasks - ms_residual) / 100) and c.seeds_needed is None
    assert c.verdict == "inconclusive" and "more tasks, not more seeds" in c.cell()


def test_the_seed_count_is_for_the_stated_effect_not_the_observed_difference():
    """Plugging the observed difference in as the truth made the count a random number (a true +0.02 read from 3
    seeds gave 9 to 57): two comparisons with the same variance and different estimates ask for the same seeds."""
    rng = np.random.default_rng(0)
    d = (rng.random((3, 200)) < 0.1).astype(float) - (rng.random((3, 200)) < 0.1).astype(float)
    near, far = stats.paired(d, target="test set"), stats.paired(d + 0.01, target="test set")
    assert near.se == pytest.approx(far.se) and near.estimate != pytest.approx(far.estimate)
    assert near.verdict == far.verdict == "inconclusive" and near.seeds_needed == far.seeds_needed > 3
    assert stats.paired(d, target="test set", effect=0.06).seeds_needed < near.seeds_needed


def test_one_seed_is_at_most_inconclusive_and_unpaired_seeds_use_welch():
    start, end = start_and_end()
    single = stats.compare({0: start[0]}, {0: end[0]})
    assert single.verdict == "inconclusive" and "no seed spread" in single.note  # however large the gain looks
    unpaired = stats.compare({s: start[s] for s in (0, 1)}, {s: end[s] for s in (2, 3)})
    assert unpaired.estimate == pytest.approx(0.06) and unpaired.seeds == 2 and unpaired.se > 0


def test_no_spread_at_all_is_inconclusive_not_equivalent():
    """3 seeds, 40 tasks, every task lost by both arms in every seed (the code-repair env's held-out splits): the
    interval has zero width because no variance was observed, which bounds nothing, so the verdict is not
    "equivalent within +-0.03"; a positive control, one task won by B in one seed, measures a spread."""
    lost = {s: {t: 0.0 for t in range(40)} for s in range(3)}
    c = stats.compare(lost, lost)
    assert (c.estimate, c.low, c.high) == (0.0, 0.0, 0.0)
    assert c.verdict == "inconclusive" and c.note == stats.NO_SPREAD and c.note in c.cell()
    assert stats.holm([c])[0].verdict == "inconclusive"
    one_won = {s: {t: float(s == 0 and t == 0) for t in range(40)} for s in range(3)}
    c = stats.compare(lost, one_won)
    assert c.se > 0 and c.note != stats.NO_SPREAD
    # zero observed variance with a nonzero estimate is no more certain: one extra task won by B in every seed read
    # "+0.005 [+0.005, +0.005] better"; for the test set it has no spread, for the algorithm a task part
    always = {s: {t: float(t == 0) for t in range(200)} for s in range(3)}
    lost = {s: {t: 0.0 for t in range(200)} for s in range(3)}
    c = stats.compare(lost, always, target="test set")
    assert (c.low, c.high, c.p) == (pytest.approx(0.005), pytest.approx(0.005), 1.0)
    assert c.verdict == "inconclusive" and c.note == stats.NO_SPREAD
    assert stats.holm([c, c])[0].verdict == "inconclusive"
    c = stats.compare(lost, always)
    assert c.low < 0 < c.high and c.verdict != "better"


def test_a_diagnostic_against_zero_over_seeds():
    """Three seeds' means 1, 2, 3: mean 2, sd 1, t(2) interval 2 +- 4.303 / sqrt(3), inconclusive, with no seed count
    (the quantity has no smallest effect worth detecting)."""
    c = stats.mean_over_seeds([1.0, 2.0, 3.0])
    assert (c.estimate, c.df) == (2.0, 2.0) and c.high - 2.0 == pytest.approx(4.302653 / math.sqrt(3), rel=1e-5)
    assert c.verdict == "inconclusive" and c.seeds_needed is None  # a diagnostic has no smallest effect to detect
    assert stats.mean_over_seeds([-0.01, -0.02, -0.015]).verdict == "below 0"
    assert stats.mean_over_seeds([0.9, 1.1, math.nan, 1.0]).verdict == "above 0"  # a seed without the quantity
    assert stats.mean_over_seeds([0.5]).verdict == "inconclusive"  # one seed: no spread
    assert stats.mean_over_seeds([0.0, 0.0, 0.0]).verdict == "0 in every seed"
    with pytest.raises(ValueError):
        stats.mean_over_seeds([math.nan])


def test_holm_adjusts_the_family():
    def made(p):
        return stats.Comparison(estimate=0.05, se=0.02, df=50, low=0.01, high=0.09, p=p, seeds=5, tasks=100)
    assert [c.verdict for c in stats.holm([made(0.01), made(0.02), made(0.04)])] == ["better"] * 3
    verdicts = [c.verdict for c in stats.holm([made(0.04), made(0.01), made(0.03)])]
    assert verdicts == ["inconclusive", "better", "inconclusive"]  # 0.03 > 0.05 / 2 stops the step-down


def test_tokens_to_reach_a_threshold_held_twice_and_the_ratio_interval():
    tokens = [0, 100, 200, 300, 400]
    assert stats.tokens_to_reach(tokens, [0.1, 0.5, 0.3, 0.5, 0.6], 0.5) == 300  # 0.5 at 100 is not held
    assert stats.tokens_to_reach(tokens, [0.1, 0.2, 0.3, 0.4, 0.6], 0.5) == math.inf
    ratio, low, high, missing = stats.ratio_interval([0.5, 0.5, 0.5, math.inf])
    assert (ratio, low, high, missing) == (pytest.approx(0.5), pytest.approx(0.5), pytest.approx(0.5), 1)
    ratio, low, high, _ = stats.ratio_interval([0.5, 2.0])
    assert ratio == pytest.approx(1.0) and low < 0.5 and high > 2.0


def test_outcomes_files_read_the_latest_evaluation(tmp_path):
    import json
    records = [{"step": 0, "split": "test", "decoding": "greedy", "sample": 0, "task_id": t, "won": t == 0,
                "reward": 1.0 * (t == 0)} for t in range(3)]
    again = [dict(records[1], won=True, reward=1.0)]  # step 0 evaluated again (a resumed run): the later wins
    (tmp_path / "outcomes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records + again))
    values = stats.task_values(stats.load_outcomes(str(tmp_path)), 0, "test", "greedy", "success")
    assert values == {0: 1.0, 1: 1.0, 2: 0.0}
    assert np.mean(list(values.values())) == pytest.approx(2 / 3)


def test_the_reach_ratio_pairs_seeds_where_both_runs_held_the_threshold_and_counts_the_others():
    inf = math.inf
    line = stats.reach_ratio([100, 200, inf, 300], [200, 400, 100, inf])
    assert line.startswith("0.50x [0.50, 0.50] over the 2 of 4 seeds where both runs held it")
    assert line.endswith("never held it: 1 of this algorithm's runs, 1 of GRPO's")
    # GRPO itself never holding it in most seeds leaves no interval, and says so (not "infx [nan, nan]")
    assert stats.reach_ratio([100, 100, 100], [inf, inf, 50]).startswith("2.00x (no interval from one seed) over the 1")
    assert stats.reach_ratio([inf, inf], [inf, 50]).startswith("no ratio over the 0 of 2 seeds")


# ---------------------------------------------------------------------------------------------------
# coverage of a known truth: simulated experiments, tasks and seeds both drawn
# ---------------------------------------------------------------------------------------------------
def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def simulated_differences(rng, seeds: int, interaction: float, tasks: int = 200, effect: float = 0.2,
                          seed_sd: float = 0.1, noise: float = 1.0) -> np.ndarray:
    """One experiment's (seeds, tasks) table of B - A successes: a task's difficulty (logit sd 2.5, so that most
    tasks are nearly always won or lost, as greedy evaluation is), B's advantage `effect` plus a task x algorithm
    effect of sd `interaction` (tasks B suits better or worse), each arm's seed effect, and seed x task noise."""
    difficulty, suits = rng.normal(0, 2.5, tasks), rng.normal(0, interaction, tasks)
    won_a = rng.random((seeds, tasks)) < sigmoid(difficulty + rng.normal(0, seed_sd, (seeds, 1))
                                                 + rng.normal(0, noise, (seeds, tasks)))
    won_b = rng.random((seeds, tasks)) < sigmoid(difficulty + effect + suits + rng.normal(0, seed_sd, (seeds, 1))
                                                 + rng.normal(0, noise, (seeds, tasks)))
    return won_b.astype(float) - won_a.astype(float)


def population_difference(rng, interaction: float, draws: int = 2_000_000, effect: float = 0.2, seed_sd: float = 0.1,
                          noise: float = 1.0) -> float:
    """The truth the `algorithm` target estimates: B - A's success over the whole task population and all seeds
    (Monte Carlo, standard error about 0.0002)."""
    difficulty = rng.normal(0, 2.5, draws)
    a = sigmoid(difficulty + rng.normal(0, seed_sd, draws) + rng.normal(0, noise, draws))
    b = sigmoid(difficulty + effect + rng.normal(0, interaction, draws) + rng.normal(0, seed_sd, draws)
                + rng.normal(0, noise, draws))
    return float((b - a).mean())


def coverage(seeds: int, interaction: float, target: str, experiments: int = 500) -> float:
    rng = np.random.default_rng(seeds)
    truth = population_difference(rng, interaction)
    covered = 0
    for _ in range(experiments):
        c = stats.paired(simulated_differences(rng, seeds, interaction), target=target)
        covered += c.low <= truth <= c.high
    return covered / experiments


@pytest.mark.parametrize("seeds", [3, 6])
def test_the_algorithm_interval_covers_the_population_difference(seeds):
    """500 simulated experiments of 200 tasks with a strong task x algorithm effect (logit sd 1.0): the `algorithm`
    interval holds the population difference in at least 93% of them (0.93 is what the seed-level interval of
    the earlier module fell short of: 0.80-0.93 in an independent audit)."""
    assert coverage(seeds, 1.0, "algorithm") >= 0.93


def test_the_test_set_interval_does_not_cover_the_population_with_many_seeds():
    """The positive control: the `test set` interval, which treats the 200 tasks as fixed, covers the population
    difference in under 90% of experiments at 20 seeds (its interval shrinks with the seeds, the task-sampling error
    does not), while the `algorithm` interval still holds."""
    assert coverage(20, 1.0, "test set", experiments=300) < 0.90
    assert coverage(20, 1.0, "algorithm", experiments=300) >= 0.93
