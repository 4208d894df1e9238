"""Shared by the WebShop tests: a test-split env per test module, and helpers that walk it."""

import pytest

from envs.webshop import WebShopEnv


@pytest.fixture(scope="module", name="env")
def env_fixture():
    return WebShopEnv(split="test")


def goal_on(env, predicate):
    """First task id of env's split whose goal product satisfies predicate(product, goal)."""
    for i, goal in enumerate(env.goals):
        if predicate(env.world.by_asin[goal["asin"]], goal):
            return i
    raise LookupError("no such goal")


def walk(env, task_id, until):
    """Reset to task_id and follow the expert until until(env) holds; returns the last info."""
    obs, info = env.reset(options={"task_id": task_id})
    while not until(env):
        obs, _, terminated, truncated, info = env.step(env.expert_action())
        assert not (terminated or truncated)
    return info
