"""How many tokens TreePO's sampler decodes per step against the tokens of the trees it trains on, next to GRPO's.

treepo.py logs two counts per step: `decision_tokens`, the action tokens of the trees it kept, leaf by leaf (a
prefix shared by k leaves counted k times), and `decoded_tokens`, what its sampler decoded: every tree it grew,
the trees that DAPO dynamic sampling dropped for having no reward variance included, each shared prefix once.
bench/compare.py matches every algorithm to GRPO's sampled tokens; it used `decision_tokens` until it was fixed
to use `decoded_tokens`. This runs the comparison's calibration (N = 7, a few steps from the cached warm start,
one torch thread) for grpo_baseline.py and treepo.py and prints both counts, and the step counts each would
have given TreePO against GRPO's default steps.

    python bench/treepo_tokens.py --env math
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summarize_runs import read_rows  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def calibrate(script: str, env: str, steps: int, runs_dir: str, extra: list[str]) -> list[dict]:
    command = [sys.executable, script, "--env", env, "--num-generations", "7", "--total-steps", str(steps),
               "--eval-every", "0", "--eval-tasks", "1", "--runs-dir", runs_dir, "--exp-name", "treepo_tokens",
               *extra]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}{done.stderr[-3000:]}")
    run_dir = re.findall(r"run dir (\S+)", done.stdout + done.stderr)[0].rstrip(",")
    return [r for r in read_rows(os.path.join(ROOT, run_dir)) if r.get("decision_tokens")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="math", choices=["webshop", "math", "alfworld", "swe"])
    parser.add_argument("--steps", type=int, default=3, help="steps of each calibration run")
    parser.add_argument("--runs-dir", default="runs/treepo_tokens")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="after `--`: flags passed to both runs")
    cli = parser.parse_args()
    extra = cli.script_args[1:] if cli.script_args[:1] == ["--"] else cli.script_args
    sys.path.insert(0, ROOT)
    import grpo_baseline

    grpo_steps = grpo_baseline.ENV_DEFAULTS[cli.env]["total_steps"]
    grpo = calibrate("grpo_baseline.py", cli.env, cli.steps, cli.runs_dir, extra)
    treepo = calibrate("treepo.py", cli.env, cli.steps, cli.runs_dir, extra)
    mean = lambda rows, key: float(np.mean([float(r[key]) for r in rows]))
    grpo_tokens = mean(grpo, "decision_tokens")
    kept, decoded = mean(treepo, "decision_tokens"), mean(treepo, "decoded_tokens")
    print(f"python bench/treepo_tokens.py --env {cli.env} --steps {cli.steps}"
          + (" -- " + " ".join(extra) if extra else "") + f"   ({cli.steps} steps each, N = 7, OMP_NUM_THREADS=1)")
    print(f"GRPO   tokens sampled per step (decision_tokens): {grpo_tokens:9.0f}")
    print(f"TreePO leaf tokens of kept trees (decision_tokens): {kept:9.0f}")
    print(f"TreePO tokens decoded per step (decoded_tokens):    {decoded:9.0f}   ({decoded / kept:.2f}x the kept "
          f"leaf tokens; sampling rounds {mean(treepo, 'sampling_rounds'):.2f}, trees dropped "
          f"{mean(treepo, 'dropped_tasks'):.2f}, token saving {mean(treepo, 'token_saving'):.2f})")
    old, new = max(1, round(grpo_steps * grpo_tokens / kept)), max(1, round(grpo_steps * grpo_tokens / decoded))
    print(f"TreePO steps matched to GRPO's {grpo_steps}: {old} on kept leaf tokens (before the fix), "
          f"{new} on decoded tokens")


if __name__ == "__main__":
    main()
