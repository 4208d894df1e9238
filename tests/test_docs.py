"""The docs: the four algorithm pages share one shape, and every file the README and docs point at exists."""

import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALGORITHM_PAGES = ["docs/grpo.md", "docs/bpo.md", "docs/treepo.md", "docs/branchopd.md"]
SHAPE = ["Overview", "Usage", "The algorithm, in the code", "Implementation details", "Logged metrics", "Results",
         "What did not reproduce, and why"]
# repository paths quoted in the text, e.g. `bench/results/x.txt` or (../bench/results/x.png)
QUOTED_PATH = re.compile(r"(?<![\w/.-])((?:\.\./)?(?:bench|docs|envs|tests)/[\w./-]*"
                         r"\.(?:md|png|txt|html|py|jsonl|sh))")


def read(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


@pytest.mark.parametrize("page", ALGORITHM_PAGES)
def test_algorithm_pages_share_one_shape(page):
    text = read(page)
    assert re.findall(r"^## (.+)$", text, re.M) == SHAPE, f"{page}: its sections differ from {SHAPE}"
    results = text.split("\n## Results\n")[1].split("\n## ")[0]
    assert "\n### Rollout tree\n" in results, f"{page}: no rollout-tree picture under Results"
    assert re.search(r"!\[[^\]]*\]\(\.\./bench/results/tree_\w+\.png\)", results), f"{page}: no tree picture"
    details = text.split("\n## Implementation details\n")[1].split("\n## ")[0]
    numbers = [int(n) for n in re.findall(r"^(\d+)\. ", details, re.M)]
    assert numbers and numbers == list(range(1, len(numbers) + 1)), f"{page}: implementation details not numbered"


@pytest.mark.parametrize("page", ["README.md", *ALGORITHM_PAGES, "docs/envs.md", "docs/trees.md"])
def test_every_quoted_file_exists(page):
    text, base = read(page), os.path.dirname(os.path.join(ROOT, page))
    missing = []
    for link in re.findall(r"\]\(([^)#\s]+)\)", text):  # markdown links and images
        if not link.startswith(("http://", "https://")) and not os.path.exists(os.path.join(base, link)):
            missing.append(link)
    for path in QUOTED_PATH.findall(text):
        if "*" in path or "{" in path or re.search(r"[A-Z]{3,}", path):  # a pattern or a placeholder (ENV)
            continue
        if not (os.path.exists(os.path.join(ROOT, path)) or os.path.exists(os.path.join(base, path))):
            missing.append(path)
    assert not missing, f"{page} points at files that do not exist: {sorted(set(missing))}"


def test_the_checks_catch_a_missing_file_and_a_missing_section(tmp_path, monkeypatch):
    """Positive control: a page with a dead link and a section out of place fails both checks."""
    (tmp_path / "docs").mkdir()
    bad = "# X\n\n## Overview\n\n## Results\n\n![t](../bench/results/no_such_picture.png)\n"
    (tmp_path / "docs" / "x.md").write_text(bad)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", str(tmp_path))
    with pytest.raises(AssertionError, match="no_such_picture"):
        test_every_quoted_file_exists("docs/x.md")
    with pytest.raises(AssertionError, match="sections differ"):
        test_algorithm_pages_share_one_shape("docs/x.md")
