"""How well the ALFWorld warm start imitates its demonstrator, and where it fails.

On the first `--tasks` tasks of a held-out split:
1. teacher forcing: the demonstrator (`env.demo_action` without mistakes: the handcoded expert, which searches
   for what it has not seen) plays, and at each of its states the policy's greedy command is compared with the
   demonstrator's, per command verb: exact match, and admissible (free decoding); exact match when decoding is
   constrained to the admissible commands (`--constrain-actions`);
2. free running, with the RL scripts' own rollout and sampler (grpo_baseline.py): success, the share of
   inadmissible commands, steps per episode, and the episodes that end in a loop (their last 10 commands the
   same), greedy and sampled (T = 1), with free and with constrained decoding.

    python bench/alfworld_warm_start.py --split eval --tasks 20
"""

from __future__ import annotations

import argparse
import os
import random
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import grpo_baseline  # noqa: E402
from envs import make_env  # noqa: E402
from policy import action_choices, build_prompt, load_policy  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="tiny", help="`tiny` (the cached default warm start) or a model dir")
    parser.add_argument("--split", default="eval")
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1, help="seed of the sampled episodes")
    parser.add_argument("--cache-dir", default="cache")
    cli = parser.parse_args()
    model, tokenizer, model_dir, prompt = load_policy(cli.model, "alfworld", {}, cli.cache_dir)
    args = grpo_baseline.apply_env_defaults(grpo_baseline.Args(env="alfworld"))
    args.history_window, args.include_admissible = prompt["history_window"], prompt["include_admissible"]
    args.recent_actions = prompt["recent_actions"]
    sampler = grpo_baseline.HFSampler(model, tokenizer, args.max_new_tokens)
    env = make_env("alfworld", split=cli.split)
    tasks = list(range(min(cli.tasks, env.num_tasks)))
    print(f"model {model_dir} (prompt settings {prompt}), {len(tasks)} {cli.split} tasks")

    per_verb: dict[str, list[int]] = {}  # verb -> [exact, admissible, exact constrained, states]
    for task_id in tasks:
        obs, info = env.reset(options={"task_id": task_id})
        history, done = [], False
        while not done:
            command = env.demo_action(random.Random(0), 0.0)
            admissible = info["admissible_actions"]
            ids = build_prompt(tokenizer, "alfworld", "tiny", info["task"], obs, history, args.history_window,
                               admissible if args.include_admissible else None, args.recent_actions)
            free, constrained = [tokenizer.decode(sampler.generate([ids], 0.0, None, choices)[0][0],
                                                  skip_special_tokens=True)
                                 for choices in (None, [action_choices(tokenizer, admissible, [])])]
            counts = per_verb.setdefault(command.split()[0], [0, 0, 0, 0])
            counts[0] += free == command
            counts[1] += free in admissible
            counts[2] += constrained == command
            counts[3] += 1
            history.append((obs, command))
            obs, _, terminated, truncated, info = env.step(command)
            done = terminated or truncated
    total = [sum(c[i] for c in per_verb.values()) for i in range(4)]
    print("\n1. teacher forcing: the policy's greedy command at the demonstrator's states")
    print(f"{'verb':8} {'states':>7} {'exact':>7} {'admissible':>11} {'exact, constrained':>19}")
    for verb, (exact, admissible, constrained, states) in sorted(per_verb.items(), key=lambda kv: -kv[1][3]):
        print(f"{verb:8} {states:7d} {exact / states:7.3f} {admissible / states:11.3f} {constrained / states:19.3f}")
    print(f"{'all':8} {total[3]:7d} {total[0] / total[3]:7.3f} {total[1] / total[3]:11.3f} "
          f"{total[2] / total[3]:19.3f}")

    print("\n2. free running (grpo_baseline.rollout)")
    print(f"{'decoding':26} {'success':>14} {'inadmissible':>13} {'steps/episode':>14} {'loops':>6}")
    envs = [make_env("alfworld", split=cli.split) for _ in tasks]
    for constrain in (False, True):
        args.constrain_actions = constrain
        for decoding, temperature in (("greedy", 0.0), ("sampled", 1.0)):
            torch.manual_seed(cli.seed)
            _, episodes = grpo_baseline.rollout(grpo_baseline.reset_starts(envs, tasks), sampler, tokenizer, args,
                                                temperature)
            won = np.array([e.won for e in episodes], dtype=float)
            steps = sum(len(e.actions) for e in episodes)
            loops = sum(not e.won and len(e.actions) >= 10 and len(set(e.actions[-10:])) == 1 for e in episodes)
            name = f"{decoding}, {'constrained' if constrain else 'free'}"
            print(f"{name:26} {won.mean():6.3f} +- {np.sqrt(won.mean() * (1 - won.mean()) / len(won)):.3f} "
                  f"{sum(e.invalid_actions for e in episodes) / steps:13.3f} {steps / len(episodes):14.1f} "
                  f"{loops:3d}/{len(episodes)}")


if __name__ == "__main__":
    main()
