"""A refactor changes no result: the same short run of every algorithm script, in two trees, gives the same metrics.

Each tree (a git worktree of the commit before, and this one) runs every script on math and on WebShop from the
shipped warm start (seed 1, 4 steps, evaluations at steps 0, 2 and 4 on 12 held-out tasks, checkpoints at 2 and 4,
one torch thread); then every pair of metrics.csv files is compared cell by cell, the timing columns left out
(their values are wall-clock seconds), and so are its outcomes.jsonl (every held-out play) and trees.jsonl (the
logged trees, BPO's snapshot seconds left out). A finished run (its final_model/ written) is not run again.

    git worktree add /tmp/before COMMIT
    python bench/same_results.py /tmp/before . --out /tmp/same_results    # prints one line per run and a verdict
"""
from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import subprocess
import sys

SCRIPTS = ("grpo_baseline", "bpo", "treepo", "branchopd")
ENVS = ("math", "webshop")
TIMING = {"step_seconds", "rollout_tokens_per_second", "snapshot_percent", "snapshot_s"}  # wall-clock values
FLAGS = ["--seed", "1", "--total-steps", "4", "--eval-every", "2", "--eval-tasks", "12", "--checkpoint-every", "2"]


def run(tree: str, out: str, env: str, script: str) -> str:
    """The run's metrics.csv (run once: a finished run is reused)."""
    runs_dir = os.path.join(out, env, script)
    done = glob.glob(os.path.join(runs_dir, "*", "final_model"))
    if not done:
        os.makedirs(runs_dir, exist_ok=True)
        with open(runs_dir + ".log", "w") as log:
            subprocess.run([sys.executable, f"{script}.py", "--env", env, *FLAGS, "--runs-dir",
                            os.path.abspath(runs_dir)], cwd=tree, stdout=log, stderr=subprocess.STDOUT, check=True,
                           env={**os.environ, "OMP_NUM_THREADS": "1"})
        done = glob.glob(os.path.join(runs_dir, "*", "final_model"))
    return os.path.join(os.path.dirname(done[0]), "metrics.csv")


def same_records(before: str, after: str) -> bool:
    """Two jsonl files hold the same records, their timing fields left out."""
    read = lambda path: [{k: v for k, v in json.loads(line).items() if k not in TIMING} for line in open(path)]
    return os.path.exists(before) == os.path.exists(after) and (not os.path.exists(before) or
                                                                read(before) == read(after))


def compare(before: str, after: str) -> tuple[bool, str]:
    rows = [list(csv.reader(open(path))) for path in (before, after)]
    if rows[0][0] != rows[1][0]:
        return False, "columns differ"
    keep = [i for i, name in enumerate(rows[0][0]) if name not in TIMING]
    cells = [[[row[i] if i < len(row) else "" for i in keep] for row in table] for table in rows]
    different = sum(a != b for x, y in zip(*cells) for a, b in zip(x, y)) + abs(len(cells[0]) - len(cells[1]))
    records = {name: same_records(*(os.path.join(os.path.dirname(path), name) for path in (before, after)))
               for name in ("outcomes.jsonl", "trees.jsonl")}
    line = (f"metrics.csv {len(rows[0]) - 1} rows x {len(rows[0][0])} columns ({len(rows[0][0]) - len(keep)} timing or "
            f"ignored columns left out): " + ("identical" if not different else f"{different} cells DIFFERENT") + "; " +
            ", ".join(f"{name} {'identical' if same else 'DIFFERENT'}" for name, same in records.items()))
    return not different and all(records.values()), line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", help="the tree before (a git worktree)")
    parser.add_argument("after", help="the tree after")
    parser.add_argument("--out", default="runs/same_results", help="where both trees' runs go (before/, after/)")
    parser.add_argument("--scripts", nargs="+", default=list(SCRIPTS), choices=SCRIPTS)
    parser.add_argument("--envs", nargs="+", default=list(ENVS), choices=ENVS)
    parser.add_argument("--ignore", nargs="*", default=[], help="metrics.csv columns a change between the trees "
                        "is meant to change (each is named in the output)")
    cli = parser.parse_args()
    TIMING.update(cli.ignore)
    for tree in (cli.before, cli.after):
        if not all(os.path.exists(os.path.join(tree, f"{s}.py")) for s in cli.scripts):
            raise SystemExit(f"{tree}: not a tree with {', '.join(s + '.py' for s in cli.scripts)}")
    same = True
    for env in cli.envs:
        for script in cli.scripts:
            paths = [run(tree, os.path.join(cli.out, side), env, script)
                     for tree, side in ((cli.before, "before"), (cli.after, "after"))]
            equal, line = compare(*paths)
            same &= equal
            print(f"{env:8s} {script:14s} {line}", flush=True)
    left_out = f" and {', '.join(cli.ignore)}" if cli.ignore else ""
    print(f"every run identical apart from its timing values{left_out}" if same else "NOT identical")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
