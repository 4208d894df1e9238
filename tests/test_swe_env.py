"""The code-repair env on both sandbox backends: actions, hidden-test reward, expert and demonstrator,
snapshot fidelity, and isolation that holds against hostile code (each with a positive control).

The Docker tests need an engine (`eval "$(bash envs/swe/docker_engine.sh)"`); without one they skip with
the reason, except where TREE_RL_REQUIRE_DOCKER=1 (CI), where they fail."""

import gc
import os
import random
import socket
import threading

import pytest

from envs import check_snapshot_fidelity, make_env
from envs.swe import sandbox as sandbox_module
from envs.swe.engine import docker_client
from envs.swe.env import minimal_replacement
from envs.swe.tasks import package_files
from policy import build_word_tokenizer, tokenizer_words

HAVE_DOCKER = docker_client() is not None
REQUIRE_DOCKER = os.environ.get("TREE_RL_REQUIRE_DOCKER") == "1"
HAVE_LOCAL = sandbox_module.local_isolation_problem() is None


def backend_param(name):
    if name == "docker" and not HAVE_DOCKER and not REQUIRE_DOCKER:
        return pytest.param(name, marks=pytest.mark.skip(reason="no Docker engine answers (envs/swe/docker_engine.sh)"))
    if name == "local" and not HAVE_LOCAL:
        reason = f"local backend: {sandbox_module.local_isolation_problem()}"
        return pytest.param(name, marks=pytest.mark.skip(reason=reason))
    return name


BACKENDS = [backend_param("local"), backend_param("docker")]


pytestmark = pytest.mark.usefixtures("reap_swe_sandboxes")  # conftest.py: containers and images reaped


@pytest.fixture(params=BACKENDS)
def env(request):
    made = make_env("swe", split="train", backend=request.param)
    assert made.backend == request.param
    yield made
    made.close()


def play(env, task_id, choose, steps=12):
    obs, info = env.reset(options={"task_id": task_id})
    reward = 0.0
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(choose(env))
        if terminated or truncated:
            break
    return reward, info


def test_expert_fixes_and_demonstrator_makes_its_mistakes(env):
    rng = random.Random(0)
    ids = rng.sample(range(env.num_tasks), 6)
    expert = [play(env, t, lambda e: e.expert_action()) for t in ids]
    assert all(reward == 1.0 for reward, _ in expert)
    for t in ids:  # always the mistakes: still repaired
        assert play(env, t, lambda e: e.demo_action(rng, 1.0))[0] == 1.0
        task, actions = env.state.task, list(env.actions_taken)
        assert not actions[0].startswith("cat ")  # it edits before reading
        if task["line"] < len(package_files(task)[task["file"]].rstrip("\n").split("\n")):
            assert actions[0].startswith(f"replace {task['file']} {task['line'] + 1} ")  # one line too low
    for t in ids:  # the expert's first command reads what the prompt's task text points at, nothing it hides
        obs, info = env.reset(options={"task_id": t})
        command = env.expert_action().split()
        assert command[0] == "cat" and " ".join(command[1:]) in info["task"] and " ".join(command[1:]) in \
            obs.replace(" lines ", " ")


def test_actions_and_their_errors_change_nothing(env):
    env.max_steps = 40  # 20 bad actions and 5 good ones in one episode: past 12 steps it would be truncated
    obs, info = env.reset(options={"task_id": 0})
    task = env.state.task
    before = env.sandbox.read(task["file"])
    for action in ("", "rm -rf /", "cat", f"cat {task['file']} 9-2", "cat ../../etc/passwd", "cat /etc/passwd",
                   f"edit {task['file']} 0 x", f"edit {task['file']} 9999 x", "edit ../outside.py 1 x",
                   "edit /etc/hosts 1 x", "ls ..", "ls /", "grep", "grep two words", "cat missing.py",
                   "replace", f"replace {task['file']} {task['line']} no such text => x",
                   f"replace {task['file']} 9999 a => b", "replace ../outside.py 1 a => b",
                   f"replace {task['file']} {task['line']}   => x"):  # OLD " " occurs more than once
        obs, reward, terminated, truncated, info = env.step(action)
        assert info["invalid"] and not terminated and reward == 0.0, action
        assert obs and "Traceback" not in obs, action
    assert env.sandbox.read(task["file"]) == before
    obs, *_ = env.step(f"cat {task['file']} {task['line']}-{task['line']}")
    assert obs == f"{task['line']} {task['buggy_line']}"
    old, new = minimal_replacement(task["buggy_line"], task["original_line"])
    obs, _, _, _, info = env.step(f"replace {task['file']} {task['line']} {old} => {new}".rstrip())
    assert not info["invalid"] and obs == f"line {task['line']} of {task['file']} is now: {task['original_line']}"
    assert env.sandbox.read(task["file"]).split("\n")[task["line"] - 1] == task["original_line"]
    obs, *_ = env.step("run_tests")
    assert "passed" in obs and " in 0." not in obs  # timings are normalized away
    assert env.step("submit")[1] == 1.0


@pytest.mark.parametrize("line, fixed, old, new", [
    ("    if n <= 0:", "    if n < 0:", "<=", "<"),
    ("    x = f(b, a)", "    x = f(a, b)", "f(b, a)", "f(a, b)"),
    ("        if not x:", "        if x:", "not x:", "x:"),
    ("    return n + 1", "    return n", "n + 1", "n"),
    ("    y = x + x", "    y = x - x", "+", "-"),
    ("    a = a", "    a = b", "= a", "= b"),  # `a` alone occurs twice: widened until it is unique
    ("    pass", "    total = total + x", "pass", "total = total + x"),
])
def test_the_smallest_replace_that_fixes_a_line(line, fixed, old, new):
    assert minimal_replacement(line, fixed) == (old, new)
    assert line.count(old) == 1 and line.replace(old, new) == fixed


def unknown_words(tokenizer, text):
    return [w for w in text.split() if tokenizer.unk_token_id in tokenizer(w, add_special_tokens=False)["input_ids"]]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_tiny_tokenizer_covers_what_the_tasks_show(backend):
    """No `<unk>` in the statement, the expert's commands and their answers (a bug's own constant included:
    `"Transfer in"` for `"transfer in"`), the env's messages and pytest's report words; bench/swe_tasks.py
    checks whole splits."""
    env = make_env("swe", split="test_unseen_bugs", backend=backend)
    tokenizer = build_word_tokenizer(tokenizer_words(env, "swe"))
    for task in env.tasks:
        assert not unknown_words(tokenizer, task["buggy_line"] + " " + task["original_line"]), task["id"]
    task_id = next(i for i, t in enumerate(env.tasks) if '"Transfer in"' in t["buggy_line"])
    obs, info = env.reset(options={"task_id": task_id})
    texts = [obs, info["task"]]
    for _ in range(3):
        action = env.expert_action()
        obs, *_ = env.step(action)
        texts += [action, obs]
    assert "all hidden tests pass" in obs
    env.reset(options={"task_id": task_id})
    file = env.state.task["file"]
    for action in (f"cat {file} 9-3", f"edit {file} 999 x", "grep", f"replace {file} 1 return => x", "run_tests"):
        obs = env.step(action)[0]
        texts.append(obs if action != "run_tests" else obs.split("\n")[-1])  # its summary: `2 failed, 8 passed`
    env.close()
    assert "failed" in texts[-1]
    assert [w for text in texts for w in unknown_words(tokenizer, text)] == []
    # positive control: without the buggy lines' words the bug's constant is `<unk>`
    fixed_only = build_word_tokenizer([w for w in tokenizer_words(env, "swe") if w != '("Transfer'])
    assert unknown_words(fixed_only, texts[4]) == ['("Transfer'] and texts[4].startswith("replace")

def test_editing_the_visible_tests_does_not_pay(env):
    env.reset(options={"task_id": 1})
    task = env.state.task
    for test_file in [p for p in ("tests/test_" + task["package"] + ".py",)]:
        lines = env.sandbox.read(test_file).split("\n")
        for number, line in enumerate(lines, start=1):  # every assert of the visible copy now passes
            if line.strip().startswith("assert "):
                env.step(f"edit {test_file} {number} {line[:len(line) - len(line.lstrip())]}assert True")
    assert "failed" not in env.step("run_tests")[0]
    assert env.step("submit")[1] == 0.0  # the hidden grading copy still fails


def test_snapshot_fidelity_after_edits_and_test_runs(env):
    obs, info = env.reset(options={"task_id": 2})
    task = env.state.task
    env.step(f"edit {task['file']} {task['line']} {task['buggy_line']}  # touched")
    env.step("run_tests")
    actions = [f"cat {task['file']} 1-5", "run_tests", f"edit {task['file']} {task['line']} {task['original_line']}",
               "grep def", "run_tests", "ls", "submit"]
    assert check_snapshot_fidelity(env, actions=actions, num_restores=2).ok


def test_a_killed_sandbox_ends_the_episode_with_a_clear_error(env):
    env.reset(options={"task_id": 3})
    if env.backend == "docker":
        env.sandbox.container.kill()
    else:
        env.sandbox.close()
    obs, reward, terminated, truncated, info = env.step("run_tests")
    assert terminated and reward == 0.0 and "sandbox died" in obs and info["error"]


def test_a_finished_episode_releases_its_sandbox(env):
    """Regression: every env kept its container (or directory) until its next reset, so the held-out envs of a
    training run (one per task) held one idle container each between evaluations."""
    def exists(sandbox_id):  # a container (docker) or a work dir (local)
        if env.backend == "docker":
            return sandbox_id in {c.id for c in env.client.containers.list(all=True)}
        return os.path.isdir(sandbox_id)

    env.reset(options={"task_id": 5})
    first = env.sandbox.container.id if env.backend == "docker" else env.sandbox.dir
    env.step("ls")
    assert exists(first)  # positive control: held while the episode runs
    assert env.step("submit")[2]
    assert env.sandbox is None and not exists(first)
    obs, reward, terminated, _, info = env.step("ls")
    assert obs == "the episode is over" and terminated and reward == 0.0 and info["invalid"]
    with pytest.raises(RuntimeError, match="snapshot before its last step"):
        env.snapshot()
    short = make_env("swe", split="train", backend=env.backend, max_steps=2)  # the step limit ends it too
    short.reset(options={"task_id": 5})
    assert short.step("ls")[3] is False and short.step("ls")[3] is True and short.sandbox is None
    assert short.step("ls")[0] == "the episode is over"
    env.reset(options={"task_id": 5})  # the next episode gets a new sandbox that works
    assert "passed" in env.step("run_tests")[0]


def test_dropped_forks_and_snapshots_leave_nothing_behind(env):
    """A fork nobody closes (the algorithms drop forks after their rollouts) takes its container or directory
    along, and a dropped snapshot its image once nothing uses it (a chain: the child image first)."""
    env.reset(options={"task_id": 4})
    snapshot = env.snapshot()
    fork = snapshot.restore()
    fork.step("ls")
    child_snapshot = fork.snapshot()
    grandchild = child_snapshot.restore()
    if env.backend == "docker":
        client = env.client
        made = [("container", fork.sandbox.container.id), ("container", grandchild.sandbox.container.id),
                ("image", snapshot._sandbox.image), ("image", child_snapshot._sandbox.image)]

        def remaining():
            ids = {c.id for c in client.containers.list(all=True)} | {i.id for i in client.images.list(all=True)}
            return [thing for thing in made if thing[1] in ids]
    else:
        made = [fork.sandbox.dir, grandchild.sandbox.dir, snapshot._sandbox.dir, child_snapshot._sandbox.dir]

        def remaining():
            return [directory for directory in made if os.path.isdir(directory)]
    assert remaining() == made  # positive control: all there while referenced
    del snapshot  # docker: its image stays while the fork's container and the child image use it
    if env.backend == "docker":
        assert ("image", made[2][1]) in remaining()
    del fork, child_snapshot, grandchild
    gc.collect()
    assert remaining() == []
    assert env.step("ls")[0]  # the original is untouched


@pytest.mark.parametrize("backend", [backend_param("docker")])
def test_a_chain_of_restores_is_flattened_below_the_layer_limit(backend, monkeypatch):
    """Each snapshot of a restored sandbox adds a layer to its image; past MAX_LAYER_DEPTH (3 here, 100 in use)
    the snapshot is the container's whole file system imported as one layer, and it restores, runs and is
    removed like any other."""
    monkeypatch.setattr(sandbox_module, "MAX_LAYER_DEPTH", 3)
    env = make_env("swe", split="train", backend=backend)
    try:
        env.reset(options={"task_id": 0})
        client, fork, layers, images = env.client, env, [], []
        for i in range(6):
            fork.sandbox.write(f"note{i}.txt", f"{i}\n")
            snapshot = fork.snapshot()
            images.append(snapshot._sandbox.image)
            layers.append(len(client.images.get(images[-1]).attrs["RootFS"]["Layers"]))
            fork = snapshot.restore()
        assert layers == [2, 3, 4, 1, 2, 3]  # base image: one layer; the first three show the count grows
        assert [fork.sandbox.read(f"note{i}.txt") for i in range(6)] == [f"{i}\n" for i in range(6)]
        assert fork.step("run_tests")[0] == env.step("run_tests")[0]  # the same code, the same report
        del snapshot, fork
        gc.collect()
        assert not {image.id for image in client.images.list(all=True)} & set(images)
    finally:
        env.close()


# ---------------------------------------------------------------------------------------------------
# Isolation
# ---------------------------------------------------------------------------------------------------
def probe(env, code: str, timeout: float = 20) -> str:
    """Run `code` as the code under test would run: python3 inside the sandbox."""
    if env.state is None:
        env.reset(options={"task_id": 0})
    env.sandbox.write("probe.py", code)
    return env.sandbox.run("python3 probe.py", timeout=timeout)[1]


@pytest.fixture
def loopback_server():
    """A server on the host's loopback, started by the test (no traffic ever leaves this machine)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    stop = threading.Event()

    def serve():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                connection, _ = server.accept()
                connection.sendall(b"hello from the host")
                connection.close()
            except OSError:
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    server.close()


CONNECT = """import socket
try:
    s = socket.create_connection(("127.0.0.1", {port}), timeout=3)
    print("connected", s.recv(100).decode())
except OSError as error:
    print("refused", type(error).__name__)
print("interfaces", sorted(line.split(":")[0].strip() for line in open("/proc/net/dev").readlines()[2:]))
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_network_but_loopback(backend, loopback_server):
    isolated = make_env("swe", split="train", backend=backend)
    isolated.reset(options={"task_id": 0})
    out = probe(isolated, CONNECT.format(port=loopback_server))
    assert "refused" in out and "interfaces ['lo']" in out, out
    isolated.close()
    # positive control: the same probe with host networking (a test-only switch) reaches the server
    open_env = make_env("swe", split="train", backend=backend, network_for_tests=True)
    open_env.reset(options={"task_id": 0})
    out = probe(open_env, CONNECT.format(port=loopback_server))
    assert "connected hello from the host" in out, out
    open_env.close()


def test_code_under_test_cannot_write_outside_the_work_dir(env, tmp_path):
    target = tmp_path / "host_file.txt"
    target.write_text("untouched")
    os.chmod(tmp_path, 0o777)
    os.chmod(target, 0o666)
    out = probe(env, f"""
for path in ({str(target)!r}, "/etc/hosts", "/usr/bin/env_probe"):
    try:
        open(path, "a").write("x")
        print("wrote", path)
    except OSError as error:
        print("denied", path, type(error).__name__)
""")
    assert target.read_text() == "untouched"
    assert "wrote /usr/bin/env_probe" not in out or env.backend == "docker"  # a container writes only its own layer
    assert not os.path.exists("/usr/bin/env_probe")


FORKS = """import os, time
children = 0
for _ in range({n}):
    try:
        if os.fork() == 0:
            time.sleep(3)
            os._exit(0)
        children += 1
    except OSError:
        break
print("children", children)
"""


def test_process_limit_contains_a_fork_bomb(env, monkeypatch):
    out = probe(env, FORKS.format(n=300))
    assert int(out.split("children")[-1]) < 100, out  # the limit stops it
    # positive control: under the limit the same code does create processes
    assert int(probe(env, FORKS.format(n=10)).split("children")[-1]) == 10
    # a real fork bomb in the code under test: contained, the episode ends with reward 0, the host is fine
    test_file = f"tests/test_{env.state.task['package']}.py"  # its first line is an import: it runs at collection
    env.step(f"edit {test_file} 1 import os; [os.fork() for _ in iter(int, 1)]")
    env.step("run_tests")
    assert env.step("submit")[1] == 0.0
    other = make_env("swe", split="train", backend=env.backend)
    other.reset(options={"task_id": 5})
    assert "passed" in other.step("run_tests")[0]  # another sandbox still runs its tests
    other.close()


def test_memory_limit_and_timeouts(env, monkeypatch):
    monkeypatch.setattr("envs.swe.env.TEST_TIMEOUT", 4.0)
    # the message is built at run time, so a traceback quoting the source line does not contain it
    assert "allocated" in probe(env, "x = b'x' * (50 << 20); print('allo' + 'cated')")  # positive control
    out = probe(env, "x = b'x' * (3 << 30); print('allo' + 'cated')")  # touches every page
    assert "allocated" not in out
    env.reset(options={"task_id": 4})
    env.step(f"edit tests/test_{env.state.task['package']}.py 1 while True: pass")
    obs, *_ = env.step("run_tests")  # an infinite loop at import: killed by the timeout, the step returns
    assert "passed" not in obs
    assert env.step("submit")[1] == 0.0


def test_a_flood_of_output_is_cut_and_large_files_are_refused(env):
    """Code under test that prints 50 MB (a print loop writes gigabytes within a command's time limit) leaves the
    host at most MAX_OUTPUT_BYTES of it: the first and the last half, the cut counted between them; a file over that
    size is refused by `read` with a clear error, never loaded. Positive controls: output and a file under the cap
    arrive whole."""
    cap = sandbox_module.MAX_OUTPUT_BYTES
    out = probe(env, "import sys\nfor i in range(800): sys.stdout.write(f'{i:05d}' + 'x' * 65530 + chr(10))\n"
                     "print('the last line')")
    assert len(out) < cap + 100, len(out)
    assert out.startswith("00000x") and out.endswith("the last line\n")
    assert f"[... {800 * 65536 + 14 - cap} bytes of output cut ...]" in out
    assert probe(env, "print('y' * 3000)") == "y" * 3000 + "\n"  # positive control: whole
    probe(env, f"open('big.txt', 'w').write('z' * {cap + 1}); open('small.txt', 'w').write('z' * {cap})")
    with pytest.raises(ValueError, match="larger than"):
        env.sandbox.read("big.txt")
    assert len(env.sandbox.read("small.txt")) == cap
    assert "larger than" in env.step("cat big.txt")[0]  # the agent is told, the episode goes on


@pytest.mark.slow
@pytest.mark.skipif(not (HAVE_DOCKER or REQUIRE_DOCKER), reason="no Docker engine answers")
def test_a_second_engine_through_docker_host(tmp_path, monkeypatch):
    """The scale-out path: a second dockerd on its own socket, reached through DOCKER_HOST, runs the same env
    unchanged, and its containers live on that engine only."""
    import subprocess

    import shutil
    import tempfile

    first = docker_client()
    engine_dir = tempfile.mkdtemp(prefix="trl-", dir="/tmp")  # unix socket paths must stay short (108 bytes)
    environment = {k: v for k, v in os.environ.items() if k != "DOCKER_HOST"}
    environment["TREE_RL_DOCKER_DIR"] = engine_dir
    started = subprocess.run(["bash", "envs/swe/docker_engine.sh"], env=environment, capture_output=True, text=True,
                             timeout=120, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert started.returncode == 0, started.stderr
    host = started.stdout.strip().split("DOCKER_HOST=")[1]
    assert host == f"unix://{engine_dir}/docker.sock"
    try:
        monkeypatch.setenv("DOCKER_HOST", host)
        remote = make_env("swe", split="train", backend="docker")
        assert remote.client.info()["DockerRootDir"] != first.info()["DockerRootDir"]  # another engine
        assert play(remote, 0, lambda e: e.expert_action())[0] == 1.0
        remote.reset(options={"task_id": 1})
        container = remote.sandbox.container.id
        assert container in [c.id for c in remote.client.containers.list()]
        assert container not in [c.id for c in first.containers.list(all=True)]
        remote.close()
        sandbox_module.reap(remote.client)
    finally:
        pid_file = os.path.join(engine_dir, "docker.pid")
        if os.path.exists(pid_file):
            subprocess.run(["kill", open(pid_file).read().strip()])
        shutil.rmtree(engine_dir, ignore_errors=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_stopped_process_does_not_take_its_sandbox_for_dead(backend):
    """A real fault: the training process is stopped (SIGSTOP, as a job scheduler or `kill -STOP` does) while a
    command runs in its sandbox, for longer than the host's wait (timeout + 5 s). On SIGCONT the command's
    answer is read, not reported as a dead sandbox (docker) or a timeout (local): the host counts only the time
    it was running."""
    import signal
    import subprocess
    import sys
    import time

    child = subprocess.Popen(
        [sys.executable, "-c",
         "from envs import make_env\n"
         f"env = make_env('swe', split='train', backend={backend!r}); env.reset(options={{'task_id': 0}})\n"
         "print('started', flush=True)\n"
         "print(env.sandbox.run('sleep 3; echo finished', timeout=4), flush=True)\n"
         "env.close()\n"],
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "started", child.stderr.read()
        time.sleep(1.0)  # the command is running in the container
        child.send_signal(signal.SIGSTOP)
        time.sleep(11.0)  # longer than the host's wait of 4 + 5 s
        child.send_signal(signal.SIGCONT)
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 0 and "(0, 'finished\\n')" in out, err[-2000:]
