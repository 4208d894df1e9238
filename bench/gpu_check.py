"""GPU check of the vLLM path: a 0.5B-parameter Llama-shaped policy, a few GRPO steps, measured numbers.

Needs a CUDA machine with `pip install -r requirements-gpu.txt`. Nothing is downloaded: the model is
built locally (random weights, the WebShop word-level tokenizer, vocabulary padded to 32768), saved
with `save_pretrained` and loaded through the same `--model DIR` path as any Hugging Face model.
Prints rollout tokens/s, weight-sync time (vLLM reload + prefix-cache reset), step time and peak GPU
memory of the trainer.

    python bench/gpu_check.py --steps 3
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import grpo_baseline  # noqa: E402
from envs import make_env  # noqa: E402
from policy import PROMPT_WORDS, build_word_tokenizer  # noqa: E402


def build_half_billion_llama(directory: str) -> int:
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = build_word_tokenizer(make_env("webshop", split="train").vocabulary() + PROMPT_WORDS)
    config = LlamaConfig(vocab_size=32768, hidden_size=1024, intermediate_size=4096, num_hidden_layers=24,
                         num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=4096,
                         tie_word_embeddings=True, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    model = LlamaForCausalLM(config)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return sum(p.numel() for p in model.parameters())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--tasks-per-step", type=int, default=16)
    parser.add_argument("--num-generations", type=int, default=8)
    cli = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench/gpu_check.py needs a CUDA GPU (and `pip install -r requirements-gpu.txt`)")
    import vllm

    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, vllm {vllm.__version__}")
    with tempfile.TemporaryDirectory() as work:
        model_dir = os.path.join(work, "llama-0.5b")
        start = time.time()
        parameters = build_half_billion_llama(model_dir)
        print(f"built a {parameters / 1e9:.3f}B-parameter Llama in {time.time() - start:.1f}s")

        # weight sync alone: trainer weights on the GPU -> in-process vLLM, then the prefix-cache reset
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(model_dir)
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).cuda()
        sampler = grpo_baseline.VLLMSampler(model_dir, tokenizer, max_new_tokens=24, seed=0)
        sync_times = []
        for _ in range(3):
            torch.cuda.synchronize()
            start = time.time()
            sampler.sync_weights(model)
            torch.cuda.synchronize()
            sync_times.append(time.time() - start)
        del model
        torch.cuda.empty_cache()

        torch.cuda.reset_peak_memory_stats()
        run_dir = grpo_baseline.main(grpo_baseline.Args(
            env="webshop", model=model_dir, backend="vllm", total_steps=cli.steps, tasks_per_step=cli.tasks_per_step,
            num_generations=cli.num_generations, eval_tasks=16, eval_every=10_000, learning_rate=1e-6,
            runs_dir=os.path.join(work, "runs")))
        with open(os.path.join(run_dir, "metrics.csv")) as f:
            rows = [r for r in csv.DictReader(f) if r.get("step_seconds")]
    print(f"\n{'metric':36} value")
    print(f"{'parameters':36} {parameters / 1e9:.3f}B")
    print(f"{'weight sync + prefix-cache reset':36} {min(sync_times):.3f}s (best of 3)")
    for row in rows:
        print(f"{'step ' + row['step'] + ': step time':36} {float(row['step_seconds']):.2f}s, rollout "
              f"{float(row['rollout_tokens_per_second']):.0f} generated tokens/s, {row['decisions']} decisions")
    print(f"{'peak trainer GPU memory (torch)':36} {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB "
          f"(vLLM holds its own pool: gpu_memory_utilization=0.3)")


if __name__ == "__main__":
    main()
