"""What a researcher copies into their own project: one algorithm script, `policy.py`, `run_tools.py` and
`envs/`."""

import ast
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = ["grpo_baseline.py", "bpo.py", "treepo.py", "branchopd.py"]


def local_modules() -> set[str]:
    return {name[:-3] for name in os.listdir(ROOT) if name.endswith(".py")} | {"envs", "bench", "tests"}


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_script_imports_only_policy_run_tools_and_envs_from_this_project(script):
    with open(os.path.join(ROOT, script)) as f:
        tree = ast.parse(f.read())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
    ours = imported & local_modules()
    assert ours == {"envs", "policy", "run_tools"}, f"{script} imports {ours}"


@pytest.mark.slow
def test_a_copied_script_runs_in_a_fresh_directory(tmp_path):
    """The README's recipe: copy the script, policy.py, run_tools.py and envs/ (no other file of this repository)."""
    project = tmp_path / "my_project"
    project.mkdir()
    shutil.copy(os.path.join(ROOT, "grpo_baseline.py"), project / "my_grpo.py")
    for module in ("policy.py", "run_tools.py"):
        shutil.copy(os.path.join(ROOT, module), project)
    shutil.copytree(os.path.join(ROOT, "envs"), project / "envs",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "packages", "tasks.jsonl"))
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([sys.executable, "my_grpo.py", "--env", "math", "--total-steps", "1", "--sft-steps", "5",
                             "--sft-episodes", "20", "--tasks-per-step", "2", "--num-generations", "2",
                             "--eval-tasks", "2", "--tree-log-every", "0"],
                            cwd=project, env={**environment, "OMP_NUM_THREADS": "1"}, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "done: runs/math__my_grpo__1__" in result.stdout
    run_dirs = os.listdir(project / "runs")
    assert len(run_dirs) == 1 and os.path.exists(project / "runs" / run_dirs[0] / "learning_curve.png")
