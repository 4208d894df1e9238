"""Where the code-repair env runs code: a Docker container (snapshot = `container.commit()`), or a local
directory run under bubblewrap as an unprivileged user with process, memory and CPU limits (snapshot = a
directory copy). Both give the same `Sandbox` interface:

    box.run("python -m pytest -q tests", timeout=20) -> (exit code, output)
    box.read("calc.py") -> text;  box.write("calc.py", text)
    handle = box.snapshot(); other = handle.restore()      # a new, independent sandbox in that state
    box.close()

Commands see only the work dir's files (the image's or the host's system read-only), no network but a
loopback interface, a time limit inside the sandbox (`timeout -k`) and on the host. A sandbox that died
(killed container, crashed engine) raises `SandboxError`, never hangs. See docs/envs.md (code repair).
"""

from __future__ import annotations

import atexit
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
import time
import uuid

LABEL = "tree-rl.swe"  # every container and image this module makes carries it (reaped by label)
WORKDIR = "/work"
ENVIRONMENT = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0", "PYTHONPATH": WORKDIR, "HOME": "/tmp",
               "PATH": "/usr/local/bin:/usr/bin:/bin", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "LC_ALL": "C.UTF-8"}
MAX_LAYER_DEPTH = 100  # the engine refuses images deeper than ~125 layers: flatten before that


class SandboxError(RuntimeError):
    """The sandbox is gone (its container was killed, the engine crashed) or a command could not run."""


def safe_path(path: str) -> str:
    """A path relative to the work dir, or ValueError if it leaves it (absolute, `..`, empty)."""
    normal = os.path.normpath(path.strip())
    if not path.strip() or os.path.isabs(normal) or normal == ".." or normal.startswith("../"):
        raise ValueError(f"path {path!r} leaves the work dir")
    return normal


# ---------------------------------------------------------------------------------------------------
# Docker
# ---------------------------------------------------------------------------------------------------
class DockerSandbox:
    """One container per live sandbox, from a locally built image (never pulled): no network, memory, pids
    and CPU limits; the work dir lives in the container's own layer, so `commit()` captures it."""

    def __init__(self, client, image: str, files: dict[str, str] | None = None, limits: dict | None = None,
                 depth: int = 0, network: bool = False):
        self.client, self.image, self.depth, self.network = client, image, depth, network
        self.limits = limits or dict(mem_limit="512m", memswap_limit="512m", pids_limit=64, nano_cpus=1_000_000_000)
        self.container = None  # set before anything can fail, for close() and __del__
        client.images.get(image)  # a missing image must fail here: containers.run would pull it from a registry
        self.container = client.containers.create(
            image, command=["sleep", "infinity"], init=True, network_mode="host" if network else "none",
            working_dir=WORKDIR, labels={LABEL: "container"}, environment=ENVIRONMENT, detach=True, **self.limits)
        _LIVE_CONTAINERS[self.container.id] = client
        self.container.start()
        # the processes that stay: the init process and the container's `sleep` (found before any command ran)
        self.keep = "1"
        code, out = self.run_raw("cat /proc/1/task/1/children")
        self.keep = " ".join(["1", *out.split()]) if code == 0 else "1"
        if files:
            self.put(files)

    def put(self, files: dict[str, str]) -> None:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            for path, text in files.items():
                data = text.encode()
                info = tarfile.TarInfo(safe_path(path))
                info.size, info.mtime, info.mode = len(data), 0, 0o644
                tar.addfile(info, io.BytesIO(data))
        if not self._call(self.container.put_archive, WORKDIR, buffer.getvalue()):
            raise SandboxError("could not copy files into the container")

    def run(self, command: str, timeout: float = 20.0) -> tuple[int, str]:
        """`command` in /bin/sh inside the container, killed by `timeout -k` there and abandoned on the host;
        whatever it left running is killed after it (an init process reaps them)."""
        sweep = (f'for p in /proc/[0-9]*; do q=${{p#/proc/}}; case " {self.keep} $$ " in *" $q "*) ;; '
                 f'*) kill -9 "$q";; esac; done')
        wrapped = ["sh", "-c", f'timeout -k 1 {timeout} sh -c "$0"; status=$?; {sweep} 2>/dev/null; exit $status',
                   command]
        result: dict = {}

        def target():
            try:
                result["value"] = self.container.exec_run(wrapped, workdir=WORKDIR, environment=ENVIRONMENT)
            except Exception as error:  # the engine or the container went away
                result["error"] = error

        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        thread.join(timeout + 5)  # docker-py has no exec timeout; the in-container timeout kills the process
        if thread.is_alive() or "error" in result:
            raise SandboxError(f"sandbox died while running {command!r}: {result.get('error', 'no answer')}")
        exit_code, output = result["value"]
        return exit_code, output.decode(errors="replace")

    def run_raw(self, command: str) -> tuple[int, str]:
        exit_code, output = self._call(self.container.exec_run, ["sh", "-c", command])
        return exit_code, output.decode(errors="replace")

    def read(self, path: str) -> str:
        code, output = self.run(f"cat -- '{safe_path(path)}'", timeout=5)
        if code != 0:
            raise FileNotFoundError(path)
        return output

    def write(self, path: str, text: str) -> None:
        self.put({path: text})

    def snapshot(self) -> "DockerSnapshot":
        return DockerSnapshot(self)

    def alive(self) -> bool:
        try:
            self.container.reload()
            return self.container.status == "running"
        except Exception:
            return False

    def close(self) -> None:
        if self.container is None:
            return
        try:
            self.container.remove(force=True)
            _LIVE_CONTAINERS.pop(self.container.id, None)
        except Exception:
            pass
        self.container = None
        if _UNUSED_IMAGES:  # an image of a dropped snapshot may have waited for this container
            remove_unused_images()

    def __del__(self):  # a sandbox nobody closed (a fork dropped after its rollout) takes its container along
        self.close()

    def _call(self, function, *args):
        try:
            return function(*args)
        except Exception as error:
            raise SandboxError(f"sandbox died: {error}") from None


class DockerSnapshot:
    """`container.commit()`: an image of the container's layer; each `restore()` starts a new container from
    it with the same limits. Chains of restores deepen the image; past MAX_LAYER_DEPTH it is flattened."""

    def __init__(self, sandbox: DockerSandbox):
        self.client, self.limits, self.network = sandbox.client, sandbox.limits, sandbox.network
        self.depth = sandbox.depth + 1
        repository = f"tree-rl-swe-snapshot-{uuid.uuid4().hex[:12]}"
        try:
            if self.depth <= MAX_LAYER_DEPTH:
                image = sandbox.container.commit(repository=repository, tag="latest",
                                                 conf={"Labels": {LABEL: "snapshot"}})
            else:  # the container's whole file system, imported as a one-layer image (`docker export | import`)
                self.client.api.import_image_from_data(b"".join(sandbox.container.export()), repository=repository,
                                                       tag="latest", changes=[f"LABEL {LABEL}=snapshot"])
                image, self.depth = self.client.images.get(f"{repository}:latest"), 1
        except Exception as error:
            raise SandboxError(f"snapshot failed: {error}") from None
        self.image = image.id
        _SNAPSHOT_IMAGES[self.image] = self.client

    def restore(self) -> DockerSandbox:
        return DockerSandbox(self.client, self.image, limits=self.limits, depth=self.depth, network=self.network)

    def __del__(self):  # the image goes with the last reference to its snapshot, once no container uses it
        if getattr(self, "image", None) is not None:
            _UNUSED_IMAGES.append(self.image)
            remove_unused_images()


_LIVE_CONTAINERS: dict = {}  # container id -> client, for the ones not closed yet
_SNAPSHOT_IMAGES: dict = {}  # image id -> client, for the snapshot images not removed yet
_UNUSED_IMAGES: list = []  # images of dropped snapshots; one still used by a container or a child image waits


def remove_unused_images() -> None:
    """Remove the images of dropped snapshots, newest first (a child image before its parent); an image that a
    container or a later snapshot still uses stays in the list for the next call."""
    for image in reversed(list(_UNUSED_IMAGES)):
        try:
            _SNAPSHOT_IMAGES[image].images.remove(image)
        except Exception as error:  # in use (409 conflict) stays; gone already (not found) or no engine: forget it
            if getattr(error, "status_code", None) == 409:
                continue
        _UNUSED_IMAGES.remove(image)
        _SNAPSHOT_IMAGES.pop(image, None)


@atexit.register
def _cleanup_docker() -> None:
    """What this process made and did not close: its containers, then its snapshot images (newest first)."""
    for container_id, client in list(_LIVE_CONTAINERS.items()):
        try:
            client.containers.get(container_id).remove(force=True)
        except Exception:
            pass
    _LIVE_CONTAINERS.clear()
    _UNUSED_IMAGES[:] = list(_SNAPSHOT_IMAGES)  # creation order, so removed newest first: a child before its parent
    remove_unused_images()


def reap(client) -> int:
    """Remove every container and snapshot image this module made on `client`'s engine (also after a crash
    of an earlier run: they are found by label). Returns how many were removed."""
    removed = 0
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        try:
            container.remove(force=True)
            removed += 1
        except Exception:
            pass
    for image in client.images.list(filters={"label": f"{LABEL}=snapshot"}):
        try:
            client.images.remove(image.id, force=True)
            removed += 1
        except Exception:
            pass
    return removed


# ---------------------------------------------------------------------------------------------------
# Local: a directory under bubblewrap
# ---------------------------------------------------------------------------------------------------
UNPRIVILEGED_UID = 65534  # nobody: root ignores RLIMIT_NPROC, so commands run as another user
LOCAL_LIMITS = dict(nproc=64, address_space=1 << 30, cpu_seconds=60)


def local_isolation_problem() -> str | None:
    """Why the local backend cannot isolate untrusted code here (None if it can): it needs bubblewrap,
    setpriv and prlimit, and bubblewrap running as an unprivileged user (user namespaces)."""
    for tool in ("bwrap", "setpriv", "prlimit"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Debian: apt-get install bubblewrap util-linux)"
    probe = subprocess.run(_local_command("/", "true"), capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        return f"bubblewrap cannot run as an unprivileged user here: {probe.stderr.strip()[:200]}"
    return None


def _local_command(workdir: str, command: str, timeout: float = 20.0, network: bool = False) -> list[str]:
    limits = LOCAL_LIMITS
    return ["prlimit", f"--nproc={limits['nproc']}", f"--as={limits['address_space']}",
            f"--cpu={limits['cpu_seconds']}",
            "setpriv", f"--reuid={UNPRIVILEGED_UID}", f"--regid={UNPRIVILEGED_UID}", "--clear-groups",
            "bwrap", "--die-with-parent", "--unshare-all", *(["--share-net"] if network else []),
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            "--bind", workdir, WORKDIR, "--chdir", WORKDIR,
            *[arg for key, value in ENVIRONMENT.items() for arg in ("--setenv", key, value)],
            "timeout", "-k", "1", str(timeout), "sh", "-c", command]


class LocalSandbox:
    """A private copy of the work dir; commands run in it under bubblewrap (`--unshare-all`: only a loopback
    interface), as an unprivileged user with process, address-space and CPU-time limits."""

    def __init__(self, files: dict[str, str] | None = None, source_dir: str | None = None, network: bool = False):
        problem = local_isolation_problem() if not _LOCAL_OK else None
        if problem:
            raise SandboxError(f"the local backend is not isolated here and refuses to run untrusted code: {problem}")
        _mark_local_ok()
        self.network = network
        self.dir = tempfile.mkdtemp(prefix="tree-rl-swe-")
        _LOCAL_DIRS.add(self.dir)
        if source_dir:
            shutil.rmtree(self.dir)
            shutil.copytree(source_dir, self.dir, symlinks=True)
        os.chmod(self.dir, 0o777)
        for path, text in (files or {}).items():
            self.write(path, text)

    def run(self, command: str, timeout: float = 20.0) -> tuple[int, str]:
        if not os.path.isdir(self.dir):
            raise SandboxError("sandbox is gone")
        try:
            result = subprocess.run(_local_command(self.dir, command, timeout, self.network), capture_output=True,
                                    timeout=timeout + 5)
        except subprocess.TimeoutExpired:
            return 124, "timed out\n"
        return result.returncode, (result.stdout + result.stderr).decode(errors="replace")

    def read(self, path: str) -> str:
        with open(os.path.join(self.dir, safe_path(path))) as f:
            return f.read()

    def write(self, path: str, text: str) -> None:
        target = os.path.join(self.dir, safe_path(path))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w") as f:
            f.write(text)
        os.utime(target, (0, 0))  # fixed mtimes: a copy is indistinguishable from the original
        for root, dirs, names in os.walk(self.dir):
            for name in dirs + names:
                os.chmod(os.path.join(root, name), 0o777)

    def snapshot(self) -> "LocalSnapshot":
        return LocalSnapshot(self)

    def alive(self) -> bool:
        return os.path.isdir(self.dir)

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
        _LOCAL_DIRS.discard(self.dir)

    def __del__(self):  # a sandbox nobody closed (a fork dropped after its rollout) takes its directory along
        if getattr(self, "dir", None) is not None:
            self.close()


class LocalSnapshot:
    """A directory copy (`cp -a`); each `restore()` copies it again."""

    def __init__(self, sandbox: LocalSandbox):
        self.network = sandbox.network
        self.dir = tempfile.mkdtemp(prefix="tree-rl-swe-snapshot-")
        shutil.rmtree(self.dir)
        shutil.copytree(sandbox.dir, self.dir, symlinks=True)
        _LOCAL_DIRS.add(self.dir)

    def restore(self) -> LocalSandbox:
        return LocalSandbox(source_dir=self.dir, network=self.network)

    def __del__(self):
        shutil.rmtree(self.dir, ignore_errors=True)


_LOCAL_DIRS: set = set()
_LOCAL_OK = False


def _mark_local_ok() -> None:
    global _LOCAL_OK
    _LOCAL_OK = True


@atexit.register
def _cleanup_local() -> None:
    for directory in list(_LOCAL_DIRS):
        shutil.rmtree(directory, ignore_errors=True)


def wait_for(predicate, timeout: float, interval: float = 0.2) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False
