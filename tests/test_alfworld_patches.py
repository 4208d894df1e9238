"""The patches of textworld and fast-downward (envs/alfworld/patches.py): sys.argv survives the PDDL
translation, and memoized text generation gives identical traces."""

import random
import sys

from tests.alfworld_helpers import GARBAGE, needs_real, trace
from tests.alfworld_helpers import cache_dir_fixture, gen_fixture, real_fixture  # noqa: F401  (fixtures)

from envs import ENV_REGISTRY, make_env
from envs import alfworld as alf
from envs.alfworld import AlfWorldEnv, grammar_speedups, memoize_grammar


def test_make_env_and_sys_argv(cache_dir):
    assert ENV_REGISTRY["alfworld"] == ("envs.alfworld", "AlfWorldEnv")
    argv = list(sys.argv)
    env = make_env("alfworld", split="eval", cache_dir=cache_dir, num_games=1)
    obs, info = env.reset(options={"task_id": 0})  # writes, loads and translates a new game
    assert sys.argv == argv  # fast-downward's translator overwrites sys.argv; the env restores it
    assert info["task"] in obs and obs.startswith("-= Welcome to TextWorld, ALFRED! =-")


def memo_traces(env, task_id, actions):
    out = {}
    try:
        for name, config in {"off": dict(enabled=False),
                             "memo": dict(enabled=True, shallow_contexts=False, memoize_commands=False),
                             "shallow": dict(enabled=True, memoize_commands=False),
                             "on": dict(enabled=True)}.items():
            memoize_grammar(**config)
            obs, info = env.reset(options={"task_id": task_id})
            out[name] = [(obs, tuple(info["admissible_actions"]))] + trace(env, actions)
    finally:
        memoize_grammar(True)
    return out


def test_memoized_text_generation_gives_identical_traces(gen, tmp_path):
    for task_id in range(6):
        gen.reset(options={"task_id": task_id})
        rng = random.Random(task_id)
        actions = gen.expert_plan()[:-1]
        actions = [a for pair in zip(actions, [rng.choice(GARBAGE[:4] + ["look", "inventory", "help"])
                                             for _ in actions]) for a in pair]
        traces = memo_traces(gen, task_id, actions)
        assert traces["off"] == traces["memo"] == traces["shallow"] == traces["on"]
    assert grammar_speedups() == {"memoize": True, "shallow_contexts": True, "memoize_commands": True}
    # loading (grammar parse and PDDL translation) with the speed-ups off gives the same game too
    try:
        memoize_grammar(False)
        cold = AlfWorldEnv(split="eval", cache_dir=str(tmp_path), num_games=1)
        cold_obs = cold.reset(options={"task_id": 0})[0]
    finally:
        memoize_grammar(True)
    alf.drop_engine(cold.game_file(0))
    warm = AlfWorldEnv(split="eval", cache_dir=str(tmp_path), num_games=1)
    assert warm.reset(options={"task_id": 0})[0] == cold_obs


@needs_real
def test_memoized_text_generation_on_real_games(real):
    for task_id in (0, 5):
        real.reset(options={"task_id": task_id})
        actions = real.expert_plan()
        traces = memo_traces(real, task_id, actions[:3] + ["look", "examine " + actions[0][len("go to "):]])
        assert traces["off"] == traces["memo"] == traces["shallow"] == traces["on"]


def test_memoized_commands_skip_most_derivations(gen, monkeypatch):
    """The admissible commands' cache is used: replaying an episode derives far fewer texts with it on."""
    from textworld.envs.pddl.textgen import ContextSensitiveGrammar

    calls = []
    original = ContextSensitiveGrammar.derive
    monkeypatch.setattr(ContextSensitiveGrammar, "derive",
                        lambda self, *a, **k: calls.append(1) or original(self, *a, **k))
    gen.reset(options={"task_id": 1})
    actions = gen.expert_plan()
    counts = {}
    try:
        for name, commands in (("off", False), ("on", True), ("on, cached", True)):
            memoize_grammar(True, memoize_commands=commands)
            calls.clear()
            gen.reset(options={"task_id": 1})
            trace(gen, actions)
            counts[name] = len(calls)
    finally:
        memoize_grammar(True)
    # off: one derivation per admissible command and step; on: the feedback text plus new commands only
    assert counts["on, cached"] <= len(actions) + 1 < counts["off"] / 5
