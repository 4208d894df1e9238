"""The ALFWorld env: episodes on a shared engine, the planner and handcoded experts, native snapshots."""

from __future__ import annotations

import copy
import dataclasses
import os
from dataclasses import dataclass, field

from envs.alfworld.engine import Engine, NativeState, get_engine
from envs.alfworld.experts import HandcodedExpert
from envs.alfworld.generator import (DEFAULT_NUM_GAMES, GENERATED_ORDER, _stable_int, ensure_generated_game,
                                     generated_root)
from envs.alfworld.official import collect_game_files, official_data_from_environment, official_split_root
from envs.alfworld.tasks import canonical_split, canonical_task_types
from envs.alfworld.vocabulary import generated_vocabulary, official_vocabulary
from envs.base import TextEnv

DEFAULT_MAX_STEPS = 50
EXPERTS = ("planner", "handcoded")


@dataclass
class AlfWorldState:
    engine: Engine
    native: NativeState
    task_id: int | None
    gamefile: str
    steps: int = 0
    won: bool = False
    expert: HandcodedExpert | None = None  # materialized on the first handcoded expert_action() or demo_action()
    expert_owned: bool = False  # False: shared with a snapshot, copy before advancing
    pending: list = field(default_factory=list)  # (native, command) steps the expert has not seen yet
    plan: tuple | None = None  # the planner's plan from this state, while the episode follows it


class AlfWorldEnv(TextEnv):
    """ALFWorld text env over generated households or official game files (see docs/envs.md)."""

    def __init__(self, split: str = "train", data_dir: str | None = None, task_types=None,
                 max_steps: int = DEFAULT_MAX_STEPS, expert: str = "planner", seed: int = 0,
                 num_games: int | None = None, cache_dir: str | None = None):
        super().__init__(split=split, data_dir=data_dir, task_types=task_types, max_steps=max_steps, expert=expert,
                         seed=seed, num_games=num_games, cache_dir=cache_dir)
        self.split = canonical_split(split)
        self.task_types = canonical_task_types(task_types)
        if not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive int; got {max_steps!r}")
        if expert not in EXPERTS:
            raise ValueError(f"expert must be one of {', '.join(EXPERTS)}; got {expert!r}")
        self.max_steps = max_steps
        self.expert = expert
        self.seed = seed
        self.data_dir = data_dir if data_dir is not None else official_data_from_environment()
        if self.data_dir is not None:
            self.games_root = official_split_root(self.data_dir, self.split)
            self._games = collect_game_files(self.games_root, self.task_types)
            self._indices = None
        else:
            if num_games is not None and (not isinstance(num_games, int) or num_games < 0):
                raise ValueError(f"num_games must be a non-negative int; got {num_games!r}")
            self.num_games = DEFAULT_NUM_GAMES[self.split] if num_games is None else num_games
            self.games_root = generated_root(cache_dir, seed)
            self._indices = [i for i in range(self.num_games)
                             if GENERATED_ORDER[i % len(GENERATED_ORDER)] in self.task_types]
            self._games = None

    # ---------------------------------------------------------------------------------------------------
    # Tasks
    # ---------------------------------------------------------------------------------------------------
    @property
    def num_tasks(self) -> int:
        return len(self._games) if self._games is not None else len(self._indices)

    def game_file(self, task_id: int) -> str:
        """Path of task `task_id`'s game file (generated games are written and checked on first use)."""
        self.check_task_id(task_id)
        if self._games is not None:
            return self._games[task_id]
        return ensure_generated_game(self.games_root, self.seed, self.split, self._indices[task_id])

    def generate(self, progress: bool = False) -> list[str]:
        """Write (and planner-check) every game of this split now; returns their paths."""
        ids = range(self.num_tasks)
        if progress:
            from tqdm import tqdm
            ids = tqdm(ids, desc=f"alfworld {self.split} games")
        return [self.game_file(i) for i in ids]

    # ---------------------------------------------------------------------------------------------------
    # Episodes
    # ---------------------------------------------------------------------------------------------------
    def _reset(self, seed, options):
        if "gamefile" in options:
            task_id, gamefile = options.get("task_id"), str(options["gamefile"])
        else:
            task_id = self.task_id_from(options, no_tasks_hint=f" (data_dir={self.data_dir!r})")
            gamefile = self.game_file(task_id)
        engine = get_engine(gamefile)
        self.state = AlfWorldState(engine=engine, native=engine.initial, task_id=task_id, gamefile=gamefile)
        return engine.initial.tw_state.feedback, self._info(invalid=False)

    def _info(self, invalid: bool) -> dict:
        s = self.state
        return {"admissible_actions": list(s.native.tw_state["admissible_commands"]), "won": s.won,
                "invalid": invalid, "task": s.engine.task, "task_type": s.engine.task_type, "task_id": s.task_id,
                "gamefile": s.gamefile, "steps": s.steps}

    def _step(self, action: str):
        s = self.state
        command = action.strip()
        invalid = command not in s.native.tw_state["admissible_commands"]
        native = s.engine.step(s.native, action)
        s.native = native
        s.steps += 1
        # the rest of an optimal plan stays optimal once its first command is taken: no replanning
        s.plan = s.plan[1:] if s.plan and command == s.plan[0] else None
        s.pending.append((native, action))  # for the handcoded agent (expert or demonstrator), fed on its next use
        won = bool(native.tw_state["won"])
        reward = 1.0 if won and not s.won else 0.0
        s.won = s.won or won
        terminated = s.won
        truncated = not terminated and s.steps >= self.max_steps
        return native.tw_state.feedback, reward, terminated, truncated, self._info(invalid)

    # ---------------------------------------------------------------------------------------------------
    # Expert
    # ---------------------------------------------------------------------------------------------------
    def expert_plan(self) -> list[str]:
        """The planner's commands from the current state to the goal ([] once won)."""
        if self.state is None:
            raise RuntimeError("call reset() before expert_plan()")
        s = self.state
        if s.plan is None:  # fast-downward, once per state and engine; kept while the episode follows it
            s.plan = tuple(s.engine.plan(s.native))
        return list(s.plan)

    def expert_action(self) -> str:
        if self.state is None:
            raise RuntimeError("call reset() before expert_action()")
        if self.expert == "planner":
            plan = self.expert_plan()
            return plan[0] if plan else "look"
        return self._handcoded_action()

    def demo_action(self, rng, mistake_prob: float) -> str:
        """The SFT demonstrator: ALFWorld's handcoded expert, which sees only what the agent sees. The planner
        walks straight to where it knows an object lies, which no policy that reads the observations can
        imitate; the handcoded expert searches: the receptacles where the object's class is usually found first,
        then the others, opening closed ones. It makes two systematic, state-dependent mistakes, each taken with
        `mistake_prob` where its state arises, so that the cloned policy's most likely action is sometimes wrong
        and RL has something to fix: where it could take several objects, it takes the first one listed instead
        of the one the task needs (and must put it back); where it would open a closed receptacle, it walks on
        to another one instead (and may have to come back). The expert follows from wherever a mistake leads."""
        action = self._handcoded_action()
        admissible = list(self.state.native.tw_state["admissible_commands"])
        if action.startswith("take "):
            first = next((a for a in admissible if a.startswith("take ")), action)
            if first != action and rng.random() < mistake_prob:
                return first
        if action.startswith("open "):
            elsewhere = [a for a in admissible if a.startswith("go to ")]
            if elsewhere and rng.random() < mistake_prob:
                return rng.choice(elsewhere)
        return action

    def _handcoded_action(self) -> str:
        s = self.state
        if s.expert is None:  # replay the episode so far into a new agent
            # seeded by the game, not by where its file lies (a cache path differs between machines)
            seed = _stable_int("handcoded", self.seed, os.path.relpath(s.gamefile, self.games_root))
            s.expert, s.expert_owned = HandcodedExpert(s.engine, seed), True
        if s.pending:
            if not s.expert_owned:
                s.expert, s.expert_owned = copy.deepcopy(s.expert), True
            for native, command in s.pending:
                s.expert.observe_step(s.engine, native, command)
            s.pending = []
        return s.expert.next_action

    # ---------------------------------------------------------------------------------------------------
    # Snapshots and vocabulary
    # ---------------------------------------------------------------------------------------------------
    def snapshot(self) -> "AlfWorldSnapshot":
        if self.state is None:
            raise RuntimeError("call reset() before snapshot()")
        return AlfWorldSnapshot(self)

    def vocabulary(self) -> list[str]:
        if self._games is not None:
            return official_vocabulary(tuple(self._games))
        return generated_vocabulary(self.task_types)


class AlfWorldSnapshot:
    """Native snapshot: a reference to the env's frozen engine state; `restore()` builds a new env on it."""

    def __init__(self, env: AlfWorldEnv):
        s = env.state
        s.expert_owned = False  # the handcoded agent (if any) is now shared: whoever advances it copies it
        self._env = env
        self._state = dataclasses.replace(s, pending=list(s.pending))
        self._reset_args = env.reset_args
        self._actions = tuple(env.actions_taken)
        rng = env._np_random
        self._rng_state = None if rng is None else (type(rng.bit_generator), rng.bit_generator.state)

    def restore(self) -> AlfWorldEnv:
        env = copy.copy(self._env)
        s = self._state
        env.state = dataclasses.replace(s, pending=list(s.pending))
        env.reset_args = self._reset_args
        env.actions_taken = list(self._actions)
        if self._rng_state is None:
            env._np_random = None
        else:
            import numpy as np
            bit_generator_type, state = self._rng_state
            bit_generator = bit_generator_type()
            bit_generator.state = state
            env._np_random = np.random.Generator(bit_generator)
        return env


def run_expert(env: AlfWorldEnv, task_id: int) -> tuple[bool, int]:
    """Play task `task_id` with the env's expert; (won, steps)."""
    env.reset(options={"task_id": task_id})
    terminated = truncated = False
    steps = 0
    while not (terminated or truncated):
        _, _, terminated, truncated, _ = env.step(env.expert_action())
        steps += 1
    return terminated, steps
