"""grpo_baseline.py and bpo.py end to end on the Docker code-repair env, with env workers: the tiny policy
plays real containers for one step, BPO forks them by `container.commit()`, both evaluate on the two held-out splits."""

import csv
import math
import os

import pytest

import bpo
import grpo_baseline
from tests.tree_checks import check_trees

SMALL = dict(sft_steps=20, sft_episodes=8, tasks_per_step=2, eval_tasks=1, eval_every=1, minibatch_size=16,
             max_turns=4, env_workers=4)


def read_rows(run_dir):
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
@pytest.mark.parametrize("script", ["grpo_baseline", "bpo"])
def test_swe_runs_end_to_end_with_env_workers(script, tmp_path, cache_dir, docker_engine):
    module = {"grpo_baseline": grpo_baseline, "bpo": bpo}[script]
    extra = dict(num_generations=4) if script == "grpo_baseline" else dict(num_branch_points=1, branch_factor=3)
    run_dir = module.main(module.Args(env="swe", total_steps=1, cache_dir=cache_dir, runs_dir=str(tmp_path),
                                      **SMALL, **extra))
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
