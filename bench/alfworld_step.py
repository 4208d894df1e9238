"""ALFWorld step latency with and without textworld speed-ups, and native snapshot / restore cost.

    python bench/alfworld_step.py                      # generated games (+ the real sample if present)
    python bench/alfworld_step.py --games 6 --steps 40 --data-dir PATH_TO_ALFWORLD_GAMES

For each game: an action sequence (the planner's solution interleaved with random admissible and invalid
commands) is replayed from the start four times, side by side in one process: plain textworld, with its
grammar parsing memoized, memoized plus shallow derivation contexts, and all that plus the admissible commands'
text cached per game (the env's default); the traces
are checked identical. Snapshot cost is `env.snapshot()`, restore cost is
`handle.restore()` (a new live env), and "restore + step" is the first step of a restored env (which
installs its state into the shared engine).

Game loading (`Engine(gamefile)`: textworld's PddlEnv, PDDL translation, first reset) is timed for the same
games three ways: translation not memoized (stock), memoized with an empty on-disk translation cache (what
the first run on a machine pays) and with that cache warm (every later run: the in-memory cache is cleared
before each load, so only the disk cache serves it).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envs.alfworld import AlfWorldEnv, Engine, drop_engine, memoize_grammar, patches  # noqa: E402

REAL_SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "alfworld_real_sample"


def action_sequence(env: AlfWorldEnv, task_id: int, num_steps: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    _, info = env.reset(options={"task_id": task_id})
    actions = []
    while len(actions) < num_steps:
        roll = rng.random()
        if roll < 0.1:
            action = rng.choice(["jump", "take the moon", ""])
        elif roll < 0.6:
            action = rng.choice(info["admissible_actions"])
        else:
            action = env.expert_action()
        actions.append(action)
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            env.reset(options={"task_id": task_id})  # keep going from the start: more steps to time
            actions.append(None)
    return actions


def timed_trace(env: AlfWorldEnv, task_id: int, actions: list) -> tuple[list[float], list[tuple]]:
    obs, info = env.reset(options={"task_id": task_id})
    times, trace = [], [(obs, tuple(info["admissible_actions"]))]
    for action in actions:
        if action is None:
            obs, info = env.reset(options={"task_id": task_id})
        else:
            start = time.perf_counter()
            obs, _, _, _, info = env.step(action)
            times.append(time.perf_counter() - start)
        trace.append((obs, tuple(info["admissible_actions"]), info["won"]))
    return times, trace


def per_call_us(fn, repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat * 1e6


CONFIGS = {"textworld": dict(enabled=False),
           "memoized": dict(enabled=True, shallow_contexts=False, memoize_commands=False),
           "shallow": dict(enabled=True, memoize_commands=False), "default": dict(enabled=True)}


def bench_env(label: str, env: AlfWorldEnv, games: int, steps: int, seed: int) -> dict:
    times = {name: [] for name in CONFIGS}
    snap, restore, restore_step = [], [], []
    for task_id in range(min(games, env.num_tasks)):
        memoize_grammar(True)
        actions = action_sequence(env, task_id, steps, seed + task_id)
        traces = {}
        for name, config in CONFIGS.items():
            memoize_grammar(**config)
            step_times, traces[name] = timed_trace(env, task_id, actions)
            times[name] += step_times
        memoize_grammar(True)
        for name in CONFIGS:
            if traces[name] != traces["textworld"]:
                raise SystemExit(f"{label} game {task_id}: the {name} trace differs from textworld's")
        # snapshot / restore in the middle of an episode
        env.reset(options={"task_id": task_id})
        for action in actions[:8]:
            if action is not None:
                env.step(action)
        handle = env.snapshot()
        snap.append(per_call_us(env.snapshot, 2000))
        restore.append(per_call_us(handle.restore, 2000))
        copies = [handle.restore() for _ in range(50)]
        start = time.perf_counter()
        for copy in copies:
            copy.step("look")
        restore_step.append((time.perf_counter() - start) / len(copies) * 1e3)
    row = {"label": label, "steps": len(times["default"]), "snapshot_us": statistics.median(snap),
           "restore_us": statistics.median(restore), "restore_step_ms": statistics.median(restore_step)}
    for name in CONFIGS:
        row[name] = statistics.median(times[name]) * 1e3
        row[name + "_mean"] = statistics.mean(times[name]) * 1e3
    return row


def load_seconds(gamefiles: list[str], memoize: bool) -> float:
    """Mean seconds to load each game into a new engine, nothing kept in memory from a previous load."""
    memoize_grammar(memoize)
    total = 0.0
    for gamefile in gamefiles:
        drop_engine(gamefile)
        patches._SAS_CACHE.clear()
        start = time.perf_counter()
        Engine(gamefile)
        total += time.perf_counter() - start
    memoize_grammar(True)
    return total / len(gamefiles)


def bench_loading(label: str, env: AlfWorldEnv, games: int) -> dict:
    gamefiles = [env.game_file(task_id) for task_id in range(games)]
    with tempfile.TemporaryDirectory(prefix="alfworld-translations-") as translations:
        os.environ["ALFWORLD_TRANSLATION_CACHE"] = translations
        try:
            return {"label": label, "stock": load_seconds(gamefiles, memoize=False),
                    "cold": load_seconds(gamefiles, memoize=True), "warm": load_seconds(gamefiles, memoize=True)}
        finally:
            del os.environ["ALFWORLD_TRANSLATION_CACHE"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=6, help="games per source (one per task type for 6)")
    parser.add_argument("--steps", type=int, default=40, help="timed steps per game")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache-dir", default=None, help="where generated games go (default: a temp dir)")
    parser.add_argument("--data-dir", default=None, help="official ALFWorld games (default: the real sample)")
    args = parser.parse_args()

    cache_dir = args.cache_dir or tempfile.mkdtemp(prefix="alfworld-bench-")
    sources = [("generated", AlfWorldEnv(split="train", cache_dir=cache_dir, num_games=max(6, args.games)))]
    data_dir = args.data_dir or (str(REAL_SAMPLE) if REAL_SAMPLE.is_dir() else None)
    if data_dir:
        sources.append((f"official ({os.path.basename(os.path.normpath(data_dir))})", AlfWorldEnv(data_dir=data_dir)))
    print(f"ALFWorld step latency, {args.games} games x {args.steps} steps per source, "
          f"each replayed in {len(CONFIGS)} configurations")
    rows = [bench_env(label, env, args.games, args.steps, args.seed) for label, env in sources]
    print("\nstep latency, ms (median; mean in parentheses)")
    print(f"{'games':34s} {'steps':>5s} {'textworld':>16s} {'memoized parse':>16s} {'+ shallow ctx':>16s}"
          f" {'+ memo commands':>16s} {'speed-up (memo / default)':>26s}")
    for r in rows:
        cells = " ".join(f"{r[n]:7.1f} ({r[n + '_mean']:5.1f})" for n in CONFIGS)
        print(f"{r['label']:34s} {r['steps']:5d} {cells} {r['textworld'] / r['memoized']:12.1f}x "
              f"/ {r['textworld'] / r['default']:5.1f}x")
    print("\nnative snapshots (median over games)")
    print(f"{'games':34s} {'snapshot us':>12s} {'restore us':>11s} {'restored env first step ms':>27s}")
    for r in rows:
        print(f"{r['label']:34s} {r['snapshot_us']:12.1f} {r['restore_us']:11.1f} {r['restore_step_ms']:27.1f}")
    print(f"\ntraces were identical in all {len(CONFIGS)} configurations")
    print("\ngame loading, s per game (mean; a new engine each time)")
    print(f"{'games':34s} {'textworld':>10s} {'empty disk cache':>17s} {'warm disk cache':>16s} {'speed-up':>9s}")
    for label, env in sources:
        r = bench_loading(label, env, args.games)
        print(f"{r['label']:34s} {r['stock']:10.3f} {r['cold']:17.3f} {r['warm']:16.3f} {r['stock'] / r['warm']:8.1f}x")


if __name__ == "__main__":
    main()
