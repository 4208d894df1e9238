"""Where the code-repair env runs code: a Docker container (snapshot = `container.commit()`), or a local
directory run under bubblewrap (snapshot = a directory copy). Both give the same `Sandbox` interface:

    box.run("python -m pytest -q tests", timeout=20) -> (exit code, output)
    box.read("calc.py") -> text;  box.write("calc.py", text)
    handle = box.snapshot(); other = handle.restore()      # a new, independent sandbox in that state
    box.close()

Commands run as an unprivileged user and see only the work dir's files and a system to run them (the image's;
locally the interpreter's dirs of the host's /usr read-only, never a checkout or task data, nothing else of the
host), the variables of ENVIRONMENT and no others, no standard input (EOF at once), no network but a loopback
interface, a time limit inside the sandbox (`timeout -k`) and on the host. Each sandbox has limits of its own:
processes and memory (a container; locally a cgroup), a sized /tmp, and a work dir capped in bytes and files
(locally its own tmpfs; in Docker a watch that ends the episode, `LimitExceeded`). The host keeps at most
MAX_OUTPUT_BYTES of a command's output and reads no larger file; it reads and writes a local sandbox's files
without following links: a link the code under test planted is refused, never followed. A sandbox that died
(killed container, crashed engine) raises `SandboxError`, never hangs. See docs/envs.md (code repair).
"""

from __future__ import annotations

import atexit
import io
import os
import shlex
import shutil
import stat
import subprocess
import tarfile
import tempfile
import threading
import time
import uuid
import warnings

from envs import SnapshotError

LABEL = "tree-rl.swe"  # every container and image this module makes carries it (reaped by label)
WORKDIR = "/work"
UNPRIVILEGED_UID = 65534  # nobody: the code under test never runs as root
# the only variables a sandbox command sees (none of the host's)
ENVIRONMENT = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0", "PYTHONPATH": WORKDIR, "HOME": "/tmp",
               "PATH": "/usr/local/bin:/usr/bin:/bin", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "LC_ALL": "C.UTF-8"}
MAX_LAYER_DEPTH = 100  # the engine refuses images deeper than ~125 layers: flatten before that
MAX_OUTPUT_BYTES = 1 << 20  # of a command's output (locally: of each stream) the host keeps the first and last half


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
def clean_environment() -> list[str]:
    """`env -i` with ENVIRONMENT: a container command sees those variables only (the engine adds HOSTNAME and
    the image's own to an exec's environment)."""
    return ["env", "-i", *[f"{key}={value}" for key, value in ENVIRONMENT.items()]]


# the Docker backend's per-container limits; /tmp is a sized tmpfs and the work dir (in the container's layer, which
# no storage option caps on every driver) is measured while a command runs: past DOCKER_WORK_LIMITS the command's
# processes are killed and the sandbox raises LimitExceeded (the episode ends)
DOCKER_LIMITS = dict(mem_limit="512m", memswap_limit="512m", pids_limit=64, nano_cpus=1_000_000_000)
DOCKER_TMP = "size=64m,nr_inodes=4096,mode=1777"
DOCKER_WORK_LIMITS = dict(disk_kb=64 << 10, files=4096, period=0.25)
OVER_LIMIT_EXIT = 125  # a command whose sandbox went over DOCKER_WORK_LIMITS exits with it (and says so)
SNAPSHOT_WAIT = 120.0  # seconds a commit the client gave up on may take before its image shows (or never will)


class LimitExceeded(SandboxError):
    """The code under test went over a sandbox limit that only ending the episode enforces (Docker's work dir)."""


class DockerSandbox:
    """One container per live sandbox, from a locally built image (never pulled): no network, memory, pids
    and CPU limits, a sized /tmp; commands run as an unprivileged user, under a root shell that watches the work
    dir's size and ends whatever they left running; the work dir lives in the container's own layer, so
    `commit()` captures it."""

    def __init__(self, client, image: str, files: dict[str, str] | None = None, limits: dict | None = None,
                 depth: int = 0, network: bool = False):
        self.client, self.image, self.depth, self.network = client, image, depth, network
        self.limits = limits or DOCKER_LIMITS
        self.container = None  # set before anything can fail, for close() and __del__
        client.images.get(image)  # a missing image must fail here: containers.run would pull it from a registry
        self.container = client.containers.create(
            image, command=["sleep", "infinity"], init=True, network_mode="host" if network else "none",
            working_dir=WORKDIR, labels={LABEL: "container"}, environment=ENVIRONMENT, detach=True,
            tmpfs={"/tmp": DOCKER_TMP}, **self.limits)
        _LIVE_CONTAINERS[self.container.id] = client
        self.container.start()
        # the processes that stay: the init process and the container's `sleep` (found before any command ran);
        # the work dir belongs to the unprivileged user
        self.keep = "1"
        code, out = self.run_raw(f"chown {UNPRIVILEGED_UID}:{UNPRIVILEGED_UID} {WORKDIR} && "
                                 f"cat /proc/1/task/1/children")
        self.keep = " ".join(["1", *out.split()]) if code == 0 else "1"
        if files:
            self.put(files)

    def put(self, files: dict[str, str]) -> None:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            made = set()
            for path, text in files.items():
                parts = safe_path(path).split("/")
                for depth in range(1, len(parts)):  # its directories, the unprivileged user's as the local ones
                    directory = "/".join(parts[:depth])
                    if directory not in made:
                        made.add(directory)
                        info = tarfile.TarInfo(directory)
                        info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o777, 0
                        info.uid = info.gid = UNPRIVILEGED_UID
                        tar.addfile(info)
                data = text.encode()
                info = tarfile.TarInfo(safe_path(path))
                info.size, info.mtime, info.mode = len(data), 0, 0o666
                info.uid = info.gid = UNPRIVILEGED_UID
                tar.addfile(info, io.BytesIO(data))
        if not self._call(self.container.put_archive, WORKDIR, buffer.getvalue()):
            raise SandboxError("could not copy files into the container")

    def run(self, command: str, timeout: float = 20.0) -> tuple[int, str]:
        """`command` in /bin/sh inside the container as the unprivileged user, killed by `timeout -k` there and
        abandoned on the host. Its root shell (which the command cannot signal) watches the work dir meanwhile and
        kills whatever the command left running after it (an init process reaps them)."""
        user = f"setpriv --reuid={UNPRIVILEGED_UID} --regid={UNPRIVILEGED_UID} --clear-groups"
        # builtins only (a fork bomb leaves nothing to fork with), in rounds: what forked during one dies in the next
        sweep = (f'for round in 1 2 3 4 5 6 7 8 9 10; do for p in /proc/[0-9]*; do q=${{p#/proc/}}; '
                 f'case " {self.keep} $$ " in *" $q "*) ;; *) kill -9 "$q";; esac; done; done')
        limits, over = DOCKER_WORK_LIMITS, "/run/tree-rl-over"  # root's: the command cannot plant it
        files = f'"$(find {WORKDIR} -xdev | head -n {limits["files"] + 2} | wc -l)"'
        over_limits = (f'[ "$(du -skx {WORKDIR} | cut -f1)" -gt {limits["disk_kb"]} ] 2>/dev/null || '
                       f'[ {files} -gt {limits["files"] + 1} ] 2>/dev/null')
        stop = (f'touch {over}; for p in /proc/[0-9]*; do [ "$(stat -c %u $p)" = {UNPRIVILEGED_UID} ] && '
                f'kill -9 ${{p#/proc/}}; done')
        wrapped = [*clean_environment(), "sh", "-c",
                   f'rm -f {over}; (while sleep {limits["period"]}; do if {over_limits}; then {stop}; fi; done) '
                   f'2>/dev/null & timeout -k 1 {timeout} {user} sh -c "$0"; status=$?; {sweep} 2>/dev/null; '
                   f'if {over_limits} || [ -e {over} ]; then echo "{over}"; exit {OVER_LIMIT_EXIT}; fi; exit $status',
                   command]
        result: dict = {}
        output = CappedOutput()

        def target():
            try:  # container.exec_run, streamed: the host holds at most MAX_OUTPUT_BYTES of it
                api = self.client.api
                exec_id = api.exec_create(self.container.id, wrapped, workdir=WORKDIR, stdin=False)["Id"]
                for chunk in api.exec_start(exec_id, stream=True):
                    output.add(chunk)
                result["exit_code"] = api.exec_inspect(exec_id)["ExitCode"]
            except Exception as error:  # the engine or the container went away
                result["error"] = error

        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        def finished(seconds: float) -> bool:  # docker-py has no exec timeout; the in-container timeout kills it
            thread.join(seconds)
            return not thread.is_alive()

        if not wait_running(finished, timeout + 5) or "error" in result:
            raise SandboxError(f"sandbox died while running {command!r}: {result.get('error', 'no answer')}")
        text = output.text()
        if result["exit_code"] == OVER_LIMIT_EXIT and text.endswith(f"{over}\n"):
            raise LimitExceeded(f"the code under test went over the work dir's limit ({limits['disk_kb']} KiB, "
                                f"{limits['files']} files): its processes were killed")
        return result["exit_code"], text

    def run_raw(self, command: str) -> tuple[int, str]:
        exit_code, output = self._call(self.container.exec_run, [*clean_environment(), "sh", "-c", command])
        return exit_code, output.decode(errors="replace")

    def read(self, path: str) -> str:
        quoted = shlex.quote(safe_path(path))  # a link or a special file is refused, as the local backend does
        code, output = self.run(f"if [ -L {quoted} ] || {{ [ -e {quoted} ] && [ ! -f {quoted} ]; }}; then exit 3; fi; "
                                f"if [ -f {quoted} ] && [ $(stat -c %s -- {quoted}) -gt {MAX_OUTPUT_BYTES} ]; then "
                                f"exit 4; fi; cat -- {quoted}", timeout=5)
        if code == 3:
            raise ValueError(refused(path))
        if code == 4:
            raise ValueError(too_large(path))
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
    it with the same limits. Chains of restores deepen the image; past MAX_LAYER_DEPTH it is flattened. A commit
    the client gave up on (its timeout) goes on in the engine: its image is waited for and used, or, if it never
    shows, removed whenever it does (`reap` finds it by label too) and `envs.SnapshotError` raised."""

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
            image = committed_late(self.client, f"{repository}:latest")
            if image is None:
                raise SnapshotError(f"the sandbox's snapshot failed: {error}") from None
            self.depth = min(self.depth, MAX_LAYER_DEPTH)
        self.image = image.id
        _SNAPSHOT_IMAGES[self.image] = self.client

    def restore(self) -> DockerSandbox:
        return DockerSandbox(self.client, self.image, limits=self.limits, depth=self.depth, network=self.network)

    def __del__(self):  # the image goes with the last reference to its snapshot, once no container uses it
        if getattr(self, "image", None) is not None:
            _UNUSED_IMAGES.append(self.image)
            remove_unused_images()


def committed_late(client, name: str):
    """The image `name` of a commit whose request failed (the client's timeout) but that the engine may still be
    finishing: waited for up to SNAPSHOT_WAIT seconds; None if it never showed (then it is removed if it does, at
    this process's exit)."""
    deadline = time.monotonic() + SNAPSHOT_WAIT
    while time.monotonic() < deadline:
        try:
            return client.images.get(name)
        except Exception as error:  # not there yet (404), or an engine too busy to answer in time: wait
            busy = getattr(error, "status_code", None) == 404 or "Timeout" in type(error).__name__
            if not busy:
                break  # the engine is gone
        time.sleep(0.5)
    _ABANDONED_IMAGES.append((client, name))
    return None


_LIVE_CONTAINERS: dict = {}  # container id -> client, for the ones not closed yet
_SNAPSHOT_IMAGES: dict = {}  # image id -> client, for the snapshot images not removed yet
_UNUSED_IMAGES: list = []  # images of dropped snapshots; one still used by a container or a child image waits
_ABANDONED_IMAGES: list = []  # (client, name) of commits given up on: removed at exit if they showed after all


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
    for client, name in _ABANDONED_IMAGES:
        try:
            client.images.remove(name, force=True)
        except Exception:
            pass


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
# Per local sandbox: processes and memory (its own cgroup, which counts its /tmp and work dir pages too), /tmp's
# bytes (a sized tmpfs), the work dir's bytes and files (a tmpfs of its own), and per process its address space and
# CPU time. nproc is the per-user ceiling over all sandboxes (the kernel counts RLIMIT_NPROC per user, so it is not
# a per-sandbox limit); without cgroups it falls back to `pids` (see `local_limits_problem`).
LOCAL_LIMITS = dict(pids=64, memory=512 << 20, tmp=64 << 20, disk=64 << 20, files=4096, nproc=4096,
                    address_space=1 << 30, cpu_seconds=60)
# what the interpreter needs of the host: its programs and libraries (a merged-/usr host's /bin -> usr/bin as the
# same link), never /usr whole (a checkout may live in /usr/src), /usr/local, /etc, /home, /opt or /srv
SYSTEM_DIRS = ("/usr/bin", "/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/libx32", "/bin", "/lib", "/lib64", "/lib32",
               "/libx32")
CHECKOUT_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the answer key's home
CGROUP_ROOT = "/sys/fs/cgroup"


def refused(path: str) -> str:
    return f"{path!r} is a link, a directory or a special file: refused"


def too_large(path: str) -> str:
    return f"{path!r} is larger than {MAX_OUTPUT_BYTES} bytes: refused"


class CappedOutput:
    """A command's output as it arrives, held to MAX_OUTPUT_BYTES: its first half and its last half (a test
    summary starts a run's output, the grader's line ends it), with what was cut between them counted."""

    def __init__(self):
        self.head, self.tail, self.cut = bytearray(), bytearray(), 0

    def add(self, chunk: bytes) -> None:
        half = MAX_OUTPUT_BYTES // 2
        room = max(0, half - len(self.head))
        self.head += chunk[:room]
        self.tail += chunk[room:]
        if len(self.tail) > half:
            self.cut += len(self.tail) - half
            del self.tail[:len(self.tail) - half]

    def text(self) -> str:
        middle = f"\n[... {self.cut} bytes of output cut ...]\n".encode() if self.cut else b""
        return (bytes(self.head) + middle + bytes(self.tail)).decode(errors="replace")


def system_view(hidden: tuple[str, ...] = ()) -> list[str]:
    """bubblewrap arguments that show the code under test the interpreter's system dirs read-only and nothing else
    of the host: no /etc, /home, /root, /opt, /var, /srv, /mnt, /sys, /usr/local, /usr/src or checkout. A protected
    directory (this checkout, a task data dir in `hidden`) that lies inside a shown dir is covered by an empty
    tmpfs; /tmp, /proc and /dev are the sandbox's own (see `_local_command`)."""
    view, shown = [], []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            view += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            view += ["--ro-bind", path, path]
            shown.append(os.path.realpath(path))
    for path in sorted({os.path.realpath(p) for p in (CHECKOUT_DIR, *hidden)}):
        if any(path == dir or path.startswith(dir + "/") for dir in shown):
            view += ["--tmpfs", path]
        if any(dir.startswith(path + "/") for dir in shown):  # a checkout at /usr: every shown dir is inside it
            raise SandboxError(f"{path} holds the system dirs the sandbox needs ({', '.join(shown)}): move it")
    return view


def cgroup_parents() -> dict[str, str] | None:
    """Where this process may make a sandbox's cgroups: {controller: parent dir} for cgroup v1's pids and memory
    hierarchies (below this process's own cgroup), or {"unified": dir} for cgroup v2; None when it cannot (not
    root, a read-only cgroup file system, no such controllers)."""
    own = dict(line.strip().split(":", 2)[1:] for line in open("/proc/self/cgroup") if line.count(":") >= 2)
    if os.path.exists(os.path.join(CGROUP_ROOT, "cgroup.controllers")):  # v2: one hierarchy
        parents = {"unified": os.path.join(CGROUP_ROOT, own.get("", "/").lstrip("/"), "tree-rl-swe")}
    else:
        parents = {name: os.path.join(CGROUP_ROOT, name, own.get(name, "/").lstrip("/"), "tree-rl-swe")
                   for name in ("pids", "memory")}
    try:
        for name, parent in parents.items():
            os.makedirs(parent, exist_ok=True)
            if name == "unified":  # v2 puts no process in a cgroup whose controllers it gives to children
                with open(os.path.join(parent, "cgroup.subtree_control"), "w") as f:
                    f.write("+pids +memory")
    except OSError:
        return None
    return parents


class SandboxCgroup:
    """One local sandbox's cgroup: at most LOCAL_LIMITS["pids"] processes and LOCAL_LIMITS["memory"] bytes for all
    its commands together (the tmpfs pages it writes included), whatever the other sandboxes of the same user do.
    `join` is the command prefix that moves a command into it before bubblewrap starts."""

    def __init__(self, parents: dict[str, str]):
        name = f"sandbox-{uuid.uuid4().hex[:12]}"
        self.dirs = {controller: os.path.join(parent, name) for controller, parent in parents.items()}
        limits = {"pids": {"pids.max": LOCAL_LIMITS["pids"]},
                  "memory": {"memory.limit_in_bytes": LOCAL_LIMITS["memory"],
                             "memory.memsw.limit_in_bytes": LOCAL_LIMITS["memory"]},
                  "unified": {"pids.max": LOCAL_LIMITS["pids"], "memory.max": LOCAL_LIMITS["memory"],
                              "memory.swap.max": 0}}
        for controller, directory in self.dirs.items():
            os.mkdir(directory)
            for file, value in limits[controller].items():
                if os.path.exists(os.path.join(directory, file)):  # memsw and swap.max only where swap is counted
                    with open(os.path.join(directory, file), "w") as f:
                        f.write(str(value))

    def join(self) -> list[str]:
        procs = [os.path.join(directory, "cgroup.procs") for directory in self.dirs.values()]
        return ["sh", "-c", 'for f in "$@"; do [ "$f" = -- ] && break; echo $$ > "$f" || exit 125; shift; done; '
                            'shift; exec "$@"', "join", *procs, "--"]

    def remove(self) -> None:
        for directory in self.dirs.values():  # empty once its commands ended (bubblewrap's pid 1 takes them along)
            for _ in range(20):
                try:
                    os.rmdir(directory)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)


def mount_work_dir(directory: str) -> bool:
    """A tmpfs of LOCAL_LIMITS["disk"] bytes and LOCAL_LIMITS["files"] files on the work dir `directory`: the code
    under test cannot fill the host's disk or inodes. False where this process may not mount (not root)."""
    options = f"size={LOCAL_LIMITS['disk']},nr_inodes={LOCAL_LIMITS['files']},mode=0777,nosuid,nodev"
    return subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tree-rl-swe", directory], capture_output=True,
                          stdin=subprocess.DEVNULL).returncode == 0


def unmount_work_dir(directory: str) -> None:
    subprocess.run(["umount", "--lazy", directory], capture_output=True, stdin=subprocess.DEVNULL)


def local_limits_problem() -> str | None:
    """Why a local sandbox cannot have limits of its own here (None if it can): per-sandbox cgroups and a work-dir
    tmpfs need root with a writable cgroup file system. Without them the sandboxes share one per-user process limit
    (a fork bomb in one starves the others) and the work dir writes to the host's disk."""
    if cgroup_parents() is None:
        return f"no writable cgroup (pids, memory) under {CGROUP_ROOT}"
    with tempfile.TemporaryDirectory(prefix="tree-rl-swe-probe-") as directory:
        if not mount_work_dir(directory):
            return "this process may not mount a tmpfs (not root)"
        unmount_work_dir(directory)
    return None


def local_isolation_problem() -> str | None:
    """Why the local backend cannot isolate untrusted code here (None if it can): it needs bubblewrap,
    setpriv and prlimit, bubblewrap running as an unprivileged user (user namespaces) with the view of
    `system_view`, and Debian's python3 with pytest in that view."""
    for tool in ("bwrap", "setpriv", "prlimit"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Debian: apt-get install bubblewrap util-linux)"
    with tempfile.TemporaryDirectory(prefix="tree-rl-swe-probe-") as workdir:
        os.chmod(workdir, 0o755)
        probe = subprocess.run(_local_command(workdir, "true"), stdin=subprocess.DEVNULL, capture_output=True,
                               text=True, timeout=30)
        if probe.returncode != 0:
            return f"bubblewrap cannot run as an unprivileged user here: {probe.stderr.strip()[:200]}"
        probe = subprocess.run(_local_command(workdir, "python3 -c 'import pytest'"), stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=30)
        if probe.returncode != 0:
            return f"the sandbox's python3 cannot import pytest (Debian: apt-get install python3-pytest): " \
                   f"{probe.stdout.strip()[-200:]}{probe.stderr.strip()[-200:]}"
    return None


def _local_command(workdir: str, command: str, timeout: float = 20.0, network: bool = False,
                   cgroup: SandboxCgroup | None = None, hidden: tuple[str, ...] = ()) -> list[str]:
    limits = LOCAL_LIMITS
    nproc = limits["nproc"] if cgroup is not None else limits["pids"]  # without a cgroup: the old shared limit
    return [*(cgroup.join() if cgroup is not None else []),
            "prlimit", f"--nproc={nproc}", f"--as={limits['address_space']}", f"--cpu={limits['cpu_seconds']}",
            "setpriv", f"--reuid={UNPRIVILEGED_UID}", f"--regid={UNPRIVILEGED_UID}", "--clear-groups",
            "bwrap", "--die-with-parent", "--unshare-all", *(["--share-net"] if network else []),
            *system_view(hidden), "--dev", "/dev", "--proc", "/proc", "--size", str(limits["tmp"]), "--tmpfs", "/tmp",
            "--bind", workdir, WORKDIR, "--chdir", WORKDIR,
            "--clearenv", *[arg for key, value in ENVIRONMENT.items() for arg in ("--setenv", key, value)],
            "timeout", "-k", "1", str(timeout), "sh", "-c", command]


def open_beneath(root: str, path: str, flags: int, make_dirs: bool = False) -> int:
    """A file descriptor of the regular file `path` under the directory `root`, opened one component at a time
    relative to the one before with O_NOFOLLOW, so no link is followed anywhere on the path (a linked
    directory in the middle included) and nothing can swap a component between a check and the open.
    FileNotFoundError if it is not there; ValueError for a link, a directory or a special file."""
    *dirs, name = safe_path(path).split("/")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        for part in dirs:
            if make_dirs:
                try:
                    os.mkdir(part, dir_fd=fd)
                    made = True
                except FileExistsError:
                    made = False
            parent, fd = fd, os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(parent)
            if make_dirs and made:
                os.fchmod(fd, 0o777)  # the unprivileged user writes there too
        # O_NONBLOCK: a FIFO opens at once (a read would wait for a writer forever) and is refused below
        file = os.open(name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666, dir_fd=fd)
    except FileNotFoundError:
        raise FileNotFoundError(path) from None
    except OSError:  # ELOOP (a link), ENOTDIR (a linked directory), EISDIR, ENXIO (a FIFO opened to write)
        raise ValueError(refused(path)) from None
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(file).st_mode):
        os.close(file)
        raise ValueError(refused(path))
    return file


def _copy_entry(source: str, target: str) -> None:
    """copytree's copy function: a regular file is copied, a FIFO made again (never opened: a read would block),
    anything else (a socket) left out."""
    mode = os.lstat(source).st_mode
    if stat.S_ISREG(mode):
        shutil.copy2(source, target)
    elif stat.S_ISFIFO(mode):
        os.mkfifo(target, stat.S_IMODE(mode))


class LocalSandbox:
    """A private work dir (its own tmpfs: bytes and files capped); commands run in it under bubblewrap
    (`--unshare-all`: only a loopback interface; the system dirs of `system_view` and nothing else of the host), as
    an unprivileged user in the sandbox's own cgroup (processes, memory) with address-space and CPU-time limits.
    The host touches its files only through `open_beneath`. `hidden`: more directories (a task data dir) that
    `system_view` must never show."""

    def __init__(self, files: dict[str, str] | None = None, source_dir: str | None = None, network: bool = False,
                 hidden: tuple[str, ...] = ()):
        problem = local_isolation_problem() if not _LOCAL_OK else None
        if problem:
            raise SandboxError(f"the local backend is not isolated here and refuses to run untrusted code: {problem}")
        _mark_local_ok()
        self.network, self.hidden, self.cgroup = network, tuple(hidden), None
        self.dir = tempfile.mkdtemp(prefix="tree-rl-swe-")
        _LOCAL_DIRS.add(self.dir)
        if _local_limits():
            mount_work_dir(self.dir)
            self.cgroup = SandboxCgroup(_CGROUP_PARENTS[0])
        if source_dir:  # no code runs while it is copied; links are copied as links
            shutil.copytree(source_dir, self.dir, symlinks=True, copy_function=_copy_entry, dirs_exist_ok=True)
        os.chmod(self.dir, 0o777)
        for path, text in (files or {}).items():
            self.write(path, text)

    def run(self, command: str, timeout: float = 20.0) -> tuple[int, str]:
        if not os.path.isdir(self.dir):
            raise SandboxError("sandbox is gone")
        process = subprocess.Popen(_local_command(self.dir, command, timeout, self.network, self.cgroup, self.hidden),
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        outputs = [CappedOutput(), CappedOutput()]  # stdout, then stderr, each held to MAX_OUTPUT_BYTES
        readers = [threading.Thread(target=_drain, args=(pipe, output), daemon=True)
                   for pipe, output in zip((process.stdout, process.stderr), outputs)]
        for reader in readers:
            reader.start()

        def finished(seconds: float) -> bool:
            try:
                process.wait(timeout=seconds)
                return True
            except subprocess.TimeoutExpired:
                return False

        if not wait_running(finished, timeout + 5):
            process.kill()
            process.wait()
            return 124, "timed out\n"
        for reader in readers:  # the pipes close when the command and what it started have exited
            reader.join(5)
        return process.returncode, outputs[0].text() + outputs[1].text()

    def read(self, path: str) -> str:
        with open(open_beneath(self.dir, path, os.O_RDONLY), encoding="utf-8", errors="replace") as f:
            if os.fstat(f.fileno()).st_size > MAX_OUTPUT_BYTES:
                raise ValueError(too_large(path))
            return f.read()

    def write(self, path: str, text: str) -> None:
        with open(open_beneath(self.dir, path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, make_dirs=True), "w",
                  encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fchmod(f.fileno(), 0o666)  # the unprivileged user edits it too
            os.utime(f.fileno(), (0, 0))  # fixed mtimes: a copy is indistinguishable from the original

    def snapshot(self) -> "LocalSnapshot":
        return LocalSnapshot(self)

    def alive(self) -> bool:
        return os.path.isdir(self.dir)

    def close(self) -> None:
        _remove_local_dir(self.dir)
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None

    def __del__(self):  # a sandbox nobody closed (a fork dropped after its rollout) takes its directory along
        if getattr(self, "dir", None) is not None:
            self.close()


class LocalSnapshot:
    """A directory copy (`cp -a`); each `restore()` copies it again."""

    def __init__(self, sandbox: LocalSandbox):
        self.network, self.hidden = sandbox.network, sandbox.hidden
        self.dir = tempfile.mkdtemp(prefix="tree-rl-swe-snapshot-")
        shutil.rmtree(self.dir)
        shutil.copytree(sandbox.dir, self.dir, symlinks=True, copy_function=_copy_entry)
        _LOCAL_DIRS.add(self.dir)

    def restore(self) -> LocalSandbox:
        return LocalSandbox(source_dir=self.dir, network=self.network, hidden=self.hidden)

    def __del__(self):
        _remove_local_dir(self.dir)


_LOCAL_DIRS: set = set()
_LOCAL_OK = False
_CGROUP_PARENTS: list = []  # [cgroup_parents()] once checked; [] before


def _mark_local_ok() -> None:
    global _LOCAL_OK
    _LOCAL_OK = True


def _local_limits() -> bool:
    """Whether local sandboxes get cgroups and a work-dir tmpfs here (checked once; a warning where they cannot)."""
    if not _CGROUP_PARENTS:
        problem = local_limits_problem()
        _CGROUP_PARENTS.append(None if problem else cgroup_parents())
        if problem:
            warnings.warn(f"local sandboxes share one process limit and write to this host's disk: {problem}",
                          stacklevel=3)
    return _CGROUP_PARENTS[0] is not None


def _remove_local_dir(directory: str) -> None:
    if os.path.ismount(directory):
        unmount_work_dir(directory)
    shutil.rmtree(directory, ignore_errors=True)
    _LOCAL_DIRS.discard(directory)


@atexit.register
def _cleanup_local() -> None:
    for directory in list(_LOCAL_DIRS):
        _remove_local_dir(directory)


def _drain(pipe, output: CappedOutput) -> None:
    for chunk in iter(lambda: pipe.read1(65536), b""):
        output.add(chunk)
    pipe.close()


def wait_running(finished, limit: float) -> bool:
    """Call finished(0.5) until it is True (then True) or this process has run `limit` seconds (then False).
    Time the process spent stopped (SIGSTOP, a job scheduler) is not counted: on SIGCONT a command that
    ended meanwhile is read, not taken for a hung sandbox."""
    waited = 0.0
    while waited < limit:
        start = time.monotonic()
        if finished(0.5):
            return True
        waited += min(time.monotonic() - start, 1.0)
    return False
