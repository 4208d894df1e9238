"""The data behind the results files that bench/summarize_runs.py and bench/compare_runs.py print, committed so that
a reader can recompute every number in them without the runs.

    python bench/published.py save bench/results/grpo_math_3_seeds.txt     # after its runs, from the runs it names
    python bench/published.py check                                         # every results file that has its data
    python bench/published.py regenerate bench/results/grpo_math_3_seeds.txt  # its outputs again, from the data

A results file records commands as `$ COMMAND   (a note)` lines, each followed by what it printed, up to the next
`$` line. `save` reads the runs that the file's `$ python bench/summarize_runs.py ...` and `$ python
bench/compare_runs.py ...` lines name (their globs, from the project root) and writes, per run, its config.json,
metrics.csv and the per-task outcomes of each held-out split's first and last evaluation (all those commands read) to
bench/results/data/NAME.runs.json.gz. `check` and `regenerate` write those runs back under a temporary directory at
the same relative paths, run each such command there with this checkout's bench/, and compare its output with the
file's (check: exit 1 on any difference) or put it in the file (regenerate). Other commands (timings,
measurements) are left as they are: they are not computed from runs. Comparison tables (bench/compare.py) keep
their own data (`bench/compare.py --from-data`).
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")
RECOMPUTED = ("python bench/summarize_runs.py ", "python bench/compare_runs.py ")  # what the data can redo


def first_and_last_evaluations(records: list[dict]) -> list[dict]:
    """The outcome records of each split's first and last evaluated step (BranchOPD's teacher records, at step 0,
    included): every statistic the tables print uses these two."""
    kept = set()
    for split in {r["split"] for r in records}:
        steps = sorted({r["step"] for r in records if r["split"] == split})
        kept |= {(split, steps[0]), (split, steps[-1])}
    return [r for r in records if (r["split"], r["step"]) in kept]


def commands(text: str) -> list[tuple[int, str]]:
    """(line index, command) of each `$ ` line that the data can recompute."""
    found = []
    for i, line in enumerate(text.splitlines()):
        command = line[2:].split("   (")[0].strip() if line.startswith("$ ") else ""
        if command.startswith(RECOMPUTED):
            found.append((i, command))
    return found


def data_path(results_file: str) -> str:
    name = os.path.splitext(os.path.basename(results_file))[0]
    return os.path.join(RESULTS, "data", f"{name}.runs.json.gz")


def save(results_file: str) -> str:
    with open(results_file) as f:
        named = commands(f.read())
    if not named:
        raise SystemExit(f"{results_file}: no `$ python bench/summarize_runs.py` or `compare_runs.py` line")
    run_dirs = sorted({run_dir for _, command in named for pattern in shlex.split(command)[2:]
                       if not pattern.startswith("-") for run_dir in glob.glob(os.path.join(ROOT, pattern))})
    if not run_dirs:
        raise SystemExit(f"{results_file}: none of the runs its commands name is here (run them first)")
    runs = {}
    for run_dir in run_dirs:
        run = {}
        for name in ("config.json", "metrics.csv", "outcomes.jsonl"):
            path = os.path.join(run_dir, name)
            if os.path.exists(path):
                with open(path) as f:
                    run[name] = f.read()
        if "outcomes.jsonl" in run:
            records = [json.loads(line) for line in run["outcomes.jsonl"].splitlines() if line.strip()]
            run["outcomes.jsonl"] = "".join(json.dumps(r) + "\n" for r in first_and_last_evaluations(records))
        runs[os.path.relpath(run_dir, ROOT)] = run
    path = data_path(results_file)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(json.dumps({"runs": runs}, sort_keys=True).encode())
    os.replace(path + ".tmp", path)
    return path


def recompute(results_file: str) -> tuple[str, str]:
    """(the file's text, the text its commands give from its data)."""
    with open(results_file) as f:
        text = f.read()
    with gzip.open(data_path(results_file), "rt") as f:
        runs = json.load(f)["runs"]
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("$ ")] + [len(lines)]
    with tempfile.TemporaryDirectory() as place:
        for relative, files in runs.items():
            os.makedirs(os.path.join(place, relative))
            for name, content in files.items():
                with open(os.path.join(place, relative, name), "w") as f:
                    f.write(content)
        os.symlink(os.path.join(ROOT, "bench"), os.path.join(place, "bench"))
        for i, command in reversed(commands(text)):  # from the end: replacing a block keeps earlier indices
            out = subprocess.run(sys.executable + command[len("python"):], shell=True, cwd=place, capture_output=True,
                                 text=True, timeout=120)
            if out.returncode != 0:
                raise SystemExit(f"{results_file}: `{command}` failed on its data:\n{out.stderr[-2000:]}")
            end = next(s for s in starts if s > i)
            block = lines[i + 1:end]
            blank = len(block) - len("\n".join(block).rstrip().splitlines())  # blank lines before the next `$` stay
            lines[i + 1:end] = out.stdout.rstrip("\n").splitlines() + [""] * blank
    return text, "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["save", "check", "regenerate"])
    parser.add_argument("files", nargs="*", help="results files (check: default every one with its data)")
    cli = parser.parse_args()
    if cli.action == "save":
        for results_file in cli.files:
            print(f"wrote {save(results_file)}")
        return
    files = cli.files or sorted(os.path.join(RESULTS, os.path.basename(p).replace(".runs.json.gz", ".txt"))
                                for p in glob.glob(os.path.join(RESULTS, "data", "*.runs.json.gz")))
    differing = []
    for results_file in files:
        if not os.path.exists(data_path(results_file)):
            raise SystemExit(f"{results_file}: no data ({data_path(results_file)}): `bench/published.py save` it")
        text, again = recompute(results_file)
        if cli.action == "regenerate" and again != text:
            with open(results_file, "w") as f:
                f.write(again)
            print(f"rewrote {results_file}")
        elif again != text:
            differing.append(results_file)
            print(f"{results_file}: differs from what its data gives (bench/published.py regenerate shows how)")
    print(f"{len(files) - len(differing)} of {len(files)} results files are what their data gives")
    if differing and cli.action == "check":
        raise SystemExit(1)


if __name__ == "__main__":
    main()
