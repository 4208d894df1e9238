"""GPU check: what a researcher's first run with a real chat model needs, one PASS/FAIL line per check.

Nothing is downloaded: small chat models are built locally in two layouts, a Llama and a Qwen2 (a byte-level BPE
tokenizer with a ChatML template; the Qwen2 one has no pad token), saved with `save_pretrained` and loaded through
the same `--model DIR` path as any Hugging Face model. On the GPU (or the CPU with --smoke, which CI runs):

- sampler: the HF sampler's log-probs equal the learner's recomputation (both layouts, the chat prompt);
- tree: TreePO's segment sampler on the device (copied cache rows, forks, a fallback prefix prefilled again),
  its log-probs equal a from-scratch forward;
- scripts: two steps of each of the four scripts with the chat profile and the HF backend, --bf16 and
  --gradient-checkpointing, on both layouts (--smoke: each script on one layout, alternating);
- resume: a run stopped after one step resumes on the device and finishes.

It runs within 4 minutes on one GPU. The GPU machine may lack tyro, gymnasium and rapidfuzz and reach no package
registry: the wheels `bash bench/gpu_wheels.sh` downloads into bench/wheels/ are installed from there first.
`--timing` then runs the earlier measurements: a 0.5B-parameter Llama for a few GRPO steps (step time, tokens/s,
peak memory; with vLLM the weight-sync time) and, with two GPUs, the same steps under torchrun --fsdp.

    python bench/gpu_check.py                  # on a GPU: every check
    python bench/gpu_check.py --smoke          # on the CPU: the same code paths (tests/test_gpu_check.py)
    python bench/gpu_check.py --timing         # and the 0.5B GRPO timing
"""

from __future__ import annotations

import argparse
import csv
import glob
import importlib
import importlib.util
import math
import os
import random
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHEELS = os.path.join(ROOT, "bench", "wheels")
SCRIPTS = ["grpo_baseline", "bpo", "treepo", "branchopd"]
LAYOUTS = ["llama", "qwen2"]


def ensure_packages() -> None:
    """Install what the scripts import but the GPU machine lacks, from the wheels carried beside this script."""
    missing = [name for name in ("tyro", "gymnasium", "rapidfuzz") if importlib.util.find_spec(name) is None]
    if not missing:
        return
    if not glob.glob(os.path.join(WHEELS, "*.whl")):
        raise SystemExit(f"missing {', '.join(missing)} and no wheels in {WHEELS}: run `bash bench/gpu_wheels.sh` on a "
                         f"machine that reaches PyPI and carry bench/wheels/ along")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--find-links", WHEELS, *missing],
                   check=True)
    importlib.invalidate_caches()


def build_chat_model(directory: str, layout: str) -> str:
    """A random-init tiny chat model: `policy.build_tiny_chat_model`'s BPE tokenizer and ChatML template, as a Llama
    (with a pad token) or as a Qwen2 (no pad token: the loader falls back to EOS)."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    import policy
    torch.manual_seed(0)
    policy.build_tiny_chat_model(directory, ["webshop"])
    if layout == "qwen2":
        tokenizer = AutoTokenizer.from_pretrained(directory)
        config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=256, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                             tie_word_embeddings=True, eos_token_id=tokenizer.eos_token_id)
        for name in os.listdir(directory):
            os.remove(os.path.join(directory, name))
        Qwen2ForCausalLM(config).save_pretrained(directory)
        tokenizer.pad_token = None
        tokenizer.save_pretrained(directory)
    return directory


def chat_prompts(tokenizer, count: int) -> list[list[int]]:
    """Chat-profile prompts of WebShop's first pages, as the scripts build them."""
    from envs import make_env
    from policy import build_prompt
    prompts = []
    for task in range(count):
        env = make_env("webshop", split="train")
        obs, info = env.reset(options={"task_id": task})
        prompts.append(build_prompt(tokenizer, "webshop", "chat", info.get("task", ""), obs, [], 0, None))
    return prompts


def check_sampler(model_dir: str, device: str, tolerance: float) -> str:
    import torch

    import grpo_baseline
    from policy import load_policy
    model, tokenizer, _, _ = load_policy(model_dir, "webshop", {})
    model.to(device)
    prompts = chat_prompts(tokenizer, 4)
    torch.manual_seed(0)
    samples = grpo_baseline.HFSampler(model, tokenizer, 24).generate(prompts, 1.0)
    decisions = [grpo_baseline.Decision(p, ids, lps) for p, (ids, lps) in zip(prompts, samples)]
    with torch.no_grad():
        logprobs, _, mask = grpo_baseline.action_logprobs(model, decisions, tokenizer.pad_token_id, 1.0)
    gap = max(float((logprobs[row][mask[row]].cpu() - torch.tensor(d.logprobs)).abs().max())
              for row, d in enumerate(decisions))
    assert gap < tolerance, f"largest log-prob gap {gap:.2e} >= {tolerance}"
    return f"largest gap {gap:.1e} over {sum(len(d.action_ids) for d in decisions)} tokens"


def check_tree(model_dir: str, device: str, tolerance: float) -> str:
    """TreePO's segments on the device: two depths of forks from copied cache rows, then a fallback prefix that is
    prefilled again beside them; every row's log-probs against a from-scratch forward."""
    import torch

    import treepo
    from policy import load_policy
    model, tokenizer, _, _ = load_policy(model_dir, "webshop", {})
    model.to(device)
    prompts = chat_prompts(tokenizer, 2)
    sampler = treepo.SegmentSampler(treepo.HFSampler(model, tokenizer, 64))
    torch.manual_seed(0)
    rows = [list(p) for p in prompts]
    starts = [len(p) for p in prompts]
    logprobs: list[list[float]] = [[] for _ in prompts]
    for i, (ids, lps) in enumerate(sampler.segments(prompts, 1.0, 4)):  # both prompts prefilled
        rows[i] += ids
        logprobs[i] += lps
    for depth in range(2):
        live = [i for i in range(len(rows)) if sampler.rows[i] >= 0]
        sources = [i for i in live for _ in range(2)]
        new_rows, new_starts, new_logprobs = [list(rows[i]) for i in sources], [starts[i] for i in sources], [
            list(logprobs[i]) for i in sources]
        if depth == 1:  # a fallback: a prefix prefilled again, merged with the copied rows
            sources.append(rows[0][:starts[0] + 2])
            new_rows.append(list(sources[-1]))
            new_starts.append(len(sources[-1]))
            new_logprobs.append([])
        for i, (ids, lps) in enumerate(sampler.segments(sources, 1.0, 4)):
            new_rows[i] += ids
            new_logprobs[i] += lps
        rows, starts, logprobs = new_rows, new_starts, new_logprobs
    decisions = [treepo.Decision(r[:n], r[n:], lp) for r, n, lp in zip(rows, starts, logprobs) if len(r) > n]
    with torch.no_grad():
        recomputed, _, mask = treepo.action_logprobs(model, decisions, tokenizer.pad_token_id, 1.0)
    gap = max(float((recomputed[row][mask[row]].cpu() - torch.tensor(d.logprobs)).abs().max())
              for row, d in enumerate(decisions))
    assert gap < tolerance, f"largest log-prob gap {gap:.2e} >= {tolerance}"
    return f"{len(decisions)} paths, largest gap {gap:.1e}"


def run_rows(run_dir: str) -> list[dict]:
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        return [r for r in csv.DictReader(f) if r.get("policy_loss")]


def check_script(script: str, model_dir: str, runs_dir: str) -> str:
    module = importlib.import_module(script)
    flags = ["--env", "webshop", "--model", model_dir, "--prompt-profile", "chat", "--total-steps", "2",
             "--tasks-per-step", "2", "--eval-tasks", "1", "--max-new-tokens", "16", "--max-turns", "3",
             "--runs-dir", runs_dir, "--tree-log-every", "0", "--bf16", "--gradient-checkpointing"]
    flags += {"grpo_baseline": ["--num-generations", "2"], "bpo": ["--branch-factor", "2"],
              "treepo": ["--num-generations", "4", "--max-sampling-rounds", "1"],
              "branchopd": ["--teacher", model_dir, "--num-forks", "2"]}[script]
    start = time.time()
    rows = run_rows(module.main(module.parse_args(flags)))
    assert len(rows) == 2, f"{len(rows)} logged steps"
    assert all(math.isfinite(float(r["policy_loss"])) for r in rows), "a non-finite loss"
    return f"{time.time() - start:.0f}s"


def check_resume(model_dir: str, runs_dir: str) -> str:
    import grpo_baseline
    flags = ["--env", "webshop", "--model", model_dir, "--prompt-profile", "chat", "--total-steps", "2",
             "--tasks-per-step", "2", "--num-generations", "2", "--eval-tasks", "2", "--max-new-tokens", "16",
             "--max-turns", "2", "--runs-dir", runs_dir, "--tree-log-every", "0"]
    run_dir = grpo_baseline.main(grpo_baseline.parse_args(flags + ["--stop-at-step", "1"]))
    grpo_baseline.main(grpo_baseline.parse_args(["--resume", run_dir]))
    rows = run_rows(run_dir)
    assert [int(r["step"]) for r in rows] == [1, 2], [r["step"] for r in rows]
    return "stopped after step 1, resumed to step 2"


def timing(smoke: bool, on_gpu: bool, work: str) -> None:
    """The earlier measurements: a 0.5B-parameter Llama (--smoke: a tiny one) for a few GRPO steps, with vLLM's
    weight-sync time where vLLM is installed, and with two GPUs the same steps under torchrun --fsdp."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    import grpo_baseline
    from envs import make_env
    from policy import PROMPT_WORDS, build_word_tokenizer
    tokenizer = build_word_tokenizer(make_env("webshop", split="train").vocabulary() + PROMPT_WORDS)
    size = dict(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=256, num_hidden_layers=2,
                num_attention_heads=2, num_key_value_heads=2) if smoke else dict(
        vocab_size=32768, hidden_size=1024, intermediate_size=4096, num_hidden_layers=24, num_attention_heads=16,
        num_key_value_heads=16)
    model_dir = os.path.join(work, "llama_timing")
    LlamaForCausalLM(LlamaConfig(**size, max_position_embeddings=4096, tie_word_embeddings=True,
                                 bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                                 pad_token_id=tokenizer.pad_token_id)).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    backend = "vllm" if on_gpu and importlib.util.find_spec("vllm") else "hf"
    memory = lambda: f"{torch.cuda.max_memory_allocated() / 2**30:.1f} GiB" if on_gpu else "-"
    flags = ["--env", "webshop", "--model", model_dir, "--total-steps", "1" if smoke else "3", "--tasks-per-step",
             "2" if smoke else "16", "--num-generations", "2" if smoke else "8", "--eval-tasks", "4", "--eval-every",
             "10000", "--learning-rate", "1e-6", "--tree-log-every", "0", "--max-turns", "3" if smoke else "50"]
    if on_gpu:
        torch.cuda.reset_peak_memory_stats()
    rows = run_rows(grpo_baseline.main(grpo_baseline.parse_args(flags + ["--backend", backend, "--runs-dir",
                                                                         os.path.join(work, "one")])))
    print(f"\ntiming, 1 process, backend {backend}, peak trainer memory {memory()}:")
    for row in rows:
        print(f"  step {row['step']}: {float(row['step_seconds']):.2f}s, "
              f"{float(row['rollout_tokens_per_second']):.0f} generated tokens/s, {row['decisions']} decisions")
    if on_gpu and torch.cuda.device_count() >= 2:
        subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                        os.path.join(ROOT, "grpo_baseline.py"), *flags, "--task-seeds", "--fsdp", "--runs-dir",
                        os.path.join(work, "two")], check=True, cwd=ROOT)
        (two,) = glob.glob(os.path.join(work, "two", "*"))
        print("timing, torchrun --nproc_per_node 2, --fsdp --task-seeds:")
        for row in run_rows(two):
            print(f"  step {row['step']}: {float(row['step_seconds']):.2f}s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="on the CPU: the same code paths, each script once")
    parser.add_argument("--timing", action="store_true", help="then the 0.5B-parameter GRPO timing")
    cli = parser.parse_args()
    ensure_packages()
    sys.path.insert(0, ROOT)
    import torch
    on_gpu = torch.cuda.is_available() and not cli.smoke
    if not on_gpu and not cli.smoke:
        raise SystemExit("bench/gpu_check.py needs a CUDA GPU (or --smoke, which runs the same checks on the CPU)")
    device = "cuda" if on_gpu else "cpu"
    tolerance = 2e-3 if on_gpu else 1e-4  # float32 on both; a GPU's kernels reduce in another order
    print(f"device: {torch.cuda.get_device_name() if on_gpu else 'cpu (--smoke)'}, torch {torch.__version__}, "
          f"{'transformers ' + importlib.import_module('transformers').__version__}")
    results, started = [], time.time()

    def check(name: str, run, *arguments) -> None:
        start = time.time()
        try:
            detail = run(*arguments)
            results.append(True)
            print(f"PASS  {name}  ({detail}; {time.time() - start:.0f}s)", flush=True)
        except BaseException as error:  # noqa: BLE001 (a script's SystemExit is a failure here, not an exit)
            results.append(False)
            print(f"FAIL  {name}  ({type(error).__name__}: {error}; {time.time() - start:.0f}s)", flush=True)
            traceback.print_exc(limit=3)

    with tempfile.TemporaryDirectory() as work:
        models = {layout: build_chat_model(os.path.join(work, layout), layout) for layout in LAYOUTS}
        for layout, model_dir in models.items():
            check(f"sampler log-probs = learner's ({layout}, {device})", check_sampler, model_dir, device, tolerance)
        check(f"TreePO tree segments ({device})", check_tree, models["qwen2"], device, tolerance)
        for i, script in enumerate(SCRIPTS):
            layouts = [LAYOUTS[i % 2]] if cli.smoke else LAYOUTS
            for layout in layouts:
                check(f"{script}: 2 steps, chat profile, HF backend, {layout}", check_script, script,
                      models[layout], os.path.join(work, "runs"))
        check(f"resume ({device})", check_resume, models["llama"], os.path.join(work, "resume"))
        if cli.timing:
            timing(cli.smoke, on_gpu, work)
    print(f"\n{sum(results)} of {len(results)} checks passed in {time.time() - started:.0f}s")
    if not all(results):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
