"""Env workers: the steps of many live envs at once, for envs whose steps wait on I/O.

A Docker sandbox's step is an exec in a container (`envs/swe`): the host waits ~0.1-0.3 s on the engine,
so a thread pool runs the steps of a batch of episodes side by side (`--env-workers N` in every algorithm
script). The Python envs are CPU-bound (the GIL serializes them: threads gain nothing) and ALFWorld's
planner is not thread-safe, so they always step serially; asking for workers there is refused.

    results = step_all(envs, actions, workers=8)   # [(obs, reward, terminated, truncated, info), ...]
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

IO_BOUND_ENVS = ("swe",)  # envs whose steps wait on I/O; every other env steps serially
_POOLS: dict[int, ThreadPoolExecutor] = {}


def check_env_workers(env_name: str, workers: int) -> None:
    """Refuse worker threads for an env that would not gain from them (or is not thread-safe)."""
    if workers < 1:
        raise SystemExit(f"--env-workers must be at least 1; got {workers}")
    if workers > 1 and env_name not in IO_BOUND_ENVS:
        raise SystemExit(f"--env-workers {workers}: env {env_name!r} steps serially (its steps are CPU-bound "
                         f"Python, which threads do not speed up; ALFWorld's planner is also not thread-safe); "
                         f"env workers help only {', '.join(IO_BOUND_ENVS)}, whose steps wait on a sandbox")


def step_all(envs: list, actions: list[str], workers: int = 1) -> list[tuple]:
    """`env.step(action)` for each pair, in order; with `workers` > 1, up to that many at a time in threads.
    Each env is stepped by one thread at a time, so an env never sees two calls at once."""
    if workers <= 1 or len(envs) <= 1:
        return [env.step(action) for env, action in zip(envs, actions)]
    if workers not in _POOLS:  # one pool per size, reused across turns and steps
        _POOLS[workers] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="env-worker")
    return list(_POOLS[workers].map(lambda pair: pair[0].step(pair[1]), zip(envs, actions)))
