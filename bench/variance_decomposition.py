"""How much of the return variance does BPO's branch state explain? Law of total variance per branch point.

For a task, the return R of a rollout from the initial state splits at a branch state s_b:
    Var(R) = E[Var(R | s_b)] + Var(E[R | s_b]) = sigma^2 + nu^2.
BPO's K siblings share s_b, so their leave-one-out advantages have variance K/(K-1) sigma^2; GRPO's K
rollouts from the initial state have K/(K-1) (sigma^2 + nu^2). Branching pays where nu^2 / (sigma^2 + nu^2),
the share of the variance the branch state explains, is large (paper section 3.5; bench/variance_toy.py).

Measured side by side on the same tasks with the SFT policy, per round of --tasks train tasks:
  - 8 independent rollouts per task (GRPO sampling): sigma^2 + nu^2 = the within-task return variance;
  - one BPO tree per task and schedule (M branch points, K siblings each, the backbone included):
    sigma^2 = the variance of the K sibling returns at a branch point (unbiased, K-1 denominator).
Printed: the share 1 - sigma^2 / (sigma^2 + nu^2) per schedule and per branch depth (decision index at
turn level, token position at token level), with the total variance of the same tasks; the variance
ratio at equal group size, Var(A) of BPO's K siblings over Var(A) of GRPO groups of K (leave-one-out
both); and at matched N (GRPO N = 1 + M(K-1) = 7 against BPO's whole tree, per action, as in
bench/variance_ratio.py).

    python bench/variance_decomposition.py --env webshop --rounds 12
    python bench/variance_decomposition.py --env webshop --rounds 12 --entropy-mode mean --schedules entropy
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from collections import defaultdict

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import bpo  # noqa: E402
import grpo_baseline  # noqa: E402
from envs import make_env  # noqa: E402
from policy import load_policy  # noqa: E402

SCHEDULES = ("entropy", "random", "uniform", "inverted")
DEPTH_BUCKETS = ((0, 0), (1, 1), (2, 2), (3, 4), (5, 7), (8, 10**6))
GRPO_ROLLOUTS = 8


def bucket_of(depth: int) -> str:
    low, high = next(b for b in DEPTH_BUCKETS if b[0] <= depth <= b[1])
    return str(low) if low == high else f"{low}+" if high > 10**5 else f"{low}-{high}"


def leave_one_out(returns: np.ndarray) -> np.ndarray:
    k = returns.shape[-1]
    return returns - (returns.sum(axis=-1, keepdims=True) - returns) / (k - 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="webshop")
    parser.add_argument("--rounds", type=int, default=12, help="rounds of --tasks tasks")
    parser.add_argument("--tasks", type=int, default=8, help="tasks per round")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache-dir", default="cache")
    parser.add_argument("--schedules", nargs="+", choices=SCHEDULES, default=list(SCHEDULES),
                        help="schedules to grow trees with (the variance ratios need `entropy`)")
    parser.add_argument("--entropy-mode", choices=("first", "mean"), default="first",
                        help="bpo.py's --entropy-mode: a decision's entropy is its first token's or its tokens' mean")
    cli = parser.parse_args()
    if "entropy" not in cli.schedules:
        parser.error("--schedules must include entropy: the variance ratios are measured on its trees")
    torch.manual_seed(cli.seed)
    model, tokenizer, _, prompt = load_policy("tiny", cli.env, {}, cli.cache_dir, 0)
    args_of = {}
    for schedule in cli.schedules:
        args_of[schedule] = bpo.apply_env_defaults(bpo.Args(env=cli.env, tasks_per_step=cli.tasks, schedule=schedule,
                                                            entropy_mode=cli.entropy_mode, **prompt))
    bpo_args = args_of["entropy"]
    k, n_matched = bpo_args.branch_factor, 1 + bpo_args.num_branch_points * (bpo_args.branch_factor - 1)
    grpo_args = grpo_baseline.apply_env_defaults(grpo_baseline.Args(
        env=cli.env, tasks_per_step=cli.tasks, num_generations=GRPO_ROLLOUTS, advantage="rloo", **prompt))
    sampler = bpo.HFSampler(model, tokenizer, bpo_args.max_new_tokens)
    task_rng, rng = random.Random(cli.seed), random.Random(cli.seed)
    grpo_envs = [make_env(cli.env, split="train") for _ in range(cli.tasks * GRPO_ROLLOUTS)]
    bpo_envs = [make_env(cli.env, split="train") for _ in range(cli.tasks)]
    total_variance = {}  # (round, tree) -> within-task variance of the 8 GRPO returns
    within = defaultdict(list)  # (schedule, depth bucket) -> [(round, tree, sigma^2 of the K siblings)]
    grpo_equal_k, grpo_matched, bpo_siblings, bpo_tree = [], [], [], []
    for round_index in range(cli.rounds):
        task_ids = [task_rng.randrange(bpo_envs[0].num_tasks) for _ in range(cli.tasks)]
        decisions, episodes = grpo_baseline.rollout(grpo_baseline.reset_starts(grpo_envs, task_ids, GRPO_ROLLOUTS),
                                                    sampler, tokenizer, grpo_args, grpo_args.temperature)
        returns = np.array([e.reward for e in episodes]).reshape(cli.tasks, GRPO_ROLLOUTS)
        for tree, group in enumerate(returns):
            total_variance[(round_index, tree)] = float(group.var(ddof=1))
        grpo_equal_k += leave_one_out(returns[:, :k]).flatten().tolist()  # groups of K, as BPO's siblings
        grpo_equal_k += leave_one_out(returns[:, k:2 * k]).flatten().tolist()
        matched = leave_one_out(returns[:, :n_matched])  # matched N, per action (every decision of a rollout)
        for (tree, j), advantage in np.ndenumerate(matched):
            grpo_matched += [advantage] * len(episodes[tree * GRPO_ROLLOUTS + j].decisions)
        for schedule in cli.schedules:
            args = args_of[schedule]
            decisions, episodes, branch_points, _ = bpo.grow_tree(bpo_envs, task_ids, model, sampler, tokenizer, args,
                                                                  rng)
            backbones = {e.tree: e for e in episodes if e.branch_point is None}
            siblings = defaultdict(list)
            for e in episodes:
                if e.branch_point is not None:
                    siblings[(e.tree, e.branch_point)].append(e.reward)
            for (tree, point), rewards in siblings.items():
                group = np.array([backbones[tree].reward] + rewards)
                within[(schedule, bucket_of(point))].append((round_index, tree, float(group.var(ddof=1))))
                within[(schedule, "all")].append((round_index, tree, float(group.var(ddof=1))))
                if schedule == "entropy":
                    bpo_siblings += leave_one_out(group).tolist()
            if schedule == "entropy":
                bpo.assign_advantages(decisions, episodes, branch_points, args)
                bpo_tree += [d.advantages[0] for d in decisions]
        print(f"round {round_index + 1}/{cli.rounds} done", flush=True)

    level = "token position" if bpo_args.branch_level == "token" else "decision index"
    print(f"\n{cli.env}, SFT policy, {cli.rounds} x {cli.tasks} train tasks; M={bpo_args.num_branch_points}, K={k}; "
          f"total variance from {GRPO_ROLLOUTS} independent rollouts per task; entropy of a decision: "
          f"{'its first token' if cli.entropy_mode == 'first' else 'the mean over its tokens'} (--entropy-mode "
          f"{cli.entropy_mode})")
    print(f"\nshare of the within-task return variance explained by the branch state, nu^2 / (sigma^2 + nu^2) = "
          f"1 - sigma^2 / Var(R), by schedule and branch depth ({level}); n = branch points")
    buckets = ["all"] + [bucket_of(b[0]) for b in DEPTH_BUCKETS]
    print(f"{'schedule':10} " + " ".join(f"{'depth ' + b:>27}" for b in buckets))
    for schedule in cli.schedules:
        cells = []
        for b in buckets:
            entries = within.get((schedule, b), [])
            if not entries:
                cells.append(f"{'-':>27}")
                continue
            sigma2 = np.mean([v for _, _, v in entries])
            total = np.mean([total_variance[(r, t)] for r, t, _ in entries])  # the same tasks
            share = 1 - sigma2 / total if total > 0 else float("nan")
            cells.append(f"{share:+.2f} ({sigma2:.3f}/{total:.3f}, n={len(entries)})".rjust(27))
        print(f"{schedule:10} " + " ".join(cells))
    print("(cells: share (sigma^2 / Var(R), n))")
    equal = np.var(bpo_siblings) / np.var(grpo_equal_k)
    matched = np.var(bpo_tree) / np.var(grpo_matched)
    print("\nvariance ratio Var(A_BPO) / Var(A_GRPO), leave-one-out baselines, entropy schedule:")
    print(f"  equal group size (BPO's K={k} siblings at a branch point vs GRPO groups of {k}): {equal:.3f} "
          f"({len(bpo_siblings)} / {len(grpo_equal_k)} returns)")
    print(f"  matched N = {n_matched} (BPO's tree, per action vs GRPO N={n_matched}, per action):   {matched:.3f} "
          f"({len(bpo_tree)} / {len(grpo_matched)} actions)")


if __name__ == "__main__":
    main()
