"""Every measured number the README and docs quote is in a committed file: a results file under bench/results/ (a
table, a bench's printed output, the per-task data's tables) or a test that asserts it (a worked example).

A number here is a decimal with at least two places (0.391, +0.015, 1.68x); it must appear, as written, in one of
those files. That is a loose check (the number may stand there for something else), but it fails on a typo, on a
number from runs that were not kept, and on a table rerun without the prose that quotes it being updated. Numbers
that are not measurements (versions, arXiv ids, a statistical constant) are listed below with their reason.
"""

import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUMBER = re.compile(r"(?<![\w.])[+-]?(\d+\.\d{2,})x?(?![\w.])")
ARXIV = re.compile(r"\b\d{4}\.\d{5}\b")
NOT_MEASUREMENTS = {
    "3.11": "the Python version",
    "4.30": "Student's t quantile for 2 degrees of freedom (docs/evidence.md)",
}
QUOTED_AS_OLD = {  # a superseded claim quoted in the before/after table of docs/evidence.md, as it was worded
    ("docs/evidence.md", "0.537"),
}


def sources() -> str:
    paths = [p for p in glob.glob(os.path.join(ROOT, "bench", "results", "**", "*"), recursive=True)
             if os.path.isfile(p) and not p.endswith((".png", ".gz"))]
    paths += [p for p in glob.glob(os.path.join(ROOT, "tests", "*.py")) if p != os.path.abspath(__file__)]
    texts = []
    for path in paths:
        with open(path, errors="replace") as f:
            texts.append(f.read())
    return "\n".join(texts)


def test_every_quoted_number_is_in_a_committed_file():
    corpus = sources()
    unsourced = []
    for doc in ["README.md", *sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))]:
        with open(os.path.join(ROOT, doc)) as f:
            for number, line in enumerate(f, start=1):
                line = ARXIV.sub("", line)
                for match in NUMBER.finditer(line):
                    value = match.group(1)
                    if value in NOT_MEASUREMENTS or (doc, value) in QUOTED_AS_OLD or value in corpus:
                        continue
                    unsourced.append(f"{doc}:{number}: {match.group(0)}")
    assert not unsourced, ("numbers quoted in no committed results file (commit the output that prints them, or "
                           "reword):\n" + "\n".join(unsourced))
