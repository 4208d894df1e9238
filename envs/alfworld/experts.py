"""The handcoded expert: alfworld's HandCodedTWAgent with its move-grammar bug fixed, fed every step as
`AlfredExpert` feeds it, with a private rng."""

from __future__ import annotations

import random
import re

import alfworld.agents.expert.handcoded_expert as _handcoded_module
from alfworld.agents.expert import HandCodedAgentFailed, HandCodedAgentTimeout, HandCodedTWAgent

from envs.alfworld.engine import Engine, NativeState


class _MoveGrammarFix:
    """0.4.2's state tracking recognises a put by `"put" in last_action`; under the `move X to Y` grammar it
    never pops the inventory. Present the move to it in the put form it expects."""

    def update_state_tracking(self, game_state, last_action):
        if last_action.startswith("move "):
            last_action = "put " + last_action[len("move "):]
        return super().update_state_tracking(game_state, last_action)


_FIXED_POLICIES: dict = {}


class FixedHandCodedTWAgent(HandCodedTWAgent):
    def get_task_policy(self, task_param):
        base = super().get_task_policy(task_param)
        if base not in _FIXED_POLICIES:
            _FIXED_POLICIES[base] = type(base.__name__, (_MoveGrammarFix, base), {})
        return _FIXED_POLICIES[base]


_PUT_RE = re.compile(r"^put (.+) in/on (.+)$")


def _to_move_grammar(command: str) -> str:
    match = _PUT_RE.match(command)
    return f"move {match.group(1)} to {match.group(2)}" if match else command


class HandcodedExpert:
    """Feeds alfworld's handcoded agent the way `AlfredExpert` does (every step), with a private rng."""

    def __init__(self, engine: Engine, seed: int):
        self.agent = FixedHandCodedTWAgent(max_steps=200)
        self.agent.reset(engine.gamefile)
        self.rng = random.Random(seed)
        self.next_action = "look"  # AlfredExpert's plan before the first step
        self.agent.observe(engine.initial.tw_state.feedback)

    def observe_step(self, engine: Engine, native: NativeState, command: str) -> None:
        state = native.tw_state
        admissible = state["admissible_commands"]
        if engine.move_grammar:
            canonical, back = admissible, None
        else:
            canonical = [_to_move_grammar(c) for c in admissible]
            back = dict(zip(canonical, admissible))
            command = _to_move_grammar(command)
        game_state = {"feedback": state.feedback, "admissible_commands": canonical, "won": state["won"],
                      "facts": engine.human_readable_facts(native)}
        saved = _handcoded_module.random
        _handcoded_module.random = self.rng  # the agent draws from the module's `random`: make it ours
        try:
            action = self.agent.act(game_state, 0, state["won"], command.strip())
        except (HandCodedAgentTimeout, HandCodedAgentFailed):  # AlfredExpert would raise; we look around
            action = "look"
        finally:
            _handcoded_module.random = saved
        if back is not None:
            action = back.get(action, action)
        self.next_action = action if action in admissible else "look"
