"""GPU check: a 0.5B-parameter Llama-shaped policy, a few GRPO steps, measured numbers; on 2 ranks too.

Nothing is downloaded: the model is built locally (random weights, the WebShop word-level tokenizer, vocabulary
padded to 32768), saved with `save_pretrained` and loaded through the same `--model DIR` path as any Hugging
Face model. Prints, per run: step time, generated tokens/s and peak GPU memory of the trainer; with the vLLM
backend also the weight-sync time (vLLM reload + prefix-cache reset). With two or more GPUs it then runs the
same steps under `torchrun --nproc_per_node 2` (HF backend, `--fsdp`, `--task-seeds`), and prints their step
times next to the single-GPU run's with `--task-seeds` (the same global batch).

    python bench/gpu_check.py --steps 3                     # vLLM if it is installed (requirements-gpu.txt), else HF
    python bench/gpu_check.py --backend hf --bf16
    python bench/gpu_check.py --smoke                       # a tiny model on the CPU: checks this script's code paths
"""

from __future__ import annotations

import argparse
import csv
import glob
import importlib.util
import os
import subprocess
import sys
import tempfile
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import grpo_baseline  # noqa: E402
from envs import make_env  # noqa: E402
from policy import PROMPT_WORDS, build_word_tokenizer  # noqa: E402


def build_llama(directory: str, smoke: bool) -> int:
    """A random-init Llama (0.5B parameters; `smoke`: a tiny one) with the WebShop word-level tokenizer."""
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = build_word_tokenizer(make_env("webshop", split="train").vocabulary() + PROMPT_WORDS)
    size = dict(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=256, num_hidden_layers=2,
                num_attention_heads=2, num_key_value_heads=2) if smoke else dict(
        vocab_size=32768, hidden_size=1024, intermediate_size=4096, num_hidden_layers=24, num_attention_heads=16,
        num_key_value_heads=16)
    config = LlamaConfig(**size, max_position_embeddings=4096, tie_word_embeddings=True,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    model = LlamaForCausalLM(config)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return sum(p.numel() for p in model.parameters())


def step_rows(run_dir: str) -> list[dict]:
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        return [r for r in csv.DictReader(f) if r.get("step_seconds")]


def print_rows(title: str, rows: list[dict]) -> None:
    print(f"\n{title}")
    for row in rows:
        print(f"  step {row['step']}: {float(row['step_seconds']):.2f}s, "
              f"{float(row['rollout_tokens_per_second']):.0f} generated tokens/s, {row['decisions']} decisions")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--tasks-per-step", type=int, default=16)
    parser.add_argument("--num-generations", type=int, default=8)
    parser.add_argument("--backend", choices=["vllm", "hf"], default=None,
                        help="sampler (default: vllm where it is installed, else hf)")
    parser.add_argument("--bf16", action="store_true", help="bfloat16 autocast (the scripts' --bf16)")
    parser.add_argument("--smoke", action="store_true", help="a tiny model on the CPU, 2 CPU ranks: checks the code")
    cli = parser.parse_args()
    on_gpu = torch.cuda.is_available() and not cli.smoke
    if not on_gpu and not cli.smoke:
        raise SystemExit("bench/gpu_check.py needs a CUDA GPU (or --smoke, which runs a tiny model on the CPU)")
    backend = cli.backend or ("vllm" if on_gpu and importlib.util.find_spec("vllm") else "hf")
    gpus = torch.cuda.device_count() if on_gpu else 2  # --smoke: 2 CPU ranks (gloo)
    steps, tasks, generations = (1, 2, 2) if cli.smoke else (cli.steps, cli.tasks_per_step, cli.num_generations)
    turns = 3 if cli.smoke else grpo_baseline.Args.max_turns
    print(f"device: {torch.cuda.get_device_name() if on_gpu else 'cpu (--smoke)'} x {gpus}, torch {torch.__version__}, "
          f"backend {backend}")
    memory = lambda: f"{torch.cuda.max_memory_allocated() / 2**30:.1f} GiB" if on_gpu else "-"
    with tempfile.TemporaryDirectory() as work:
        model_dir = os.path.join(work, "llama")
        start = time.time()
        parameters = build_llama(model_dir, cli.smoke)
        print(f"built a {parameters / 1e9:.3f}B-parameter Llama in {time.time() - start:.1f}s")
        common = dict(env="webshop", model=model_dir, total_steps=steps, tasks_per_step=tasks,
                      num_generations=generations, eval_tasks=4, eval_every=10_000, learning_rate=1e-6,
                      bf16=cli.bf16, tree_log_every=0, max_turns=turns)

        if backend == "vllm":  # weight sync alone: trainer weights on the GPU -> in-process vLLM, prefix-cache reset
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
            print(f"weight sync + prefix-cache reset: {min(sync_times):.3f}s (best of 3)")
            del model
            torch.cuda.empty_cache()

        if on_gpu:
            torch.cuda.reset_peak_memory_stats()
        run_dir = grpo_baseline.main(grpo_baseline.Args(**common, backend=backend,
                                                        runs_dir=os.path.join(work, "one")))
        print_rows(f"1 process, backend {backend}: peak trainer GPU memory (torch) {memory()}"
                   + (" (vLLM holds its own pool: gpu_memory_utilization=0.3)" if backend == "vllm" else ""),
                   step_rows(run_dir))
        if gpus < 2:
            print("\none GPU: the 2-rank check needs two")
            return

        # 2 ranks (HF backend: vLLM under torchrun is not supported yet), the learner sharded with FSDP2
        flags = ["--env", "webshop", "--model", model_dir, "--total-steps", str(steps), "--tasks-per-step",
                 str(tasks), "--num-generations", str(generations), "--eval-tasks", "4", "--eval-every",
                 "10000", "--learning-rate", "1e-6", "--tree-log-every", "0", "--task-seeds", "--backend", "hf",
                 "--max-turns", str(turns)]
        flags += ["--bf16"] if cli.bf16 else []
        reference = grpo_baseline.main(grpo_baseline.parse_args(flags + ["--runs-dir", os.path.join(work, "ref")]))
        env = {**os.environ, **({} if on_gpu else {"OMP_NUM_THREADS": "1"})}
        subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                        os.path.join(ROOT, "grpo_baseline.py"), *flags, "--fsdp", "--runs-dir",
                        os.path.join(work, "two")], check=True, cwd=ROOT, env=env)
        (two,) = glob.glob(os.path.join(work, "two", "*"))
        print_rows("1 process, HF backend, --task-seeds (the global batch of the 2-rank run)", step_rows(reference))
        print_rows("torchrun --nproc_per_node 2, HF backend, --fsdp --task-seeds", step_rows(two))
        one_model = torch.load(os.path.join(reference, "checkpoint.pt"), weights_only=False)["model"]
        two_model = torch.load(os.path.join(two, "checkpoint.pt"), weights_only=False)["model"]
        print(f"\nlargest weight difference, 2 ranks against 1: "
              f"{max((one_model[k] - two_model[k]).abs().max().item() for k in one_model):.2e}")


if __name__ == "__main__":
    main()
