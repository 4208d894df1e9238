"""Snapshot and restore cost per environment, against the cost of the steps they save.

    python bench/snapshot_cost.py                      # webshop, math and alfworld
    python bench/snapshot_cost.py --envs webshop --episodes 50 --repeats 200
    python bench/snapshot_cost.py --envs swe --split test_unseen_bugs --episodes 10 --repeats 3   # commit vs dir copy

For each env: run expert episodes, and at every state an expert episode passes through time
`snapshot()` and `handle.restore()` (median over all states and repeats), and time `step()` on the
expert's actions (mean) and on each episode's last action (mean; swe: `submit`, the grading). Costs are
printed in microseconds and as a percentage of one step and of a 15-step episode (the common WebShop step
limit). An env whose module is not there is skipped.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from envs import ENV_REGISTRY, make_env  # noqa: E402

EPISODE_STEPS = 15


def measure(env, episodes: int, repeats: int) -> dict:
    snapshot_times, restore_times, step_times, last_step_times, lengths = [], [], [], [], []
    for task in range(episodes):
        env.reset(options={"task_id": task % env.num_tasks})
        length = 0
        while True:
            for _ in range(repeats):
                start = time.perf_counter()
                handle = env.snapshot()
                snapshot_times.append(time.perf_counter() - start)
                start = time.perf_counter()
                restored = handle.restore()
                restore_times.append(time.perf_counter() - start)
                if hasattr(restored, "close"):  # the code-repair env: its restored sandbox is a container or a dir
                    restored.close()
            action = env.expert_action()
            start = time.perf_counter()
            _, _, terminated, truncated, _ = env.step(action)
            step_times.append(time.perf_counter() - start)
            length += 1
            if terminated or truncated:
                last_step_times.append(step_times[-1])
                break
        lengths.append(length)
    return {
        "snapshot": statistics.median(snapshot_times), "restore": statistics.median(restore_times),
        "step": statistics.mean(step_times), "last_step": statistics.mean(last_step_times),
        "episode_length": statistics.mean(lengths),
        "states": len(step_times),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", nargs="+", default=["webshop", "math", "alfworld"])
    parser.add_argument("--split", default="test")
    parser.add_argument("--episodes", type=int, default=30, help="expert episodes per env")
    parser.add_argument("--repeats", type=int, default=50, help="snapshot/restore timings per visited state")
    parser.add_argument("--swe-backends", nargs="+", default=["docker", "local"], help="sandboxes measured for swe")
    args = parser.parse_args()

    header = (f"{'env':<10} {'states':>6} {'snapshot us':>12} {'restore us':>11} {'step us':>9} "
              f"{'last step us':>12} {'ep len':>6} {'% of step':>10} {'% of 15-step ep':>16}")
    print(header)
    print("-" * len(header))
    runs = [(f"{name}/{b}", name, {"backend": b}) if name == "swe" else (name, name, {}) for name in args.envs
            for b in (args.swe_backends if name == "swe" else [None])]
    for label, name, kwargs in runs:
        if name not in ENV_REGISTRY:
            print(f"{label:<10} skipped: unknown env (available: {', '.join(sorted(ENV_REGISTRY))})")
            continue
        try:
            env = make_env(name, split=args.split, **kwargs)
        except (ModuleNotFoundError, RuntimeError) as e:
            print(f"{label:<10} skipped: {e}")
            continue
        name = label
        measure(env, 1, 1)  # warm-up: first-call costs (imports, caches) are not what we measure
        r = measure(env, args.episodes, args.repeats)
        cost = r["snapshot"] + r["restore"]
        print(f"{name:<10} {r['states']:>6} {r['snapshot'] * 1e6:>12.1f} {r['restore'] * 1e6:>11.1f} "
              f"{r['step'] * 1e6:>9.1f} {r['last_step'] * 1e6:>12.1f} {r['episode_length']:>6.2f} "
              f"{100 * cost / r['step']:>9.1f}% "
              f"{100 * cost / (EPISODE_STEPS * r['step']):>15.1f}%")
    print("cost = snapshot + one restore (medians); step = mean env.step() time on expert actions; last step = mean "
          "time of an episode's last action (swe: submit, the grading)")


if __name__ == "__main__":
    main()
