"""How big the four algorithm scripts are, and what each one's diff against the skeleton is made of.

For a git revision and the working tree: each script's lines that are neither blank nor `#` comments, and
`diff grpo_baseline.py SCRIPT | grep -c '^[<>]'`, `main()`'s lines, the module-level names a reader meets above
their definition (a use on an earlier line than the `def`, `class` or assignment that defines the name); then, for
the working tree, the diff lines of each script by the region they lie in (tests/test_blocks.py's regions: the
docstring, the flags, each `# ALGO LOGIC:` block; as difflib aligns the two files, so the sum can differ from
diff's count by a few lines).

    python bench/script_sizes.py d4d0bd4
"""
from __future__ import annotations

import argparse
import ast
import collections
import difflib
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from test_blocks import SCRIPTS, SKELETON, regions  # noqa: E402


def source(name: str, revision: str | None) -> list[str]:
    if revision is None:
        with open(os.path.join(ROOT, name)) as f:
            return f.read().splitlines()
    return subprocess.run(["git", "show", f"{revision}:{name}"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.splitlines()


def size(lines: list[str]) -> int:
    return sum(1 for line in lines if line.strip() and not line.strip().startswith("#"))


def gnu_diff_lines(skeleton: str, script: str, revision: str | None) -> int:
    """What `diff grpo_baseline.py SCRIPT | grep -c '^[<>]'` prints, at `revision` (None: the working tree)."""
    texts = [("\n".join(source(name, revision)) + "\n").encode() for name in (skeleton, script)]
    with tempfile.TemporaryDirectory() as tmp:
        paths = [os.path.join(tmp, f"{i}.py") for i in range(2)]
        for path, text in zip(paths, texts):
            with open(path, "wb") as f:
                f.write(text)
        out = subprocess.run(["diff", *paths], capture_output=True, text=True).stdout
    return sum(line[:1] in "<>" for line in out.splitlines())


def used_above_definition(lines: list[str]) -> list[str]:
    """Module-level names (def, class, assignment) used on a line above the one that defines them."""
    tree = ast.parse("\n".join(lines))
    defined: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.setdefault(node.name, node.lineno)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        defined.setdefault(name.id, node.lineno)
    return sorted({node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
                   and node.lineno < defined.get(node.id, 0)})


def main_lines(lines: list[str]) -> int:
    main = next(node for node in ast.parse("\n".join(lines)).body
                if isinstance(node, ast.FunctionDef) and node.name == "main")
    return size(lines[main.lineno - 1:main.end_lineno])


def by_region(skeleton: list[str], script: list[str]) -> collections.Counter:
    left, right = regions(skeleton), regions(script)
    counts: collections.Counter = collections.Counter()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, skeleton, script, autojunk=False).get_opcodes():
        if tag != "equal":
            counts.update(left[i][0] if left[i][0] != "algo" else left[i][1] for i in range(i1, i2))
            counts.update(right[j][0] if right[j][0] != "algo" else right[j][1] for j in range(j1, j2))
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("revision", help="the revision to compare the working tree with (e.g. the issue's start)")
    cli = parser.parse_args()
    print(f"{'script':18} {'lines ' + cli.revision:>16} {'lines now':>10} {'diff ' + cli.revision:>15} {'diff now':>9}")
    for name in (SKELETON, *SCRIPTS):
        before, now = size(source(name, cli.revision)), size(source(name, None))
        diffs = "" if name == SKELETON else (f"{gnu_diff_lines(SKELETON, name, cli.revision):>15} "
                                             f"{gnu_diff_lines(SKELETON, name, None):>9}")
        print(f"{name:18} {before:>16} {now:>10} {diffs}" + (f"  ({(now - before) / before:+.1%})"
                                                              if name == SKELETON else ""))
    print(f"\n{'script':18} {'main() ' + cli.revision:>16} {'main() now':>10}   names used above their definition "
          f"({cli.revision} -> now)")
    for name in (SKELETON, *SCRIPTS):
        before, now = source(name, cli.revision), source(name, None)
        early = used_above_definition(now)
        print(f"{name:18} {main_lines(before):>16} {main_lines(now):>10}   {len(used_above_definition(before))} -> "
              f"{len(early)}: {', '.join(early)}")
    skeleton = source(SKELETON, None)
    for name in SCRIPTS:
        counts = by_region(skeleton, source(name, None))
        print(f"\n{name}: diff lines by region (difflib's alignment, {sum(counts.values())} in all)")
        for region, n in counts.most_common():
            print(f"  {n:4d}  {region[:100]}")


if __name__ == "__main__":
    main()
