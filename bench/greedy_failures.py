"""How greedy decoding fails: the starting policy of a run against its final policy, on held-out tasks.

    python bench/greedy_failures.py runs/learning/webshop__grpo_baseline__1__*

For each policy: greedy success and mean reward, the mean reward of the failed episodes, how many
failed episodes ran into the env's step limit (no purchase: reward 0 on WebShop), and turns per episode;
`--show-limit K` prints the actions of K of the episodes that ran into the limit (what greedy loops on).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import torch
from transformers import AutoModelForCausalLM

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import grpo_baseline  # noqa: E402
from envs import make_env  # noqa: E402
from policy import load_policy  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", help="a finished run (its policy.json and final_model/)")
    parser.add_argument("--tasks", type=int, default=200, help="held-out tasks (the run's eval split)")
    parser.add_argument("--show-limit", type=int, default=0,
                        help="print the actions of this many episodes that ran into the step limit, per policy")
    cli = parser.parse_args()
    with open(os.path.join(cli.run_dir, "config.json")) as f:
        args = grpo_baseline.Args(**{k: v for k, v in json.load(f).items()
                                     if k in grpo_baseline.Args.__dataclass_fields__})
    with open(os.path.join(cli.run_dir, "policy.json")) as f:
        start_dir = json.load(f)["model_dir"]
    start, tokenizer, _, _ = load_policy(start_dir, args.env, {})
    final = AutoModelForCausalLM.from_pretrained(os.path.join(cli.run_dir, "final_model"), dtype=torch.float32).eval()
    task_ids = list(range(cli.tasks))
    split = (args.eval_splits or grpo_baseline.ENV_DEFAULTS[args.env]["eval_splits"])[0]
    print(f"{args.env}, greedy, {cli.tasks} {split} tasks")
    print(f"{'policy':8} {'success':>8} {'reward':>7} {'reward of failures':>19} {'failures at step limit':>23} "
          f"{'turns':>6}")
    for name, model in (("start", start), ("final", final)):
        envs = [make_env(args.env, split=split) for _ in task_ids]
        sampler = grpo_baseline.HFSampler(model, tokenizer, args.max_new_tokens)
        _, episodes = grpo_baseline.rollout(grpo_baseline.reset_starts(envs, task_ids), sampler, tokenizer, args, 0.0)
        failures = [(e, env) for e, env in zip(episodes, envs) if not e.won]
        at_limit = sum(env.state.truncated for _, env in failures) if hasattr(envs[0].state, "truncated") else "n/a"
        print(f"{name:8} {np.mean([e.won for e in episodes]):8.3f} {np.mean([e.reward for e in episodes]):7.3f} "
              f"{np.mean([e.reward for e, _ in failures]):19.3f} {f'{at_limit} of {len(failures)}':>23} "
              f"{np.mean([len(e.decisions) for e in episodes]):6.2f}")
        limited = [e for e, env in failures if getattr(env.state, "truncated", False)][:cli.show_limit]
        for episode in limited:
            print(f"  step limit: {episode.task[:100]}\n    {' | '.join(episode.actions)}")


if __name__ == "__main__":
    main()
