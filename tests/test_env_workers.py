"""Env workers (`--env-workers`): the steps of a batch of sandboxes in threads give exactly the serial
results, in order; envs that would not gain (or are not thread-safe) refuse workers by name."""

import random

import pytest

import bpo
import grpo_baseline
from envs import make_env
from envs.workers import check_env_workers, step_all


def play_batch(envs, task_ids, workers, rng):
    """Every env plays its task with the demonstrator (mistakes included) until all are done; the steps of
    each turn go through `step_all`. Returns every env's (action, obs, reward, terminated, truncated) list."""
    traces = [[] for _ in envs]
    for env, task_id in zip(envs, task_ids):
        env.reset(options={"task_id": task_id})
    active = list(range(len(envs)))
    while active:
        actions = [envs[i].demo_action(rng, 0.5) for i in active]
        results = step_all([envs[i] for i in active], actions, workers)
        still = []
        for i, action, (obs, reward, terminated, truncated, info) in zip(active, actions, results):
            traces[i].append((action, obs, reward, terminated, truncated, info["invalid"]))
            if not (terminated or truncated):
                still.append(i)
        active = still
    return traces


def test_threaded_steps_equal_serial_steps_on_docker_sandboxes(docker_engine):
    envs = [make_env("swe", split="train", backend="docker") for _ in range(6)]
    try:
        task_ids = [0, 3, 7, 11, 19, 23]
        serial = play_batch(envs, task_ids, workers=1, rng=random.Random(5))
        threaded = play_batch(envs, task_ids, workers=4, rng=random.Random(5))
        assert threaded == serial
        assert sum(trace[-1][2] for trace in serial) >= 5  # the demonstrator repairs (nearly) every task
        assert any(step[0].startswith("replace ") for trace in serial for step in trace)  # the demonstrator edits
    finally:
        for env in envs:
            env.close()


def test_workers_on_a_cpu_bound_env_are_refused_by_name():
    check_env_workers("swe", 8)
    check_env_workers("webshop", 1)
    for name in ("webshop", "math", "alfworld"):
        with pytest.raises(SystemExit, match=f"--env-workers 4: env '{name}' steps serially"):
            check_env_workers(name, 4)
    with pytest.raises(SystemExit, match="--env-workers must be at least 1"):
        check_env_workers("swe", 0)
    for script in (grpo_baseline, bpo):  # every script checks it with the other flags
        with pytest.raises(SystemExit, match="--env-workers 2: env 'math'"):
            script.apply_env_defaults(script.Args(env="math", env_workers=2))


def test_step_all_keeps_the_order_of_its_envs():
    """Each env gets its own action back in place: env i answers task (i + 1)'s question, so only the env
    whose gold answer equals the next one's wins; threaded and serial agree element by element."""
    def batch():
        envs = [make_env("math", split="test") for _ in range(6)]
        for task_id, env in enumerate(envs):
            env.reset(options={"task_id": task_id})
        return envs
    answers = [env.expert_action() for env in batch()]
    shifted = answers[1:] + answers[:1]
    threaded, serial = step_all(batch(), shifted, workers=3), step_all(batch(), shifted, workers=1)
    assert [r[:4] for r in threaded] == [r[:4] for r in serial]
    assert [r[4]["predicted"] for r in threaded] == [r[4]["predicted"] for r in serial]
    assert step_all(batch(), answers, workers=3)[2][1] == 1.0  # its own answer wins
