"""The code-repair tasks: bugs injected into the small packages of `envs/swe/packages/`, kept when the
package's own tests catch them.

A data dir holds `tasks.jsonl` (one task a line) and `packages/<name>/` (a module `<name>.py`, its tests
under `tests/`, and a `pytest.ini` that puts the package on the import path). A task reads

    {"id": "roman_numerals__flip_operator__26", "package": "roman_numerals", "split": "train",
     "kind": "flip_operator", "file": "roman_numerals.py", "line": 26,
     "original_line": "    if number < 1 or number > 3999:",
     "buggy_line": "    if number < 1 or number >= 3999:",
     "fail_to_pass": ["tests/test_roman_numerals.py::test_large_numbers", ...],
     "pass_to_pass": ["tests/test_roman_numerals.py::test_add_roman", ...]}

The buggy package is the package with line `line` (1-based) of `file` replaced by `buggy_line`; the fix
puts `original_line` back. With the bug the `fail_to_pass` tests fail and the `pass_to_pass` tests
pass; without it all pass. `load_tasks()` reads the bundled tasks, `load_tasks(dir)` a data dir of your
own in the same format.

Building (`python -m envs.swe.tasks --rebuild`): for each package, every candidate bug of
`envs.swe.bugs` is listed, ordered with `random.Random(f"{seed}:{package}")` (kinds interleaved), and
tried in that order, at most one kept task per line, until `per_package` are kept or `max_tries` were
tried. A try copies the package to a temp dir, writes the bug, and runs the whole test suite once
(`python -m pytest -q -p no:cacheprovider -p no:randomly`, junit XML report, PYTHONDONTWRITEBYTECODE=1,
PYTHONHASHSEED=0, entry-point plugins off, a CPU time limit per test and a wall clock limit per run). A
bug is kept when at least one test fails with it (fail_to_pass), at least one passes with it
(pass_to_pass), and nothing ran out of time or memory.

Splits: the packages of `UNSEEN_PACKAGES` are held out whole (`test_unseen_packages`); of each other
package's tasks, ordered by a hash of the task id, the first 20% are `test_unseen_bugs`, the next 10%
`eval` and the rest `train`. Rebuilding gives the same file byte for byte.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from envs.swe.bugs import KINDS, Bug, find_bugs, order_bugs

BUNDLED_DIR = Path(__file__).resolve().parent  # the bundled data dir: tasks.jsonl and packages/
PACKAGES_DIR = str(BUNDLED_DIR / "packages")
UNSEEN_PACKAGES = ("caesar_cipher", "calendar_math", "graph_paths", "inventory", "json_path")
SPLITS = ("train", "eval", "test_unseen_bugs", "test_unseen_packages")
TEST_BUGS_PERCENT = 20
EVAL_PERCENT = 10
PER_PACKAGE = 18
MAX_TRIES = 45
TIMEOUT_S = 10.0       # wall clock, one test run
TEST_CPU_LIMIT_S = 1.0  # CPU time, one test (a bug that loops forever stops here, the same way every time)
MEMORY_LIMIT = 2 << 30  # bytes of address space for a test run
FIELDS = ("id", "package", "split", "kind", "file", "line", "original_line", "buggy_line", "fail_to_pass",
          "pass_to_pass")
REJECTIONS = ("timeout", "memory_error", "no_fail_to_pass", "no_pass_to_pass")
COPY_IGNORE = shutil.ignore_patterns("__pycache__", ".pytest_cache", "*.pyc")

# Loaded into each test run with `-p swe_guard`: a CPU time limit per test (stopping the session at the
# first test that ran out) and an address space limit for the whole run.
GUARD_PLUGIN = '''"""Limits for the bug checks of envs/swe/tasks.py."""
import os
import resource
import signal

import pytest

LIMIT = float(os.environ.get("SWE_TEST_CPU_LIMIT", "1.0"))
REPORT = os.environ.get("SWE_TIMEOUT_REPORT", "")


class CpuTimeout(BaseException):
    """A test ran past its CPU time."""


def _expired(signum, frame):
    raise CpuTimeout("test used more than %s s of CPU time" % LIMIT)


def pytest_configure(config):
    memory = int(os.environ.get("SWE_MEMORY_LIMIT", "0"))
    if memory > 0:
        try:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        except (ValueError, OSError):
            pass


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    previous = signal.signal(signal.SIGPROF, _expired)
    signal.setitimer(signal.ITIMER_PROF, LIMIT)
    outcome = yield
    signal.setitimer(signal.ITIMER_PROF, 0)
    signal.signal(signal.SIGPROF, previous)
    if outcome.excinfo is not None and issubclass(outcome.excinfo[0], CpuTimeout):
        if REPORT:
            with open(REPORT, "a") as handle:
                handle.write(item.nodeid + "\\n")
        item.session.shouldstop = "a test ran past its CPU time"
'''


# ---------------------------------------------------------------------------------------------------
# running a package's tests
# ---------------------------------------------------------------------------------------------------
@dataclass
class SuiteRun:
    """Per-test outcomes ("passed", "failed", "error", "skipped") of one run, by test id
    ("tests/test_x.py::test_y")."""

    outcomes: dict[str, str] = field(default_factory=dict)
    timed_out: bool = False
    memory_error: bool = False
    returncode: int | None = None
    output: str = ""

    def passed(self) -> list[str]:
        return sorted(test for test, outcome in self.outcomes.items() if outcome == "passed")


def check_command(report: str | None = None) -> list[str]:
    """The pytest command of a check, run in the package dir."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
               "--rootdir", "."]
    if report:
        command += ["-p", "swe_guard", f"--junitxml={report}", "-o", "junit_family=xunit1"]
    return command + ["tests"]


def run_tests(package_dir, timeout: float = TIMEOUT_S, cpu_limit: float = TEST_CPU_LIMIT_S,
              memory_limit: int = MEMORY_LIMIT) -> SuiteRun:
    """Run the test suite of the package in `package_dir` once (in place: pass a copy) and read each
    test's outcome from the junit XML report."""
    package_dir = Path(package_dir).resolve()
    with tempfile.TemporaryDirectory(prefix="swe-guard-") as scratch:
        scratch = Path(scratch)
        (scratch / "swe_guard.py").write_text(GUARD_PLUGIN)
        report, stops = scratch / "report.xml", scratch / "timeouts.txt"
        env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST", "PYTHON"))}
        env.update(PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
                   PYTHONPATH=os.pathsep.join([str(package_dir), str(scratch)]),
                   SWE_TEST_CPU_LIMIT=str(cpu_limit), SWE_TIMEOUT_REPORT=str(stops),
                   SWE_MEMORY_LIMIT=str(memory_limit))
        run = SuiteRun()
        try:
            process = subprocess.run(check_command(str(report)), cwd=package_dir, env=env, timeout=timeout,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, errors="replace")
            run.returncode, run.output = process.returncode, process.stdout[-4000:]
        except subprocess.TimeoutExpired as error:
            run.timed_out = True
            run.output = (error.stdout or b"")[-4000:].decode("utf-8", "replace") \
                if isinstance(error.stdout, bytes) else (error.stdout or "")[-4000:]
        if stops.exists() and stops.read_text().strip():
            run.timed_out = True
        if report.exists():
            run.outcomes, run.memory_error = read_junit(report)
        return run


def read_junit(path) -> tuple[dict[str, str], bool]:
    """({test id: outcome}, whether any test hit MemoryError) from a junit XML report (xunit1: each
    testcase has its file); a test reported twice (a failing teardown) keeps its worst outcome."""
    rank = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
    outcomes: dict[str, str] = {}
    memory = False
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        name, classname, file = case.get("name", ""), case.get("classname", ""), case.get("file")
        if file:
            module = file[:-3].replace("/", ".").replace("\\", ".") if file.endswith(".py") else file
            classes = classname[len(module) + 1:].split(".") if classname.startswith(module + ".") else []
        else:
            parts = classname.split(".")
            split_at = next((i for i in range(len(parts), 0, -1) if parts[i - 1].startswith("test")), len(parts))
            file, classes = "/".join(parts[:split_at]) + ".py", parts[split_at:]
        test_id = "::".join([file.replace("\\", "/")] + classes + [name])
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                if "MemoryError" in (child.get("message") or "") + (child.text or ""):
                    memory = True
        if rank[outcome] >= rank[outcomes.get(test_id, "passed")]:
            outcomes[test_id] = outcome
    return outcomes, memory


# ---------------------------------------------------------------------------------------------------
# tasks on disk
# ---------------------------------------------------------------------------------------------------
def module_path(package_dir: Path) -> Path:
    return package_dir / f"{package_dir.name}.py"


def list_packages(data_dir=None) -> list[str]:
    """Names of the packages under `data_dir/packages` that have a module `<name>.py`."""
    packages = Path(data_dir or BUNDLED_DIR) / "packages"
    return sorted(path.name for path in packages.iterdir() if path.is_dir() and module_path(path).is_file())


def load_tasks(data_dir=None, split: str | None = None) -> list[dict]:
    """The tasks of `data_dir/tasks.jsonl` (default: the bundled ones), each with `package_dir` (the
    package's folder under `data_dir/packages/`) added; only `split`'s when given. Raises ValueError on
    a task that lacks a field or whose `original_line` is not line `line` of its file."""
    root = Path(data_dir) if data_dir is not None else BUNDLED_DIR
    tasks, files = [], {}
    with open(root / "tasks.jsonl", encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            task = json.loads(text)
            missing = [name for name in FIELDS if name not in task]
            if missing:
                raise ValueError(f"tasks.jsonl line {number}: missing {', '.join(missing)}")
            package_dir = root / "packages" / task["package"]
            path = package_dir / task["file"]
            if path not in files:
                if not path.is_file():
                    raise ValueError(f"tasks.jsonl line {number}: no file {path}")
                files[path] = [line.rstrip("\r\n") for line in path.read_text(encoding="utf-8").splitlines()]
            lines = files[path]
            if not 1 <= task["line"] <= len(lines) or lines[task["line"] - 1] != task["original_line"]:
                raise ValueError(f"tasks.jsonl line {number}: line {task['line']} of {path} is not the "
                                 f"task's original_line")
            task["package_dir"] = str(package_dir)
            if split is None or task["split"] == split:
                tasks.append(task)
    return tasks


def task_bug(task: dict) -> Bug:
    return Bug(task["package"], task["file"], task["kind"], task["line"], task["original_line"],
               task["buggy_line"])


def package_files(task: dict, buggy: bool = True) -> dict[str, str]:
    """{relative path: text} of the task's package (the bug written in when `buggy`), for a sandbox."""
    package_dir = Path(task["package_dir"])
    files = {}
    for path in sorted(package_dir.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            files[path.relative_to(package_dir).as_posix()] = path.read_text(encoding="utf-8")
    if buggy:
        files[task["file"]] = task_bug(task).apply(files[task["file"]])
    return files


def bug_region(task: dict, max_lines: int = 20) -> tuple[str, int, int]:
    """(name, first line, last line) of where the task's bug is, as an issue's traceback would point: the
    innermost function around the bug line (else the module-level statement, named by its first target),
    cut to at most `max_lines` lines around the bug. The task statement quotes it, so the first command
    does not need knowledge the policy never sees; which line is wrong, and its fix, stay the agent's job."""
    tree, line = ast.parse(package_files(task)[task["file"]]), task["line"]
    region = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= line <= node.end_lineno:
            if region is None or node.lineno > region[1]:
                region = (node.name, node.lineno, node.end_lineno)
    if region is None:
        statement = next(n for n in tree.body if n.lineno <= line <= n.end_lineno)
        targets = getattr(statement, "targets", None) or [getattr(statement, "target", None)]
        region = (getattr(targets[0], "id", "module"), statement.lineno, statement.end_lineno)
    name, first, last = region
    if last - first + 1 > max_lines:  # a long function: the window around the bug
        first = max(first, line - max_lines // 2)
        last = min(last, first + max_lines - 1)
    return name, first, last


def materialize(task: dict, dest, buggy: bool = True) -> Path:
    """Copy the task's package to `dest/<package>` (the bug written in when `buggy`); return that dir."""
    target = Path(dest) / task["package"]
    shutil.copytree(task["package_dir"], target, ignore=COPY_IGNORE)
    if buggy:
        path = target / task["file"]
        path.write_text(task_bug(task).apply(path.read_text(encoding="utf-8")), encoding="utf-8")
    return target


def verify_task(task: dict, timeout: float = TIMEOUT_S) -> list[str]:
    """Re-run a task's checks: with the bug its fail_to_pass tests fail and its pass_to_pass tests pass,
    with the original line back all pass. Returns the problems found (empty when it holds)."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="swe-verify-") as scratch:
        buggy = run_tests(materialize(task, Path(scratch) / "buggy"), timeout=timeout)
        fixed = run_tests(materialize(task, Path(scratch) / "fixed", buggy=False), timeout=timeout)
    for run, name in ((buggy, "buggy"), (fixed, "fixed")):
        if run.timed_out:
            problems.append(f"{name} run timed out")
    problems += [f"{test} passes with the bug" for test in task["fail_to_pass"]
                 if buggy.outcomes.get(test) == "passed"]
    problems += [f"{test} does not pass with the bug" for test in task["pass_to_pass"]
                 if buggy.outcomes.get(test) != "passed"]
    expected = set(task["fail_to_pass"]) | set(task["pass_to_pass"])
    if set(fixed.passed()) != expected or len(fixed.outcomes) != len(expected):
        problems.append(f"without the bug the passing tests are {fixed.passed()}, expected {sorted(expected)}")
    return problems


# ---------------------------------------------------------------------------------------------------
# building
# ---------------------------------------------------------------------------------------------------
def check_bug(package_dir: Path, bug: Bug, clean: list[str], timeout: float = TIMEOUT_S) -> dict | str:
    """The task of `bug` (without its id and split), or the reason it is rejected."""
    with tempfile.TemporaryDirectory(prefix="swe-bug-") as scratch:
        copy = Path(scratch) / package_dir.name
        shutil.copytree(package_dir, copy, ignore=COPY_IGNORE)
        path = copy / bug.file
        path.write_text(bug.apply(path.read_text(encoding="utf-8")), encoding="utf-8")
        run = run_tests(copy, timeout=timeout)
    if run.timed_out:
        return "timeout"
    if run.memory_error:
        return "memory_error"
    fail_to_pass = [test for test in clean if run.outcomes.get(test) != "passed"]
    pass_to_pass = [test for test in clean if run.outcomes.get(test) == "passed"]
    if not fail_to_pass:
        return "no_fail_to_pass"
    if not pass_to_pass:
        return "no_pass_to_pass"
    return {"package": bug.package, "kind": bug.kind, "file": bug.file, "line": bug.line,
            "original_line": bug.original_line, "buggy_line": bug.buggy_line, "fail_to_pass": fail_to_pass,
            "pass_to_pass": pass_to_pass}


def clean_tests(package_dir: Path, timeout: float = TIMEOUT_S) -> list[str]:
    """The test ids of the unmodified package; raises RuntimeError unless every test passes."""
    with tempfile.TemporaryDirectory(prefix="swe-clean-") as scratch:
        copy = Path(scratch) / package_dir.name
        shutil.copytree(package_dir, copy, ignore=COPY_IGNORE)
        run = run_tests(copy, timeout=timeout)
    bad = sorted(test for test, outcome in run.outcomes.items() if outcome != "passed")
    if run.timed_out or bad or not run.outcomes:
        raise RuntimeError(f"package {package_dir.name}: its tests must all pass unmodified "
                           f"(timed out: {run.timed_out}, not passing: {bad})\n{run.output}")
    return run.passed()


def task_id(task: dict) -> str:
    return f"{task['package']}__{task['kind']}__{task['line']}"


def split_hash(task_id_text: str) -> str:
    return hashlib.sha256(task_id_text.encode("utf-8")).hexdigest()


def share(count: int, percent: int) -> int:
    """percent of count, rounded half up, in integers."""
    return (count * percent + 50) // 100


def assign_splits(tasks: list[dict], unseen) -> None:
    """Set each task's split (see the module docstring)."""
    by_package: dict[str, list[dict]] = {}
    for task in tasks:
        by_package.setdefault(task["package"], []).append(task)
    for package, group in by_package.items():
        if package in unseen:
            for task in group:
                task["split"] = "test_unseen_packages"
            continue
        group = sorted(group, key=lambda task: split_hash(task["id"]))
        tests, evals = share(len(group), TEST_BUGS_PERCENT), share(len(group), EVAL_PERCENT)
        for index, task in enumerate(group):
            task["split"] = "test_unseen_bugs" if index < tests else "eval" if index < tests + evals else "train"


def build_package(package_dir: Path, seed, per_package: int, max_tries: int, jobs: int, timeout: float,
                  stats: Counter) -> list[dict]:
    """The kept tasks of one package (tried in the seeded order, at most one per line)."""
    name = package_dir.name
    source = module_path(package_dir).read_text(encoding="utf-8")
    bugs = order_bugs(find_bugs(source, name, module_path(package_dir).name), seed=f"{seed}:{name}")
    clean = clean_tests(package_dir, timeout)
    stats["candidates"] += len(bugs)
    kept, used_lines, tried = [], set(), 0
    futures: dict[int, object] = {}
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        def prefetch(start):
            # speculative checks of the next candidates (results are only used where a sequential walk
            # would use them, so the outcome does not depend on `jobs`)
            index, queued = start, sum(1 for i, future in futures.items() if i >= start and not future.done())
            while index < len(bugs) and queued < max(1, jobs):
                if index not in futures and bugs[index].line not in used_lines:
                    futures[index] = pool.submit(check_bug, package_dir, bugs[index], clean, timeout)
                    queued += 1
                index += 1

        for index, bug in enumerate(bugs):
            if len(kept) >= per_package or tried >= max_tries:
                break
            if bug.line in used_lines:
                continue
            prefetch(index)
            result = futures.pop(index).result()
            tried += 1
            if isinstance(result, str):
                stats[f"rejected:{result}"] += 1
                stats[f"rejected:{result}:{bug.kind}"] += 1
                continue
            result["id"] = task_id(result)
            kept.append(result)
            used_lines.add(bug.line)
        for future in futures.values():
            future.cancel()
    stats["tried"] += tried
    return kept


def build_tasks(data_dir=None, seed=0, per_package: int = PER_PACKAGE, max_tries: int = MAX_TRIES,
                jobs: int = 1, timeout: float = TIMEOUT_S, unseen=None, packages=None, log=print):
    """Build the tasks of the packages under `data_dir/packages` (default: the bundled ones); returns
    (tasks in file order, stats Counter)."""
    root = Path(data_dir) if data_dir is not None else BUNDLED_DIR
    names = list(packages) if packages else list_packages(root)
    unseen = set(UNSEEN_PACKAGES if unseen is None else unseen)
    stats: Counter = Counter()
    tasks = []
    for name in names:
        start = time.time()
        kept = build_package(root / "packages" / name, seed, per_package, max_tries, jobs, timeout, stats)
        tasks += kept
        if log:
            log(f"{name:20s} {len(kept):3d} tasks  ({time.time() - start:.1f} s)")
    assign_splits(tasks, unseen)
    tasks = [{name: task[name] for name in FIELDS} for task in tasks]
    tasks.sort(key=lambda task: (task["package"], task["line"], task["kind"]))
    return tasks, stats


def write_tasks(tasks: list[dict], path) -> None:
    text = "".join(json.dumps(task, ensure_ascii=True) + "\n" for task in tasks)
    Path(path).write_bytes(text.encode("ascii"))


def summary(tasks: list[dict], stats: Counter | None = None) -> str:
    """Tables of tasks per split and per kind, and of the rejected candidates."""
    splits = list(SPLITS) + sorted({task["split"] for task in tasks} - set(SPLITS))
    rows = [["kind"] + splits + ["total"]]
    for kind in KINDS:
        counts = [sum(task["kind"] == kind and task["split"] == split for task in tasks) for split in splits]
        rows.append([kind] + [str(count) for count in counts] + [str(sum(counts))])
    totals = [sum(task["split"] == split for task in tasks) for split in splits]
    rows.append(["total"] + [str(count) for count in totals] + [str(len(tasks))])
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = ["  ".join(cell.rjust(width) if column else cell.ljust(width)
                       for column, (cell, width) in enumerate(zip(row, widths))) for row in rows]
    packages = sorted({task["package"] for task in tasks})
    unseen = sorted({task["package"] for task in tasks if task["split"] == "test_unseen_packages"})
    lines.append(f"{len(packages)} packages ({len(unseen)} held out: {', '.join(unseen)})")
    if stats:
        lines.append(f"candidate bugs: {stats['candidates']}, tried: {stats['tried']}, kept: {len(tasks)}, "
                     f"rejected: {sum(stats[f'rejected:{reason}'] for reason in REJECTIONS)}")
        for reason in REJECTIONS:
            by_kind = ", ".join(f"{kind} {stats[f'rejected:{reason}:{kind}']}" for kind in KINDS
                                if stats[f"rejected:{reason}:{kind}"])
            lines.append(f"  rejected, {reason}: {stats[f'rejected:{reason}']}" + (f" ({by_kind})" if by_kind else ""))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rebuild", action="store_true", help="build tasks.jsonl again (else: summarize it)")
    parser.add_argument("--data-dir", default=None, help="a data dir with packages/ (default: the bundled one)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-package", type=int, default=PER_PACKAGE, help="tasks kept per package at most")
    parser.add_argument("--max-tries", type=int, default=MAX_TRIES, help="candidates tried per package at most")
    parser.add_argument("--jobs", type=int, default=1, help="test runs at once")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="wall clock seconds per test run")
    parser.add_argument("--unseen", default=None,
                        help="comma separated held-out packages (default: " + ",".join(UNSEEN_PACKAGES) + ")")
    parser.add_argument("--out", default=None, help="where to write (default: DATA_DIR/tasks.jsonl)")
    parser.add_argument("--verify", type=int, default=0, metavar="N",
                        help="re-run the checks of N stored tasks (0: none, -1: all)")
    args = parser.parse_args(argv)
    root = Path(args.data_dir) if args.data_dir else BUNDLED_DIR
    if args.rebuild:
        start = time.time()
        unseen = args.unseen.split(",") if args.unseen is not None else None
        tasks, stats = build_tasks(root, seed=args.seed, per_package=args.per_package, max_tries=args.max_tries,
                                   jobs=args.jobs, timeout=args.timeout, unseen=unseen)
        out = Path(args.out) if args.out else root / "tasks.jsonl"
        write_tasks(tasks, out)
        print(summary(tasks, stats))
        print(f"wrote {len(tasks)} tasks to {out} in {time.time() - start:.0f} s")
    else:
        tasks = load_tasks(root)
        print(summary(tasks))
    if args.verify:
        tasks = load_tasks(root)
        chosen = tasks if args.verify < 0 else tasks[:: max(1, len(tasks) // args.verify)][:args.verify]
        failures = 0
        for task in chosen:
            problems = verify_task(task, timeout=args.timeout)
            if problems:
                failures += 1
                print(f"{task['id']}: " + "; ".join(problems))
        print(f"verified {len(chosen)} tasks: {len(chosen) - failures} hold, {failures} do not")
        return 1 if failures else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
