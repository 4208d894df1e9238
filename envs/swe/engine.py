"""Reaching a Docker engine and the sandbox image, for the code-repair env.

- `docker_client()`: the engine `DOCKER_HOST` names (a remote engine works unchanged), else the default
  socket, else the one `envs/swe/docker_engine.sh` starts (its socket under `TREE_RL_DOCKER_DIR`);
  None when none answers.
- `ensure_image(client)`: the sandbox image, built locally and cached by its recipe: a minimal Debian
  (debootstrap) with python3 and pytest, `docker import`ed. Nothing is ever pulled from a registry.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

from envs.swe.sandbox import LABEL

DEBIAN_RELEASE = "bookworm"
DEBIAN_PACKAGES = ("python3", "python3-pytest")
RECIPE = f"debootstrap --variant=minbase --include={','.join(DEBIAN_PACKAGES)} {DEBIAN_RELEASE}"
IMAGE = f"tree-rl-swe-base:{hashlib.sha1(RECIPE.encode()).hexdigest()[:10]}"


def docker_client(timeout: int = 10):
    """A docker-py client of an engine that answers, or None."""
    try:
        import docker
    except ImportError:
        return None
    hosts = [os.environ.get("DOCKER_HOST"), None,
             f"unix://{os.environ.get('TREE_RL_DOCKER_DIR', '/tmp/tree-rl-docker')}/docker.sock"]
    for host in dict.fromkeys(hosts):
        try:
            client = docker.DockerClient(base_url=host, timeout=timeout) if host else docker.from_env(timeout=timeout)
            client.ping()
            return client
        except Exception:
            continue
    return None


def rootfs_dir() -> Path:
    from envs.alfworld.generator import default_cache_dir  # the project's cache root

    return default_cache_dir().parent / "swe" / f"rootfs-{IMAGE.split(':')[1]}"


def build_rootfs(target: Path) -> None:
    """debootstrap a minimal Debian with python3 and pytest into `target` (about 2 minutes; needs root and
    Debian's mirror)."""
    if shutil.which("debootstrap") is None:
        raise RuntimeError("building the sandbox image needs debootstrap (Debian: apt-get install -y debootstrap)")
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(["debootstrap", "--variant=minbase", f"--include={','.join(DEBIAN_PACKAGES)}",
                             DEBIAN_RELEASE, str(tmp), "http://deb.debian.org/debian"], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"debootstrap failed: {result.stdout[-1000:]}{result.stderr[-1000:]}")
    os.replace(tmp, target)


def ensure_image(client) -> str:
    """The sandbox image's name, importing it from the cached root file system (built if missing)."""
    try:
        client.images.get(IMAGE)
        return IMAGE
    except Exception:
        pass
    root = rootfs_dir()
    if not (root / "usr" / "bin" / "python3").exists():
        build_rootfs(root)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(str(root), arcname=".")
    repository, tag = IMAGE.split(":")
    client.api.import_image_from_data(buffer.getvalue(), repository=repository, tag=tag,
                                      changes=[f"LABEL {LABEL}=base", "WORKDIR /work"])
    client.images.get(IMAGE)
    return IMAGE
