"""Bad input costs nothing: every script checks its flags, paths and combinations before it loads a model or writes a
run folder (a message naming the flag, exit code 2), and `--resume` continues only what it can continue exactly."""

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import run_tools

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ["grpo_baseline", "bpo", "treepo", "branchopd"]

# (flags, the flag the message must name): each is refused by every script before anything is loaded or written
PROBES = [
    (["--eval-splits", "bogus"], "--eval-splits"),
    (["--eval-splits", "train"], "--eval-splits"),
    (["--exp-name", "a/b"], "--exp-name"),
    (["--seed", "99999999999"], "--seed"),
    (["--beta", "nan"], "--beta"),
    (["--clip-eps", "inf"], "--clip-eps"),
    (["--temperature", "inf"], "--temperature"),
    (["--model", "/nonexistent/model"], "--model"),
    (["--model", "{empty_dir}"], "--model"),
    (["--runs-dir", "{a_file}"], "--runs-dir"),
    (["--total-steps", "0"], "--total-steps"),
]


def validate(script, argv: list[str]):
    """What a script checks before it loads anything: its command line, then its env defaults and checks."""
    module = importlib.import_module(script)
    return module.apply_env_defaults(module.parse_args(argv))


@pytest.fixture
def paths(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("not a directory")
    return {"empty_dir": str(tmp_path / "empty"), "a_file": str(tmp_path / "file")}


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_probe_is_refused_by_name_before_anything_loads(script, paths, capsys):
    outcomes = []
    for flags, named in PROBES:
        argv = ["--env", "math"] + [f.format(**paths) for f in flags]
        with pytest.raises(SystemExit) as refused:
            validate(script, argv)
        assert isinstance(refused.value.code, str) and named in refused.value.code, (flags, refused.value.code)
        outcomes.append(f"{' '.join(flags):40} -> {refused.value.code.splitlines()[0][:90]}")
    with capsys.disabled():  # the table of outcomes, in the test log
        print(f"\n{script}:\n  " + "\n  ".join(outcomes))


def test_impossible_tree_shapes_are_refused():
    """More leaves, branch points or forks than any trajectory can hold: refused, not quietly made fewer."""
    with pytest.raises(SystemExit, match="--first-step-divergence 4"):
        validate("treepo", ["--env", "math", "--first-step-divergence", "4", "--num-generations", "2"])
    with pytest.raises(SystemExit, match="--num-branch-points 20: an episode of webshop takes at most 15 actions, "
                                         "which leaves at most 14"):
        validate("bpo", ["--env", "webshop", "--num-branch-points", "20", "--branch-factor", "2"])
    with pytest.raises(SystemExit, match="--num-branch-points 9: --max-new-tokens 64 leaves at most 8"):
        validate("bpo", ["--env", "math", "--num-branch-points", "9", "--max-new-tokens", "64"])
    with pytest.raises(SystemExit, match="--num-forks 50: --max-new-tokens 64 holds at most 16"):
        validate("branchopd", ["--env", "math", "--num-forks", "50", "--max-new-tokens", "64"])
    with pytest.raises(SystemExit, match="--num-forks 50: a trajectory forks at most once per turn"):
        validate("branchopd", ["--env", "webshop", "--num-forks", "50"])
    validate("bpo", ["--env", "webshop", "--num-branch-points", "14"])  # the largest that fits runs
    validate("branchopd", ["--env", "math", "--num-forks", "16", "--max-new-tokens", "64"])


def test_a_missing_sampler_is_refused_before_anything_loads(monkeypatch):
    """A fault this machine cannot cause (vLLM is installed for the tests): find_spec answers "not installed"."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a))
    with pytest.raises(SystemExit, match="--backend vllm: vLLM is not installed"):
        validate("grpo_baseline", ["--env", "math", "--backend", "vllm"])


def test_a_teacher_that_is_not_a_model_is_refused(paths):
    with pytest.raises(SystemExit, match="--teacher"):
        validate("branchopd", ["--env", "math", "--teacher", paths["empty_dir"]])
    with pytest.raises(SystemExit, match="--teacher-sft-steps"):
        validate("branchopd", ["--env", "math", "--teacher-sft-steps", "5"])  # a chat teacher's option


@pytest.mark.parametrize("flags, named", [(["--seed", "-3"], "--seed"), (["--model", "/nonexistent"], "--model"),
                                          (["--eval-splits", "train"], "--eval-splits")])
def test_a_refusal_exits_2_with_the_flag_named_and_no_run_folder(flags, named, tmp_path):
    out = subprocess.run([sys.executable, "bpo.py", "--env", "math", *flags, "--runs-dir", str(tmp_path / "runs")],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 2 and named in out.stderr, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "runs").exists()


# Resume: the four cases a run folder can be in that a resume must not continue, each refused with what to do.
@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory):
    """A GRPO math run of 2 steps stopped after its first (a checkpoint), and the same run finished."""
    import grpo_baseline
    runs = tmp_path_factory.mktemp("runs")
    common = dict(env="math", total_steps=2, tasks_per_step=2, num_generations=2, eval_tasks=2, eval_samples=1,
                  checkpoint_every=1, tree_log_every=0, runs_dir=str(runs))
    stopped = grpo_baseline.main(grpo_baseline.Args(stop_at_step=1, **common))
    finished = grpo_baseline.main(grpo_baseline.Args(**common))
    return stopped, finished


def test_resume_refuses_another_scripts_run(stopped_run):
    import bpo
    with pytest.raises(SystemExit, match="a run of grpo_baseline.py"):
        bpo.main(bpo.parse_args(["--resume", stopped_run[0]]))


def test_resume_refuses_a_flag_that_changes_the_experiment(stopped_run):
    import grpo_baseline
    with pytest.raises(SystemExit) as refused:  # webshop is --env's default: given on the command line, it counts
        grpo_baseline.main(grpo_baseline.parse_args(["--resume", stopped_run[0], "--env", "webshop", "--seed", "9"]))
    assert "--env webshop (the run has math)" in refused.value.code and "--seed 9 (the run has 1)" in refused.value.code
    with pytest.raises(SystemExit, match="--total-steps must be > 0"):
        grpo_baseline.main(grpo_baseline.parse_args(["--resume", stopped_run[0], "--total-steps", "-1"]))


def test_resume_refuses_a_run_without_a_checkpoint(stopped_run, tmp_path):
    import grpo_baseline
    copy = shutil.copytree(stopped_run[0], tmp_path / "no_checkpoint")
    os.remove(copy / "checkpoint.pt")
    before = sorted(p.name for p in copy.iterdir())
    with pytest.raises(SystemExit, match="stopped before its first checkpoint"):
        grpo_baseline.main(grpo_baseline.parse_args(["--resume", str(copy)]))
    assert sorted(p.name for p in copy.iterdir()) == before


def test_resume_never_appends_to_a_finished_run_but_extends_it_when_asked(stopped_run):
    import grpo_baseline
    finished = Path(stopped_run[1])
    outcomes = (finished / "outcomes.jsonl").read_text()
    with pytest.raises(SystemExit, match="the run is finished"):
        grpo_baseline.main(grpo_baseline.parse_args(["--resume", str(finished)]))
    assert (finished / "outcomes.jsonl").read_text() == outcomes
    resumed = Path(grpo_baseline.main(grpo_baseline.parse_args(["--resume", stopped_run[0]])))  # the stopped one
    count = lambda run, name: len((run / name).read_text().splitlines())  # goes on, and writes each record once
    assert [count(resumed, n) for n in ("outcomes.jsonl", "metrics.csv")] == [
        count(finished, n) for n in ("outcomes.jsonl", "metrics.csv")]
    with open(os.path.join(resumed, "config.json")) as f:
        assert json.load(f)["script"] == "grpo_baseline.py"


def test_a_resume_flag_list_is_what_the_readme_says():
    readme = (ROOT / "README.md").read_text()
    for name in run_tools.RESUME_FLAGS[1:]:
        assert "--" + name.replace("_", "-") in readme


def test_ctrl_c_stops_at_once_and_says_how_to_continue(tmp_path):
    import signal
    import time
    process = subprocess.Popen([sys.executable, "grpo_baseline.py", "--env", "math", "--preset", "quick",
                                "--total-steps", "50", "--checkpoint-every", "1", "--runs-dir", str(tmp_path)],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while not list(tmp_path.glob("*/checkpoint.pt")) and time.time() < deadline and process.poll() is None:
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    (run_dir,) = tmp_path.iterdir()
    assert process.returncode == 130, stderr[-2000:]
    assert f"continue it with: python grpo_baseline.py --resume {run_dir}" in stderr and "Traceback" not in stderr
