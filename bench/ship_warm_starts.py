"""Ship the warm starts a default run reads: copies under warm_starts/ that `policy.build_warm_start` reads instead of
building, each with the record of its greedy play on the first 30 tasks of the env's primary held-out split.

Every machine then starts from the same weights: SFT's float rounding depends on the CPU's kernels, and 1500 steps
amplify it, so a warm start rebuilt on another CPU is another policy (docs/warm_starts.md). A shipped warm start is
read only under its exact cache key; when the code or settings under a key change, tests/test_warm_starts.py fails
until this script has shipped the new one (and removed the stale one) and the result is committed.

    python bench/ship_warm_starts.py --env webshop math alfworld swe     # then: git add -A warm_starts/
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

RECORD = "held_out_greedy.json"
RECORD_TASKS = 30


def play_record(model_dir: str, env_name: str, tasks: int = RECORD_TASKS) -> dict:
    """The greedy play of `model_dir` on the first `tasks` (at most RECORD_TASKS) tasks of the env's primary held-out
    split."""
    import grpo_baseline
    from envs import make_env
    from policy import cpu_model, load_policy
    args = grpo_baseline.apply_env_defaults(grpo_baseline.Args(env=env_name))
    model, tokenizer, _, prompt = load_policy(model_dir, env_name, {})
    args.history_window, args.include_admissible = prompt["history_window"], prompt["include_admissible"]
    args.recent_actions = prompt["recent_actions"]
    split = args.eval_splits[0]
    tasks = min(tasks, RECORD_TASKS, make_env(env_name, split=split).num_tasks)
    envs = [make_env(env_name, split=split) for _ in range(tasks)]
    sampler = grpo_baseline.HFSampler(model, tokenizer, args.max_new_tokens)
    _, _, records = grpo_baseline.evaluate(envs, list(range(tasks)), sampler, tokenizer, args, 0.0)
    records.sort(key=lambda r: r["task_id"])
    return {"split": split, "tasks": [r["task_id"] for r in records], "won": [r["won"] for r in records],
            "reward": [r["reward"] for r in records], "turns": [r["turns"] for r in records],
            "cpu": cpu_model()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", nargs="+", default=["webshop", "math", "alfworld", "swe"])
    parser.add_argument("--cache-dir", default=os.path.join(ROOT, "cache"))
    cli = parser.parse_args()
    from policy import SHIPPED_DIR, build_warm_start, default_warm_start_configs
    os.makedirs(SHIPPED_DIR, exist_ok=True)
    for env_name in cli.env:
        current = []
        for role, config in default_warm_start_configs(env_name).items():
            path = build_warm_start(config, {}, cli.cache_dir)  # shipped, cached, or built now
            target = os.path.join(SHIPPED_DIR, os.path.basename(path))
            if os.path.abspath(path) != os.path.abspath(target):
                shutil.copytree(path, target)
            if not os.path.exists(os.path.join(target, RECORD)):
                with open(os.path.join(target, RECORD), "w") as f:
                    json.dump(play_record(target, env_name), f, indent=1)
            current.append(os.path.basename(target))
            print(f"{env_name} {role}: warm_starts/{os.path.basename(target)}")
        for name in os.listdir(SHIPPED_DIR):  # a warm start of this env under an old key is stale
            if name.startswith(f"{env_name}-") and name not in current:
                shutil.rmtree(os.path.join(SHIPPED_DIR, name))
                print(f"{env_name}: removed the stale warm_starts/{name}")


if __name__ == "__main__":
    main()
