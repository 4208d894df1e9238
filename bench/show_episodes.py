"""Print a run's held-out episodes as they were played (transcripts.jsonl): the task, every action, the reward.

An evaluation keeps a few episodes per split and decoding; `--eval-only` keeps every one. Filters pick what to read:

    python bench/show_episodes.py runs/webshop__grpo_baseline__1__...            # the last evaluation's episodes
    python bench/show_episodes.py RUN --failed --decoding greedy --limit 5       # five greedy episodes that lost
    python bench/show_episodes.py RUN --step 0 --task 12                         # task 12 at the start
"""

from __future__ import annotations

import argparse
import json
import os


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir")
    parser.add_argument("--step", type=int, help="the evaluation's step (default: the last one)")
    parser.add_argument("--split", help="held-out split (default: every one)")
    parser.add_argument("--decoding", choices=["sampled", "greedy"])
    parser.add_argument("--task", type=int, help="one task id")
    outcome = parser.add_mutually_exclusive_group()
    outcome.add_argument("--failed", action="store_true", help="only episodes that did not win")
    outcome.add_argument("--won", action="store_true", help="only episodes that won")
    parser.add_argument("--limit", type=int, default=10, help="most episodes printed")
    cli = parser.parse_args()
    path = os.path.join(cli.run_dir, "transcripts.jsonl")
    if not os.path.exists(path):
        raise SystemExit(f"{cli.run_dir}: no transcripts.jsonl (is it a run directory?)")
    with open(path) as f:
        episodes = [json.loads(line) for line in f if line.strip()]
    if not episodes:
        raise SystemExit(f"{path} is empty")
    step = cli.step if cli.step is not None else max(e["step"] for e in episodes)
    chosen = [e for e in episodes if e["step"] == step and (cli.split is None or e["split"] == cli.split)
              and (cli.decoding is None or e["decoding"] == cli.decoding)
              and (cli.task is None or e["task_id"] == cli.task)
              and not (cli.failed and e["won"]) and not (cli.won and not e["won"])]
    print(f"{len(chosen)} episode(s) at step {step} match; showing {min(len(chosen), cli.limit)}")
    for e in chosen[:cli.limit]:
        outcome = "WON" if e["won"] else "lost"
        print(f"\n[{e['split']} {e['decoding']}] task {e['task_id']}: {outcome}, reward {e['reward']}")
        print(f"  task: {e['task']}")
        for turn, action in enumerate(e["actions"], start=1):
            print(f"  {turn:3d}. {action}")


if __name__ == "__main__":
    main()
