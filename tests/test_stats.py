"""bench/stats.py on hand-built per-task outcomes whose answers are worked out here: a gain every seed shares
exactly (which the old seed-level formula called noise), equivalence, an inconclusive pair with the seeds it would
take, a single seed, unpaired seeds, no spread at all, Holm's adjustment, a diagnostic against 0, and compute to a
threshold."""

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


def test_a_gain_every_seed_shares_is_better_where_the_old_formula_said_noise():
    start, end = start_and_end()
    c = stats.compare(start, end)
    # the seeds agree exactly (spread 0); the seed x task floor: 24 tasks with one 1 in four seeds leave residuals
    # 0.75 and -0.25 x 3 (squares 0.75 per task): MS = 24 * 0.75 / (3 * 99), so se^2 = MS / 100 / 4, df = 297
    ms = 24 * 0.75 / (3 * 99)
    assert c.estimate == pytest.approx(0.06) and c.se == pytest.approx(math.sqrt(ms / 100 / 4))
    assert c.df == 297 and c.verdict == "better" and c.low > 0.03
    # before: binomial errors of both evaluations (divided by the seeds) plus the seed spread: 2 SE > 0.06
    se_start, se_end = math.sqrt(0.5 * 0.5 / 100), math.sqrt(0.56 * 0.44 / 100)
    old = difference_se([se_start] * 4, [se_end] * 4, [0.06] * 4)
    assert old == pytest.approx(0.0352, abs=1e-4) and verdict(0.06, old) == "within noise"


def test_equivalent_within_delta_and_the_delta_is_stated():
    """6 seeds, 100 tasks, A wins 0-49; B is A with task 50 won in even seeds and task 0 lost in odd ones:
    differences +0.01 and -0.01 alternately, mean 0, interval well inside +-0.03."""
    a = {s: {t: float(t < 50) for t in range(100)} for s in range(6)}
    b = {s: {t: float((t < 50 and not (s % 2 and t == 0)) or (s % 2 == 0 and t == 50)) for t in range(100)}
         for s in range(6)}
    c = stats.compare(a, b)
    assert c.estimate == pytest.approx(0.0) and -0.03 < c.low < c.high < 0.03
    assert c.verdict == "equivalent within +-0.03" and c.seeds_needed is None
    assert stats.compare(a, b, delta=0.005).verdict == "inconclusive"  # a tighter margin cannot be claimed


def test_inconclusive_says_how_many_seeds_would_decide():
    """2 seeds, 50 tasks; B wins 1 and 3 more tasks than A: seed differences 0.02 and 0.06. The spread
    var = 0.0008 beats the seed x task floor; t(1 df) makes the interval wide; 80% power at the observed +0.04
    needs n >= (t_.975 + t_.80)^2 * 0.0008 / 0.04^2 at n - 1 df: 6 seeds give (2.571 + 0.920)^2 / 2 = 6.09 > 6,
    7 give (2.447 + 0.906)^2 / 2 = 5.62 <= 7 -> 7 seeds per arm (a normal z would say 4)."""
    a = {s: {t: float(t < 25) for t in range(50)} for s in range(2)}
    b = {0: {t: float(t < 26) for t in range(50)}, 1: {t: float(t < 28) for t in range(50)}}
    c = stats.compare(a, b)
    assert c.estimate == pytest.approx(0.04) and c.df == 1 and c.se == pytest.approx(0.02)
    assert c.verdict == "inconclusive" and c.seeds_needed == 7
    assert "7 seeds per arm" in c.cell()


def test_an_inconclusive_comparison_always_asks_for_more_seeds_than_it_has():
    """B is A with a few tasks flipped up and down per seed (Poisson 4 each way, 200 tasks): the seed spread is
    small, the interval borders the margin. With the normal z in place of t, 27 of these 64 inconclusive
    comparisons were told that as few seeds as they already had would decide (3 seeds: "about 2")."""
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(200):
        seeds, tasks = int(rng.integers(2, 7)), 200
        a = {s: {t: float(t % 2) for t in range(tasks)} for s in range(seeds)}
        b = {}
        for s in range(seeds):
            up, down = rng.poisson(4), rng.poisson(4)  # tasks A lost that B wins, and A won that B loses
            b[s] = {t: 1.0 if t % 2 == 0 and t < 2 * up else 0.0 if t % 2 == 1 and t < 2 * down else float(t % 2)
                    for t in range(tasks)}
        c = stats.compare(a, b)
        if c.verdict == "inconclusive":
            checked += 1
            assert c.seeds_needed > seeds, (seeds, c)
    assert checked == 64


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


def test_a_diagnostic_against_zero_over_seeds():
    """Three seeds' means 1, 2, 3: mean 2, sd 1, t(2) interval 2 +- 4.303 / sqrt(3); to tell a per-seed sd of 1 from
    0 at a true mean of 2 takes n with n >= (t_.975 + t_.80)^2 / 4 at n - 1 df: 4 gives 4.3, 5 gives 3.45."""
    c = stats.mean_over_seeds([1.0, 2.0, 3.0])
    assert (c.estimate, c.df) == (2.0, 2.0) and c.high - 2.0 == pytest.approx(4.302653 / math.sqrt(3), rel=1e-5)
    assert c.verdict == "inconclusive" and c.seeds_needed == 5
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
