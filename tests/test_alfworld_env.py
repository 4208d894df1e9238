"""AlfWorldEnv episodes as in ALFWorld: intro, admissible actions, reward, invalid actions, step limit,
seeded task choice; and the install hint when alfworld is missing."""

import importlib
import re
import sys

import pytest
from tests.alfworld_helpers import GARBAGE
from tests.alfworld_helpers import cache_dir_fixture, gen_fixture  # noqa: F401  (fixtures)

from envs.alfworld import GENERATED_ORDER, AlfWorldEnv


def test_episode_follows_alfworld(gen):
    obs, info = gen.reset(options={"task_id": 0})
    assert obs.startswith("-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room.")
    assert info["task"].startswith("Your task is to: ") and obs.endswith(info["task"])
    assert info["won"] is False and info["invalid"] is False and info["task_type"] == GENERATED_ORDER[0]
    assert "look" in info["admissible_actions"] and "inventory" in info["admissible_actions"]
    assert all(re.fullmatch(r"go to [a-z]+ \d+", a) for a in info["admissible_actions"] if a.startswith("go to"))
    plan = gen.expert_plan()
    rewards = []
    for i, action in enumerate(plan):
        assert action in info["admissible_actions"]
        obs, reward, terminated, truncated, info = gen.step(action)
        rewards.append(reward)
        assert terminated == (i == len(plan) - 1) and not truncated
    assert rewards[-1] == 1.0 and sum(rewards) == 1.0 and info["won"] is True
    assert re.fullmatch(r"You move the [a-z]+ \d+ to the [a-z]+ \d+\.", obs)


def test_invalid_actions_never_raise(gen):
    _, info = gen.reset(options={"task_id": 1})
    before = info["admissible_actions"]
    for action in GARBAGE + [None, 42, ["go"]]:
        obs, reward, terminated, truncated, info = gen.step(action)
        assert obs == "Nothing happens." and reward == 0.0 and not terminated
        assert info["invalid"] is True and info["admissible_actions"] == before
    obs, _, _, _, info = gen.step("  " + before[0] + " ")  # surrounding spaces are stripped, as textworld does
    assert info["invalid"] is False and obs != "Nothing happens."


def test_step_limit(cache_dir):
    env = AlfWorldEnv(cache_dir=cache_dir, num_games=12, max_steps=5)
    env.reset(options={"task_id": 2})
    for i in range(5):
        _, _, terminated, truncated, info = env.step("look")
        assert not terminated and truncated == (i == 4) and info["steps"] == i + 1


def test_reset_seed_picks_task_deterministically(gen):
    ids = [gen.reset(seed=s)[1]["task_id"] for s in (3, 4, 3)]
    assert ids[0] == ids[2] and all(0 <= i < gen.num_tasks for i in ids)


# ---------------------------------------------------------------------------------------------------
# Install
# ---------------------------------------------------------------------------------------------------
def test_missing_alfworld_gives_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "alfworld", None)  # makes `import alfworld` raise ImportError
    monkeypatch.delitem(sys.modules, "envs.alfworld")
    with pytest.raises(ImportError, match=r"pip install alfworld==0\.4\.2"):
        importlib.import_module("envs.alfworld")
