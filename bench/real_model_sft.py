"""The real chat model (SmolLM2-135M-Instruct) before and after its chat SFT warm start, on one env's test tasks.

    python policy.py --get-smollm2 models/smollm2-135m-instruct          # once
    python bench/real_model_sft.py --env math --sft-steps 150            # writes bench/results/real_model_sft_math.txt

Two `--eval-only` runs of grpo_baseline.py on the same `--eval-tasks` test tasks (seed 1: the same tasks, the same
sampling seed): the model as shipped (zero-shot, chat profile) and the model after `--sft-steps` steps of SFT on the
env's demonstrations rendered in the chat profile (policy.build_chat_warm_start, cached under cache/). Both sample
`--eval-samples` plays per task at T=1 and one greedy play, with the same reply cap (`--max-new-tokens`). The
comparison is bench/compare_runs.py's (paired over tasks, bench/stats.py's interval and verdict). The per-task
records of both runs are committed next to the results file (`*.outcomes.jsonl.gz`), so the table can be recomputed
with `python bench/real_model_sft.py --env ENV --recompute`. Run it on an otherwise idle machine: the SFT seconds are
wall-clock.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import stats  # noqa: E402


def eval_only(args, extra: list[str], runs_dir: str, name: str) -> tuple[list[str], float, str]:
    command = [sys.executable, "grpo_baseline.py", "--env", args.env, "--model", "smollm2", "--prompt-profile", "chat",
               "--eval-only", "--eval-tasks", str(args.eval_tasks), "--eval-samples", str(args.eval_samples),
               "--max-new-tokens", str(args.max_new_tokens), "--backend", args.backend, "--runs-dir", runs_dir,
               "--exp-name", name, "--seed", "1"] + extra
    print("$", " ".join(command[1:]), flush=True)
    start = time.time()
    subprocess.run(command, cwd=ROOT, check=True)
    (run_dir,) = glob.glob(os.path.join(runs_dir, f"{args.env}__{name}__1__*"))
    return command, time.time() - start, run_dir


def table(records: dict[str, list[dict]]) -> list[str]:
    """Success and reward, sampled and greedy: the mean of each arm and SFT - zero-shot with its verdict."""
    arms = {name: {1: rows} for name, rows in records.items()}
    lines = [f"{'metric':18} {'zero-shot':>10} {'after SFT':>10}   after SFT - zero-shot (bench/stats.py)"]
    split = records["zero_shot"][0]["split"]
    for metric, decoding in stats.METRICS:
        ends = [stats.arm(arms[name], -1, split, decoding, metric) for name in ("zero_shot", "sft")]
        means = [sum(end[1].values()) / len(end[1]) for end in ends]
        lines.append(f"{metric + ' ' + decoding:18} {means[0]:10.3f} {means[1]:10.3f}   "
                     f"{stats.compare(ends[0], ends[1]).cell()}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", choices=["math", "webshop", "alfworld", "swe"], required=True)
    parser.add_argument("--sft-steps", type=int, default=150, help="chat SFT steps (batch 8)")
    parser.add_argument("--eval-tasks", type=int, default=100, help="test tasks, the same for both arms")
    parser.add_argument("--eval-samples", type=int, default=1, help="sampled plays per task (T=1)")
    parser.add_argument("--max-new-tokens", type=int, default=256, help="reply cap, the same for both arms")
    parser.add_argument("--backend", choices=["hf", "vllm"], default="vllm", help="the evaluation's sampler")
    parser.add_argument("--recompute", action="store_true", help="only reprint the table from the committed records")
    parser.add_argument("--zero-shot-run", help="an earlier zero-shot run of this command (its run folder) to reuse")
    args = parser.parse_args()
    out = os.path.join(ROOT, "bench", "results", f"real_model_sft_{args.env}")
    if args.recompute:
        records = {}
        for name in ("zero_shot", "sft"):
            with gzip.open(f"{out}.{name}.outcomes.jsonl.gz", "rt") as f:
                records[name] = [json.loads(line) for line in f]
        print("\n".join(table(records)))
        return
    if not os.path.exists(os.path.join(ROOT, "models", "smollm2-135m-instruct", "source.json")):
        raise SystemExit("python policy.py --get-smollm2 models/smollm2-135m-instruct first")
    runs_dir = tempfile.mkdtemp(prefix="real_model_sft_")
    if args.zero_shot_run:  # the same command's zero-shot half, run before (and interrupted after it)
        zero_run, zero_seconds = args.zero_shot_run, float("nan")
        with open(os.path.join(zero_run, "config.json")) as f:
            config = json.load(f)
        expected = dict(env=args.env, eval_tasks=args.eval_tasks, eval_samples=args.eval_samples, seed=1,
                        max_new_tokens=args.max_new_tokens, backend=args.backend, sft_steps=None, eval_only=True)
        if {k: config.get(k) for k in expected} != expected:
            raise SystemExit(f"--zero-shot-run {zero_run} is not this command's zero-shot run: {expected} expected")
        zero_cmd = [sys.executable, "grpo_baseline.py", "(reused: " + zero_run + ")"]
    else:
        zero_cmd, zero_seconds, zero_run = eval_only(args, [], runs_dir, "zero_shot")
    sft_cmd, sft_seconds, sft_run = eval_only(args, ["--sft-steps", str(args.sft_steps)], runs_dir, "sft")
    with open(os.path.join(sft_run, "policy.json")) as f:
        warm_start_dir = json.load(f)["model_dir"]
    with open(os.path.join(warm_start_dir, "warm_start.json")) as f:
        warm_start = json.load(f)
    records = {}
    for name, run_dir in (("zero_shot", zero_run), ("sft", sft_run)):
        records[name] = stats.load_outcomes(run_dir)
        with open(os.path.join(run_dir, "outcomes.jsonl"), "rb") as src, \
                gzip.GzipFile(f"{out}.{name}.outcomes.jsonl.gz", "wb", mtime=0) as dst:
            shutil.copyfileobj(src, dst)
    from policy import cpu_model  # noqa: E402 (torch and transformers: imported only when a run happens)
    lines = [f"# SmolLM2-135M-Instruct on {args.env}: zero-shot against its chat SFT warm start",
             f"command: python bench/real_model_sft.py --env {args.env} --sft-steps {args.sft_steps} --eval-tasks "
             f"{args.eval_tasks} --eval-samples {args.eval_samples} --max-new-tokens {args.max_new_tokens} "
             f"--backend {args.backend}",
             f"machine: {cpu_model()}, {os.cpu_count()} CPUs, nothing else running",
             f"zero-shot run: {' '.join(zero_cmd[1:])}  ({zero_seconds:.0f} s)",
             f"SFT run: {' '.join(sft_cmd[1:])}  ({sft_seconds:.0f} s, of which SFT and its demonstrations "
             f"{warm_start['seconds']:.0f} s)",
             f"SFT: {warm_start['config']['steps']} steps x batch {warm_start['config']['batch_size']}, lr "
             f"{warm_start['config']['learning_rate']}, {warm_start['num_examples']} demonstration decisions from "
             f"{warm_start['config']['episodes']} episodes; loss {warm_start['initial_loss']:.3f} (first 10 steps) -> "
             f"{warm_start['final_loss']:.3f} (last 10)",
             f"test tasks: {args.eval_tasks}, {args.eval_samples} sampled play(s) at T=1 and one greedy play each; "
             f"per-task records: {os.path.basename(out)}.{{zero_shot,sft}}.outcomes.jsonl.gz "
             f"(reprint: python bench/real_model_sft.py --env {args.env} --recompute)",
             ""] + table(records)
    with open(f"{out}.txt", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    shutil.rmtree(runs_dir)


if __name__ == "__main__":
    main()
