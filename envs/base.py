"""The one text-environment interface every env implements, and its snapshot handles.

An env is a `gymnasium.Env` whose observations and actions are strings:

    obs, info = env.reset(seed=None, options={"task_id": 3})
    obs, reward, terminated, truncated, info = env.step("click[buy now]")
    handle = env.snapshot(); sibling = handle.restore()   # new, independent, live env

Subclasses implement `_reset` (picking its task with `self.task_id_from(options)` and putting the task
text in `info["task"]`), `_step`, `expert_action`, `vocabulary` and `num_tasks`, and keep everything that
changes during an episode in `self.state` (a plain picklable object). The base class then gives them an
exact deep-copy `snapshot()`. An env whose state cannot be deep-copied overrides `snapshot()` (ALFWorld:
native planner state) or falls back to `ReplaySnapshot`. Each env is described in docs/envs.md.
"""

from __future__ import annotations

import copy
import string
from typing import Any

import gymnasium as gym
from gymnasium import spaces

TEXT_CHARSET = string.printable
MAX_TEXT_LENGTH = 100_000


class TextEnv(gym.Env):
    """Base class: string observations and actions, `info["won"]`, `info["invalid"]`, snapshots."""

    metadata = {"render_modes": []}
    observation_space = spaces.Text(max_length=MAX_TEXT_LENGTH, charset=TEXT_CHARSET)
    action_space = spaces.Text(max_length=MAX_TEXT_LENGTH, charset=TEXT_CHARSET)

    def __init__(self, **init_kwargs: Any):
        self.init_kwargs = init_kwargs  # what `ReplaySnapshot` needs to build a fresh copy
        self.state: Any = None
        self.reset_args: tuple = (None, None)  # (seed, options) of the current episode
        self.actions_taken: list[str] = []

    # ---------------------------------------------------------------------------------------------------
    # The gymnasium API
    # ---------------------------------------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.reset_args = (seed, copy.deepcopy(options))
        self.actions_taken = []
        return self._reset(seed, options or {})

    def step(self, action: str):
        if self.state is None:
            raise RuntimeError("call reset() before step()")
        self.actions_taken.append(action)
        return self._step(action if isinstance(action, str) else str(action))

    # ---------------------------------------------------------------------------------------------------
    # What subclasses implement
    # ---------------------------------------------------------------------------------------------------
    def _reset(self, seed: int | None, options: dict) -> tuple[str, dict]:
        raise NotImplementedError

    def _step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        raise NotImplementedError

    def expert_action(self) -> str:
        """The expert's next action from the current state (for SFT demonstrations)."""
        raise NotImplementedError

    def demo_action(self, rng, mistake_prob: float) -> str:
        """The action a demonstrator takes for SFT: by default the expert's. Envs override this to make
        systematic, state-dependent mistakes (each taken with `mistake_prob` where its state arises), so
        that a cloned policy is wrong in ways RL can fix."""
        return self.expert_action()

    def vocabulary(self) -> list[str]:
        """Every word the env can emit or accept (to build a word-level tokenizer)."""
        raise NotImplementedError

    @property
    def num_tasks(self) -> int:
        """Number of tasks in this env's split; `reset(options={"task_id": i})` picks task i."""
        raise NotImplementedError

    # ---------------------------------------------------------------------------------------------------
    # Task ids
    # ---------------------------------------------------------------------------------------------------
    def task_id_from(self, options: dict, no_tasks_hint: str = "") -> int:
        """The task `reset(options=...)` asks for: `options["task_id"]`, or when that is missing (or None) a
        draw from the env's rng, so `reset(seed=s)` picks the same task every time. Raises ValueError when the
        split has no tasks (`no_tasks_hint` is appended to that message) or the id is not a task id."""
        num_tasks = self.num_tasks
        if num_tasks == 0:
            raise ValueError(f"split {getattr(self, 'split', None)!r} has no tasks{no_tasks_hint}")
        task_id = options.get("task_id")
        if task_id is None:
            return int(self.np_random.integers(num_tasks))
        self.check_task_id(task_id)
        return task_id

    def check_task_id(self, task_id) -> None:
        """Raise ValueError unless `task_id` is an int (not a bool) in [0, num_tasks)."""
        if isinstance(task_id, bool) or not isinstance(task_id, int) or not 0 <= task_id < self.num_tasks:
            raise ValueError(f"task_id must be an int in [0, {self.num_tasks}); got {task_id!r}")

    # ---------------------------------------------------------------------------------------------------
    # Snapshots
    # ---------------------------------------------------------------------------------------------------
    def snapshot(self) -> "DeepCopySnapshot":
        """Exact snapshot of `self.state`; shared read-only data (catalogs, indexes) is not copied."""
        if self.state is None:
            raise RuntimeError("call reset() before snapshot()")
        return DeepCopySnapshot(self)


class DeepCopySnapshot:
    """Holds a private deep copy of an env's episode state; each `restore()` copies it again."""

    def __init__(self, env: TextEnv):
        self._env = copy.copy(env)  # shallow: shares read-only data, its state is replaced below
        self._state = copy.deepcopy(env.state)
        self._np_random = copy.deepcopy(env._np_random)  # gymnasium's rng, if the env draws from it
        self._history = (env.reset_args, tuple(env.actions_taken))  # reset_args is never mutated; strings are immutable

    def restore(self) -> TextEnv:
        env = copy.copy(self._env)
        env.state = copy.deepcopy(self._state)
        env._np_random = copy.deepcopy(self._np_random)
        env.reset_args, env.actions_taken = self._history[0], list(self._history[1])
        return env


class ReplaySnapshot:
    """Universal fallback: rebuild the env, reset it the same way and replay the same actions.

    Exact for any env whose dynamics depend only on (constructor kwargs, reset seed/options,
    actions); costs one episode prefix per restore.
    """

    def __init__(self, env: TextEnv):
        self._env_class = type(env)
        self._init_kwargs = copy.deepcopy(env.init_kwargs)
        self._reset_args = copy.deepcopy(env.reset_args)
        self._actions = list(env.actions_taken)

    def restore(self) -> TextEnv:
        env = self._env_class(**self._init_kwargs)
        seed, options = copy.deepcopy(self._reset_args)
        env.reset(seed=seed, options=options)
        for action in self._actions:
            env.step(action)
        return env
