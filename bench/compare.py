"""Every algorithm from the same cached warm start, at matched returns per task and one sampled-token budget.

Runs GRPO and RLOO (`grpo_baseline.py --num-generations N`), BPO (`bpo.py`, N = 1 + M(K-1) = 7 by default),
TreePO (`treepo.py --num-generations N`) and BranchOPD (`branchopd.py`, N = 1 + B k = 7 by default; a
distillation method with its own teacher, marked as such) for each seed, then writes
`OUT_DIR/compare_SETTING.md` and `compare_SETTING.png` (`compare_SETTING_ALGO_ALGO.md` for a subset of
`--algorithms`; SETTING below).

Matched compute: every run gets the same `--token-budget` B (per env, TOKEN_BUDGETS; what its sampler decoded,
`summarize_runs.sampled_tokens`: for TreePO every tree dynamic sampling grew, dropped ones included, each shared
prefix once): a run ends at the step that crosses B, and its learning rate, evaluations and checkpoints follow the
share of B done, so every algorithm is evaluated at the same fractions of the budget. The table states the
tokens each one sampled and its overshoot, so the match can be checked.

The tables: each algorithm's steps, sampled tokens, prompt tokens, gradient steps, teacher forward tokens
(BranchOPD), training seconds, its training rollouts' success (mean over steps) and, for BPO, the share of rollout
time its sandbox snapshots and restores took; then, per held-out split, final success and reward (no reward columns
where reward equals success), sampled and greedy (mean +- sd over seeds), each algorithm's gain over the start and
its difference from GRPO as bench/stats.py gives them (target `algorithm`: seeds and tasks both drawn; estimate
[95% interval]). Verdicts (better / worse / equivalent within +-0.03 / inconclusive with the seeds that would detect
a 0.03 difference) only in the primary family, fixed in advance (docs/evidence.md): greedy success on the first
split, every gain and every difference from GRPO, Holm-adjusted together; every other cell is an estimate. Last,
the sampled tokens at which each seed first holds half of GRPO's mean greedy gain (start + (final - start) / 2 over
GRPO's runs, fixed before the others are read) for two evaluations, as a ratio to the same seed's GRPO run, with a
95% interval, shown only where every run evaluated at least 10 times before it (else the evaluation cadence sets
it). The PNG has three panels per decoding: success against steps, against sampled tokens and against training
wall-clock (rollouts and updates, evaluations excluded), one curve per algorithm with a band of one std over seeds.

The data behind a table (each run's config, metrics.csv and the per-task outcomes of its first and last
evaluations) is written to OUT_DIR/data/NAME.json.gz and committed with it; `--from-data FILE` redoes the table and
figure from that file alone (tests/test_published_tables.py checks every committed table against its data).

Resumable: each run's log and run directory are recorded in RUNS_DIR/compare_SETTING_runs.json; a finished run
is not run again, and an interrupted one continues from its checkpoint (`--resume`). SETTING is the env, then
`_sftN` for another warm start (`--sft-seed N`) and `_TAG` for `--tag TAG` (any other change passed after `--`),
so two settings never read each other's runs; the output files carry the same name, and the runs' directories
`RUNS_DIR/ENV__compare_sftN_TAG_ALGO__SEED__TIME` (`compare_ALGO` in the default setting).

    python bench/compare.py --env webshop --seeds 1 2 3
    python bench/compare.py --env webshop --seeds 1 2 3 --algorithms grpo bpo --sft-seed 1   # another warm start
    python bench/compare.py --env webshop --seeds 1 2 3 --algorithms grpo bpo bpo-lam0 bpo-lam0.5 bpo-fresh
    python bench/compare.py --env math --seeds 1 2 3 --tag lr2e-4 -- --learning-rate 2e-4     # flags for every run
    python bench/compare.py --from-data bench/results/data/compare_*.json.gz                   # the tables again
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import stats
from published import first_and_last_evaluations
from summarize_runs import eval_curve, read_rows, split_prefixes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# algorithm -> (label, script, flags); `{n}` is the matched number of returns per task
ALGORITHMS = {
    "grpo": ("GRPO", "grpo_baseline.py", ["--num-generations", "{n}"]),
    "rloo": ("RLOO", "grpo_baseline.py", ["--num-generations", "{n}", "--advantage", "rloo"]),
    "bpo": ("BPO (M=2, K=4)", "bpo.py", []),
    "treepo": ("TreePO", "treepo.py", ["--num-generations", "{n}"]),
    "branchopd": ("BranchOPD (distillation: teacher signal, no reward)", "branchopd.py", []),
    # BPO's secondary rows (docs/bpo.md, the review's open questions): only when named in --algorithms
    "bpo-lam0": ("BPO, lambda 0 (no credit to the backbone's earlier steps)", "bpo.py", ["--lam", "0"]),
    "bpo-lam0.5": ("BPO, lambda 0.5", "bpo.py", ["--lam", "0.5"]),
    "bpo-fresh": ("BPO, K fresh siblings at every branch point", "bpo.py", ["--fresh-siblings"]),
}
PRIMARY = ["grpo", "rloo", "bpo", "treepo", "branchopd"]  # the default --algorithms
METRICS = ("success_sampled", "success_greedy", "reward_sampled", "reward_greedy")
# The sampled-token budget every algorithm gets: about what GRPO's default run samples at N = 7 (its default
# steps times its tokens per step in the earlier tables: webshop 60 x 1.8k, math 300 x 1.6k, alfworld 40 x 5.4k,
# swe 30 x 3.4k)
TOKEN_BUDGETS = {"webshop": 110_000, "math": 490_000, "alfworld": 220_000, "swe": 100_000}


STATE_LOCK = threading.Lock()  # jobs run in threads: one writer of the state file at a time


def run(job: dict, state: dict, state_path: str) -> str:
    """Run one job to its end (or continue it); returns its run directory."""
    key, log_path = job["key"], job["log"]
    with STATE_LOCK:
        entry = state.setdefault(key, {})
    if entry.get("done") and os.path.exists(os.path.join(ROOT, entry["run_dir"], "metrics.csv")):
        return entry["run_dir"]
    if entry.get("done"):  # its run directory is gone (another machine, a cleaned runs/): run it again
        with STATE_LOCK:
            entry.clear()
    command = [sys.executable, *job["command"]]
    if entry.get("run_dir") and os.path.exists(os.path.join(ROOT, entry["run_dir"], "final_model")):
        save_state(state, state_path, entry, done=True)  # it finished before its state was saved: nothing to add
        return entry["run_dir"]
    if entry.get("run_dir") and os.path.exists(os.path.join(ROOT, entry["run_dir"], "checkpoint.pt")):
        command = [sys.executable, job["command"][0], "--resume", entry["run_dir"]]  # interrupted: continue
    elif entry.get("run_dir"):  # interrupted before its first checkpoint: nothing to continue, start it anew
        shutil.rmtree(os.path.join(ROOT, entry["run_dir"]), ignore_errors=True)
        with STATE_LOCK:
            entry.clear()
    offset = os.path.getsize(log_path) if os.path.exists(log_path) else 0
    with open(log_path, "a") as log:
        process = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                   env={**os.environ, "OMP_NUM_THREADS": "1"})
        while True:  # record the run directory as soon as the run prints it, so a killed comparison resumes it
            returncode = process.poll()
            text = read_log_since(log_path, offset)
            found = re.findall(r"run dir (\S+)", text)
            if found and not entry.get("run_dir"):
                save_state(state, state_path, entry, run_dir=found[0].rstrip(","))
            if returncode is not None:
                break
            time.sleep(2.0)
    if returncode != 0 or not re.search(r"^done: ", text, re.M):
        tail = "\n".join(text.splitlines()[-30:])
        raise SystemExit(f"{tail}\n{key} failed (exit {returncode}); the lines above end {log_path}. Run "
                         f"bench/compare.py again to continue it from its checkpoint.")
    save_state(state, state_path, entry, done=True)
    return entry["run_dir"]


def read_log_since(log_path: str, offset: int) -> str:
    """Only this invocation's output: a log never speaks for another run."""
    with open(log_path, "rb") as log:
        return log.read()[offset:].decode(errors="replace")


def save_state(state: dict, path: str, entry: dict, **fields) -> None:
    """Set `fields` of a job's `entry` in `state` and write the state file atomically, one thread at a time: two
    jobs started together print their run directories together, and once raced on one temporary file (the
    second `os.replace` found it gone) and on the dict being dumped while the other job changed it."""
    with STATE_LOCK:
        entry.update(fields)
        with open(path + ".tmp", "w") as f:
            json.dump(state, f, indent=1, sort_keys=True)
        os.replace(path + ".tmp", path)


def setting_name(env: str, sft_seed: int, tag: str) -> str:
    """The name of a comparison's state and output files: one per env, warm start and tagged setting."""
    return env + (f"_sft{sft_seed}" if sft_seed else "") + (f"_{tag}" if tag else "")


def exp_name(algorithm: str, sft_seed: int, tag: str) -> str:
    """A run's --exp-name, so its directory says its setting: compare_bpo, compare_sft1_bpo, compare_lam0_bpo."""
    return "compare" + setting_name("", sft_seed, tag) + "_" + algorithm


def diagnostic_cell(c: stats.Comparison) -> str:
    """`+0.0086 [-0.0021, +0.0193] inconclusive`: a diagnostic against 0 (no smallest effect: no seed count)."""
    return f"{c.estimate:+.4f} [{c.low:+.4f}, {c.high:+.4f}] {c.verdict}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="webshop", choices=["webshop", "math", "alfworld", "swe"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--algorithms", nargs="+", default=PRIMARY, choices=list(ALGORITHMS))
    parser.add_argument("--num-generations", type=int, default=7, help="returns per task N (BPO: 1 + M(K-1) = 7)")
    parser.add_argument("--token-budget", type=int, default=None,
                        help="sampled tokens of every run (default per env: TOKEN_BUDGETS)")
    parser.add_argument("--eval-every", type=int, default=None, help="evaluation interval in the scripts' nominal "
                                                                       "steps (default: the script's)")
    parser.add_argument("--eval-tasks", type=int, default=None, help="held-out tasks per split (default: the script's)")
    parser.add_argument("--delta", type=float, default=stats.DELTA, help="the equivalence margin of the verdicts")
    parser.add_argument("--sft-seed", type=int, default=0, help="the warm start every run starts from (its SFT "
                        "seed; 0 is the shipped default); non-zero names the state and output files `_sftN`")
    parser.add_argument("--tag", default="", help="names a setting changed by the flags after `--` (state and output "
                        "files `_TAG`), so its runs are not mistaken for the default setting's")
    parser.add_argument("--parallel", type=int, default=2, help="runs at a time (each with one torch thread)")
    parser.add_argument("--runs-dir", default="runs/compare")
    parser.add_argument("--out-dir", default="bench/results")
    parser.add_argument("--from-data", nargs="+", metavar="FILE", help="only redo the tables (and figures) from "
                        "committed data files (bench/results/data/compare_*.json.gz), running nothing")
    parser.add_argument("--no-figure", action="store_true", help="with --from-data: the tables only")
    parser.add_argument("script_args", nargs=argparse.REMAINDER,
                        help="after `--`: flags passed to every run (e.g. -- --cache-dir DIR --tasks-per-step 4)")
    cli = parser.parse_args()
    cli.script_args = cli.script_args[1:] if cli.script_args[:1] == ["--"] else cli.script_args
    if cli.from_data:
        for path in cli.from_data:
            if not os.path.exists(path):
                parser.error(f"--from-data {path}: no such file")
            render(read_data(path), os.path.join(ROOT, cli.out_dir), figure=not cli.no_figure)
        return
    if "grpo" not in cli.algorithms:
        parser.error("--algorithms must include grpo: the others are compared with it")
    if "--sft-seed" in cli.script_args:
        parser.error("pass the warm start as compare.py's own --sft-seed N: it names the runs' state file")
    if cli.tag and not re.fullmatch(r"[A-Za-z0-9.-]+", cli.tag):
        parser.error(f"--tag {cli.tag!r}: letters, digits, '.' and '-' only (it becomes part of file names)")
    setting = setting_name(cli.env, cli.sft_seed, cli.tag)
    budget = cli.token_budget or TOKEN_BUDGETS[cli.env]
    out_dir, runs_dir = os.path.join(ROOT, cli.out_dir), os.path.join(ROOT, cli.runs_dir)
    os.makedirs(out_dir, exist_ok=True)
    os.makedirs(os.path.join(runs_dir, "logs"), exist_ok=True)
    state_path = os.path.join(runs_dir, f"compare_{setting}_runs.json")  # beside the runs it names
    state = json.load(open(state_path)) if os.path.exists(state_path) else {}
    common = ["--env", cli.env, "--runs-dir", os.path.relpath(runs_dir, ROOT), "--token-budget", str(budget),
              "--sft-seed", str(cli.sft_seed)] + (
        ["--eval-tasks", str(cli.eval_tasks)] if cli.eval_tasks else []) + (
        ["--eval-every", str(cli.eval_every)] if cli.eval_every is not None else [])

    def command(name: str, seed: int, exp_name: str, extra: list[str]) -> list[str]:
        _, script, flags = ALGORITHMS[name]
        return [script, *common, "--seed", str(seed), "--exp-name", exp_name,
                *[f.format(n=cli.num_generations) for f in flags], *extra, *cli.script_args]

    # 1. the runs, GRPO's first seed alone (it builds the warm start every other run reads), then the rest
    jobs = [{"key": f"{name}_{seed}", "log": os.path.join(runs_dir, "logs", f"{setting}_{name}_{seed}.log"),
             "command": command(name, seed, exp_name(name, cli.sft_seed, cli.tag), [])}
            for name in cli.algorithms for seed in cli.seeds]
    run_dirs = {jobs[0]["key"]: run(jobs[0], state, state_path)}
    with ThreadPoolExecutor(cli.parallel) as pool:
        futures = {job["key"]: pool.submit(run, job, state, state_path) for job in jobs[1:]}
    run_dirs.update({key: future.result() for key, future in futures.items()})

    # 2. the data behind the table (every run's config, metrics.csv and its first and last evaluations' per-task
    # outcomes), committed beside it; then the table and figure from that file alone (`--from-data` redoes it)
    invocation = " ".join(["python bench/compare.py --env", cli.env, "--seeds", *map(str, cli.seeds)] +
                          (["--algorithms", *cli.algorithms] if cli.algorithms != PRIMARY else []) +
                          ([f"--sft-seed {cli.sft_seed}"] if cli.sft_seed else []) + ([f"--tag {cli.tag}"] if cli.tag
                                                                                       else []) +
                          [f"--{k.replace('_', '-')} {v}" for k, v in (
                              ("token_budget", cli.token_budget), ("eval_every", cli.eval_every),
                              ("eval_tasks", cli.eval_tasks)) if v is not None]
                          + (["--", *cli.script_args] if cli.script_args else []))
    name = f"compare_{setting}" + ("" if cli.algorithms == PRIMARY else "_" + "_".join(cli.algorithms))
    data = collect_data(run_dirs, {"name": name, "invocation": invocation, "env": cli.env, "seeds": cli.seeds,
                                   "algorithms": cli.algorithms, "num_generations": cli.num_generations,
                                   "budget": budget, "parallel": cli.parallel, "delta": cli.delta})
    path = write_data(data, out_dir)
    print(f"wrote {path} ({os.path.getsize(path) / 1e6:.1f} MB)")
    render(data, out_dir)


def collect_data(run_dirs: dict[str, str], setting: dict) -> dict:
    """What the table is computed from, read from the runs: per run (`ALGO_SEED`) its directory, config.json,
    metrics.csv rows (as read: strings) and the per-task outcomes of each split's first and last evaluation."""
    runs = {}
    for key, run_dir in sorted(run_dirs.items()):
        with open(os.path.join(ROOT, run_dir, "config.json")) as f:
            config = json.load(f)
        records = first_and_last_evaluations(stats.load_outcomes(os.path.join(ROOT, run_dir)))
        runs[key] = {"run_dir": run_dir, "config": {k: config[k] for k in ("seed", "eval_splits", "model", "provenance")
                                                    if k in config},
                     "metrics": read_rows(os.path.join(ROOT, run_dir)),
                     "outcomes": [{k: r[k] for k in ("step", "split", "decoding", "sample", "task_id", "won", "reward")}
                                  for r in records]}
    return {**setting, "runs": runs}


def write_data(data: dict, out_dir: str) -> str:
    """OUT_DIR/data/NAME.json.gz, written atomically, byte-identical for the same data (no time stamp)."""
    path = os.path.join(out_dir, "data", f"{data['name']}.json.gz")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(json.dumps(data, sort_keys=True, separators=(",", ":")).encode())
    os.replace(path + ".tmp", path)
    return path


def read_data(path: str) -> dict:
    with gzip.open(path, "rt") as f:
        return json.load(f)


def sd(values) -> float:
    """The sample standard deviation over seeds (n - 1); 0 for one seed."""
    return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def fmt(values) -> str:
    return f"{np.mean(values):.3f} +- {sd(values):.3f}"


def total(rows: list[dict], key: str) -> float | None:
    """A metrics.csv column summed over a run's steps; None where the run did not log it."""
    values = [float(r[key]) for r in rows if r.get(key)]
    return float(sum(values)) if values else None


def compute_cell(runs: list[dict], key: str) -> str:
    totals = [total(run["metrics"], key) for run in runs]
    return "not logged" if any(t is None for t in totals) else f"{np.mean(totals):.0f} +- {sd(totals):.0f}"


def render(data: dict, out_dir: str, figure: bool = True) -> str:
    """The table (OUT_DIR/NAME.md) and, with `figure`, the learning curves (NAME.png), from `data` alone; returns
    the table's text."""
    os.makedirs(out_dir, exist_ok=True)
    algorithms, seeds, env = data["algorithms"], data["seeds"], data["env"]
    runs = {name: [data["runs"][f"{name}_{seed}"] for seed in seeds] for name in algorithms}
    config = runs["grpo"][0]["config"]
    outcomes = {name: {seed: run["outcomes"] for seed, run in zip(seeds, runs[name])} for name in algorithms}
    # where reward is success (math, ALFWorld: 1 for a win, else 0), a reward column would repeat the success one
    reward_is_success = all(float(r["reward"]) == float(r["won"]) for arm in outcomes.values()
                            for records in arm.values() for r in records)
    metrics = [m for m in METRICS if not (reward_is_success and m.startswith("reward"))]
    prefixes = split_prefixes(runs["grpo"][0]["metrics"])
    curves = {(name, key): [eval_curve(run["metrics"], key) for run in runs[name]]
              for name in algorithms for key in [f"{p}_{m}" for p in prefixes for m in METRICS]}
    warm_starts = sorted({os.path.basename(os.path.normpath(run["config"]["provenance"].get(
        "model_dir", run["config"]["model"]))) for arm in runs.values() for run in arm})
    who = "All algorithms" if algorithms == PRIMARY else ", ".join(algorithms)
    first_split = config["eval_splits"][0]
    lines = [f"# {who} on {env}, N = {data['num_generations']} returns per task, {data['budget']} sampled tokens each",
             "", f"`{data['invocation']}` (each run with OMP_NUM_THREADS=1, {data['parallel']} at a time, on "
             f"{config['provenance'].get('cpu', 'an unrecorded CPU')}). Warm start of every run: "
             f"{', '.join(f'`{w}`' for w in warm_starts)} (the cache key names it); {len(seeds)} seed(s); mean +- sd "
             f"(n - 1) over seeds. Regenerate this file from its data: `python bench/compare.py --from-data "
             f"bench/results/data/{data['name']}.json.gz`.", "",
             f"Differences and gains: estimate [95% interval] from bench/stats.py, target `algorithm` (seeds and tasks "
             f"both drawn, crossed; paired over tasks and seeds). Verdicts only in the primary family, fixed before "
             f"the runs (docs/evidence.md): greedy success on `{first_split}`, each algorithm's gain over the start and "
             f"each difference from GRPO, Holm-adjusted together; every other cell is an estimate without a verdict."
             + (" Reward equals success on this env, so it has no columns of its own." if reward_is_success else ""),
             "", "| algorithm | steps | sampled tokens per run (overshoot) | prompt tokens per run | gradient steps per "
             "run | teacher forward tokens per run | training seconds per run | training rollouts won (mean over "
             "steps) | snapshots and restores, % of rollout time (mean; per-step range) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name in algorithms:
        rows = [run["metrics"] for run in runs[name]]
        steps = [len([r for r in run_rows if r.get("sampled_tokens")]) for run_rows in rows]
        c = curves[(name, f"eval_{METRICS[0]}")]
        tokens, seconds = [x["tokens"][-1] for x in c], [x["seconds"][-1] for x in c]
        overshoot = [float(r["budget_overshoot"]) for run_rows in rows for r in run_rows if r.get("budget_overshoot")]
        won = [np.mean([float(r["train_success"]) for r in run_rows if r.get("train_success")]) for run_rows in rows]
        snapshot = [float(r["snapshot_percent"]) for run_rows in rows for r in run_rows if r.get("snapshot_percent")]
        snapshot_cell = (f"{np.mean(snapshot):.1f}; {min(snapshot):.1f}-{max(snapshot):.1f}" if snapshot
                         else "no snapshots")  # BPO's column: the other scripts never restore a sandbox
        teacher = (compute_cell(runs[name], "teacher_forward_tokens") if ALGORITHMS[name][1] == "branchopd.py"
                   else "no teacher")
        lines.append(f"| {ALGORITHMS[name][0]} | {np.mean(steps):.1f} | {np.mean(tokens):.0f} +- {sd(tokens):.0f} "
                     f"({np.mean(overshoot):.0f}) | {compute_cell(runs[name], 'prompt_tokens')} | "
                     f"{compute_cell(runs[name], 'gradient_steps')} | {teacher} | {np.mean(seconds):.0f} +- "
                     f"{sd(seconds):.0f} | {fmt(won)} | {snapshot_cell} |")
    for name in [n for n in algorithms if ALGORITHMS[n][1] == "bpo.py"]:  # the review's two open questions
        diagnostic = lambda key: stats.mean_over_seeds(  # each seed's mean over its steps, then over seeds
            [np.mean([float(r[key]) for r in run["metrics"] if r.get(key)] or [math.nan]) for run in runs[name]])
        lines.append(f"\n{ALGORITHMS[name][0]}, each seed's mean over its steps, then over seeds: advantage of the "
                     f"steps before a branch point {diagnostic_cell(diagnostic('pre_branch_advantage'))}; backbone's "
                     f"return minus its siblings' {diagnostic_cell(diagnostic('backbone_minus_siblings'))}")
    sys.path.insert(0, ROOT)
    from grpo_baseline import split_prefix  # the column prefix each script logs a split under

    arm = lambda name, split, which, metric, decoding: stats.arm(outcomes[name], which, split, decoding, metric)
    comparisons = {}  # (split, metric, name, "gain" | "against") -> Comparison
    for split in config["eval_splits"]:
        for metric_name in metrics:
            metric, decoding = metric_name.split("_")
            for name in algorithms:
                comparisons[(split, metric_name, name, "gain")] = stats.compare(
                    arm(name, split, 0, metric, decoding), arm(name, split, -1, metric, decoding), data["delta"])
                if name != "grpo":
                    comparisons[(split, metric_name, name, "against")] = stats.compare(
                        arm("grpo", split, -1, metric, decoding), arm(name, split, -1, metric, decoding), data["delta"])
    family = [key for key in comparisons if key[:2] == (first_split, "success_greedy")]
    comparisons.update(zip(family, stats.holm([comparisons[key] for key in family], data["delta"])))
    cell_of = lambda key: comparisons[key].cell() if key in family else comparisons[key].interval()

    for i, split in enumerate(config["eval_splits"]):
        prefix = split_prefix(split, i == 0)
        lines += ["", f"## held-out split `{split}` (columns `{prefix}_*`)", "",
                  "| algorithm | " + " | ".join(metrics) + " |", "|---|" + "---|" * len(metrics)]
        start = [fmt(np.array([c["value"][0] for c in curves[("grpo", f"{prefix}_{metric}")]])) for metric in metrics]
        lines.append("| SFT start (step 0, GRPO's runs) | " + " | ".join(start) + " |")
        for name in algorithms:
            cells = []
            for metric_name in metrics:
                final = np.array([c["value"][-1] for c in curves[(name, f"{prefix}_{metric_name}")]])
                cell = f"{fmt(final)}; over the start {cell_of((split, metric_name, name, 'gain'))}"
                if name != "grpo":
                    cell += f"; against GRPO {cell_of((split, metric_name, name, 'against'))}"
                cells.append(cell)
            lines.append(f"| {ALGORITHMS[name][0]} | " + " | ".join(cells) + " |")
        lines += reach_lines(curves, algorithms, prefix)
    lines += ["", "Runs: " + ", ".join(f"{key}: `{run['run_dir']}`" for key, run in sorted(data["runs"].items()))]
    if figure:
        draw(curves, data, out_dir)
    lines += ["", f"![learning curves]({data['name']}.png)"]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out_dir, f"{data['name']}.md"), "w") as f:
        f.write(text)
    print(text)
    return text


FEWEST_EVALUATIONS = 10  # before a threshold is held: with fewer, a reach ratio is set by the evaluation cadence


def reach_lines(curves: dict, algorithms: list[str], prefix: str) -> list[str]:
    """Sampled tokens to hold half of GRPO's mean greedy gain (fixed from GRPO's runs) for two evaluations, as a
    ratio to the same seed's GRPO run, where every run evaluated at least FEWEST_EVALUATIONS times before it."""
    grpo_curves = curves[("grpo", f"{prefix}_success_greedy")]
    start, final = (float(np.mean([c["value"][k] for c in grpo_curves])) for k in (0, -1))
    if final <= start:
        return ["", f"GRPO's mean greedy success did not rise ({start:.3f} -> {final:.3f}): no threshold to compare "
                "the sampled tokens to reach."]
    threshold = start + (final - start) / 2
    reach = {name: [stats.tokens_to_reach(c["tokens"], c["value"], threshold)
                    for c in curves[(name, f"{prefix}_success_greedy")]] for name in algorithms}
    before = min((int((c["tokens"] <= r).sum()) for name in algorithms
                  for c, r in zip(curves[(name, f"{prefix}_success_greedy")], reach[name]) if math.isfinite(r)),
                 default=FEWEST_EVALUATIONS)  # no run held it: the ratio line says so
    head = (f"Sampled tokens to hold half of GRPO's mean greedy gain ({start:.3f} + ({final:.3f} - {start:.3f}) / 2 = "
            f"{threshold:.3f}) at two consecutive evaluations")
    if before < FEWEST_EVALUATIONS:
        return ["", f"{head}: not shown, a run held it after {before} evaluations (fewer than {FEWEST_EVALUATIONS}: the "
                "ratio would be set by the evaluation cadence; evaluate more often early to measure it)."]
    return ["", f"{head}, as a ratio to the same seed's GRPO run (geometric mean [95% interval]):"] + [
        f"- {ALGORITHMS[name][0]}: {stats.reach_ratio(reach[name], reach['grpo'])}" for name in algorithms
        if name != "grpo"]


def draw(curves: dict, data: dict, out_dir: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(15, 8), sharey="row", squeeze=False)
    for row, decoding in enumerate(("sampled", "greedy")):
        for col, (axis, label) in enumerate((("steps", "gradient step"), ("tokens", "sampled tokens"),
                                             ("seconds", "training wall-clock, s (no evaluations)"))):
            ax = axes[row][col]
            for name in data["algorithms"]:
                c = curves[(name, f"eval_success_{decoding}")]
                length = min(len(x["value"]) for x in c)
                x = np.mean([x[axis][:length] for x in c], axis=0)
                values = np.array([x_["value"][:length] for x_ in c])
                ax.plot(x, values.mean(0), marker="o", ms=3, label=ALGORITHMS[name][0])
                ax.fill_between(x, values.mean(0) - values.std(0), values.mean(0) + values.std(0), alpha=0.15)
            ax.set_xlabel(label)
            ax.grid(alpha=0.3)
            if col == 0:
                ax.set_ylabel(f"held-out success, {decoding}")
    axes[0][0].legend(fontsize=8)
    seeds = f"{len(data['seeds'])} seed" + ("s" if len(data["seeds"]) > 1 else "")
    fig.suptitle(f"{data['env']}: every algorithm from the same warm start, N = {data['num_generations']} returns per "
                 f"task, {data['budget']} sampled tokens each ({seeds}, band: one std)", fontsize=10)
    fig.tight_layout()
    png = os.path.join(out_dir, f"{data['name']}.png")
    fig.savefig(png, dpi=110)
    plt.close(fig)
    print(f"wrote {png}")

if __name__ == "__main__":
    main()
