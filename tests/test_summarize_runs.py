"""bench/summarize_runs.py on a hand-written metrics.csv: the gain verdict and, for branchopd.py runs, the
teacher's lead over the student at the start."""

import csv
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def write_run(run_dir: Path, teacher_greedy: float, teacher_greedy_se: float) -> None:
    run_dir.mkdir()
    (run_dir / "config.json").write_text(json.dumps({"seed": 1}))
    evaluation = {"eval_success_sampled": 0.10, "eval_success_sampled_se": 0.02, "eval_success_greedy": 0.20,
                  "eval_success_greedy_se": 0.03, "eval_reward_sampled": 0.10, "eval_reward_greedy": 0.20}
    rows = [{"step": 0, "teacher_success_sampled": 0.12, "teacher_success_sampled_se": 0.02,
             "teacher_success_greedy": teacher_greedy, "teacher_success_greedy_se": teacher_greedy_se},
            {"step": 0, **evaluation},
            {"step": 1, "step_seconds": 1.0, "decisions": 8, "trained_decisions": 8, "invalid_action_rate": 0.0,
             "decision_tokens": 100},
            {"step": 2, **evaluation, "eval_success_greedy": 0.50}]
    with open(run_dir / "metrics.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(dict.fromkeys(k for r in rows for k in r)))
        writer.writeheader()
        writer.writerows(rows)


def summarize(*run_dirs: Path) -> str:
    return subprocess.run([sys.executable, str(ROOT / "bench" / "summarize_runs.py"), *map(str, run_dirs)],
                          capture_output=True, text=True, check=True).stdout


def test_teacher_lead_and_gain_verdicts(tmp_path):
    write_run(tmp_path / "strong", teacher_greedy=0.40, teacher_greedy_se=0.04)
    write_run(tmp_path / "weak", teacher_greedy=0.25, teacher_greedy_se=0.04)
    strong, weak = summarize(tmp_path / "strong"), summarize(tmp_path / "weak")
    # lead 0.20 against SE hypot(0.04, 0.03) = 0.05: beyond twice it; 0.05 against 0.05: within noise
    assert "greedy, primary held-out split): 0.400, the student's 0.200: lead +0.200 +- 0.050 (beyond" in strong
    assert "lead +0.050 +- 0.050 (within noise)" in weak
    assert "sampled, primary held-out split): 0.120, the student's 0.100: lead +0.020 +- 0.028 (within" in strong
    # the student's greedy success 0.20 -> 0.50, SE hypot(0.03, 0.03) = 0.042
    assert "success_greedy   start 0.200" in strong and "learns" in strong.split("success_greedy   start")[1]


def test_teacher_lead_over_seeds_keeps_one_evaluations_error(tmp_path):
    # three seeds of the same teacher and the same student on the same tasks repeat one evaluation: the lead
    # +0.100 keeps SE hypot(0.04, 0.03) = 0.050 (within noise), not 0.050 / sqrt(3) = 0.029 (beyond twice it)
    for seed in (1, 2, 3):
        write_run(tmp_path / f"run{seed}", teacher_greedy=0.30, teacher_greedy_se=0.04)
    out = summarize(*(tmp_path / f"run{seed}" for seed in (1, 2, 3)))
    assert "greedy, primary held-out split): 0.300, the student's 0.200: lead +0.100 +- 0.050 (within noise)" in out
