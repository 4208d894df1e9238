"""The memory plan the scripts print at start-up, for models too large for this machine: per rank, by part, against
a GPU's memory. The model is built on the meta device from its shape alone (no weights), so any size can be planned.

    python bench/memory_plan.py                                     # Qwen2.5 1.5B and 7B shapes, the cases below
    python bench/memory_plan.py --shape 7b --ranks 8 -- --env math --preset paper --fsdp --bf16 --micro-batch-size 4

Arguments after `--` are grpo_baseline.py's flags (the plan is the same function in every script). A plan is an
estimate (docs and the function's docstring say what it counts), not a measurement.
"""

from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# The published Qwen2.5 shapes (their config.json): hidden size, layers, heads, KV heads, MLP size, vocabulary.
SHAPES = {"1.5b": dict(hidden_size=1536, num_hidden_layers=28, num_attention_heads=12, num_key_value_heads=2,
                       intermediate_size=8960, vocab_size=151936, tie_word_embeddings=True),
          "7b": dict(hidden_size=3584, num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=4,
                     intermediate_size=18944, vocab_size=152064, tie_word_embeddings=False)}
GPUS = {"H100 80 GB": 80 * 10 ** 9, "H200 141 GB": 141 * 10 ** 9}
CASES = [("1.5b", 1, ["--env", "math", "--prompt-profile", "chat", "--model", "qwen", "--bf16",
                      "--gradient-checkpointing", "--micro-batch-size", "4"]),
         ("1.5b", 1, ["--env", "math", "--prompt-profile", "chat", "--model", "qwen", "--bf16",
                      "--gradient-checkpointing", "--micro-batch-size", "4", "--backend", "vllm"]),
         ("7b", 1, ["--env", "math", "--prompt-profile", "chat", "--model", "qwen", "--bf16",
                    "--gradient-checkpointing", "--micro-batch-size", "4"]),
         ("7b", 8, ["--env", "math", "--prompt-profile", "chat", "--model", "qwen", "--bf16",
                    "--gradient-checkpointing", "--micro-batch-size", "4", "--fsdp", "--beta", "0.04"]),
         ("7b", 8, ["--env", "math", "--prompt-profile", "chat", "--model", "qwen", "--bf16",
                    "--gradient-checkpointing", "--micro-batch-size", "4", "--fsdp", "--beta", "0.04", "--backend",
                    "vllm"])]


def plan(shape: str, ranks: int, flags: list[str]) -> None:
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config

    import grpo_baseline
    import run_tools
    from run_tools import format_memory_plan, memory_plan
    config = Qwen2Config(**SHAPES[shape], max_position_embeddings=32768)
    with torch.device("meta"):
        parameters = sum(p.numel() for p in AutoModelForCausalLM.from_config(config).parameters())
    run_tools.check_model = lambda name, flag: None  # `--model qwen` names a shape, not a directory on this machine
    args = grpo_baseline.apply_env_defaults(grpo_baseline.parse_args(flags))
    print(f"\nQwen2.5-{shape.upper()} shape ({parameters / 1e9:.2f}B parameters), {ranks} rank(s): "
          f"grpo_baseline.py {' '.join(flags)}")
    for gpu, device_bytes in GPUS.items():
        print(f"-- on {gpu}")
        plan = memory_plan(config, parameters, args, ranks, device_bytes,
                           loss_chunk_bytes=grpo_baseline.LOSS_CHUNK_BYTES, on_gpu=True)
        print(format_memory_plan(plan, device_bytes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", choices=list(SHAPES), help="one model shape (default: the cases in CASES)")
    parser.add_argument("--ranks", type=int, default=1)
    parser.add_argument("flags", nargs="*", help="grpo_baseline.py's flags, after --")
    cli = parser.parse_args()
    for shape, ranks, flags in ([(cli.shape, cli.ranks, cli.flags)] if cli.shape else CASES):
        plan(shape, ranks, flags)


if __name__ == "__main__":
    main()
