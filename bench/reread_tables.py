"""Re-read the earlier comparison tables (bench/results/compare_*.md, made before per-task outcomes were kept) with
what they still allow: a seed-level test on their mean +- std over seeds.

Those tables judged a difference against twice a standard error that mixed the evaluations' binomial errors (divided
by the number of seeds, although every seed plays the same tasks) with the seed spread. Their per-task outcomes were
not kept, so bench/stats.py's paired error cannot be computed for them. What is left is the seed level: the test-set
mean of each seed varies with the seed, and a Welch t-test on the seeds' means (std given with ddof 0, turned into
ddof 1) gives an estimate, a 95% interval and a verdict at the tables' own seeds: an interval without the task-level
floor bench/stats.py adds, so narrower than the module's where the seeds happen to agree. Verdicts here are
provisional; the tables are to be rerun (bench/compare.py, per-task outcomes, one token budget).

    python bench/reread_tables.py bench/results/compare_webshop.md bench/results/compare_math.md
"""

from __future__ import annotations

import argparse
import math
import re

import stats

CELL = re.compile(r"(\d+\.\d+) \+- (\d+\.\d+)")


def welch(a: tuple[float, float, int], b: tuple[float, float, int]) -> tuple[float, float, float, float]:
    """(estimate, low, high, p) of mean_b - mean_a from (mean, std with ddof 0, seeds) pairs."""
    (mean_a, std_a, n_a), (mean_b, std_b, n_b) = a, b
    var_a, var_b = std_a ** 2 * n_a / max(1, n_a - 1), std_b ** 2 * n_b / max(1, n_b - 1)
    se = math.sqrt(var_a / n_a + var_b / n_b)
    df = se ** 4 / ((var_a / n_a) ** 2 / max(1, n_a - 1) + (var_b / n_b) ** 2 / max(1, n_b - 1) or 1e-300)
    return (mean_b - mean_a, *stats.t_interval(mean_b - mean_a, se, df))


def word(low: float, high: float) -> str:
    return "better" if low > 0 else "worse" if high < 0 else "inconclusive"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tables", nargs="+")
    cli = parser.parse_args()
    for path in cli.tables:
        text = open(path).read()
        seeds = int(re.search(r"(\d+) seed\(s\)", text).group(1))
        print(f"\n# {path} ({seeds} seeds): seed-level Welch t-tests on the table's mean +- std")
        for section in re.split(r"^## ", text, flags=re.M)[1:]:
            header = next(line for line in section.splitlines() if line.startswith("| algorithm |"))
            metrics = [c.strip() for c in header.strip("|").split("|")[1:5]]
            rows = {line.split("|")[1].strip(): [CELL.search(c) for c in line.strip("|").split("|")[1:5]]
                    for line in section.splitlines() if line.startswith("| ") and not line.startswith("| algorithm")
                    and CELL.search(line)}
            start = next(v for k, v in rows.items() if k.startswith("SFT start"))
            grpo = rows["GRPO"]
            print(f"## {section.splitlines()[0]}")
            for name, cells in rows.items():
                if name.startswith("SFT start"):
                    continue
                for metric, cell, begin, reference in zip(metrics, cells, start, grpo):
                    value = (float(cell.group(1)), float(cell.group(2)), seeds)
                    gain = welch((float(begin.group(1)), float(begin.group(2)), seeds), value)
                    line = (f"  {name[:24]:24} {metric:15} over the start {gain[0]:+.3f} [{gain[1]:+.3f}, "
                            f"{gain[2]:+.3f}] {word(gain[1], gain[2])}")
                    if name != "GRPO":
                        against = welch((float(reference.group(1)), float(reference.group(2)), seeds), value)
                        line += (f" | against GRPO {against[0]:+.3f} [{against[1]:+.3f}, {against[2]:+.3f}] "
                                 f"{word(against[1], against[2])} (p {against[3]:.2f})")
                    print(line)


if __name__ == "__main__":
    main()
