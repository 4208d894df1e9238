"""torchrun on CPU (gloo, 2 processes on this machine's loopback): one update with 2 ranks equals one update with
1 rank on the same global batch, a 2-rank run writes one set of artifacts, and it resumes exactly."""

import csv
import glob
import json
import os
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# a warm start good enough for some groups to have unequal returns (an update to compare)
SMALL = ["--env", "webshop", "--sft-steps", "150", "--sft-episodes", "150", "--tasks-per-step", "4",
         "--eval-tasks", "4", "--eval-every", "0", "--minibatch-size", "8",
         "--tree-log-every", "0", "--task-seeds"]


PER_SCRIPT = {"grpo_baseline.py": ["--num-generations", "4"], "bpo.py": ["--branch-factor", "3"],
              "treepo.py": ["--num-generations", "8", "--first-step-divergence", "4", "--max-sampling-rounds", "4"],
              "branchopd.py": ["--num-forks", "2"]}  # TreePO: dynamic sampling needs a few rounds to find signal


def run(script: str, flags: list[str], ranks: int, cache_dir: str):
    launcher = [sys.executable] if ranks == 1 else [sys.executable, "-m", "torch.distributed.run", "--standalone",
                                                     "--nproc_per_node", str(ranks)]
    result = subprocess.run(launcher + [script, *SMALL, *PER_SCRIPT[script], "--cache-dir", cache_dir,
                                         *flags], cwd=ROOT,
                            capture_output=True, text=True, timeout=1200, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def weights(run_dir: str) -> dict:
    return torch.load(os.path.join(run_dir, "checkpoint.pt"), weights_only=False)


def only_run_dir(runs_dir) -> str:
    (run_dir,) = glob.glob(os.path.join(runs_dir, "*"))
    return run_dir


@pytest.mark.slow
@pytest.mark.parametrize("script, learner", [("treepo.py", "vllm"), ("branchopd.py", "fsdp"), ("bpo.py", "fsdp-kl")])
def test_two_ranks_update_equals_one_rank(script, learner, tmp_path, cache_dir):
    """Each learner once, against one rank's whole-minibatch update (the DDP, FSDP2 and vLLM lines are shared blocks,
    the same in every script: tests/test_blocks.py; GRPO runs on two ranks in the resume test below): DDP with a
    vLLM engine per rank for TreePO, whose segment rounds are the most irregular; FSDP2 (`--fsdp`) for BranchOPD,
    whose repair loss runs a second forward through the sharded module before the backward, with its teacher sharded
    too; and FSDP2 for BPO with a KL reference (sharded like the learner: each rank holds half of it) and gradients
    accumulated over micro-batches."""
    backend = ["--backend", "vllm"] if learner == "vllm" else []
    kl = ["--beta", "0.04"] if learner == "fsdp-kl" else []
    run(script, ["--total-steps", "1", "--runs-dir", str(tmp_path / "one")] + backend + kl, 1, cache_dir)
    sharded = {"fsdp": ["--fsdp", "--shard-teacher"], "fsdp-kl": ["--fsdp", "--micro-batch-size", "3"]}.get(learner, [])
    out = run(script, ["--total-steps", "1", "--runs-dir", str(tmp_path / "two")] + sharded + backend + kl, 2,
              cache_dir)
    if learner == "fsdp-kl":  # rank 0's share of the learner and of the reference: about half of each
        (held,) = [line for line in out.splitlines() if line.startswith("--fsdp: this rank holds")]
        learner_part, total, reference_part = [int(word) for word in held.replace(",", "").split() if word.isdigit()]
        assert learner_part == reference_part and 0.4 * total < learner_part < 0.6 * total, held
    one, two = weights(only_run_dir(tmp_path / "one")), weights(only_run_dir(tmp_path / "two"))
    assert one["rows"][-1]["trained_decisions"] == two["rows"][-1]["trained_decisions"] > 0
    assert one["rows"][-1]["decisions"] == two["rows"][-1]["decisions"]
    with open(os.path.join(only_run_dir(tmp_path / "one"), "policy.json")) as f:
        initial = load_file(os.path.join(json.load(f)["model_dir"], "model.safetensors"))
    moved = max((one["model"][k] - initial[k]).abs().max().item() for k in initial)  # the update's size
    difference = max((one["model"][k] - two["model"][k]).abs().max().item() for k in one["model"])
    assert moved > 1e-5 and difference < 1e-2 * moved, (moved, difference)


@pytest.mark.slow
@pytest.mark.parametrize("script", ["grpo_baseline.py"])  # the resume lines are the same in every script (CI time)
def test_a_two_rank_run_writes_one_set_of_artifacts_and_resumes_exactly(script, tmp_path, cache_dir):
    """Under --fsdp: the checkpoint gathers the shards of the model and of AdamW's state, a resume deals them out."""
    run(script, ["--total-steps", "2", "--runs-dir", str(tmp_path / "straight"), "--fsdp"], 2, cache_dir)
    out = run(script, ["--total-steps", "2", "--stop-at-step", "1", "--runs-dir", str(tmp_path / "chunks"),
                       "--fsdp"], 2, cache_dir)
    assert "continue with --resume" in out
    chunked = only_run_dir(tmp_path / "chunks")
    run(script, ["--resume", chunked], 2, cache_dir)
    straight = only_run_dir(tmp_path / "straight")
    names = lambda d: sorted(n for n in os.listdir(d) if not n.startswith("events.out.tfevents."))
    assert names(chunked) == names(straight)  # one set of artifacts: nothing per rank
    assert len(glob.glob(os.path.join(straight, "events.out.tfevents.*"))) == 1  # rank 0's TensorBoard log
    a, b = weights(straight), weights(chunked)
    assert len(b["rank_rngs"]) == 2 and a["step"] == b["step"] == 2
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    for name, state in b["optimizer"]["state"].items():  # AdamW's moments gathered whole, not one rank's shard
        assert state["exp_avg"].shape == b["model"][name].shape, name
    timing = {"step_seconds", "rollout_tokens_per_second", "snapshot_percent"}  # wall-clock, not state
    with open(os.path.join(straight, "metrics.csv")) as f, open(os.path.join(chunked, "metrics.csv")) as g:
        rows_a, rows_b = list(csv.DictReader(f)), list(csv.DictReader(g))
    assert [{k: v for k, v in r.items() if k not in timing} for r in rows_a] == [
        {k: v for k, v in r.items() if k not in timing} for r in rows_b]
