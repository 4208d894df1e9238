"""The code-repair sandbox against the code it runs, tried as an adversarial policy would: through the env's own
actions (`edit` a line so that it runs code when `run_tests` or grading imports it, then `cat` / `edit` / `submit`),
with the checks made on the host. Each test carries a positive control made in the test itself: the same probe
succeeds where the defence is taken away (a host-side open(), the old whole-host view, the old grading)."""

import ast
import functools
import gc
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import tempfile
import threading
import time

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
        monkeypatch.setattr(sandbox_module, "system_view", lambda hidden=(): ["--ro-bind", "/", "/"])
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
    episode held every process of the local sandboxes' one user (before per-sandbox cgroups): scaled down to a
    process limit the grader's own command exceeds (locally bubblewrap cannot fork; in Docker the container's shell
    cannot). The old `_grade` found no result line and paid 0; now it tries GRADE_TRIES times and raises. Positive
    control: the same submission graded with the limits back pays 1.0."""
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
    # locally bubblewrap's fork fails, or already setpriv's exec of it (the kernel checks the process limit there
    # too, once the sandbox user has as many processes as the limit): either way EAGAIN
    assert ("Resource temporarily unavailable" if env.backend == "local" else "Cannot fork") in message, message
    assert "exit code" in message and env.state.reward == 0.0 and not env.state.done
    obs, reward, terminated, _, info = env.step("submit")
    assert terminated and reward == 1.0 and not info["tampered"], obs


# ---------------------------------------------------------------------------------------------------
# 7. The answer key stays hidden wherever the checkout lives (local backend)
# ---------------------------------------------------------------------------------------------------
CHECKOUT_PLACES = ("/usr/src", "/usr/lib", "/opt", "/srv", "/home", "/root")
READABLE = "import json, os, sys; print(json.dumps([os.access(p, os.R_OK) for p in sys.argv[1:]]))"


def task_dir_at(place: str) -> str:
    """A task data dir (one training task and its package) in a new directory under `place`, readable by all."""
    task = load_tasks(split="train")[0]
    os.makedirs(place, exist_ok=True)
    root = tempfile.mkdtemp(prefix="tree-rl-checkout-", dir=place)
    shutil.copytree(task["package_dir"], os.path.join(root, "packages", task["package"]))
    with open(os.path.join(root, "tasks.jsonl"), "w") as f:
        f.write(json.dumps({key: value for key, value in task.items() if key != "package_dir"}) + "\n")
    subprocess.run(["chmod", "-R", "a+rX", root], check=True)
    return root


@pytest.mark.skipif(not HAVE_LOCAL, reason="no local backend here")
def test_the_answer_key_is_hidden_wherever_the_checkout_lives(monkeypatch):
    """A task data dir (the pristine package: the answer key) under /usr/src, /usr/lib, /opt, /srv, /home and
    /root: the env's sandbox cannot read it, nor a checkout that lives inside a dir the sandbox must show (/usr/lib).
    Positive control: the old view (/usr whole; here the whole host) reads every one but /root's (0700)."""
    roots = [task_dir_at(place) for place in CHECKOUT_PLACES]
    try:
        answer_keys = []
        for root in roots:
            env = make_env("swe", split="train", backend="local", data_dir=root)
            env.reset(options={"task_id": 0})
            task = env.state.task
            answer_keys.append(os.path.join(task["package_dir"], task["file"]))
            paths = [answer_keys[-1], os.path.join(root, "tasks.jsonl")]
            code, out = env.sandbox.run(f"python3 -c {shlex.quote(READABLE)} {' '.join(paths)}")
            assert (code, json.loads(out)) == (0, [False, False]), (root, out)
            env.close()
        usr_lib = roots[CHECKOUT_PLACES.index("/usr/lib")]
        monkeypatch.setattr(sandbox_module, "CHECKOUT_DIR", usr_lib)  # this checkout itself under /usr/lib
        box = sandbox_module.LocalSandbox()
        assert json.loads(box.run(f"python3 -c {shlex.quote(READABLE)} {usr_lib}/tasks.jsonl /usr/bin/python3")[1]) \
            == [False, True]  # the system stays readable
        box.close()
        monkeypatch.setattr(sandbox_module, "system_view", lambda hidden=(): ["--ro-bind", "/", "/"])
        box = sandbox_module.LocalSandbox()
        seen = json.loads(box.run(f"python3 -c {shlex.quote(READABLE)} {' '.join(answer_keys)}")[1])
        box.close()
        assert seen == [place != "/root" for place in CHECKOUT_PLACES]
    finally:
        for root in roots:
            shutil.rmtree(root)


# ---------------------------------------------------------------------------------------------------
# 8. One episode's abuse leaves another's grade intact: per-sandbox processes, memory, /tmp, disk and files
# ---------------------------------------------------------------------------------------------------
BOMB = ("python3 -c 'import os, time\nwhile True:\n    try:\n        if os.fork() == 0:\n            time.sleep(30)\n"
        "    except OSError:\n        time.sleep(0.05)'")


def skip_without_local_limits(env) -> None:
    """A host where the local backend cannot have limits of its own (no root, a read-only cgroup file system) runs
    it with the old shared ones, and says so: these tests have nothing to show there."""
    if env.backend == "local" and (problem := sandbox_module.local_limits_problem()):
        pytest.skip(f"local sandboxes have no limits of their own here: {problem}")


def expert_until_submit(env, task_id: int = 0) -> None:
    env.reset(options={"task_id": task_id})
    while (action := env.expert_action()) != "submit":
        env.step(action)


def beside(abuse, grade):
    """`abuse()` in a thread, given 2 s to take what it can, and `grade()` meanwhile; returns both results."""
    results = {}
    thread = threading.Thread(target=lambda: results.setdefault("abuse", abuse()), daemon=True)
    thread.start()
    time.sleep(2.0)
    try:
        results["grade"] = grade()
    finally:
        thread.join(60)
    return results["abuse"], results["grade"]


def test_a_fork_bomb_leaves_a_concurrent_grade_intact(env, monkeypatch):
    """Another episode's code holds every process it may while this episode's correct fix is graded: the grade is
    1.0. Positive control (local): with the old per-user process limit instead of a cgroup per sandbox, the grader
    cannot start while the bomb runs, and grading raises."""
    skip_without_local_limits(env)
    monkeypatch.setattr(env_module, "GRADE_RETRY_PAUSE", 0.1)

    def graded_beside_a_bomb():
        bomber = env._new_sandbox({})
        expert_until_submit(env)
        try:  # the shell counts the processes it sees with a builtin: it cannot fork once the bomb holds them all
            return beside(lambda: bomber.run(f"{BOMB} & sleep 5; set -- /proc/[0-9]*; echo count $#", timeout=7),
                          lambda: env.step("submit"))
        finally:
            bomber.close()

    (_, held), (obs, reward, terminated, _, info) = graded_beside_a_bomb()
    assert int(re.search(r"count (\d+)", held).group(1)) >= 50, held  # it held (nearly) all its sandbox's 64
    assert terminated and reward == 1.0 and not info["tampered"], obs
    if env.backend == "local":
        monkeypatch.setattr(sandbox_module, "_CGROUP_PARENTS", [None])
        with pytest.raises(sandbox_module.SandboxError, match="could not start"):
            graded_beside_a_bomb()


MiB = 1 << 20
WRITE = "head -c {size} /dev/zero > {path}; echo size $(stat -c %s {path})"
MAKE_FILES = "i=0; while [ $i -lt {count} ]; do : > f$i 2>/dev/null || break; i=$((i+1)); done; echo made $i"


def test_writing_past_a_sandboxs_limits_is_stopped(env, monkeypatch):
    """Scaled down to a 4 MiB work dir of at most 64 files, an 8 MiB /tmp and (its own sandbox) 48 MiB of memory
    with a larger /tmp: each write past a limit stops there (locally the tmpfs is full or the cgroup's OOM killer
    ends the writer; in Docker /tmp is full, the memory cgroup ends the writer, and the work dir's watch ends the
    episode: LimitExceeded), while a concurrent episode's correct fix is graded 1.0. Positive control: the same
    writes under the limits succeed."""
    skip_without_local_limits(env)
    if env.backend == "local":
        for key, value in dict(disk=4 * MiB, files=64, tmp=8 * MiB).items():
            monkeypatch.setitem(sandbox_module.LOCAL_LIMITS, key, value)
    else:
        monkeypatch.setitem(sandbox_module.DOCKER_WORK_LIMITS, "disk_kb", 4096)
        monkeypatch.setitem(sandbox_module.DOCKER_WORK_LIMITS, "files", 64)
        monkeypatch.setattr(sandbox_module, "DOCKER_TMP", "size=8m,nr_inodes=64,mode=1777")

    def attempt(command: str, memory: bool = False) -> str:
        with monkeypatch.context() as small_memory:
            if memory and env.backend == "local":
                small_memory.setitem(sandbox_module.LOCAL_LIMITS, "memory", 48 * MiB)
                small_memory.setitem(sandbox_module.LOCAL_LIMITS, "tmp", 256 * MiB)
            elif memory:
                small_memory.setattr(sandbox_module, "DOCKER_LIMITS", dict(sandbox_module.DOCKER_LIMITS,
                                                                           mem_limit="48m", memswap_limit="48m"))
                small_memory.setattr(sandbox_module, "DOCKER_TMP", "size=256m,mode=1777")
            box = env._new_sandbox({})
            try:
                return box.run(command, timeout=15)[1]
            except sandbox_module.LimitExceeded as error:
                return f"LimitExceeded: {error}"
            finally:
                box.close()

    abuses = {"disk": WRITE.format(size="16M", path="big"), "files": MAKE_FILES.format(count=200),
              "tmp": WRITE.format(size="16M", path="/tmp/big"), "memory": WRITE.format(size="100M", path="/tmp/big")}
    expert_until_submit(env)
    seen, (obs, reward, terminated, _, _) = beside(
        lambda: {kind: attempt(command, memory=kind == "memory") for kind, command in abuses.items()},
        lambda: env.step("submit"))
    assert terminated and reward == 1.0, obs
    stopped = "LimitExceeded" if env.backend == "docker" else "No space left"
    assert stopped in seen["disk"] and "size 16777216" not in seen["disk"], seen["disk"]
    assert stopped in seen["files"] or int(seen["files"].split()[-1]) <= 64, seen["files"]
    assert "No space left" in seen["tmp"] and "size 16777216" not in seen["tmp"], seen["tmp"]
    assert f"size {100 * MiB}" not in seen["memory"], seen["memory"]
    # positive control: under the limits the same writes go through
    assert attempt(WRITE.format(size="1M", path="big")).endswith(f"size {MiB}\n")
    assert attempt(MAKE_FILES.format(count=20)).endswith("made 20\n")
    assert attempt(WRITE.format(size="1M", path="/tmp/big")).endswith(f"size {MiB}\n")
    assert attempt(WRITE.format(size="16M", path="/tmp/big"), memory=True).endswith(f"size {16 * MiB}\n")


# ---------------------------------------------------------------------------------------------------
# 9. Docker: the code under test is not root, leaves nothing running, and a slow snapshot is not lost
# ---------------------------------------------------------------------------------------------------
DAEMON = "(while :; do echo x >> beat; sleep 0.1; done) &"
KILL_ALL = "for p in /proc/[0-9]*; do kill -9 ${p#/proc/} 2>/dev/null; done"  # every process it may signal


@pytest.mark.parametrize("backend", [backend_param("docker")])
def test_docker_runs_the_code_unprivileged_and_ends_what_it_left(backend):
    """The code under test is the unprivileged user and cannot kill the shell that cleans up after it: a heartbeat
    daemon it starts (after trying to kill every process) stops with its command. Positive control: a root
    command (as every command ran before) is uid 0, and the same daemon without the cleanup keeps beating."""
    env = make_env("swe", split="train", backend=backend)
    env.reset(options={"task_id": 0})
    box = env.sandbox
    try:
        assert box.run("id -u")[1] == f"{sandbox_module.UNPRIVILEGED_UID}\n"
        assert box.run_raw("id -u")[1] == "0\n"
        box.run(f"{DAEMON} {KILL_ALL}; sleep 0.5")
        time.sleep(0.5)
        beats = box.run_raw("wc -c < beat")[1]
        time.sleep(0.6)
        assert box.run_raw("wc -c < beat")[1] == beats  # no daemon left
        box.run_raw(f"rm beat; {DAEMON} sleep 0.3")  # positive control: without the cleanup it outlives its command
        time.sleep(0.6)
        beats = box.run_raw("wc -c < beat")[1]
        time.sleep(0.6)
        assert int(box.run_raw("wc -c < beat")[1]) > int(beats)
    finally:
        env.close()


@pytest.mark.parametrize("backend", [backend_param("docker")])
def test_a_snapshot_the_client_gave_up_on_is_found_or_replayed(backend, monkeypatch):
    """A commit that outlasts the client's timeout (here 0.05 s for a 30 MB layer; 10 s and 100,000 files before
    the file limit) goes on in the engine: its image is waited for and used, and dropped with the snapshot. When it
    never shows, the snapshot raises envs.SnapshotError and BPO replays the episode instead. Positive control: the
    client raised, yet the engine made the image (the untracked leftover of before)."""
    import bpo
    from envs import ReplaySnapshot, SnapshotError
    env = make_env("swe", split="train", backend=backend)
    env.reset(options={"task_id": 0})
    env.step(f"cat {env.state.task['file']} 1-3")
    env.sandbox.run("head -c 30M /dev/urandom > big")
    client = env.client
    snapshots = {"label": f"{sandbox_module.LABEL}=snapshot"}
    labelled = lambda: {image.id for image in client.images.list(filters=snapshots)}  # noqa: E731
    before = labelled()

    def hurried(take):  # `take()` with the client's timeout at 0.05 s (the engine is busy committing 30 MB)
        with monkeypatch.context() as short:
            short.setattr(client.api, "timeout", 0.05)
            return take()

    try:
        with monkeypatch.context() as old:  # positive control: the client gives up, the engine commits anyway
            old.setattr(sandbox_module, "committed_late", lambda client, name: None)
            with pytest.raises(SnapshotError):
                hurried(env.snapshot)
        deadline = time.time() + 60
        while not labelled() - before and time.time() < deadline:
            time.sleep(0.5)
        left = labelled() - before
        assert left
        for image in left:
            client.images.remove(image, force=True)
        handle = hurried(env.snapshot)  # the commit's image, found after the client's timeout
        restored = handle.restore()
        assert restored.sandbox.run("stat -c %s big")[1] == f"{30 << 20}\n"
        restored.close()
        image = handle._sandbox.image
        del handle
        gc.collect()
        assert image not in labelled()
        monkeypatch.setattr(sandbox_module, "SNAPSHOT_WAIT", 0.0)  # a commit that never shows (in time)
        replay = hurried(lambda: bpo.branch_snapshot(env, replay=False))
        assert isinstance(replay, ReplaySnapshot)
        copy = replay.restore()
        assert copy.state.steps == env.state.steps and copy.sandbox.read(env.state.task["file"]) == \
            env.sandbox.read(env.state.task["file"])
        copy.close()
    finally:
        env.close()
