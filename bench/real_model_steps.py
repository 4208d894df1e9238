"""Seconds per RL step of every script with the real chat model (SmolLM2-135M-Instruct, `--model smollm2`), on both
samplers, and each run's memory plan beside its measured peak resident memory (the tiny model's too).

    python policy.py --get-smollm2 models/smollm2-135m-instruct    # once
    python bench/real_model_steps.py                               # about 10 minutes on an idle 2-core machine

Each run: math, chat profile, 2 steps of 4 tasks x 4 returns (BPO: M=1 branch point x K=4, TreePO: 4 leaves),
64-token replies, the student after 150 steps of chat SFT (`--sft-steps 150`, the warm start
bench/real_model_sft.py measures; built once and cached, about 15 minutes), BranchOPD's teacher the model after 20
steps of mistake-free chat SFT, one 4-task evaluation at the start and the end. `--minibatch-size 16` and
`--max-model-len 160` make the plan's update (16 decisions of at most 160 tokens) the one that runs, so plan and peak
compare like with like, but only in a step that updates: the column `trained` counts the decisions that got a
gradient, and where it is 0 (the model as shipped rarely wins a problem, so a group's returns are often all equal) the
step ran no backward pass and its peak holds no gradients or AdamW state (the SFT warm start wins sometimes, so most
steps update). Run it on an otherwise idle machine: the seconds are wall-clock.
"""

from __future__ import annotations

import csv
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

COMMON = ["--env", "math", "--model", "smollm2", "--prompt-profile", "chat", "--sft-steps", "150", "--total-steps", "2",
          "--tasks-per-step",
          "4", "--max-new-tokens", "64", "--eval-tasks", "4", "--eval-samples", "1", "--eval-every", "0",
          "--checkpoint-every", "0", "--minibatch-size", "16", "--max-model-len", "160"]
ALGORITHM = {"grpo_baseline.py": ["--num-generations", "4"],
             "bpo.py": ["--num-branch-points", "1", "--branch-factor", "4"],
             "treepo.py": ["--num-generations", "4", "--segment-length", "16", "--max-depth", "4"],
             "branchopd.py": ["--teacher", "smollm2", "--teacher-sft-steps", "20", "--num-forks", "1",
                              "--continuations", "3"]}
TINY = ["--env", "math", "--total-steps", "2", "--eval-tasks", "20", "--eval-samples", "1", "--eval-every", "0",
        "--checkpoint-every", "0"]


def run(script: str, flags: list[str], runs_dir: str) -> dict:
    start = time.time()
    out = subprocess.run([sys.executable, script, *flags, "--runs-dir", runs_dir], cwd=ROOT, capture_output=True,
                         text=True)
    if out.returncode != 0:
        raise SystemExit(f"{script} {' '.join(flags)} failed:\n{out.stderr[-3000:]}")
    run_dir = sorted(glob.glob(os.path.join(runs_dir, "*")), key=os.path.getmtime)[-1]
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        steps = [row for row in csv.DictReader(f) if row.get("step_seconds")]
    plan = float(re.search(r"total \(sampling and the update never overlap\)\s+([\d.]+) GiB", out.stdout).group(1))
    peak = float(re.search(r"peak memory: ([\d.]+) GiB resident", out.stdout).group(1))
    return {"seconds": [float(r["step_seconds"]) for r in steps],
            "trained": [int(float(r.get("trained_decisions") or 0)) for r in steps],
            "tokens": [int(float(r["sampled_tokens"])) for r in steps], "plan": plan, "peak": peak,
            "wall": time.time() - start}


def main() -> None:
    from policy import SMOLLM2_DIR, cpu_model
    if not os.path.exists(os.path.join(SMOLLM2_DIR, "source.json")):
        raise SystemExit("python policy.py --get-smollm2 models/smollm2-135m-instruct first")
    print(f"# python bench/real_model_steps.py   (CPU: {cpu_model()}, {os.cpu_count()} cores; runs one at a time)")
    print(f"# common flags: {' '.join(COMMON)}")
    print(f"{'script':<18} {'backend':<8} {'s/step (each)':<18} {'tokens/step':<14} {'trained':<10} {'plan GiB':>9} "
          f"{'peak GiB':>9} {'plan/peak':>10} {'run s':>7}")
    with tempfile.TemporaryDirectory() as runs_dir:
        for script, flags in ALGORITHM.items():
            for backend in ("hf", "vllm"):
                r = run(script, COMMON + flags + ["--backend", backend], runs_dir)
                print(f"{script:<18} {backend:<8} {' '.join(f'{s:.1f}' for s in r['seconds']):<18} "
                      f"{' '.join(map(str, r['tokens'])):<14} {' '.join(map(str, r['trained'])):<10} "
                      f"{r['plan']:>9.2f} {r['peak']:>9.2f} {r['plan'] / r['peak']:>9.2f}x {r['wall']:>7.0f}",
                      flush=True)
        r = run("grpo_baseline.py", TINY, runs_dir)
        print(f"{'grpo_baseline.py':<18} {'hf tiny':<8} {' '.join(f'{s:.1f}' for s in r['seconds']):<18} "
              f"{' '.join(map(str, r['tokens'])):<14} {' '.join(map(str, r['trained'])):<10} {r['plan']:>9.2f} "
              f"{r['peak']:>9.2f} {r['plan'] / r['peak']:>9.2f}x {r['wall']:>7.0f}   (tiny: {' '.join(TINY)})")


if __name__ == "__main__":
    main()
