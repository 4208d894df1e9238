"""Few-step end-to-end runs of bpo.py on WebShop (turn-level branches) and math (token-level)."""

import csv
import math
import os

import pytest

import bpo
from tests.tree_checks import branch_points, check_trees

SMALL = dict(sft_steps=20, sft_episodes=40, tasks_per_step=2, eval_tasks=6, eval_every=2, minibatch_size=16)


@pytest.mark.parametrize("env, schedule", [("webshop", "entropy"), ("math", "entropy"), ("math", "uniform"),
                                           pytest.param("alfworld", "entropy", marks=pytest.mark.slow)])
def test_bpo_runs_end_to_end(env, schedule, tmp_path, cache_dir):
    if env == "alfworld":
        pytest.importorskip("alfworld", reason="alfworld is not installed (pip install alfworld==0.4.2)")
    smaller = dict(sft_episodes=8, eval_tasks=2, max_turns=8) if env == "alfworld" else {}  # a game load per episode
    run_dir = bpo.main(bpo.Args(env=env, schedule=schedule, total_steps=2, cache_dir=cache_dir,
                                runs_dir=str(tmp_path), **{**SMALL, **smaller}))
    for name in ("metrics.csv", "learning_curve.png", "checkpoint.pt", "final_model/config.json"):
        assert os.path.exists(os.path.join(run_dir, name)), name
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        rows = [r for r in csv.DictReader(f) if r.get("policy_loss")]
    assert len(rows) == 2
    for row in rows:
        # N = 1 + M(K-1) = 7 returns per task at most (fewer when the trajectory is too short to space M points)
        assert 4 <= float(row["returns_per_task"]) <= 7
        assert 0 <= float(row["snapshot_percent"]) < 100
        for key in ("policy_loss", "approx_kl", "entropy", "advantage_variance", "grad_norm_variance"):
            assert math.isfinite(float(row[key])), key
    # the tree record: siblings hang off the backbone at its branch points, each scored by its entropy
    records = check_trees(run_dir, {"backbone", "sibling"})
    assert sum(len(n.get("leaves", [])) for r in records for n in r["nodes"]) == float(rows[0]["returns_per_task"]) * 2
    for record in records:
        assert branch_points(record) and any(n["kind"] == "sibling" for n in record["nodes"])
        # every backbone node starts at a branch candidate (a decision; token level: a fork position)
        assert all(n.get("entropy") is not None for n in record["nodes"] if n["kind"] == "backbone")
        assert record["snapshot_s"] >= 0


def test_bpo_rejects_env_without_snapshot(tmp_path, cache_dir, monkeypatch):
    from envs.base import TextEnv

    def no_snapshot(self):
        raise NotImplementedError

    monkeypatch.setattr(TextEnv, "snapshot", no_snapshot)  # a fault no shipped env has: named as such
    with pytest.raises(SystemExit, match="--replay-snapshots"):
        bpo.main(bpo.Args(env="math", total_steps=1, cache_dir=cache_dir, runs_dir=str(tmp_path), **SMALL))
    run_dir = bpo.main(bpo.Args(env="math", total_steps=1, replay_snapshots=True, cache_dir=cache_dir,
                                runs_dir=str(tmp_path), **SMALL))
    assert os.path.exists(os.path.join(run_dir, "metrics.csv"))


def test_bpo_resume_continues_exactly(tmp_path, cache_dir):
    import torch

    common = dict(env="math", total_steps=2, checkpoint_every=1, cache_dir=cache_dir, **SMALL)  # CI time: math
    straight = bpo.main(bpo.Args(runs_dir=str(tmp_path / "straight"), **common))
    interrupted = bpo.main(bpo.Args(runs_dir=str(tmp_path / "interrupted"), stop_at_step=1, **common))
    resumed = bpo.main(bpo.Args(resume=interrupted))
    weights = [torch.load(os.path.join(d, "checkpoint.pt"), weights_only=False)["model"] for d in (straight, resumed)]
    for name in weights[0]:
        assert torch.equal(weights[0][name], weights[1][name]), name
