"""What every algorithm script shares: flag validation, one source of truth for the prompt settings and
the warm start, and a warm-start cache key that follows every source the demonstrations depend on."""

import csv
import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import bpo
import grpo_baseline
from policy import WARM_START_DEFAULTS, load_policy

ROOT = Path(__file__).resolve().parents[1]
SMALL = dict(sft_steps=20, sft_episodes=40, tasks_per_step=2, eval_tasks=6, minibatch_size=16)
# zero or -1 is meaningful for these flags and accepted (0 only; no flag accepts -1)
ZERO_ALLOWED = {"seed", "sft_seed", "history_window", "warmup_steps", "beta", "eval_every", "checkpoint_every",
                "tree_log_every", "sft_mistake_prob", "delta_min", "lam",
                "format_penalty"}


def numeric_fields(args_class):
    return [f.name for f in dataclasses.fields(args_class) if any(t in str(f.type) for t in ("int", "float"))]


@pytest.mark.parametrize("script", [grpo_baseline, bpo])
def test_numeric_flags_at_zero_and_minus_one_are_refused_by_name_or_meaningful(script):
    names = numeric_fields(script.Args)
    assert {"warmup_steps", "eval_every", "checkpoint_every", "total_steps", "minibatch_size"} <= set(names)
    accepted = set()
    for name in names:
        for value in (0, -1):
            try:
                script.apply_env_defaults(script.Args(env="math", **{name: value}))
            except SystemExit as error:
                assert "--" + name.replace("_", "-") in str(error), (name, value, str(error))
            else:
                assert value == 0, (name, value)
                accepted.add(name)
    assert accepted == ZERO_ALLOWED & set(names)


def test_zero_warmup_eval_and_checkpoint_flags_run(tmp_path, cache_dir):
    """--warmup-steps 0 is no warmup; --eval-every 0 evaluates at the start and the end only;
    --checkpoint-every 0 checkpoints at the end only. Nothing divides by zero."""
    run_dir = grpo_baseline.main(grpo_baseline.Args(
        env="math", total_steps=3, warmup_steps=0, eval_every=0, checkpoint_every=0, num_generations=4,
        learning_rate=1e-4, cache_dir=cache_dir, runs_dir=str(tmp_path), **SMALL))
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        rows = list(csv.DictReader(f))
    assert [int(r["step"]) for r in rows if r.get("eval_success_greedy")] == [0, 3]
    first = next(r for r in rows if r.get("learning_rate"))
    assert float(first["learning_rate"]) == pytest.approx(1e-4)  # cosine(0) = 1, no warmup factor
    assert os.path.exists(os.path.join(run_dir, "checkpoint.pt"))


def test_prompt_settings_come_from_the_warm_start(tmp_path, cache_dir):
    """A prompt flag that differs from the warm start's either builds a warm start trained on such prompts
    (--model tiny) or is refused (a model directory records the prompts it was trained on)."""
    common = dict(steps=SMALL["sft_steps"], episodes=SMALL["sft_episodes"])
    _, _, default_dir, prompt = load_policy("tiny", "math", {}, cache_dir, 0, **common)
    assert prompt == {"history_window": 0, "include_admissible": WARM_START_DEFAULTS["math"].get(
        "include_admissible", False), "recent_actions": 1}
    _, _, window_dir, window_prompt = load_policy("tiny", "math", {}, cache_dir, 0, history_window=1, **common)
    assert window_dir != default_dir and window_prompt["history_window"] == 1
    with open(os.path.join(window_dir, "prompt.json")) as f:
        assert json.load(f)["history_window"] == 1
    assert load_policy(window_dir, "math", {})[3]["history_window"] == 1  # the directory's own setting
    with pytest.raises(SystemExit, match="--history-window 0; --history-window 2 would sample prompts"):
        load_policy(default_dir, "math", {}, history_window=2)
    # the RL script samples with the warm start's settings and records them
    run_dir = grpo_baseline.main(grpo_baseline.Args(env="math", model=window_dir, total_steps=1, num_generations=2,
                                                    eval_every=0, runs_dir=str(tmp_path), **SMALL))
    with open(os.path.join(run_dir, "config.json")) as f:
        config = json.load(f)
    assert config["history_window"] == 1 and config["provenance"]["model_dir"] == window_dir
    assert {"git_commit", "git_dirty", "packages", "torch_threads", "device"} <= set(config["provenance"])


def warm_start_key_of(tree: Path, env: str) -> str:
    code = ("import policy; print(policy.warm_start_dir(policy.WarmStartConfig(env=%r), {}, 'cache'))" % env)
    return subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True, text=True,
                          check=True).stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("env, path, helper", [
    ("math", "envs/math.py", "def _finish("),
    ("webshop", "envs/webshop/search.py", "def analyze("),
])
def test_editing_a_helper_of_the_demonstrations_changes_the_warm_start_key(tmp_path, env, path, helper):
    """Not only demo_action/expert_action: a helper they call (answer formatting, the search engine)."""
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "envs", tree / "envs", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "policy.py", tree / "policy.py")
    before = warm_start_key_of(tree, env)  # (a key is stable from one process to the next: test_warm_starts.py)
    source = (tree / path).read_text()
    assert helper in source
    (tree / path).write_text(source.replace(helper, helper.replace("(", "_original(") + "*args):\n    pass\n\n\n" +
                                            helper, 1))
    assert warm_start_key_of(tree, env) != before


def test_install_script_names_a_missing_toolchain(tmp_path):
    """Without a C++ compiler, make and cmake, install.sh stops before pip and says what to install."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("dirname", "python"):  # everything install.sh needs before its check, and nothing else
        os.symlink(shutil.which(tool) or sys.executable, bin_dir / tool)
    result = subprocess.run([shutil.which("bash"), str(ROOT / "install.sh")], env={"PATH": str(bin_dir)},
                            capture_output=True,
                            text=True)
    assert result.returncode == 1
    assert "not found: g++ make cmake" in result.stderr and "build-essential cmake" in result.stderr
