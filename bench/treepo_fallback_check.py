"""TreePO's agent-env trees with fallbacks, grown by another tree's treepo.py and by this one, side by side.

bench/same_results.py's short WebShop runs grow no fallback; this grows WebShop trees with --max-depth 2 (every
path stops at depth 2, so every tree falls back) from the shipped warm start, in one process for both versions
(torch seed 0, random.Random(0)), and compares every episode, every decision and the stats.

    git worktree add /tmp/before COMMIT
    python bench/treepo_fallback_check.py /tmp/before
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def grow(treepo, model, tokenizer, prompt, tasks: list[int]):
    import torch

    from envs import make_env
    args = treepo.apply_env_defaults(treepo.Args(env="webshop", max_depth=2))
    args.history_window, args.include_admissible = prompt["history_window"], prompt["include_admissible"]
    args.recent_actions = prompt["recent_actions"]
    sampler = treepo.HFSampler(model, tokenizer, args.max_new_tokens)
    if hasattr(treepo, "SegmentSampler"):  # this tree's segment sampler wraps the run's sampler
        sampler = treepo.SegmentSampler(sampler)
    elif not hasattr(sampler, "tokens_computed"):
        sampler.tokens_computed = 0
    torch.manual_seed(0)
    decisions, episodes, stats = treepo.grow_trees([make_env("webshop", split="train") for _ in tasks], tasks,
                                                   sampler, tokenizer, args, random.Random(0))
    return ([(e.tree, e.node_ids, e.actions, round(e.reward, 9), e.won, e.invalid_actions, e.malformed_replies,
              e.stop, e.decisions) for e in episodes],
            [(d.prompt_ids, d.action_ids, d.logprobs, d.invalid) for d in decisions], stats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", help="the other tree (its treepo.py is loaded from there)")
    parser.add_argument("--tasks", type=int, nargs="+", default=[3, 5, 7])
    cli = parser.parse_args()
    from policy import load_policy
    model, tokenizer, _, prompt = load_policy("tiny", "webshop", {})
    before = grow(load(os.path.join(cli.before, "treepo.py"), "treepo_before"), model, tokenizer, prompt, cli.tasks)
    after = grow(load(os.path.join(ROOT, "treepo.py"), "treepo_after"), model, tokenizer, prompt, cli.tasks)
    print(f"fallbacks {before[2]['fallbacks']} and {after[2]['fallbacks']}, leaves {before[2]['leaves']} and "
          f"{after[2]['leaves']}; episodes equal: {before[0] == after[0]}, decisions equal: {before[1] == after[1]}, "
          f"stats equal: {before[2] == after[2]}")
    sys.exit(0 if before == after else 1)


if __name__ == "__main__":
    main()
