"""The README's first commands timed as a newcomer runs them: each script with `--preset quick` on each env, a fresh
process each (imports, the shipped warm start, 2 RL steps of 2 tasks, 10 held-out tasks evaluated at the start and
the end), wall-clock from the shell's point of view.

    python bench/quick_commands.py                          # math and webshop (writes bench/results/quick_commands.txt)
    python bench/quick_commands.py --envs alfworld swe

Run it on an otherwise idle machine: the seconds are what the README quotes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
SCRIPTS = ("grpo_baseline.py", "bpo.py", "treepo.py", "branchopd.py")


def main() -> None:
    from policy import cpu_model
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=["math", "webshop"])
    parser.add_argument("--scripts", nargs="+", default=list(SCRIPTS), choices=SCRIPTS)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "quick_commands.txt"))
    cli = parser.parse_args()
    lines = [f"# python bench/quick_commands.py --envs ENV ... --scripts SCRIPT ...   ({cpu_model()}, {os.cpu_count()} "
             f"CPUs, one command at a time, nothing else running)", f"{'command':<55} {'exit':>4} {'seconds':>8}"]
    print("\n".join(lines), flush=True)
    with tempfile.TemporaryDirectory() as runs_dir:
        for env in cli.envs:
            for script in cli.scripts:
                command = [script, "--env", env, "--preset", "quick"]
                start = time.time()
                out = subprocess.run([sys.executable, *command, "--runs-dir", runs_dir], cwd=ROOT,
                                     capture_output=True, text=True)
                line = f"{'python ' + ' '.join(command):<55} {out.returncode:>4} {time.time() - start:>8.1f}"
                if out.returncode != 0:
                    line += "   " + (out.stderr.strip().splitlines() or [""])[-1][:200]
                lines.append(line)
                print(line, flush=True)
    if os.path.exists(cli.out):  # the rows of the commands not run this time stay, in their order
        ran = {line[:55].rstrip() for line in lines[2:]}
        with open(cli.out) as f:
            kept = [line for line in f.read().splitlines()[2:] if line[:55].rstrip() not in ran]
        order = [f"python {script} --env {env} --preset quick" for env in ("math", "webshop", "alfworld", "swe")
                 for script in SCRIPTS]
        lines[2:] = sorted(kept + lines[2:], key=lambda line: order.index(line[:55].rstrip())
                           if line[:55].rstrip() in order else len(order))
    with open(cli.out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
