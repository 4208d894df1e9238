"""Few-step end-to-end runs of grpo_baseline.py: artifacts, finite losses, exact resume."""

import csv
import glob
import itertools
import json
import math
import os

import pytest
import torch

import grpo_baseline
from grpo_baseline import Args
from tests.tree_checks import check_trees

SMALL = dict(sft_steps=20, sft_episodes=40, tasks_per_step=2, num_generations=4, eval_tasks=6, eval_every=2,
             minibatch_size=16)


# ALFWorld loads a game per episode (0.2-1 s): fewer demonstrations, evaluations and turns
SMALLER = {"alfworld": dict(sft_episodes=8, eval_tasks=2, num_generations=2, max_turns=8)}


def read_metrics(run_dir):
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("env", ["math", "webshop", pytest.param("alfworld", marks=pytest.mark.slow)])
def test_grpo_runs_end_to_end(env, tmp_path, cache_dir):
    if env == "alfworld":
        pytest.importorskip("alfworld", reason="alfworld is not installed (pip install alfworld==0.4.2)")
    run_dir = grpo_baseline.main(Args(env=env, total_steps=3, cache_dir=cache_dir, runs_dir=str(tmp_path),
                                      **{**SMALL, **SMALLER.get(env, {})}))
    for name in ("config.json", "metrics.csv", "learning_curve.png", "checkpoint.pt", "final_model/config.json"):
        assert os.path.exists(os.path.join(run_dir, name)), name
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(run_dir))
    rows = read_metrics(run_dir)
    train_rows = [r for r in rows if r.get("policy_loss")]
    assert [int(r["step"]) for r in train_rows] == [1, 2, 3]
    for row in train_rows:
        for key in ("policy_loss", "approx_kl", "clipfrac", "entropy", "grad_norm"):
            assert math.isfinite(float(row[key])), (key, row[key])
    assert {int(r["step"]) for r in rows if r.get("eval_success_greedy")} == {0, 2, 3}
    # a group is a tree of depth one: each of its N episodes starts at the root
    for record in check_trees(run_dir, {"episode"}):
        group_size = SMALL["num_generations"] if env != "alfworld" else SMALLER["alfworld"]["num_generations"]
        assert sum(n["parent"] == 0 for n in record["nodes"]) == group_size
        assert sum(len(n.get("leaves", [])) for n in record["nodes"]) == group_size
    # the warm start learned from the env's demonstrations
    with open(os.path.join(run_dir, "config.json")) as f:
        config = json.load(f)
    warm_starts = glob.glob(os.path.join(cache_dir, f"{env}-tiny-sft{config['sft_seed']}-*", "warm_start.json"))
    for path in warm_starts:
        with open(path) as f:
            summary = json.load(f)
        assert summary["final_loss"] < 0.8 * summary["initial_loss"], summary


def test_grpo_rloo_with_kl(tmp_path, cache_dir):
    run_dir = grpo_baseline.main(Args(env="math", total_steps=2, advantage="rloo", beta=0.05, cache_dir=cache_dir,
                                      runs_dir=str(tmp_path), **SMALL))
    rows = [r for r in read_metrics(run_dir) if r.get("kl_ref")]
    assert all(float(r["kl_ref"]) >= 0 for r in rows)


def test_resume_continues_exactly(tmp_path, cache_dir):
    """An interrupted run resumed from its checkpoint ends with the same weights and metrics."""
    common = dict(env="math", total_steps=4, checkpoint_every=2, cache_dir=cache_dir, **SMALL)
    straight = grpo_baseline.main(Args(runs_dir=str(tmp_path / "straight"), **common))
    interrupted = grpo_baseline.main(Args(runs_dir=str(tmp_path / "interrupted"), stop_at_step=2, **common))
    assert torch.load(os.path.join(interrupted, "checkpoint.pt"), weights_only=False)["step"] == 2
    # the resumed run reloads the warm start it started from (policy.json), whatever the warm-start
    # settings would build now: here its config asks for another SFT length, and nothing is rebuilt
    with open(os.path.join(interrupted, "policy.json")) as f:
        assert os.path.isdir(json.load(f)["model_dir"])
    with open(os.path.join(interrupted, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(interrupted, "config.json"), "w") as f:
        json.dump({**config, "sft_steps": SMALL["sft_steps"] + 1}, f)
    warm_starts = sorted(os.listdir(cache_dir))
    resumed = grpo_baseline.main(Args(resume=interrupted))
    assert sorted(os.listdir(cache_dir)) == warm_starts
    assert resumed == interrupted
    weights = [torch.load(os.path.join(d, "checkpoint.pt"), weights_only=False)["model"] for d in (straight, resumed)]
    for name in weights[0]:
        assert torch.equal(weights[0][name], weights[1][name]), name
    drop_timing = lambda rows: [{k: v for k, v in r.items() if k not in ("step_seconds", "rollout_tokens_per_second")}
                                for r in rows]
    assert drop_timing(read_metrics(straight)) == drop_timing(read_metrics(resumed))


def test_a_run_never_writes_into_another_runs_directory(tmp_path, cache_dir, monkeypatch):
    """Two runs started in the same second: the second gets its own directory (suffix .2)."""
    clock = itertools.count()
    monkeypatch.setattr(grpo_baseline.time, "time", lambda: 1_800_000_000 + next(clock) * 1e-6)
    taken = tmp_path / "math__grpo_baseline__1__1800000000"
    taken.mkdir()
    (taken / "metrics.csv").write_text("another run's metrics\n")
    run_dir = grpo_baseline.main(Args(env="math", total_steps=1, cache_dir=cache_dir, runs_dir=str(tmp_path),
                                      **{**SMALL, "eval_every": 5}))
    assert run_dir == str(taken) + ".2"
    assert (taken / "metrics.csv").read_text() == "another run's metrics\n"
    assert [int(r["step"]) for r in read_metrics(run_dir)] == [0, 1, 1]  # its own rows only
