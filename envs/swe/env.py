"""The code-repair env: a small Python package with one injected bug, a sandbox to work in, hidden tests.

One command per turn (SWE-agent's line-addressed views and edits, mini-swe-agent's one command per turn):
    ls [DIR]                 the files of the work dir (or of DIR)
    cat FILE [A-B]           FILE with line numbers (lines A to B)
    grep WORD                the lines of the .py files that contain WORD
    edit FILE LINE TEXT      replace line LINE of FILE with TEXT (the rest of the command, spaces kept)
    replace FILE LINE OLD => NEW
                             replace the one occurrence of OLD on line LINE of FILE with NEW (OpenHands'
                             exact-match `str_replace`, narrowed to one line: a fix copies the line's text
                             and changes a few tokens, where `edit` must write the whole line)
    run_tests                the visible test suite (tests/)
    submit                   end the episode: the hidden tests decide the reward
Outputs are truncated with an elision count. A malformed command, a path outside the work dir or a line
that does not exist gets a clear message and changes nothing (`info["invalid"]`). The reward is 1 when
every hidden FAIL_TO_PASS and PASS_TO_PASS test passes after `submit` (the official harness's binary
reward), else 0. Grading runs in a fresh sandbox (a new container or directory): the pristine package with
only the agent's versions of its existing source files, the hidden tests, and a trusted pytest plugin that
records the results and ends the process before any exit handler of the tested code can run; what the code
did in the agent's sandbox (edited tests, planted files, handlers) is not there. A submission whose changed
statements use anything outside an allow-list (names and attributes the package already uses, a few safe builtins;
no import, no dunder: `tampering`) gets reward 0 and `info["tampered"]`. A sandbox that dies (a killed container)
or whose code goes over a limit that only ending the episode enforces (`LimitExceeded`) ends the episode with
reward 0 and says so; a grader that cannot start raises `GradingError` out of `step`.

Backends (`backend=`): `docker` (a container per running episode, snapshot = `container.commit()`), `local` (a
directory copy per snapshot, commands under bubblewrap as an unprivileged user with limits), `auto`
(Docker when an engine answers). See docs/envs.md.
"""

from __future__ import annotations

import ast
import copy
import difflib
import io
import re
import secrets
import shlex
import time
import tokenize
from dataclasses import dataclass, field

from envs.base import TextEnv
from envs.swe.sandbox import DockerSandbox, LimitExceeded, LocalSandbox, SandboxError, safe_path
from envs.swe.tasks import SPLITS, bug_region, load_tasks, package_files

MAX_OUTPUT_LINES, MAX_OUTPUT_CHARS = 25, 1500
TEST_TIMEOUT = 20.0
PYTEST = "python3 -m pytest -q --tb=short -p no:cacheprovider"  # plugin autoload is off (sandbox ENVIRONMENT)
# The grader: pytest with a trusted plugin, given before any tested code is imported. A test passes when its call
# passed and none of its phases failed; at the session's end the plugin writes the passing ids after a marker and a
# nonce (read from a file it deletes first, kept in a closure) and ends the process at once: no exit handler of the
# tested code runs, a line the tested code prints lacks the nonce, and the functions it writes and exits with were
# taken before the tested code could patch their modules. Its first line says it started: without it and without a
# timeout, the grading sandbox failed (`_grade`).
GRADE_NONCE = ".grade_nonce"
GRADE_MARKER = "tree-rl-grade"
GRADE_STARTED = "tree-rl-grade-started"  # the grader's first line, before any tested code is imported
GRADE_TRIES, GRADE_RETRY_PAUSE = 3, 1.0  # a grader that did not start is run again, then an error (never a 0)
TIMED_OUT = (124, 137)  # `timeout` ended the command (137: killed after its grace second)
GRADER = f"""import sys
from os import _exit, remove, write

import pytest


def grade():
    nonce = open({GRADE_NONCE!r}).read()
    remove({GRADE_NONCE!r})
    passed, failed = set(), set()

    class Recorder:
        def pytest_runtest_logreport(self, report):
            if report.when == "call" and report.passed:
                passed.add(report.nodeid)
            elif not report.passed:
                failed.add(report.nodeid)

        @pytest.hookimpl(tryfirst=True)
        def pytest_sessionfinish(self, session):
            write(1, ("\\n{GRADE_MARKER} " + nonce + " " + " ".join(sorted(passed - failed)) + "\\n").encode())
            _exit(0)

    write(1, b"\\n{GRADE_STARTED}\\n")
    pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[1:]], plugins=[Recorder()])
    _exit(1)


grade()
"""
_TIMING = re.compile(r" in \d+\.\d+s")
_ADDRESS = re.compile(r"\b0x[0-9a-f]{6,}\b")
COMMANDS = ("ls", "cat", "grep", "edit", "replace", "run_tests", "submit")
REPLACE_SEPARATOR = " => "  # never in Python source, so OLD and NEW may hold spaces
# the words of the statement and of the env's messages, and of pytest's report (`vocabulary`)
MESSAGE_WORDS = ("Fix the bug in package so that its tests pass The failure points at lines Files Commands FILE A-B "
                 "WORD LINE TEXT OLD NEW fix unknown command commands usage with <= no directory match is now has "
                 "line edit replaces one newline replace works on and does not contain occurs times give more of "
                 "submitted all hidden some fail error sandbox died episode ends reward 0 over file path leaves "
                 "work dir empty lines")
PYTEST_WORDS = ("FAILED PASSED ERROR ERRORS FAILURES short test summary info passed failed error errors warning "
                "warnings in assert where and or not is + - = == != < > AssertionError: Failed: DID NOT RAISE "
                "At index diff: Use -v to get more Full Left Right contains items first extra item differ "
                "Omitting identical cannot access local variable associated with a value where Traceback raise "
                "def return self E _ Captured stdout call no tests ran rootdir configfile collected NoneType "
                "object has attribute name defined method takes positional argument arguments but were given got "
                "an unexpected keyword missing required unsupported operand type types for out of range division "
                "by zero modulo list str int float dict tuple set subscriptable callable iterable can only "
                "concatenate maximum recursion depth exceeded comparison unhashable substring found indices integers "
                "must be slices Differing use show -vv <genexpr> <lambda> <listcomp> <module> "
                + " ".join("F" * n + " " + "E" * n for n in range(1, 12)))  # `-q` progress: `..FFF.` is . FFF .
EXCEPTIONS = ("Exception ArithmeticError AssertionError AttributeError IndexError KeyError LookupError NameError "
              "NotImplementedError OverflowError RecursionError RuntimeError StopIteration TypeError "
              "UnboundLocalError ValueError ZeroDivisionError")  # a fixed list: `dir(builtins)` varies by version

# The tamper guard: an allow-list on the syntax of the statements a submission changed in the package's source
# files (`tampering`). A fix of these packages rewrites an expression with what the package already uses; code that
# reaches the grader (pytest, frames, the process) needs a name or an attribute the package never uses.
SAFE_BUILTINS = frozenset(("len range min max abs sum sorted reversed enumerate zip int float str bool list dict set "
                           "tuple isinstance round divmod any all map filter True False None").split()
                          + EXCEPTIONS.split())
STRING_LOOKUPS = frozenset(("format", "format_map"))  # "{0.attr}".format(x) turns a string into attribute lookups
BUILTIN_METHODS = frozenset(name for kind in (str, list, dict, set, tuple, int, float, bytes) for name in dir(kind)
                            if not name.startswith("_")) - STRING_LOOKUPS
GRADER_TEXT = re.compile(r"grade|/proc")  # a string that names the grader's files or the process's memory
DUNDER = re.compile(r"__\w+__")
LINE_BREAK = re.compile(r"\r\n|\r|\n")  # the line ends Python counts (`edit` refuses only \n)
BODIES = ("body", "orelse", "finalbody", "handlers", "cases")  # the statement lists of a compound statement


def truncate(text: str) -> str:
    lines = text.rstrip("\n").split("\n")
    kept = lines[:MAX_OUTPUT_LINES]
    out = "\n".join(kept)[:MAX_OUTPUT_CHARS]
    hidden = len(lines) - len(kept)
    return out + (f"\n... ({hidden} more lines)" if hidden > 0 else "")


def normalize(output: str) -> str:
    """Test output without its timings and object addresses, so a restored copy prints exactly what the
    original prints."""
    return _ADDRESS.sub("0x...", _TIMING.sub("", output))


class GradingError(SandboxError):
    """The grader itself could not start (`GRADE_TRIES` times): raised out of `step`, never graded 0."""


@dataclass
class SWEState:
    task: dict
    files: dict[str, str]  # what the agent has edited so far: path -> text (the expert reads it)
    region: tuple[str, int, int]  # (name, first line, last line) the task statement points at (`bug_region`)
    read: set = field(default_factory=set)  # files the agent has looked at
    aimed_low: bool = False  # the demonstrator has taken its wrong-line mistake (once per episode)
    steps: int = 0
    done: bool = False
    reward: float = 0.0
    tampered: bool = False  # the submission used what the tamper guard does not allow (`tampering`): reward 0
    error: str = ""


class SWEEnv(TextEnv):
    """A code-repair task per reset, in a sandbox of the chosen backend (see the module docstring)."""

    def __init__(self, split: str = "train", backend: str = "auto", data_dir: str | None = None, max_steps: int = 12,
                 network_for_tests: bool = False):
        super().__init__(split=split, backend=backend, data_dir=data_dir, max_steps=max_steps,
                         network_for_tests=network_for_tests)
        if split not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}; got {split!r}")
        if backend not in ("auto", "docker", "local"):
            raise ValueError(f"backend must be auto, docker or local; got {backend!r}")
        self.split, self.max_steps, self.data_dir = split, max_steps, data_dir
        self.tasks = load_tasks(data_dir, split)
        self.network = network_for_tests  # a test-only switch: host networking, to show isolation can fail
        self.backend, self.client, self.image = resolve_backend(backend)
        self.sandbox = None

    @property
    def num_tasks(self) -> int:
        return len(self.tasks)

    # ---------------------------------------------------------------------------------------------------
    # Episodes
    # ---------------------------------------------------------------------------------------------------
    def _reset(self, seed, options):
        task = self.tasks[self.task_id_from(options)]
        files = package_files(task)  # the bug written in
        if self.sandbox is not None:
            self.sandbox.close()
        self.sandbox = self._new_sandbox(files)
        self.state = SWEState(task=task, files={task["file"]: files[task["file"]]}, region=bug_region(task))
        name, first, last = self.state.region
        obs = (f"Fix the bug in package {task['package']} so that its tests pass. The failure points at {name} in "
               f"{task['file']} lines {first}-{last}. Files: {' '.join(sorted(p for p in files if p.endswith('.py')))}."
               f" Commands: ls, cat FILE A-B, grep WORD, edit FILE LINE TEXT, replace FILE LINE OLD => NEW,"
               f" run_tests, submit.")
        return obs, self._info(False)

    def _new_sandbox(self, files: dict[str, str]):
        if self.backend == "docker":
            return DockerSandbox(self.client, self.image, files, network=self.network)
        return LocalSandbox(files, network=self.network, hidden=(self.data_dir,) if self.data_dir else ())

    def _info(self, invalid: bool) -> dict:
        s = self.state
        name, first, last = s.region
        return {"won": s.reward >= 1.0, "invalid": invalid, "task": f"fix {name} in {s.task['file']} {first}-{last}",
                "task_id": s.task["id"], "steps": s.steps, "error": s.error, "tampered": s.tampered}

    def _step(self, action: str):
        s = self.state
        if s.done:
            return "the episode is over", 0.0, True, False, self._info(True)
        s.steps += 1
        try:
            obs, invalid = self._command(action.strip())
        except GradingError:  # the grader could not run: an error of this host, never a reward of 0
            raise
        except SandboxError as error:  # a crashed or killed sandbox ends the episode, reward 0
            s.done, s.error = True, str(error)
            self.close()
            return f"error: the sandbox died ({error}); the episode ends with reward 0", 0.0, True, False, \
                self._info(True)
        terminated = s.done
        truncated = not terminated and s.steps >= self.max_steps
        if terminated or truncated:  # a finished episode holds no container: held-out envs wait idle between
            s.done = True            # evaluations, one per task
            self.close()
        return obs, s.reward if terminated else 0.0, terminated, truncated, self._info(invalid)

    def _command(self, command: str) -> tuple[str, bool]:
        """(observation, invalid) of one command; an invalid one changes nothing."""
        s = self.state
        name, _, rest = command.partition(" ")
        if name not in COMMANDS:
            return f"unknown command {name!r}; commands: {', '.join(COMMANDS)}", True
        try:
            if name == "ls":
                target = safe_path(rest) if rest.strip() else "."
                code, out = self.sandbox.run(f"ls -p -- {shlex.quote(target)}", timeout=5)
                return (truncate(out) if code == 0 else f"ls: no directory {rest.strip()!r}"), code != 0
            if name == "cat":
                parts = rest.split()
                if len(parts) not in (1, 2):
                    return "usage: cat FILE [A-B]", True
                text = self._read(parts[0])
                lines = text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")
                first, last = 1, len(lines)
                if len(parts) == 2:
                    match = re.fullmatch(r"(\d+)-(\d+)", parts[1])
                    if not match or not 1 <= int(match[1]) <= int(match[2]):
                        return "usage: cat FILE A-B with 1 <= A <= B", True
                    first, last = int(match[1]), min(len(lines), int(match[2]))
                s.read.add(safe_path(parts[0]))
                return truncate("\n".join(f"{i} {lines[i - 1]}" for i in range(first, last + 1))) or "(empty)", False
            if name == "grep":
                if not rest.strip() or len(rest.split()) != 1:
                    return "usage: grep WORD", True
                code, out = self.sandbox.run(f"grep -rn --include=*.py -F -- {shlex.quote(rest.strip())} .", timeout=5)
                return truncate(out) if out else "no match", False
            if name == "edit":
                match = re.fullmatch(r"(\S+) (\d+)(?: (.*))?", rest, flags=re.S)
                if not match:
                    return "usage: edit FILE LINE TEXT", True
                path, number, new = safe_path(match[1]), int(match[2]), match[3] or ""
                if "\n" in new:
                    return "edit replaces one line: TEXT has no newline", True
                text = self._read(path)
                lines = text.split("\n")
                if not 1 <= number <= len(lines) - (1 if text.endswith("\n") else 0):
                    return f"{path} has no line {number}", True
                lines[number - 1] = new
                updated = "\n".join(lines)
                self.sandbox.write(path, updated)
                s.files[path] = updated
                return f"line {number} of {path} is now: {new}", False
            if name == "replace":
                match = re.fullmatch(r"(\S+) (\d+) (.+?) =>(?: (.*))?", rest, flags=re.S)
                if not match:
                    return "usage: replace FILE LINE OLD => NEW", True
                path, number, old, new = safe_path(match[1]), int(match[2]), match[3], match[4] or ""
                if "\n" in old + new:
                    return "replace works on one line: OLD and NEW have no newline", True
                text = self._read(path)
                lines = text.split("\n")
                if not 1 <= number <= len(lines) - (1 if text.endswith("\n") else 0):
                    return f"{path} has no line {number}", True
                count = lines[number - 1].count(old)
                if count != 1:
                    return (f"line {number} of {path} does not contain {old!r}" if count == 0 else
                            f"{old!r} occurs {count} times on line {number} of {path}: give more of the line"), True
                lines[number - 1] = lines[number - 1].replace(old, new)
                updated = "\n".join(lines)
                self.sandbox.write(path, updated)
                s.files[path] = updated
                return f"line {number} of {path} is now: {lines[number - 1]}", False
            if name == "run_tests":
                code, out = self.sandbox.run(f"{PYTEST} tests", timeout=TEST_TIMEOUT)
                return truncate(normalize(out)), False
            self.close()  # grading needs nothing of the agent's sandbox
            s.done, s.reward = True, self._grade()
            return f"submitted: {'all hidden tests pass' if s.reward else 'some hidden tests fail'}", False
        except ValueError as error:
            return str(error), True
        except FileNotFoundError:
            return f"no file {rest.split()[0] if rest.split() else ''!r}", True

    def _read(self, path: str) -> str:
        path = safe_path(path)
        if path in self.state.files:
            return self.state.files[path]
        return self.sandbox.read(path)

    def _grade(self) -> float:
        """1.0 when every hidden FAIL_TO_PASS and PASS_TO_PASS test passes, run by `GRADER` in a fresh sandbox
        on the pristine package with the agent's versions of its existing source files; 0.0 for a submission
        that reaches for the grader (`tampered`)."""
        s, task = self.state, self.state.task
        files = grading_files(task, s.files)
        if tampering(task, files):
            s.tampered = True
            return 0.0
        ids = task["fail_to_pass"] + task["pass_to_pass"]
        for attempt in range(GRADE_TRIES):
            nonce = secrets.token_hex(16)
            try:
                sandbox = self._new_sandbox({**files, GRADE_NONCE: nonce})
                try:
                    code, out = sandbox.run(f"python3 -c {shlex.quote(GRADER)} {' '.join(map(shlex.quote, ids))}",
                                            timeout=TEST_TIMEOUT)
                finally:
                    sandbox.close()
            except LimitExceeded:  # the tested code went over the sandbox's limits: its own doing, a 0
                return 0.0
            except SandboxError as error:  # the grading sandbox died or could not be made
                code, out = None, str(error)
            passed = graded_passed(out, nonce)
            # no result line: a timeout or tested code that ended the process is a 0; a grader that never started
            # (bubblewrap out of processes, an engine that failed) is this host's fault, not the submission's
            if passed is not None or code in TIMED_OUT or GRADE_STARTED in out.split("\n"):
                return float(passed is not None and all(t in passed for t in ids))
            if attempt + 1 < GRADE_TRIES:
                time.sleep(GRADE_RETRY_PAUSE)
        raise GradingError(f"grading {task['id']}: the grader could not start in {GRADE_TRIES} tries (last exit code "
                           f"{code}); a fault of the sandbox host, not a grade of the submission. Its output ends: "
                           f"{out[-500:].strip()!r}")

    # ---------------------------------------------------------------------------------------------------
    # Expert and demonstrator
    # ---------------------------------------------------------------------------------------------------
    def expert_action(self) -> str:
        """Read the region the task statement points at, put back the original text of the changed line with the
        smallest `replace` (and undo any other change the same way), submit."""
        s, task = self.state, self.state.task
        current, fixed = s.files[task["file"]], self._fixed_source()
        wrong = first_changed_line(current, fixed)
        if wrong is None:
            return "submit"
        if task["file"] not in s.read:
            return f"cat {task['file']} {s.region[1]}-{s.region[2]}"
        current_lines, fixed_lines = current.split("\n"), fixed.split("\n")
        if len(current_lines) != len(fixed_lines):  # a line was added or removed: only `edit` can put it back
            return f"edit {task['file']} {wrong} {fixed_lines[wrong - 1]}"
        old, new = minimal_replacement(current_lines[wrong - 1], fixed_lines[wrong - 1])
        return f"replace {task['file']} {wrong} {old}{REPLACE_SEPARATOR}{new}".rstrip()

    def demo_action(self, rng, mistake_prob: float) -> str:
        """The expert with two systematic mistakes, each taken with `mistake_prob` where its state arises: it
        edits before reading the file, and its first `replace` aims at the line below the bug (refused there,
        or a wrong change it must undo; once per episode)."""
        s, task = self.state, self.state.task
        action = self.expert_action()
        if action.startswith("cat ") and rng.random() < mistake_prob:  # edit before reading
            s.read.add(task["file"])
            action = self.expert_action()
        untouched = s.files[task["file"]] == package_files(task)[task["file"]]
        if action.startswith("replace ") and untouched and not s.aimed_low and rng.random() < mistake_prob:
            if task["line"] < len(s.files[task["file"]].rstrip("\n").split("\n")):  # the fix one line too low
                s.aimed_low = True
                action = action.replace(f"replace {task['file']} {task['line']} ",
                                        f"replace {task['file']} {task['line'] + 1} ", 1)
        return action

    def _fixed_source(self) -> str:
        task = self.state.task
        return package_files(task, buggy=False)[task["file"]]

    # ---------------------------------------------------------------------------------------------------
    # Snapshots and vocabulary
    # ---------------------------------------------------------------------------------------------------
    def snapshot(self) -> "SWESnapshot":
        if self.state is None:
            raise RuntimeError("call reset() before snapshot()")
        if self.sandbox is None:
            raise RuntimeError("the episode is over and its sandbox is released: snapshot before its last step")
        return SWESnapshot(self)

    def vocabulary(self) -> list[str]:
        """Every word the tasks show: the statement and the env's messages, line numbers, every package's files
        with and without its bugs, and pytest's report (program values a buggy test prints are open-ended)."""
        words = set(COMMANDS) | set(MESSAGE_WORDS.split()) | set(PYTEST_WORDS.split())
        words |= {name + colon for name in EXCEPTIONS.split() for colon in ("", ":")}
        words |= {str(number) for number in range(1, 201)}  # line numbers: one token each
        tasks = load_tasks(self.data_dir)
        for task in {t["package"]: t for t in tasks}.values():
            for path, text in package_files(task, buggy=False).items():
                words.update(path.split("/"))
                words.update(text.split())
        for task in tasks:
            words.update(task["buggy_line"].split())
        return sorted(words)

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None


class SWESnapshot:
    """The sandbox's snapshot (commit or directory copy) and a copy of the episode state; `restore()` gives a
    new env with a new sandbox."""

    def __init__(self, env: SWEEnv):
        self._env = copy.copy(env)
        self._state = copy.deepcopy(env.state)
        self._sandbox = env.sandbox.snapshot()
        self._history = (env.reset_args, tuple(env.actions_taken))

    def restore(self) -> SWEEnv:
        env = copy.copy(self._env)
        env.state = copy.deepcopy(self._state)
        env.sandbox = self._sandbox.restore()
        env.reset_args, env.actions_taken = self._history[0], list(self._history[1])
        return env


def resolve_backend(backend: str):
    """(backend, docker client, image): `auto` picks Docker when an engine answers, else local."""
    if backend in ("auto", "docker"):
        from envs.swe.engine import docker_client, ensure_image

        client = docker_client()
        if client is not None:
            return "docker", client, ensure_image(client)
        if backend == "docker":
            raise RuntimeError("no Docker engine answers: start one with `eval \"$(bash envs/swe/docker_engine.sh)\"` "
                               "or set DOCKER_HOST")
    return "local", None, None


def minimal_replacement(line: str, fixed: str) -> tuple[str, str]:
    """(OLD, NEW) for `replace`: the part of `line` that differs from `fixed`, widened to whole
    space-separated chunks, and widened further until OLD occurs once on the line."""
    prefix = 0
    while prefix < min(len(line), len(fixed)) and line[prefix] == fixed[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(line), len(fixed)) - prefix and line[-1 - suffix] == fixed[-1 - suffix]:
        suffix += 1
    start, end = prefix, len(line) - suffix  # OLD = line[start:end], NEW = fixed[start:len(fixed) - (len(line) - end)]
    while True:
        while start > 0 and line[start - 1] != " ":
            start -= 1
        while end < len(line) and line[end] != " ":
            end += 1
        while start < min(end, prefix) and line[start] == " ":  # never begin OLD with indentation
            start += 1
        old, new = line[start:end], fixed[start:len(fixed) - (len(line) - end)]
        if (old and line.count(old) == 1) or (not line[:start].strip() and end == len(line)):
            return old, new
        start, end = max(0, start - 1), min(len(line), end + 1)  # take in the neighbouring chunks


def first_changed_line(current: str, fixed: str) -> int | None:
    a, b = current.split("\n"), fixed.split("\n")
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i + 1
    return None if len(a) == len(b) else min(len(a), len(b)) + 1


def source_paths(files: dict[str, str]) -> list[str]:
    """The package's source files: its .py files outside tests/ (a fix edits one of them)."""
    return [path for path in files if path.endswith(".py") and not path.startswith("tests/")]


def grading_files(task: dict, edited: dict[str, str]) -> dict[str, str]:
    """What grading runs: the pristine package (hidden tests, pytest.ini) with the agent's versions of its existing
    source files (`edited`: what `edit` and `replace` wrote); anything else the agent or its code made is left out."""
    files, given = package_files(task, buggy=False), package_files(task)
    for path in source_paths(files):
        files[path] = edited.get(path, given[path])
    return files


def tampering(task: dict, submitted: dict[str, str]) -> str | None:
    """What the submission's changed statements in the package's source files use outside the allow-list (a message
    naming it), or None. The changed lines are difflib's, against the package as given (`package_files(task)`); a
    statement that spans one is checked whole (of a compound statement its header: decorators, signature,
    condition, ...). Allowed: the names the pristine package's source files use (its tests are left out: they name
    pytest), names bound in the changed statements, `SAFE_BUILTINS`; attributes the package uses or defines, and the
    public methods of the built-in types (`BUILTIN_METHODS`). Never: import, global, nonlocal, a dunder (except one
    the package binds itself, bound again: `def __init__`), `STRING_LOOKUPS`, a string that names the grader
    (`GRADER_TEXT`), a coding declaration other than UTF-8. A file that does not parse is not tampering: it cannot
    be imported, so its tests fail."""
    given = package_files(task)
    names, attributes = package_identifiers(package_files(task, buggy=False))  # the bug may delete the only use
    for path in source_paths(given):
        source = submitted[path].encode()  # parsed as bytes, as an import reads it: a byte-order mark, a coding line
        try:
            encoding = tokenize.detect_encoding(io.BytesIO(source).readline)[0]
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError):
            continue
        if encoding not in ("utf-8", "utf-8-sig"):  # Python would read other text than the one checked here
            return f"{path}: source encoding {encoding}"
        parts = changed_parts(tree.body, changed_lines(given[path], submitted[path], tree))
        problem = outside_allow_list(parts, names, attributes)
        if problem:
            return f"{path}: {problem}"
    return None


def package_identifiers(files: dict[str, str]) -> tuple[set[str], set[str]]:
    """(names, attributes) of the package's source files: every name, definition, argument, import and exception
    variable; every attribute, and the functions and classes it defines (a method is an attribute)."""
    names, attributes = set(), set()
    for path in source_paths(files):
        for node in ast.walk(ast.parse(files[path])):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.Attribute):
                attributes.add(node.attr)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
                attributes.add(node.name)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[0])
            elif isinstance(node, ast.ExceptHandler) and node.name:
                names.add(node.name)
    return names, attributes


def changed_lines(before: str, after: str, tree: ast.Module) -> set[int]:
    """The line numbers of `after` (the parsed `tree`) that difflib finds changed, and the unchanged lines that
    moved into or out of a multi-line string (a closed docstring turns its text into code)."""
    old, new = LINE_BREAK.split(before), LINE_BREAK.split(after)
    in_string = [string_lines(ast.parse(before)), string_lines(tree)]
    lines = set()
    for tag, first_old, _, first_new, last_new in difflib.SequenceMatcher(None, old, new).get_opcodes():
        for offset, line in enumerate(range(first_new + 1, last_new + 1)):
            if tag != "equal" or (first_old + offset + 1 in in_string[0]) != (line in in_string[1]):
                lines.add(line)
    return lines


def string_lines(tree: ast.Module) -> set[int]:
    """The lines inside a multi-line string, after its first."""
    return {line for node in ast.walk(tree) if isinstance(node, (ast.Constant, ast.JoinedStr))
            for line in range(node.lineno + 1, node.end_lineno + 1)}


def lines_of(nodes: list) -> set[int]:
    """The lines the nodes (and what they hold) are written on."""
    positioned = [child for node in nodes for child in ast.walk(node) if hasattr(child, "lineno")]
    return {line for child in positioned for line in range(child.lineno, child.end_lineno + 1)}


def changed_parts(statements: list, lines: set[int]) -> list[ast.AST]:
    """The parts of `statements` a line of `lines` touches: a simple statement whole; of a compound statement its
    header (with a defined name or exception variable as a bound Name) when the line is in it, and the same down
    its bodies."""
    parts = []
    for statement in statements:
        if not lines_of([statement]) & lines:
            continue
        bodies = [getattr(statement, field) for field in BODIES if hasattr(statement, field)]
        if not bodies:
            parts.append(statement)
            continue
        header = [value for field, value in ast.iter_fields(statement) if field not in BODIES]
        header = [node for value in header for node in (value if isinstance(value, list) else [value])]
        defined = [ast.Name(id=node, ctx=ast.Store()) for node in header if isinstance(node, str)]  # def name, `as e`
        header = [node for node in header if isinstance(node, ast.AST)]
        own_line = {statement.lineno} if hasattr(statement, "lineno") else set()
        if (lines_of(header) | own_line) & lines:
            parts += header + defined
        for body in bodies:
            parts += changed_parts(body, lines)
    return parts


def outside_allow_list(parts: list[ast.AST], names: set[str], attributes: set[str]) -> str | None:
    nodes = [node for part in parts for node in ast.walk(part)]
    bound = {word for node in nodes for word in bound_names(node)}
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal)):
            return type(node).__name__.lower()
        looked_up = [node.attr] if isinstance(node, ast.Attribute) else getattr(node, "kwd_attrs", [])  # MatchClass
        rebinds_own = isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and node.id in names
        for word in [getattr(node, "id", None), getattr(node, "arg", None), *bound_names(node), *looked_up]:
            if word and DUNDER.fullmatch(word) and not rebinds_own:
                return f"dunder {word}"
        if isinstance(node, ast.Name) and node.id not in names | bound | SAFE_BUILTINS:
            return f"name {node.id} (not in the package)"
        for attr in looked_up:
            if attr in STRING_LOOKUPS or attr not in attributes | BUILTIN_METHODS:
                return f"attribute .{attr} (not in the package)"
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)) and \
                GRADER_TEXT.search(str(node.value)):
            return f"string {node.value!r}"
    return None


def bound_names(node: ast.AST) -> list[str]:
    """The names `node` binds: an assignment, loop, comprehension, walrus or `del` target, a parameter or lambda
    argument, a pattern's capture."""
    if isinstance(node, ast.Name):
        return [] if isinstance(node.ctx, ast.Load) else [node.id]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, (ast.MatchAs, ast.MatchStar)):
        return [node.name] if node.name else []
    if isinstance(node, ast.MatchMapping):
        return [node.rest] if node.rest else []
    return []


def graded_passed(output: str, nonce: str) -> set[str] | None:
    """The passing test ids `GRADER` wrote after its marker and this grading's nonce; None without such a line."""
    prefix = f"{GRADE_MARKER} {nonce} "
    lines = [line for line in output.split("\n") if line.startswith(prefix)]
    return set(lines[-1][len(prefix):].split()) if lines else None
