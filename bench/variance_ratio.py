"""Advantage and gradient-norm variance of BPO vs GRPO at matched N, on the SFT policy (paper: 0.42-0.58).

For the same tasks, GRPO samples N = 1 + M(K-1) independent rollouts per task and BPO grows one tree
per task (one backbone, M branch points, K siblings each). Both use the leave-one-out baseline (the
form of the paper's variance analysis: GRPO's baseline is the other rollouts of the group, BPO's the
other siblings of the branch point). Printed, measured side by side in one run:
  - Var(A) over actions: each decision's advantage (BPO: at its first token, i.e. Eq. 4/5);
  - Var of per-minibatch gradient norms of the on-policy PPO loss (minibatches of decisions).

    python bench/variance_ratio.py --env webshop --rounds 12
"""

from __future__ import annotations

import argparse
import os
import random
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import bpo  # noqa: E402
import grpo_baseline  # noqa: E402
from envs import make_env  # noqa: E402
from policy import load_policy  # noqa: E402


def minibatch_grad_norms(model, decisions, advantages_of, tokenizer, args, minibatch_size, rng):
    """Gradient norm of the on-policy PPO loss (ratio 1) for random minibatches of decisions."""
    norms = []
    order = list(range(len(decisions)))
    rng.shuffle(order)
    for start in range(0, len(order) - minibatch_size + 1, minibatch_size):
        batch = [decisions[i] for i in order[start:start + minibatch_size]]
        logprobs, _, mask = bpo.action_logprobs(model, batch, tokenizer.pad_token_id, args.temperature)
        advantages = bpo.padded([advantages_of(d) for d in batch], mask.shape[1])
        loss, _ = bpo.policy_loss(logprobs, logprobs.detach(), None, advantages, mask, 0.2, 0.2, 0.0)
        model.zero_grad()
        loss.backward()
        norms.append(float(torch.sqrt(sum((p.grad ** 2).sum() for p in model.parameters() if p.grad is not None))))
    return norms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="webshop")
    parser.add_argument("--rounds", type=int, default=12, help="rounds of --tasks tasks for each method")
    parser.add_argument("--tasks", type=int, default=8, help="tasks per round")
    parser.add_argument("--minibatch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache-dir", default="cache")
    cli = parser.parse_args()
    torch.manual_seed(cli.seed)
    bpo_args = bpo.apply_env_defaults(bpo.Args(env=cli.env, tasks_per_step=cli.tasks))
    n = 1 + bpo_args.num_branch_points * (bpo_args.branch_factor - 1)
    grpo_args = grpo_baseline.apply_env_defaults(grpo_baseline.Args(env=cli.env, tasks_per_step=cli.tasks,
                                                                    num_generations=n, advantage="rloo"))
    model, tokenizer, _, prompt = load_policy("tiny", cli.env, {}, cli.cache_dir, 0)
    for args in (bpo_args, grpo_args):
        args.history_window, args.include_admissible = prompt["history_window"], prompt["include_admissible"]
        args.recent_actions = prompt["recent_actions"]
    sampler = bpo.HFSampler(model, tokenizer, bpo_args.max_new_tokens)
    task_rng, rng = random.Random(cli.seed), random.Random(cli.seed)
    grpo_envs = [make_env(cli.env, split="train") for _ in range(cli.tasks * n)]
    bpo_envs = [make_env(cli.env, split="train") for _ in range(cli.tasks)]
    grpo_adv, bpo_adv, grpo_norms, bpo_norms, bpo_returns = [], [], [], [], []
    for round_index in range(cli.rounds):
        task_ids = [task_rng.randrange(bpo_envs[0].num_tasks) for _ in range(cli.tasks)]
        # GRPO: N independent rollouts per task, leave-one-out baseline
        decisions, episodes = grpo_baseline.rollout(grpo_baseline.reset_starts(grpo_envs, task_ids, n), sampler,
                                                    tokenizer, grpo_args, grpo_args.temperature)
        grpo_baseline.assign_advantages(decisions, episodes, grpo_args)
        grpo_adv += [d.advantages[0] for d in decisions]
        grpo_norms += minibatch_grad_norms(model, decisions, lambda d: d.advantages, tokenizer, grpo_args,
                                           cli.minibatch_size, rng)
        # BPO: one tree per task
        decisions, episodes, branch_points, _ = bpo.grow_tree(bpo_envs, task_ids, model, sampler, tokenizer,
                                                              bpo_args, rng)
        bpo.assign_advantages(decisions, episodes, branch_points, bpo_args)
        bpo_adv += [d.advantages[0] for d in decisions]
        bpo_returns.append(len(episodes) / cli.tasks)
        bpo_norms += minibatch_grad_norms(model, decisions, lambda d: d.advantages, tokenizer, bpo_args,
                                          cli.minibatch_size, rng)
        print(f"round {round_index + 1}/{cli.rounds}: Var(A) GRPO {np.var(grpo_adv):.4f} BPO {np.var(bpo_adv):.4f}",
              flush=True)
    print(f"\n{cli.env}, SFT policy, N = {n} (BPO: M={bpo_args.num_branch_points}, K={bpo_args.branch_factor}, "
          f"{np.mean(bpo_returns):.2f} returns per task on average), {cli.rounds} x {cli.tasks} tasks")
    print(f"{'':28} {'GRPO':>9} {'BPO':>9} {'BPO/GRPO':>9}")
    print(f"{'Var(A) per action':28} {np.var(grpo_adv):9.4f} {np.var(bpo_adv):9.4f} "
          f"{np.var(bpo_adv) / np.var(grpo_adv):9.3f}")
    print(f"{'Var(grad norm) per minibatch':28} {np.var(grpo_norms):9.4f} {np.var(bpo_norms):9.4f} "
          f"{np.var(bpo_norms) / np.var(grpo_norms):9.3f}")
    print(f"({len(grpo_adv)} / {len(bpo_adv)} actions, {len(grpo_norms)} / {len(bpo_norms)} minibatches of "
          f"{cli.minibatch_size})")


if __name__ == "__main__":
    main()
