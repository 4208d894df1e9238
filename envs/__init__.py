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

from envs.base import DeepCopySnapshot, ReplaySnapshot, TextEnv
from envs.fidelity import FidelityReport, SnapshotFidelityError, check_snapshot_fidelity

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


def make_env(name: str, **kwargs) -> TextEnv:
    """Build env `name` ("webshop", "math", ...) with constructor keyword arguments `kwargs`."""
    cls = env_class(name)
    accepted = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    unknown = sorted(set(kwargs) - set(accepted))
    if unknown:
        raise TypeError(f"make_env({name!r}) got unknown argument(s) {', '.join(unknown)}; "
                        f"accepted: {', '.join(accepted)}")
    return cls(**kwargs)


__all__ = ["make_env", "env_class", "ENV_REGISTRY", "TextEnv", "DeepCopySnapshot", "ReplaySnapshot",
           "check_snapshot_fidelity", "FidelityReport", "SnapshotFidelityError"]
