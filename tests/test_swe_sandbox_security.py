"""The code-repair sandbox against the code it runs, tried as an adversarial policy would: through the env's own
actions (`edit` a line so that it runs code when `run_tests` or grading imports it, then `cat` / `edit` / `submit`),
with the checks made on the host. Each test carries a positive control made in the test itself: the same probe
succeeds where the defence is taken away (a host-side open(), the old whole-host view, the old grading)."""

import ast
import functools
import json
import os
import shutil
import stat
import subprocess
import tempfile

import pytest

from envs import make_env
from envs.swe import env as env_module
from envs.swe import sandbox as sandbox_module
from envs.swe.tasks import load_tasks, package_files, read_junit
from tests.test_swe_env import BACKENDS, HAVE_LOCAL, backend_param, env, play  # noqa: F401 (env: the fixture)

pytestmark = pytest.mark.usefixtures("reap_swe_sandboxes")  # conftest.py: containers and images reaped
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def module_level_blank_line(source: str) -> int:
    """A blank line between two top-level statements: a statement written there runs at import."""
    tree, lines = ast.parse(source), source.split("\n")
    return next(n for a, b in zip(tree.body, tree.body[1:]) for n in range(a.end_lineno + 1, b.lineno)
                if not lines[n - 1].strip())


def run_at_import(env, code: str) -> tuple[int, str]:
    """Reset to task 0 (its bug stays) and write `code` on a module-level line of the package's module: it runs
    whenever the module is imported (`run_tests`, grading). Returns (line, file)."""
    env.reset(options={"task_id": 0})
    file = env.state.task["file"]
    line = module_level_blank_line(env.sandbox.read(file))
    obs, _, _, _, info = env.step(f"edit {file} {line} {code}")
    assert not info["invalid"], obs
    return line, file


# ---------------------------------------------------------------------------------------------------
# 1. Host-side access never follows a link the code planted
# ---------------------------------------------------------------------------------------------------
HOST_TEXT = "the host's own text\n"


def test_a_planted_link_is_refused_never_followed(env, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text(HOST_TEXT)
    os.chmod(secret, 0o600)
    plant = (f"import os; os.path.lexists('link.py') or (os.symlink({str(secret)!r}, 'link.py'), "
             f"os.symlink({str(tmp_path)!r}, 'linkdir'), os.mkfifo('pipe.py'))")
    line, file = run_at_import(env, plant)
    env.step("run_tests")
    assert env.sandbox.run("readlink link.py linkdir")[1].split() == [str(secret), str(tmp_path)]  # planted
    if env.backend == "local":  # positive control: a host-side open() follows them to the host's file
        assert open(os.path.join(env.sandbox.dir, "link.py")).read() == HOST_TEXT
        assert open(os.path.join(env.sandbox.dir, "linkdir", "secret.txt")).read() == HOST_TEXT
    for action in ("cat link.py", "cat linkdir/secret.txt", "edit link.py 1 pwned", "edit linkdir/secret.txt 1 pwned",
                   "replace link.py 1 host => pwned", "cat pipe.py"):
        obs, reward, terminated, _, info = env.step(action)
        assert info["invalid"] and not terminated and "own text" not in obs, (action, obs)
    for path in ("link.py", "linkdir/secret.txt", "pipe.py"):
        with pytest.raises((ValueError, FileNotFoundError)):
            env.sandbox.write(path, "pwned\n") if env.backend == "local" else env.sandbox.read(path)
    env.step(f"edit {file} {line} ")  # an ordinary write after the plant: no permission walk through the links
    assert secret.read_text() == HOST_TEXT and stat.S_IMODE(secret.stat().st_mode) == 0o600
    restored = env.snapshot().restore()  # a snapshot copies the links as links and the FIFO as a FIFO
    assert restored.sandbox.run("readlink link.py; test -p pipe.py && echo fifo")[1].split() == [str(secret), "fifo"]
    assert "own text" not in restored.step("cat link.py")[0]
    restored.close()


# ---------------------------------------------------------------------------------------------------
# 2. The local sandbox shows the system and its work dir, nothing else of the host
# ---------------------------------------------------------------------------------------------------
SEE = """import json, os
seen = {}
for path in json.load(open("paths.json")):
    try:
        seen[path] = open(path).read()
    except OSError as error:
        seen[path] = type(error).__name__
seen["interfaces"] = sorted(os.listdir("/sys/class/net")) if os.path.isdir("/sys/class/net") else []
print(json.dumps(seen))
"""


def readable_by_nobody(path: str) -> bool:
    """Whether the sandbox's user could read `path` on the host if it saw it (a 0700 home hides a checkout)."""
    user = f"--reuid={sandbox_module.UNPRIVILEGED_UID}", f"--regid={sandbox_module.UNPRIVILEGED_UID}", "--clear-groups"
    return subprocess.run(["setpriv", *user, "cat", path], capture_output=True).returncode == 0


@pytest.mark.skipif(not HAVE_LOCAL, reason="no local backend here")
def test_the_local_sandbox_sees_its_work_dir_and_the_system_only(monkeypatch):
    task = load_tasks(split="train")[0]
    answer_key = os.path.join(task["package_dir"], task["file"])  # this checkout's correct source
    correct = package_files(task, buggy=False)[task["file"]]
    markers, made = {}, []
    try:
        for place in ("/home", "/var/tmp", "/opt", "/srv", "/mnt", "/etc", "/usr/local"):  # Debian has them all
            made.append(tempfile.mkdtemp(prefix="tree-rl-marker-", dir=place))
            os.chmod(made[-1], 0o755)
            markers[os.path.join(made[-1], "marker.txt")] = f"marker of {place}"
        markers[os.path.join(made[0], task["file"])] = correct  # the answer key of a checkout in a home directory
        for path, text in markers.items():
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o644)
        paths = [*markers, answer_key]

        def seen():
            box = sandbox_module.LocalSandbox({"see.py": SEE, "paths.json": json.dumps(paths)})
            try:
                return json.loads(box.run("python3 see.py")[1])
            finally:
                box.close()

        sandboxed = seen()
        assert {path: sandboxed[path] for path in paths} == {path: "FileNotFoundError" for path in paths}
        assert sandboxed["interfaces"] == []
        # positive control: the same probe with the old view (the whole host read-only) reads every marker, this
        # checkout's answer key where the sandbox's user could read it (not in a 0700 home, not under the
        # sandbox's own /work or /tmp), and the host's interfaces
        monkeypatch.setattr(sandbox_module, "system_view", lambda: ["--ro-bind", "/", "/"])
        widened = seen()
        assert {path: widened[path] for path in markers} == markers
        if readable_by_nobody(answer_key) and not answer_key.startswith((sandbox_module.WORKDIR + "/", "/tmp/")):
            assert widened[answer_key] == correct
        assert widened["interfaces"] == sorted(os.listdir("/sys/class/net")) != ["lo"]
    finally:
        for directory in made:
            shutil.rmtree(directory)


# ---------------------------------------------------------------------------------------------------
# 3. A submission cannot forge its grade
# ---------------------------------------------------------------------------------------------------
# the attack: an exit handler rewrites the old grader's junit report, every visible test id as passed
REWRITE_REPORT = ("import atexit, glob, re; atexit.register(lambda: open('.grade/report.xml', 'w').write("
                  "'<testsuite>' + ''.join('<testcase classname=\"tests.%s\" name=\"%s\"/>' "
                  "% (f.split('/')[-1][:-3], n) for f in glob.glob('.grade/tests/test_*.py') "
                  "for n in re.findall(r'def (test_\\w+)', open(f).read())) + '</testsuite>'))")
NONCE_GUESS = "0" * 32


def old_grade(env, files: dict, ids: list[str]) -> set[str]:
    """The grading of the old env, for positive controls: the hidden tests under .grade/ beside the agent's code,
    pytest's junit report read after pytest exited. Returns the ids it counts as passed."""
    hidden = {f".grade/{path}": text for path, text in files.items() if path.startswith("tests/")}
    box = env._new_sandbox({**files, **hidden})
    try:
        quoted = " ".join(f".grade/{t}" for t in ids)
        _, xml = box.run(f"{env_module.PYTEST} --rootdir=.grade --junitxml=.grade/report.xml {quoted} >/dev/null 2>&1;"
                         f" cat .grade/report.xml", timeout=env_module.TEST_TIMEOUT)
    finally:
        box.close()
    report = os.path.join(tempfile.mkdtemp(), "report.xml")
    with open(report, "w") as f:
        f.write(xml[xml.index("<"):] if "<" in xml else "<testsuite/>")
    return {test for test, outcome in read_junit(report)[0].items() if outcome == "passed"}


def submit_with(env, code: str) -> tuple[float, dict]:
    run_at_import(env, code)
    _, reward, terminated, _, info = env.step("submit")
    assert terminated
    return reward, info


def test_an_exit_handler_that_rewrites_the_report_does_not_pay(env, monkeypatch):
    reward, info = submit_with(env, REWRITE_REPORT)
    assert reward == 0.0 and info["tampered"]  # the guard sees `atexit`
    task = env.state.task
    ids = task["fail_to_pass"] + task["pass_to_pass"]
    files = env_module.grading_files(task, env.state.files)
    assert set(ids) <= old_grade(env, files, ids)  # positive control: graded the old way, the forged report pays
    assert not set(task["fail_to_pass"]) & old_grade(env, package_files(task), ids)  # and the bug is not fixed
    monkeypatch.setattr(env_module, "tampering", lambda task, submitted: None)  # without the guard:
    reward, info = submit_with(env, REWRITE_REPORT)
    assert reward == 0.0 and not info["tampered"]  # the fresh grader ended the process before the handler ran


def test_files_planted_in_the_agents_sandbox_are_not_graded(env):
    """A conftest.py that turns every test into a pass, planted by the edited visible tests at `run_tests`: it
    works in the agent's sandbox, and grading (a fresh sandbox with the package's source files only) never sees it."""
    env.reset(options={"task_id": 0})
    plant = ("import pytest; open('conftest.py', 'w').write('def pytest_collection_modifyitems(items):\\n"
             "    for item in items:\\n        item.runtest = lambda: None\\n')")
    env.step(f"edit tests/test_{env.state.task['package']}.py 1 {plant}")
    assert "failed" in env.step("run_tests")[0]  # the bug is still there; this run plants conftest.py
    obs = env.step("run_tests")[0]
    assert "passed" in obs and "failed" not in obs  # positive control: in the agent's sandbox every test passes
    _, reward, _, _, info = env.step("submit")
    assert reward == 0.0 and not info["tampered"]


def test_a_printed_result_without_the_nonce_does_not_pay(env, monkeypatch):
    env.reset(options={"task_id": 0})
    task = env.state.task
    forged = " ".join(task["fail_to_pass"] + task["pass_to_pass"])
    # pytest captures fd 1 while it imports the package: the line goes to every pipe the process holds (its saved
    # stdout among them), then the process ends before the grader can answer
    code = (f"import os, stat; [os.write(fd, b'\\n{env_module.GRADE_MARKER} {NONCE_GUESS} {forged}\\n') "
            f"for fd in range(1, 64) if os.path.exists('/proc/self/fd/%d' % fd) "
            f"and stat.S_ISFIFO(os.fstat(fd).st_mode)]; os._exit(0)")
    monkeypatch.setattr(env_module, "tampering", lambda task, submitted: None)  # the grader alone
    assert submit_with(env, code)[0] == 0.0
    monkeypatch.setattr(env_module.secrets, "token_hex", lambda size: NONCE_GUESS)  # positive control: a nonce
    assert submit_with(env, code)[0] == 1.0  # the code knew would have paid


def test_patching_pytest_in_process_is_stopped_by_the_guard_only(env, monkeypatch):
    """What the docs say is left: code in the grader's interpreter patches pytest's reports (every test passes).
    The fresh process does not stop that; the tamper guard does."""
    code = "import _pytest.reports as r; r.BaseReport.passed = property(lambda report: True)"
    reward, info = submit_with(env, code)
    assert reward == 0.0 and info["tampered"]
    monkeypatch.setattr(env_module, "tampering", lambda task, submitted: None)  # positive control: unguarded,
    reward, info = submit_with(env, code)
    assert reward == 1.0 and not info["tampered"]  # it pays


HOSTILE = ["import atexit", "os._exit(0)", "sys.exit(0)", "raise SystemExit", "import pytest",
           "from _pytest import runner", "builtins.len = None", "__builtins__['len'] = None", "gc.get_objects()",
           "x = open('/proc/self/mem')", "y = __import__('o' + 's')", "importlib.import_module('os')", "exec('x = 1')",
           "f = e.__traceback__.tb_frame", "().__class__.__base__.__subclasses__()", "p = '.grade_nonce'", "quit()",
           "signal.alarm(1)", "getattr(a, 'b')", "threading.Thread(target=f).start()", "import __main__",
           "import posix"]


# ---------------------------------------------------------------------------------------------------
# 4. The grade cannot be bought from inside the graded process
# ---------------------------------------------------------------------------------------------------
# the first attack: pytest's reports patched at import so that failures read as passes, pytest reached through
# an attribute chain (`linecache.sys.modules`) under a name pieced from strings; the old name list saw none of it
PATCH_PYTEST_BY_PIECES = ("import linecache; linecache.sys.modules['_py' + 'test.reports'].BaseReport.passed = "
                          "property(lambda report: True)")


def forge_from_the_graders_frame(ids: list[str]) -> str:
    """The issue's second attack: the nonce read from the grader's own frame (a walk up the stack, its locals), a
    result line with it written to every pipe the process holds (the grader's saved stdout among them), then the
    process ended before the grader's own line. Marker, /proc and the exit are pieced or reached by attribute."""
    line = "'\\ntree-rl-gr' + 'ade ' + nonce + ' " + " ".join(ids) + "\\n'"
    return ("import linecache, stat, traceback; nonce = [frame.locals['nonce'][1:-1] for frame in traceback."
            "StackSummary.extract(traceback.walk_stack(None), capture_locals=True) if 'nonce' in (frame.locals or {})]"
            "[0]; fds = linecache.os.listdir('/pr' + 'oc/self/fd'); [linecache.os.write(int(fd), (" + line + ")."
            "encode()) for fd in fds if int(fd) > 0 and linecache.os.path.exists('/pr' + 'oc/self/fd/' + fd) and "
            "stat.S_ISFIFO(linecache.os.fstat(int(fd)).st_mode)]; linecache.os._exit(0)")


# lines that reach the interpreter with no name or attribute the old list had, or through a string
HOSTILE_WITHOUT_NAMES = ["x = '{0.__globals__}'.format(len)", "x = str.format_map('{a}', {})", "x = f'{len.__self__}'",
                         "x = [1].count.__self__", "x = (lambda: 0).__code__", "y = sorted.__module__",
                         "x = [t for t in range(3)]; y = t.f_back", "x = {}.mro", "global total",
                         "def __eq__(self, other): return True", "x = Account.__init__.__globals__"]


def attack(env, name: str) -> str:
    task = env.state.task
    if name == "frame":
        return forge_from_the_graders_frame(task["fail_to_pass"] + task["pass_to_pass"])
    return ("pass\r" if name == "pytest after a carriage return" else "") + PATCH_PYTEST_BY_PIECES


@pytest.mark.parametrize("name", ["pytest", "frame", "pytest after a carriage return"])
def test_buying_the_grade_from_inside_the_process_is_flagged(env, monkeypatch, name):
    """Each attack of the issue, one edited line of the package's module, graded through `submit`: reward 0 and
    `tampered`. Positive controls: with the guard off the same line pays 1.0 with the bug still there (the attack
    works on the grader), a correct fix pays 1.0, a plain tamper is flagged."""
    env.reset(options={"task_id": 0})  # the task the attack names the tests of; `submit_with` resets to it
    reward, info = submit_with(env, attack(env, name))
    assert reward == 0.0 and info["tampered"]
    with monkeypatch.context() as unguarded:
        unguarded.setattr(env_module, "tampering", lambda task, submitted: None)
        reward, info = submit_with(env, attack(env, name))
        assert reward == 1.0 and not info["tampered"]  # bought: the bug is unfixed
        assert env.state.files[env.state.task["file"]] != package_files(env.state.task, buggy=False)[
            env.state.task["file"]]
    reward, info = play(env, 0, lambda e: e.expert_action())
    assert reward == 1.0 and not info["tampered"]
    reward, info = submit_with(env, "import os; os._exit(0)")
    assert reward == 0.0 and info["tampered"]


def test_the_tamper_guard_passes_every_fix_and_flags_hostile_lines():
    tasks = load_tasks()
    flagged = {task["id"]: problem for task in tasks  # the reference fix of every task (its package's own line)
               if (problem := env_module.tampering(task, env_module.grading_files(
                   task, {task["file"]: package_files(task, buggy=False)[task["file"]]})))}
    assert flagged == {} and len(tasks) == 450
    task = tasks[0]
    given = package_files(task)
    lines = given[task["file"]].split("\n")
    line = module_level_blank_line(given[task["file"]])
    ids = task["fail_to_pass"] + task["pass_to_pass"]
    for hostile in HOSTILE + [PATCH_PYTEST_BY_PIECES, forge_from_the_graders_frame(ids)] + HOSTILE_WITHOUT_NAMES:
        edited = "\n".join(lines[:line - 1] + [hostile] + lines[line:])  # positive control: each one is flagged
        assert env_module.tampering(task, env_module.grading_files(task, {task["file"]: edited})), hostile
    for change in ({1: "\ufeff" + lines[0], line: "import os"},  # a byte-order mark: the text no longer parsed
                   {1: "# coding: latin-1", 2: '"""'},  # Python would read other text (utf-7: `+ADs-` is `;`)
                   {line: "x = 1\rimport os"}):  # a carriage return ends a line for Python, not for difflib
        edited = [change.get(number, text) for number, text in enumerate(lines, 1)]
        assert env_module.tampering(task, env_module.grading_files(task, {task["file"]: "\n".join(edited)})), change
    for harmless in ("total = sum(sorted([3, 1], key=lambda v: -v))", "words = ' '.join(w.upper() for w in 'ab')"):
        edited = "\n".join(lines[:line - 1] + [harmless] + lines[line:])  # names and methods it allows
        assert env_module.tampering(task, env_module.grading_files(task, {task["file"]: edited})) is None, harmless


# ---------------------------------------------------------------------------------------------------
# 5. A sandbox command sees nothing of the host's process: no variable, no standard input
# ---------------------------------------------------------------------------------------------------
SHOW_ENVIRONMENT = "python3 -c 'import json, os; print(json.dumps(dict(os.environ)))'"
READ_STDIN = "python3 -c 'import sys; print(repr(sys.stdin.read()))'"


def test_a_sandbox_command_sees_none_of_the_hosts_variables(env, monkeypatch):
    monkeypatch.setenv("TREE_RL_HOST_MARKER", "the host's marker")
    env.reset(options={"task_id": 0})
    seen = json.loads(env.sandbox.run(SHOW_ENVIRONMENT, timeout=10)[1])
    seen.pop("PWD")  # the sandbox's shell sets it (/work)
    assert seen == sandbox_module.ENVIRONMENT  # before: all the host's (local), HOSTNAME too (Docker)
    # positive control: a child of the host inherits the marker, and so does the local command without --clearenv
    host = subprocess.run(["sh", "-c", SHOW_ENVIRONMENT], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert json.loads(host.stdout)["TREE_RL_HOST_MARKER"] == "the host's marker"
    if env.backend == "local":
        command = sandbox_module._local_command(env.sandbox.dir, SHOW_ENVIRONMENT)
        old = subprocess.run([arg for arg in command if arg != "--clearenv"], capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, timeout=30)
        assert json.loads(old.stdout)["TREE_RL_HOST_MARKER"] == "the host's marker"


def test_a_sandbox_command_reads_no_standard_input(env):
    """The host's standard input is a pipe holding a line and still open for more: a command that reads its own gets
    EOF at once, neither the line nor a wait."""
    env.reset(options={"task_id": 0})
    read, write = os.pipe()
    saved = os.dup(0)
    os.dup2(read, 0)
    try:
        if env.backend == "local":  # positive control: the local command run as before (stdin inherited) reads it
            os.write(write, b"the host's input\n")
            old = subprocess.run(sandbox_module._local_command(env.sandbox.dir, "head -n 1"), capture_output=True,
                                 text=True, timeout=30)
            assert old.stdout == "the host's input\n"
        os.write(write, b"the host's input\n")
        code, out = env.sandbox.run(READ_STDIN, timeout=10)
    finally:
        os.dup2(saved, 0)
        for fd in (saved, read, write):
            os.close(fd)
    assert (code, out) == (0, "''\n")
    assert env.sandbox.run(f"echo given | {READ_STDIN}", timeout=10)[1] == "'given\\n'\n"  # the probe reads stdin


# ---------------------------------------------------------------------------------------------------
# 6. A grader that cannot start is an error, never a grade of 0
# ---------------------------------------------------------------------------------------------------
def test_a_grader_that_cannot_start_raises_instead_of_grading_0(env, monkeypatch):
    """A correct fix graded while the grading sandbox has no process to spare, as when a fork bomb in a concurrent
    episode held every process of the local sandboxes' one user: scaled down to a process limit the grader's own
    command exceeds (locally bubblewrap cannot fork; in Docker the container's shell cannot). The old `_grade` found
    no result line and paid 0; now it tries GRADE_TRIES times and raises. Positive control: the same submission
    graded with the limits back pays 1.0."""
    env.reset(options={"task_id": 0})
    while (action := env.expert_action()) != "submit":
        env.step(action)
    monkeypatch.setattr(env_module, "GRADE_RETRY_PAUSE", 0.1)
    with monkeypatch.context() as starved:
        if env.backend == "local":
            starved.setitem(sandbox_module.LOCAL_LIMITS, "nproc", 1)
        else:
            starved.setattr(env_module, "DockerSandbox", functools.partial(sandbox_module.DockerSandbox, limits=dict(
                mem_limit="512m", memswap_limit="512m", pids_limit=2, nano_cpus=1_000_000_000)))
        with pytest.raises(sandbox_module.SandboxError, match="could not start in 3 tries") as raised:
            env.step("submit")
    message = str(raised.value)
    assert ("Creating new namespace failed" if env.backend == "local" else "Cannot fork") in message, message
    assert "exit code" in message and env.state.reward == 0.0 and not env.state.done
    obs, reward, terminated, _, info = env.step("submit")
    assert terminated and reward == 1.0 and not info["tampered"], obs
