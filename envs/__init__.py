"""Small text environments shared by the algorithm scripts.

    from envs import make_env
    env = make_env("webshop", split="test")
    obs, info = env.reset(options={"task_id": 0})

Every env follows `envs.base.TextEnv`: string actions, `info["won"]`, `info["invalid"]`,
`info["admissible_actions"]` where the task has them, `snapshot().restore()`, `expert_action()` and
`vocabulary()`. `check_snapshot_fidelity` verifies that restored copies continue exactly like the
original.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys

from envs.base import DeepCopySnapshot, ReplaySnapshot, TextEnv
from envs.fidelity import FidelityReport, SnapshotFidelityError, check_snapshot_fidelity


class SnapshotError(RuntimeError):
    """An env's native `snapshot()` failed on its host's side (a sandbox commit that timed out and never showed):
    the env is intact and a `ReplaySnapshot` of it still works."""


# name -> (module, class); modules are imported on first use so one env's dependencies never
# break another env.
ENV_REGISTRY = {
    "webshop": ("envs.webshop", "WebShopEnv"),
    "math": ("envs.math", "MathEnv"),
    "alfworld": ("envs.alfworld", "AlfWorldEnv"),
    "swe": ("envs.swe.env", "SWEEnv"),
}


def env_class(name: str) -> type[TextEnv]:
    if name not in ENV_REGISTRY:
        raise ValueError(f"unknown env {name!r}; available: {', '.join(sorted(ENV_REGISTRY))}")
    module_name, class_name = ENV_REGISTRY[name]
    return getattr(importlib.import_module(module_name), class_name)


# The splits a run may evaluate on (`--eval-splits`): never the training split.
HELD_OUT_SPLITS = {"webshop": ("eval", "test"), "math": ("eval", "test"), "alfworld": ("eval", "eval_ood", "test"),
                   "swe": ("eval", "test_unseen_bugs", "test_unseen_packages")}

# Where each env reads a user's copy of its benchmark's real data (the scripts' `--data PATH`).
DATA_ARGUMENTS = {"webshop": "data_dir", "math": "data_path", "alfworld": "data_dir", "swe": "data_dir"}
DATA_FORMATS = {
    "webshop": "WebShop's data directory (items_shuffle_1000.json, items_ins_v2_1000.json, items_human_ins.json)",
    "math": "a GSM8K/MATH-style JSONL file, one {\"question\", \"answer\"} object per line",
    "alfworld": "ALFWorld's game directory (json_2.1.1/ with train, valid_seen, valid_unseen; or one folder of games)",
    "swe": "a task directory: tasks.jsonl and packages/ (as envs/swe's bundled one)",
}


_WARNED: set[str] = set()
_ANNOUNCED: set[str] = set()


def dataset_kwargs(name: str, path: str | None, splits: tuple[str, ...] = ("train",), flag: str = "--data") -> dict:
    """The constructor arguments that point env `name` at the dataset `path` ({} for None), checked now: a missing
    path, a malformed file or a split without tasks is refused with a message naming `flag` and the file."""
    if path is None:
        return {}
    path = os.path.abspath(os.path.expanduser(path))
    expected = f"{flag} for --env {name} is {DATA_FORMATS[name]}"
    if not os.path.exists(path):
        raise SystemExit(f"{flag} {path}: no such file or directory ({expected})")
    kwargs = {DATA_ARGUMENTS[name]: path}
    for split in dict.fromkeys(splits):
        try:
            tasks = make_env(name, split=split, **kwargs).num_tasks
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise SystemExit(f"{flag} {path}: cannot be read ({error}); {expected}") from None
        if tasks == 0:
            raise SystemExit(f"{flag} {path}: no {split} tasks in it; {expected}")
    if name == "math" and os.path.isfile(path) and path not in _WARNED:  # once per process (the scripts check twice)
        _WARNED.add(path)
        print(f"{flag} {path}: one file serves every split, so the held-out problems are the training problems; "
              f"a directory with train.jsonl and test.jsonl keeps them apart", file=sys.stderr)
    return kwargs


def turn_limit(name: str) -> int:
    """The most actions an episode of env `name` takes (its `max_steps` default; math answers once)."""
    parameter = inspect.signature(env_class(name).__init__).parameters.get("max_steps")
    return 1 if parameter is None else parameter.default


def make_env(name: str, **kwargs) -> TextEnv:
    """Build env `name` ("webshop", "math", ...) with constructor keyword arguments `kwargs`."""
    cls = env_class(name)
    accepted = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    unknown = sorted(set(kwargs) - set(accepted))
    if unknown:
        raise TypeError(f"make_env({name!r}) got unknown argument(s) {', '.join(unknown)}; "
                        f"accepted: {', '.join(accepted)}")
    env = cls(**kwargs)
    if name == "swe" and env.backend not in _ANNOUNCED:  # the first swe env of a process says where episodes run
        _ANNOUNCED.add(env.backend)
        engine = os.environ.get("DOCKER_HOST", "the default socket")
        where = (f"Docker containers of image {env.image} (engine {engine})" if env.backend == "docker"
                 else "bubblewrap sandboxes on this host (no Docker engine answered)")
        print(f"swe env: episodes run in {where}", file=sys.stderr)
    return env


__all__ = ["make_env", "env_class", "turn_limit", "dataset_kwargs", "ENV_REGISTRY", "HELD_OUT_SPLITS", "TextEnv",
           "DeepCopySnapshot", "ReplaySnapshot", "check_snapshot_fidelity", "FidelityReport", "SnapshotFidelityError",
           "SnapshotError"]
