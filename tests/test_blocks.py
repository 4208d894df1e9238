"""The four algorithm scripts are one skeleton (grpo_baseline.py) plus each algorithm's own code, and `diff
grpo_baseline.py SCRIPT` shows only the algorithm.

A script is read as regions. A region starts at a marker line, `# TRY NOT TO MODIFY: name` (shared) or
`# ALGO LOGIC: name` (the algorithm's own), and runs to the next marker or section banner (`# ---`); an indented
marker's region also ends where the code dedents below it. Two more regions: the module docstring (everything
before `from __future__`) and the flags (from `@dataclass class Args` to the next marker: the script's flags,
defaults and presets). Lines in no region (imports, banners, `def main`) are shared too.

(a) every script has the skeleton's shared blocks in the skeleton's order, and main() the same sequence of markers;
(b) every shared block is line for line the skeleton's;
(c) every line of the diff against the skeleton lies in the docstring, the flags or an `# ALGO LOGIC:` region.
Blank lines are layout: they close a block without belonging to it, and a blank line of the diff is no code.
"""

import difflib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKELETON = "grpo_baseline.py"
SCRIPTS = ["bpo.py", "treepo.py", "branchopd.py"]
MARKER = re.compile(r"^(\s*)# (TRY NOT TO MODIFY|ALGO LOGIC):(.*)$")


def regions(lines: list[str]) -> list[tuple[str, str, int]]:
    """Per line: (kind, marker text, marker indent); kind is docstring, flags, shared (a TRY NOT TO MODIFY
    region), algo or unmarked."""
    labels, current = [], ("docstring", "", -1)
    for i, line in enumerate(lines):
        marker = MARKER.match(line)
        indent = len(line) - len(line.lstrip())
        if line.startswith("from __future__"):
            current = ("unmarked", "", -1)
        elif line.startswith("class Args") and i and lines[i - 1].startswith("@dataclass"):
            labels[-1] = current = ("flags", "", -1)
        elif line.startswith("# ---"):
            current = ("unmarked", "", -1)
        elif marker:
            current = ("shared" if marker.group(2) == "TRY NOT TO MODIFY" else "algo", line.strip(), indent)
        elif line.strip() and current[2] > 0 and indent < current[2]:
            current = ("unmarked", "", -1)  # the code dedents below an indented region's marker
        labels.append(current)
    return labels


def shared_blocks(lines: list[str]) -> list[tuple[str, list[str]]]:
    labels = regions(lines)
    blocks: list[tuple[str, list[str]]] = []
    for line, (kind, header, _) in zip(lines, labels):
        if kind == "shared" and MARKER.match(line):
            blocks.append((header, []))
        if kind == "shared":
            blocks[-1][1].append(line)
    for _, body in blocks:  # the blank lines that close a block are layout, not code
        while body and not body[-1].strip():
            body.pop()
    return blocks


def main_markers(lines: list[str]) -> list[str]:
    start = next(i for i, line in enumerate(lines) if line.startswith("def main("))
    end = next(i for i in range(start + 1, len(lines)) if lines[i] and not lines[i][0].isspace())
    return [("shared: " + MARKER.match(line).group(3).strip()) if "TRY NOT TO MODIFY" in line else "algo"
            for line in lines[start:end] if MARKER.match(line)]


def outside_algorithm(skeleton: list[str], script: list[str]) -> list[str]:
    """The diff's lines (either side) that lie in no docstring, flags or ALGO LOGIC region."""
    left, right = regions(skeleton), regions(script)
    allowed = ("docstring", "flags", "algo")
    bad = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, skeleton, script, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        bad += [f"- {i + 1}: {skeleton[i]}" for i in range(i1, i2) if left[i][0] not in allowed and skeleton[i].strip()]
        bad += [f"+ {j + 1}: {script[j]}" for j in range(j1, j2) if right[j][0] not in allowed and script[j].strip()]
    return bad


def read(name: str) -> list[str]:
    return (ROOT / name).read_text().splitlines()


def check(skeleton: list[str], script: list[str]) -> list[str]:
    """Everything (a), (b) and (c) find wrong with `script`, as readable lines (empty: it passes)."""
    problems = []
    ours, theirs = shared_blocks(skeleton), shared_blocks(script)
    if [h for h, _ in ours] != [h for h, _ in theirs]:
        problems.append("(a) shared blocks differ: " + "\n".join(difflib.unified_diff(
            [h for h, _ in ours], [h for h, _ in theirs], lineterm="", n=0)))
    if main_markers(skeleton) != main_markers(script):
        problems.append("(a) main()'s markers differ: " + "\n".join(difflib.unified_diff(
            main_markers(skeleton), main_markers(script), lineterm="", n=0)))
    theirs_by_header = dict(theirs)
    for header, body in ours:
        if header in theirs_by_header and theirs_by_header[header] != body:
            problems.append(f"(b) `{header}` differs:\n" + "\n".join(difflib.unified_diff(
                body, theirs_by_header[header], lineterm="", n=0)))
    bad = outside_algorithm(skeleton, script)
    if bad:
        problems.append(f"(c) {len(bad)} diff lines outside the docstring, flags and ALGO LOGIC:\n" + "\n".join(bad))
    return problems


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_script_is_the_skeleton_plus_its_algorithm(script):
    problems = check(read(SKELETON), read(script))
    assert not problems, f"{script}:\n" + "\n\n".join(problems)


def test_the_check_catches_an_edited_shared_block_and_a_stray_line():
    skeleton = read(SKELETON)
    assert not check(skeleton, skeleton)
    shared = next(i for i, line in enumerate(skeleton) if "# TRY NOT TO MODIFY: seeding" in line)
    edited = skeleton[:shared + 1] + ["    random.seed(0)"] + skeleton[shared + 1:]
    problems = check(skeleton, edited)
    assert any(p.startswith("(b) `# TRY NOT TO MODIFY: seeding") for p in problems)
    assert any(p.startswith("(c) 1 diff lines") and "random.seed(0)" in p for p in problems)
    algo = next(i for i, line in enumerate(skeleton) if "# ALGO LOGIC: 2. advantages" in line)
    assert not check(skeleton, skeleton[:algo + 1] + ["        pass"] + skeleton[algo + 1:])  # the algorithm's own
    renamed = [line.replace("# TRY NOT TO MODIFY: seeding", "# ALGO LOGIC: seeding") for line in skeleton]
    assert any(p.startswith("(a)") for p in check(skeleton, renamed))
