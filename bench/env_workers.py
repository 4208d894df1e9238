"""Env-steps per second against the number of env workers (`--env-workers`), on the Docker code-repair env.

A batch of `--envs` episodes plays the demonstrator's commands (reads, edits, test runs, submit) in
lockstep, as a rollout does; each turn's steps go through `envs.workers.step_all` with 1, 2, 4, ...
workers. The same tasks and commands in every row; the rows are measured one after another in this run,
`--rounds` times each, interleaved, and the median is reported with its ratio to one worker.

    python bench/env_workers.py --envs 16 --workers 1 2 4 8 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from envs import make_env  # noqa: E402
from envs.swe import sandbox as sandbox_module  # noqa: E402
from envs.swe.engine import docker_client  # noqa: E402
from envs.workers import step_all  # noqa: E402


def play(envs, task_ids, workers: int, seed: int) -> tuple[int, float]:
    """(env steps, seconds) of one batch; resets (container starts) are not timed."""
    rng = random.Random(seed)
    for env, task_id in zip(envs, task_ids):
        env.reset(options={"task_id": task_id})
    steps, seconds, active = 0, 0.0, list(range(len(envs)))
    while active:
        actions = [envs[i].demo_action(rng, 0.25) for i in active]
        start = time.perf_counter()
        results = step_all([envs[i] for i in active], actions, workers)
        seconds += time.perf_counter() - start
        steps += len(actions)
        active = [i for i, (_, _, terminated, truncated, _) in zip(active, results) if not (terminated or truncated)]
    return steps, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", type=int, default=16, help="episodes played side by side")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--split", default="train")
    cli = parser.parse_args()
    if docker_client() is None:
        raise SystemExit("no Docker engine answers: eval \"$(bash envs/swe/docker_engine.sh)\" first")
    envs = [make_env("swe", split=cli.split, backend="docker") for _ in range(cli.envs)]
    task_ids = random.Random(0).sample(range(envs[0].num_tasks), cli.envs)
    rates = {w: [] for w in cli.workers}
    try:
        for round_index in range(cli.rounds):
            for workers in cli.workers:
                steps, seconds = play(envs, task_ids, workers, seed=round_index)
                rates[workers].append(steps / seconds)
    finally:
        for env in envs:
            env.close()
        sandbox_module.reap(docker_client())
    print(f"{cli.envs} swe episodes (docker backend, split {cli.split}) per batch, the demonstrator's commands; "
          f"median of {cli.rounds} rounds; {os.cpu_count()} CPUs")
    print(f"{'workers':>8} {'env steps/s':>12} {'x one worker':>13}")
    base = statistics.median(rates[cli.workers[0]])
    for workers in cli.workers:
        rate = statistics.median(rates[workers])
        print(f"{workers:8d} {rate:12.2f} {rate / base:13.2f}")


if __name__ == "__main__":
    main()
