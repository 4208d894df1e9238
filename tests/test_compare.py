"""bench/compare.py end to end on math with tiny settings: every algorithm from one warm start at one sampled-token
budget, a table of verdicts and a figure, and an interrupted comparison continues where it stopped."""

import csv
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def compare(command: list[str]) -> None:
    """Run bench/compare.py; on failure the assertion shows the end of its output (the failing run's log)."""
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, (done.stdout[-3000:] + done.stderr[-6000:])


@pytest.mark.slow
def test_compare_gives_every_algorithm_one_token_budget_writes_the_table_and_resumes(tmp_path, cache_dir):
    out, budget = tmp_path / "out", 700
    # RLOO is GRPO's script with one flag (its line in compare.py's table of algorithms): left out for CI time
    command = [sys.executable, "bench/compare.py", "--env", "math", "--algorithms", "grpo", "bpo", "treepo", "branchopd",
               "--seeds", "1", "2", "--token-budget", str(budget),
               "--eval-every", "1", "--eval-tasks", "2", "--runs-dir", str(tmp_path / "runs"), "--out-dir", str(out),
               "--", "--cache-dir", cache_dir, "--sft-steps", "20", "--sft-episodes", "40", "--tasks-per-step", "2",
               "--minibatch-size", "16", "--total-steps", "3", "--eval-samples", "2"]
    compare(command)
    name = "compare_math_grpo_bpo_treepo_branchopd"  # a table of other algorithms than the default five
    table = (out / f"{name}.md").read_text()
    labels = {"grpo": "GRPO", "bpo": "BPO (M=2, K=4)", "treepo": "TreePO",
              "branchopd": "BranchOPD (distillation: teacher signal, no reward)"}
    state = json.loads((tmp_path / "runs" / "compare_math_runs.json").read_text())
    assert sorted(state) == sorted(f"{n}_{s}" for n in labels for s in (1, 2)) and all(e["done"] for e in state.values())
    for key, entry in state.items():  # every run ends at the step that crosses the one budget
        with open(os.path.join(ROOT, entry["run_dir"], "metrics.csv")) as f:
            steps = [r for r in csv.DictReader(f) if r.get("sampled_tokens")]
        total = sum(float(r["sampled_tokens"]) for r in steps)
        assert total >= budget and total - float(steps[-1]["sampled_tokens"]) < budget, key
        # TreePO's sampled tokens are what its sampler decoded (dynamic sampling's dropped trees included)
        assert all(r["sampled_tokens"] == (r.get("decoded_tokens") or r["decision_tokens"]) for r in steps), key
    for algorithm, label in labels.items():
        assert re.search(rf"^\| {re.escape(label)} \| [\d.]+ \| \d+ \+- \d+ \(\d+\) \|", table, re.M), (algorithm, table)
    assert (out / f"{name}.png").stat().st_size > 10_000
    # the data file alone gives the same table (what tests/test_published_tables.py checks for every committed table)
    data = out / "data" / f"{name}.json.gz"
    assert 0 < data.stat().st_size < 2_000_000
    again = subprocess.run([sys.executable, "bench/compare.py", "--from-data", str(data), "--out-dir",
                            str(tmp_path / "again"), "--no-figure"], cwd=ROOT, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-3000:]
    assert (tmp_path / "again" / f"{name}.md").read_text() == table
    assert re.search(r"^\| SFT start \(step 0, GRPO's runs\) \| \d\.\d{3}", table, re.M)
    # bench/stats.py: every cell an estimate and its interval; a verdict only in the primary family (greedy success
    # on the first split: every gain and every difference from GRPO, Holm together); reward is success on math
    verdicts = r"(better|worse|equivalent within \+-0\.03|inconclusive)"
    interval = r"[+-]\d\.\d{3} \[[+-]\d\.\d{3}, [+-]\d\.\d{3}\]"
    rows = {line.split(" | ")[0][2:]: line.split(" | ")[1:] for line in table.splitlines()
            if line.startswith("| ") and "; over the start" in line}
    header = next(line for line in table.splitlines() if line.startswith("| algorithm | success"))
    assert header == "| algorithm | success_sampled | success_greedy |", header  # no reward columns on math
    assert re.fullmatch(rf"\d\.\d{{3}} \+- \d\.\d{{3}}; over the start {interval} {verdicts}.*", rows["GRPO"][1])
    assert re.fullmatch(rf".*; against GRPO {interval} {verdicts}.*", rows["BPO (M=2, K=4)"][1])
    assert re.fullmatch(rf"\d\.\d{{3}} \+- \d\.\d{{3}}; over the start {interval}; against GRPO {interval}",
                        rows["BPO (M=2, K=4)"][0])  # sampled success: an estimate, no verdict
    assert re.search(r"Sampled tokens to hold half of GRPO's mean greedy gain .* at two consecutive evaluations|"
                     r"GRPO's mean greedy success did not rise", table), table
    diagnostic = r"[+-]\d\.\d{4} \[[+-]\d\.\d{4}, [+-]\d\.\d{4}\] (above 0|below 0|0 in every seed|inconclusive.*)"
    assert re.search(r"^BPO \(M=2, K=4\), each seed's mean over its steps, then over seeds: advantage of the steps "
                     rf"before a branch point {diagnostic}; backbone's return minus its siblings' {diagnostic}$",
                     table, re.M), table
    def column(name: str, key: str) -> list[list[float]]:  # per seed, the metrics.csv values of one column
        runs = []
        for seed in (1, 2):
            with open(os.path.join(ROOT, state[f"{name}_{seed}"]["run_dir"], "metrics.csv")) as f:
                runs.append([float(r[key]) for r in csv.DictReader(f) if r.get(key)])
        return runs

    won = [sum(run) / len(run) for run in column("grpo", "train_success")]  # training success: mean over steps
    assert re.search(rf"^\| GRPO \| .* \| {np.mean(won):.3f} \+- {np.std(won, ddof=1):.3f} \| no snapshots \|$",
                     table, re.M), table
    shares = [share for run in column("bpo", "snapshot_percent") for share in run]  # BPO's snapshot share of rollouts
    assert shares and re.search(rf"^\| BPO \(M=2, K=4\) \| .* \| {np.mean(shares):.1f}; {min(shares):.1f}-"
                                rf"{max(shares):.1f} \|$", table, re.M), table

    # finished runs are not run again, also one whose state was lost after it finished (a resume of a finished run
    # is refused: it would append a second end to it)
    state["bpo_1"]["done"] = False
    (tmp_path / "runs" / "compare_math_runs.json").write_text(json.dumps(state))
    logs = tmp_path / "runs" / "logs"
    sizes = {p.name: p.stat().st_size for p in logs.iterdir()}
    compare(command)
    assert {p.name: p.stat().st_size for p in logs.iterdir()} == sizes
    assert json.loads((tmp_path / "runs" / "compare_math_runs.json").read_text())["bpo_1"]["done"]


def test_a_job_reads_only_its_own_output_from_a_shared_log(tmp_path):
    """Regression: a log that already holds another run's `run dir` and `done:` lines (two envs' calibration
    runs once shared one log name) must not lend them to this job."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import compare
    log = tmp_path / "calibrate_grpo.log"
    log.write_text("run dir runs/compare/math__calibrate_grpo__1__1\ndone: runs/compare/math__calibrate_grpo__1__1\n")
    state, state_path = {}, str(tmp_path / "state.json")
    failing = {"key": "calibrate_grpo", "log": str(log),
               "command": ["-c", "print('run dir runs/compare/webshop__calibrate_grpo__1__2'); raise SystemExit(1)"]}
    with pytest.raises(SystemExit, match="calibrate_grpo failed"):
        compare.run(failing, state, state_path)
    assert state["calibrate_grpo"] == {"run_dir": "runs/compare/webshop__calibrate_grpo__1__2"}
    finishing = {**failing, "command": ["-c", "print('run dir runs/compare/webshop__calibrate_grpo__1__3'); "
                                                "print('done: runs/compare/webshop__calibrate_grpo__1__3')"]}
    state["calibrate_grpo"] = {}
    assert compare.run(finishing, state, state_path) == "runs/compare/webshop__calibrate_grpo__1__3"
    assert json.load(open(state_path))["calibrate_grpo"]["done"]


def test_the_run_directory_is_recorded_while_the_run_is_still_running(tmp_path):
    """Regression: the run directory was recorded only after the run ended, so killing the comparison (and its
    runs) mid-run lost it, and the next invocation started that run again from step 0 instead of resuming."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import compare
    state_path = tmp_path / "state.json"
    marker = tmp_path / "recorded"
    # the job prints its run dir, then waits until the state file on disk names it (or gives up after 20 s)
    waiting = ("import json, os, sys, time\n"
               "print('run dir runs/compare/math__compare_bpo__1__7', flush=True)\n"
               f"path = {str(state_path)!r}\n"
               "for _ in range(200):\n"
               "    if os.path.exists(path) and json.load(open(path)).get('bpo_1', {}).get('run_dir'):\n"
               f"        open({str(marker)!r}, 'w').close(); break\n"
               "    time.sleep(0.1)\n"
               "print('done: runs/compare/math__compare_bpo__1__7')\n")
    job = {"key": "bpo_1", "log": str(tmp_path / "bpo_1.log"), "command": ["-c", waiting]}
    assert compare.run(job, {}, str(state_path)) == "runs/compare/math__compare_bpo__1__7"
    assert marker.exists(), "the run directory reached the state file only after the run had ended"


def test_jobs_ending_together_never_break_the_state_file(tmp_path):
    """Regression: jobs run in threads and were phase-locked (both poll every 2 s from the same start), so two
    of them could save the state file in the same instant: one temporary file for both (the second
    `os.replace` found it gone) and a dict dumped while the other thread changed it."""
    import threading
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import compare
    state, state_path, errors = {}, str(tmp_path / "state.json"), []

    def job(key: str) -> None:
        try:
            entry = state.setdefault(key, {})
            for i in range(300):
                compare.save_state(state, state_path, entry, run_dir=f"runs/{key}", step=i)
        except Exception as error:  # noqa: BLE001 - any failure of a save is the bug
            errors.append(repr(error))

    threads = [threading.Thread(target=job, args=(f"job{k}",)) for k in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[:3]
    assert json.load(open(state_path)) == {f"job{k}": {"run_dir": f"runs/job{k}", "step": 299} for k in range(6)}


def test_another_warm_start_or_setting_gets_its_own_state_and_output_files():
    """Runs from --sft-seed 1 (or a tagged setting) must not be read as the default setting's finished runs."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import compare
    names = {compare.setting_name("webshop", s, t) for s in (0, 1, 2) for t in ("", "lam0")}
    assert compare.setting_name("webshop", 0, "") == "webshop" and len(names) == 6
    runs = {compare.exp_name("bpo", s, t) for s in (0, 1, 2) for t in ("", "lam0")}  # run directory names differ too
    assert compare.exp_name("bpo", 0, "") == "compare_bpo" and compare.exp_name("bpo", 1, "") == "compare_sft1_bpo"
    assert len(runs) == 6
    for flags, message in ((["--", "--sft-seed", "1"], "compare.py's own --sft-seed"),
                           (["--tag", "a b"], "letters, digits")):
        done = subprocess.run([sys.executable, "bench/compare.py", "--env", "math", *flags], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and message in done.stderr, done.stderr
