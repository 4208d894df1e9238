"""What the tables stand on: every evaluation's per-task records (outcomes.jsonl), --token-budget ending a run at the
step that crosses it in every script (and resuming with its count), --eval-only, and the episode printer."""

import csv
import importlib
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = ["grpo_baseline", "bpo", "treepo", "branchopd"]
SMALL = ["--env", "math", "--sft-steps", "20", "--sft-episodes", "40", "--tasks-per-step", "2", "--eval-tasks", "3",
         "--minibatch-size", "16", "--tree-log-every", "0", "--eval-samples", "2"]
PER_SCRIPT = {"grpo_baseline": ["--num-generations", "4"], "bpo": ["--branch-factor", "2"],
              "treepo": ["--num-generations", "4", "--max-sampling-rounds", "1"], "branchopd": ["--num-forks", "1"]}


def run(script: str, flags: list[str], cache_dir: str) -> str:
    module = importlib.import_module(script)
    return module.main(module.parse_args(SMALL + PER_SCRIPT[script] + flags + ["--cache-dir", cache_dir]))


def metric_rows(run_dir: str) -> list[dict]:
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        return list(csv.DictReader(f))


def outcomes(run_dir: str) -> list[dict]:
    with open(os.path.join(run_dir, "outcomes.jsonl")) as f:
        return [json.loads(line) for line in f]


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_token_budget_ends_the_run_at_the_step_that_crosses_it(script, tmp_path, cache_dir):
    budget = 600
    run_dir = run(script, ["--token-budget", str(budget), "--total-steps", "40", "--eval-every", "20",
                           "--runs-dir", str(tmp_path)], cache_dir)
    rows = metric_rows(run_dir)
    steps = [r for r in rows if r.get("sampled_tokens")]
    totals = [int(float(r["sampled_tokens_total"])) for r in steps]
    assert len(steps) < 40 and totals == sorted(totals)  # the budget, not --total-steps, ended it
    assert (totals[-2] if len(totals) > 1 else 0) < budget <= totals[-1]
    assert int(float(steps[-1]["budget_overshoot"])) == totals[-1] - budget
    assert not any(r.get("budget_overshoot") for r in steps[:-1])
    evaluations = [int(r["step"]) for r in rows if r.get("eval_success_greedy")]
    assert evaluations[0] == 0 and evaluations[-1] == len(steps)  # the start and the last step
    # one record per task and play: --eval-samples 2 sampled plays at the first and last evaluation, 1 greedy
    records = outcomes(run_dir)
    for step in (0, len(steps)):
        at = [r for r in records if r["step"] == step]
        # BranchOPD also records its teacher once, at step 0: one sampled and one greedy play per task
        teacher_plays = ["teacher_sampled", "teacher_greedy"] if script == "branchopd" and step == 0 else []
        assert sorted((r["decoding"], r["sample"], r["task_id"]) for r in at) == sorted(
            [("sampled", s, t) for s in range(2) for t in range(3)]
            + [(d, 0, t) for d in ["greedy"] + teacher_plays for t in range(3)])
        assert all(r["turns"] >= 1 and r["tokens"] >= 1 for r in at)


def test_a_budget_run_stopped_and_resumed_carries_its_count(tmp_path, cache_dir):
    flags = ["--token-budget", "900", "--total-steps", "40", "--eval-every", "0"]
    straight = run("grpo_baseline", flags + ["--runs-dir", str(tmp_path / "straight")], cache_dir)
    chunked = run("grpo_baseline", flags + ["--stop-at-step", "1", "--runs-dir", str(tmp_path / "chunks")], cache_dir)
    grpo = importlib.import_module("grpo_baseline")
    grpo.main(grpo.parse_args(["--resume", chunked]))
    timing = {"step_seconds", "rollout_tokens_per_second"}
    same = lambda rows: [{k: v for k, v in r.items() if k not in timing} for r in rows]
    assert same(metric_rows(chunked)) == same(metric_rows(straight))
    assert outcomes(chunked) == outcomes(straight)


def test_eval_only_evaluates_a_policy_without_training_and_the_printer_reads_it(tmp_path, cache_dir):
    run_dir = run("grpo_baseline", ["--eval-only", "--runs-dir", str(tmp_path)], cache_dir)
    rows = metric_rows(run_dir)
    assert len(rows) == 1 and rows[0]["step"] == "0" and rows[0]["eval_success_greedy"]
    assert not os.path.exists(os.path.join(run_dir, "checkpoint.pt"))
    assert len(outcomes(run_dir)) == 3 * 2 + 3  # 3 tasks: 2 sampled plays each, 1 greedy
    with open(os.path.join(run_dir, "transcripts.jsonl")) as f:
        assert len(f.readlines()) == 9  # every episode, not 3 per decoding
    shown = subprocess.run([sys.executable, "bench/show_episodes.py", run_dir, "--decoding", "greedy"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout
    assert shown.startswith("3 episode(s) at step 0 match") and shown.count("task: ") == 3
