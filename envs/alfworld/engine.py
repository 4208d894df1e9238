"""Loaded games: one live textworld env per game, shared by every episode and snapshot of that game, and
the frozen native states episodes install into it (see docs/envs.md, ALFWorld: snapshots)."""

from __future__ import annotations

import json
import os
import sys
import weakref
from collections import Counter, OrderedDict, defaultdict
from dataclasses import dataclass
from typing import Any

import textworld
from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos

from envs.alfworld.patches import _FREE_LIBS


@dataclass(frozen=True)
class NativeState:
    """One game state as the engine holds it. Never mutated: installing it copies the mutable parts."""
    state_id: int  # fast-downward's state id in the engine's state registry
    facts: Any  # PddlState._facts: signature -> set of propositions
    vars_by_name: Any
    vars_by_type: Any
    var_counts: Any
    operators: Any  # PddlState._operators of the state's applicable actions
    tw_state: Any  # PddlEnv.state (a textworld GameState: feedback, admissible commands, won, ...)
    prev_state: Any
    moves: int
    last_action: Any


class Engine:
    """A loaded game: textworld's PddlEnv (with its own copy of libdownward) and its initial state."""

    request_infos = dict(won=True, admissible_commands=True, extras=["gamefile"])

    def __init__(self, gamefile: str):
        self.gamefile = gamefile
        self.env = textworld.start(gamefile, textworld.EnvInfos(**self.request_infos),
                                   wrappers=[AlfredDemangler(), AlfredInfos])
        self.pddl = self.env.unwrapped
        self.lib = self.pddl.downward_lib
        self.env.reset()  # a fresh engine: nothing stored yet, so reset() frees nothing
        self.initial = self.capture()
        self._plans: dict[int, list[str]] = {}
        templates = {a.template for a in self.pddl._logic.actions.values()}
        self.move_grammar = "move {o} to {r}" in templates  # alfworld >= 0.4; older games: put {o} in/on {r}
        with open(os.path.join(os.path.dirname(gamefile), "traj_data.json")) as f:
            traj = json.load(f)
        self.task_type = traj["task_type"]
        intro = self.initial.tw_state.feedback
        self.task = next((line.strip() for line in intro.splitlines() if line.startswith("Your task is to:")), "")

    def capture(self) -> NativeState:
        ps = self.pddl._pddl_state
        return NativeState(self.lib.get_state_id(), ps._facts, ps._vars_by_name, ps._vars_by_type, ps._var_counts,
                           ps._operators, self.pddl.state, self.pddl.prev_state, self.pddl._moves,
                           self.pddl._last_action)

    def install(self, native: NativeState) -> None:
        """Make the engine hold `native`: planner state id plus fresh copies of the Python facts."""
        ps = self.pddl._pddl_state
        self.lib.set_state_id(native.state_id)
        ps._facts = defaultdict(set, {k: set(v) for k, v in native.facts.items()})
        ps._vars_by_name = dict(native.vars_by_name)
        ps._vars_by_type = defaultdict(set, {k: set(v) for k, v in native.vars_by_type.items()})
        ps._var_counts = Counter(native.var_counts)
        ps._operators = native.operators
        self.pddl.state = native.tw_state
        self.pddl.prev_state = native.prev_state
        self.pddl._moves = native.moves
        self.pddl._last_action = native.last_action

    def step(self, native: NativeState, command: str) -> NativeState:
        self.install(native)
        self.env.step(command)
        return self.capture()

    def plan(self, native: NativeState) -> list[str]:
        """The planner's commands from `native` to the goal ([] when won or unsolvable); cached per state."""
        if native.state_id not in self._plans:
            self.lib.set_state_id(native.state_id)  # replanning reads only the planner's state
            self._plans[native.state_id] = list(self.pddl._pddl_state.replan(self.pddl._entity_infos))
        return self._plans[native.state_id]

    def human_readable_facts(self, native: NativeState) -> list:
        """The state's facts in a fixed order. textworld lists them in the order of a set of propositions, which
        changes with PYTHONHASHSEED and with how the set was built, and the handcoded expert's choices follow
        that order: unsorted, the same demonstrations differ from one process to the next."""
        facts = [self.pddl._get_human_readable_fact(f) for f in native.tw_state["_facts"]]
        return sorted(facts, key=lambda fact: (fact.name, tuple(fact.names)))

    def __del__(self):
        # Nothing references this engine any more: free its planner states and hand its library copy to
        # the next engine. (Unloading it is not safe: the copies share fast-downward's plugin registry
        # through GNU-unique symbols, and the process would crash at exit.)
        lib, self.lib = self.lib, None
        if lib is not None and not sys.is_finalizing():
            try:
                lib.cleanup()
                _FREE_LIBS.append(lib)
            except Exception:  # pragma: no cover - best effort at garbage collection
                pass


ENGINE_CACHE_SIZE = 16  # recently used engines kept loaded even when no env holds them (~7 MB each)
_LIVE_ENGINES: "weakref.WeakValueDictionary[str, Engine]" = weakref.WeakValueDictionary()
_RECENT_ENGINES: "OrderedDict[str, Engine]" = OrderedDict()


def get_engine(gamefile: str) -> Engine:
    gamefile = os.path.abspath(gamefile)
    engine = _LIVE_ENGINES.get(gamefile)
    if engine is None:
        engine = Engine(gamefile)
        _LIVE_ENGINES[gamefile] = engine
    _RECENT_ENGINES[gamefile] = engine
    _RECENT_ENGINES.move_to_end(gamefile)
    while len(_RECENT_ENGINES) > ENGINE_CACHE_SIZE:
        _RECENT_ENGINES.popitem(last=False)
    return engine


def drop_engine(gamefile: str) -> None:
    gamefile = os.path.abspath(gamefile)
    _RECENT_ENGINES.pop(gamefile, None)
    _LIVE_ENGINES.pop(gamefile, None)
