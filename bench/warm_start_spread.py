"""How far the SFT warm start moves with its seed: the held-out start of `--sft-seed` 0..4, side by side.

Each seed's warm start is built (or read from the cache) and evaluated once with `grpo_baseline.py --eval-only`
on the env's primary held-out split: greedy and sampled success (the sampled one over --eval-samples plays per
task) and greedy reward, then the mean and the standard deviation over the seeds (ddof 1). On math it also
counts the greedy answers written in the checker's `\\boxed{N}` format (the demonstrator ends in `#### N` with
--sft-mistake-prob) and the share of those that are right: the format and the arithmetic, separately. A recipe whose greedy
start success moves by more than about 0.03 between seeds makes every table conditioned on one draw of it
(docs/warm_starts.md). Resumable: a seed whose evaluation finished is read, not run again.

    python bench/warm_start_spread.py --env webshop                       # seeds 0-4, the default recipe
    python bench/warm_start_spread.py --env webshop -- --sft-steps 3000   # another recipe (its own cache key)
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import stats

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def evaluate_seed(env: str, seed: int, runs_dir: str, extra: list[str]) -> str:
    """The finished --eval-only run of warm start `seed` (run now if there is none)."""
    recipe = "_".join(a.lstrip("-") for a in extra)  # the recipe's flags name its runs (a path's '/' made safe)
    name = f"spread_sft{seed}" + ("_" + re.sub(r"[^A-Za-z0-9._-]+", "-", recipe) if extra else "")

    def finished() -> list[str]:  # an interrupted evaluation leaves a run directory without outcomes: not read
        return sorted(d for d in glob.glob(os.path.join(runs_dir, f"{env}__{name}__*"))
                      if os.path.exists(os.path.join(d, "outcomes.jsonl")))

    if finished():
        return finished()[-1]
    log = os.path.join(runs_dir, f"{env}_{name}.log")
    with open(log, "w") as f:
        done = subprocess.run([sys.executable, "grpo_baseline.py", "--env", env, "--sft-seed", str(seed), "--eval-only",
                               "--exp-name", name, "--runs-dir", runs_dir, *extra], cwd=ROOT, stdout=f,
                              stderr=subprocess.STDOUT, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if done.returncode != 0 or not finished():
        with open(log) as f:
            tail = "".join(f.readlines()[-15:])
        raise SystemExit(f"{tail}\nwarm start {seed} ({name}) failed (exit {done.returncode}): the lines above end "
                         f"{log}; run this script again to go on (finished seeds are read, not rerun)")
    return finished()[-1]


def boxed_answers(run_dir: str) -> str:
    """Math: how many greedy answers end in `\\boxed{` (the rest in `####`), and the share of those that won."""
    boxed = won = total = 0
    with open(os.path.join(run_dir, "transcripts.jsonl")) as f:
        for episode in map(json.loads, f):
            if episode["decoding"] == "greedy":
                total += 1
                if "\\boxed{" in episode["actions"][-1]:
                    boxed, won = boxed + 1, won + episode["won"]
    return f"{boxed:>3} of {total} ({won / max(boxed, 1):.2f} right)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="webshop", choices=["webshop", "math", "alfworld", "swe"])
    parser.add_argument("--sft-seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--parallel", type=int, default=2, help="evaluations at a time (each one torch thread)")
    parser.add_argument("--runs-dir", default="runs/warm_start_spread")
    parser.add_argument("extra", nargs=argparse.REMAINDER, help="after `--`: flags of the warm-start recipe")
    cli = parser.parse_args()
    extra = cli.extra[1:] if cli.extra[:1] == ["--"] else cli.extra
    runs_dir = os.path.join(ROOT, cli.runs_dir)
    os.makedirs(runs_dir, exist_ok=True)
    with ThreadPoolExecutor(cli.parallel) as pool:
        run_dirs = dict(zip(cli.sft_seeds, pool.map(lambda s: evaluate_seed(cli.env, s, runs_dir, extra),
                                                     cli.sft_seeds)))
    with open(os.path.join(next(iter(run_dirs.values())), "config.json")) as f:
        config = json.load(f)
    split = config["eval_splits"][0]
    print(f"# python bench/warm_start_spread.py --env {cli.env} --sft-seeds {' '.join(map(str, cli.sft_seeds))}"
          + (f" -- {' '.join(extra)}" if extra else ""))
    print(f"# {config['provenance'].get('cpu')}, torch threads 1 per evaluation; held-out split `{split}`, "
          f"{config['eval_tasks']} tasks, sampled success over {config['eval_samples']} plays per task")
    print(f"{'sft seed':>8}  {'greedy success':>14}  {'sampled success':>15}  {'greedy reward':>13}  "
          + ("greedy answers boxed (right)  " if cli.env == "math" else "") + "warm start")
    table = []
    for seed, run_dir in run_dirs.items():
        records = {seed: stats.load_outcomes(run_dir)}
        values = [np.mean(list(stats.arm(records, 0, split, decoding, metric)[seed].values()))
                  for metric, decoding in (("success", "greedy"), ("success", "sampled"), ("reward", "greedy"))]
        table.append(values)
        with open(os.path.join(run_dir, "policy.json")) as f:
            model_dir = os.path.basename(json.load(f)["model_dir"])
        print(f"{seed:>8}  {values[0]:>14.3f}  {values[1]:>15.3f}  {values[2]:>13.3f}  "
              + (f"{boxed_answers(run_dir):<28}  " if cli.env == "math" else "") + model_dir)
    table = np.array(table)
    print(f"{'mean':>8}  {table[:, 0].mean():>14.3f}  {table[:, 1].mean():>15.3f}  {table[:, 2].mean():>13.3f}")
    print(f"{'sd':>8}  {table[:, 0].std(ddof=1):>14.3f}  {table[:, 1].std(ddof=1):>15.3f}  "
          f"{table[:, 2].std(ddof=1):>13.3f}")


if __name__ == "__main__":
    main()
