"""The shipped warm starts (warm_starts/): each default one is there under the current code's cache key (a change to
the code or settings under a key fails here until bench/ship_warm_starts.py has shipped the new one), none is stale,
and each still plays its recorded greedy episodes on 30 held-out tasks (swe: the first 10), task by task, on this
machine."""

import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import policy  # noqa: E402
from ship_warm_starts import RECORD, play_record  # noqa: E402

ENVS = ["webshop", "math", "alfworld", "swe"]
PLAYED_TASKS = {"swe": 10}  # CI time: swe's episodes run in Docker (all 30 took 75 s); the other envs play all 30


def shipped(env_name: str) -> dict[str, str]:
    """role -> the directory name a default run of `env_name` reads, under the current code's key."""
    return {role: os.path.basename(policy.warm_start_dir(config, {}, "cache"))
            for role, config in policy.default_warm_start_configs(env_name).items()}


@pytest.mark.parametrize("env_name", ENVS)
def test_every_default_warm_start_is_shipped_under_the_current_key(env_name, docker_engine_if_swe):
    names = shipped(env_name)
    for role, name in names.items():
        assert os.path.exists(os.path.join(policy.SHIPPED_DIR, name, "config.json")), (
            f"{env_name} {role}: warm_starts/{name} is missing: the code or settings under its key changed. Run "
            f"`python bench/ship_warm_starts.py --env {env_name}` and commit warm_starts/")
    stale = [n for n in os.listdir(policy.SHIPPED_DIR) if n.startswith(f"{env_name}-") and n not in names.values()]
    assert not stale, f"stale warm starts (no current key names them): {stale}; bench/ship_warm_starts.py removes them"


@pytest.mark.slow
@pytest.mark.parametrize("env_name", ENVS)
def test_a_shipped_warm_start_plays_its_recorded_held_out_episodes(env_name, docker_engine_if_swe):
    for role, name in shipped(env_name).items():
        directory = os.path.join(policy.SHIPPED_DIR, name)
        with open(os.path.join(directory, RECORD)) as f:
            recorded = json.load(f)
        assert len(recorded["tasks"]) == 30
        tasks = PLAYED_TASKS.get(env_name, 30)
        played = play_record(directory, env_name, tasks)
        assert played["tasks"] == recorded["tasks"][:tasks]
        differing = [t for t, a, b in zip(played["tasks"], played["won"], recorded["won"]) if a != b]
        assert not differing, (f"{env_name} {role}: tasks {differing} won differently from the record made on "
                               f"{recorded['cpu']} (this machine: {played['cpu']})")
        assert played["reward"] == pytest.approx(recorded["reward"][:tasks], abs=1e-6)


def test_the_spread_bench_builds_each_seeds_warm_start_evaluates_it_once_and_prints_the_table(tmp_path, cache_dir):
    """bench/warm_start_spread.py on math with a tiny recipe: one --eval-only run per --sft-seed, the table with
    the mean and sd over seeds and math's answer-format column; a second call reads the finished runs."""
    import subprocess
    command = [sys.executable, "bench/warm_start_spread.py", "--env", "math", "--sft-seeds", "0", "1",
               "--runs-dir", str(tmp_path), "--", "--cache-dir", cache_dir, "--sft-steps", "20",
               "--sft-episodes", "40", "--eval-tasks", "3", "--eval-samples", "2"]
    first = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-3000:]
    rows = [line.split() for line in first.stdout.splitlines() if line.split()[:1] in (["0"], ["1"])]
    assert [r[0] for r in rows] == ["0", "1"] and all(0 <= float(v) <= 1 for r in rows for v in r[1:4])
    assert all(" of 3 (" in line for line in first.stdout.splitlines() if line.split()[:1] in (["0"], ["1"]))
    sd = next(line.split() for line in first.stdout.splitlines() if line.split()[:1] == ["sd"])
    greedy = [float(r[1]) for r in rows]
    assert float(sd[1]) == pytest.approx(abs(greedy[0] - greedy[1]) / 2 ** 0.5, abs=1e-3)
    runs = sorted(os.listdir(tmp_path))
    second = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0 and second.stdout == first.stdout and sorted(os.listdir(tmp_path)) == runs
