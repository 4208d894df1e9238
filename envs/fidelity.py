"""Snapshot fidelity checker: a restored env must continue exactly like the original.

A leaky snapshot does not crash; it silently biases every sibling comparison. This checker takes a
snapshot of a live env, restores several copies, and drives the original and every copy with the same
actions, one copy after the other (so state shared between copies shows up as a difference), then
restores the handle once more (so a handle mutated by its copies shows up too).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from envs.base import TextEnv


class SnapshotFidelityError(AssertionError):
    pass


@dataclass
class FidelityReport:
    ok: bool
    steps_compared: int
    first_difference: str = ""
    actions: list[str] = field(default_factory=list)


def _record(env: TextEnv, actions: list[str]) -> list[tuple]:
    """Outcome of each action: (obs, reward, terminated, truncated, won, invalid, admissible)."""
    trace = []
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        trace.append((obs, float(reward), bool(terminated), bool(truncated), bool(info.get("won", False)),
                      bool(info.get("invalid", False)), tuple(info.get("admissible_actions", ()))))
        if terminated or truncated:
            break
    return trace


def _choose_actions(env: TextEnv, info: dict, num_steps: int, seed: int) -> list[str]:
    """A seeded walk on a throwaway restored copy: mostly admissible/expert actions, some garbage."""
    rng = random.Random(seed)
    probe = env.snapshot().restore()
    actions: list[str] = []
    for _ in range(num_steps):
        admissible = info.get("admissible_actions") or []
        roll = rng.random()
        if roll < 0.15:
            action = rng.choice(["", "click[", "search[]", "nonsense words", "\\boxed{", "go to nowhere 99"])
        elif roll < 0.45 or not admissible:
            action = probe.expert_action()
        else:
            action = rng.choice(admissible)
        actions.append(action)
        _, _, terminated, truncated, info = probe.step(action)
        if terminated or truncated:
            break
    return actions


def check_snapshot_fidelity(env: TextEnv, info: dict | None = None, actions: list[str] | None = None,
                            num_restores: int = 3, num_steps: int = 20, seed: int = 0,
                            raise_on_error: bool = True) -> FidelityReport:
    """Snapshot `env` where it stands, then compare continuations of the original and its copies.

    `info` is the last info dict returned by the env (used for admissible actions when choosing the
    walk); `actions` overrides the walk. Returns a report; raises `SnapshotFidelityError` with the
    first difference unless `raise_on_error=False`. The original env is advanced by the check.
    """
    info = info or {}
    handle = env.snapshot()
    if actions is None:
        actions = _choose_actions(env, info, num_steps, seed)
    copies = [handle.restore() for _ in range(num_restores)]
    traces = [("restored copy %d" % i, _record(c, actions)) for i, c in enumerate(copies)]
    traces.append(("original", _record(env, actions)))
    traces.append(("copy restored after the others ran", _record(handle.restore(), actions)))
    reference_name, reference = traces[0]
    fields = ("observation", "reward", "terminated", "truncated", "won", "invalid", "admissible actions")
    for name, trace in traces[1:]:
        for step, (a, b) in enumerate(zip(reference, trace)):
            for field_name, x, y in zip(fields, a, b):
                if x != y:
                    message = (f"{name} differs from {reference_name} at step {step} (action {actions[step]!r}) "
                               f"in {field_name}: {str(y)[:300]!r} != {str(x)[:300]!r}")
                    if raise_on_error:
                        raise SnapshotFidelityError(message)
                    return FidelityReport(False, step, message, actions)
        if len(trace) != len(reference):
            message = f"{name} ran {len(trace)} steps, {reference_name} ran {len(reference)}"
            if raise_on_error:
                raise SnapshotFidelityError(message)
            return FidelityReport(False, min(len(trace), len(reference)), message, actions)
    return FidelityReport(True, len(reference), "", actions)
