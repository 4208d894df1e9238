"""BranchOPD's token saving: held-out quality against the student tokens generated, per OPD mode.

Reads finished branchopd.py runs (their metrics.csv), groups them by mode (branch, vanilla,
multi_rollout) and, at every evaluated step, pairs the cumulative student tokens sampled in training
(`decision_tokens`: main trajectories and continuations, every shared prefix once) with held-out greedy
success and the held-out teacher-student KL (mean +- std over seeds). Writes a PNG with those two panels
and prints, per mode, the final values and the student tokens spent, relative to multi-rollout's.

    python bench/branchopd_tokens.py runs/branchopd_math --out bench/results/branchopd_tokens_math.png
"""

from __future__ import annotations

import argparse
import glob
import json
import os

import numpy as np

from summarize_runs import eval_curve, read_rows

MODES = ("branch", "vanilla", "multi_rollout")
LABELS = {"branch": "BranchOPD", "vanilla": "vanilla OPD (1 trajectory)", "multi_rollout": "multi-rollout OPD"}


def curve(run_dir: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(steps, cumulative student tokens, greedy success, held-out KL) at every evaluated step."""
    rows = read_rows(run_dir)
    success, kl = eval_curve(rows, "eval_success_greedy"), eval_curve(rows, "eval_kl_sampled")
    assert list(kl["steps"]) == list(success["steps"]), run_dir  # both are logged at every evaluation
    return success["steps"], success["tokens"], success["value"], kl["value"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs_root", help="a directory of branchopd.py run directories")
    parser.add_argument("--out", default=None, help="PNG path (default: RUNS_ROOT/branchopd_tokens.png)")
    cli = parser.parse_args()
    by_mode: dict[str, list[tuple]] = {}
    env = None
    for run_dir in sorted(glob.glob(os.path.join(cli.runs_root, "*", "metrics.csv"))):
        run_dir = os.path.dirname(run_dir)
        with open(os.path.join(run_dir, "config.json")) as f:
            config = json.load(f)
        if not os.path.isdir(os.path.join(run_dir, "final_model")):
            continue  # unfinished
        env = config["env"]
        by_mode.setdefault(config["mode"], []).append(curve(run_dir))
    if not by_mode:
        raise SystemExit(f"no finished branchopd.py runs under {cli.runs_root}")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    final = {}
    for mode in [m for m in MODES if m in by_mode]:
        curves = by_mode[mode]
        length = min(len(c[0]) for c in curves)
        tokens = np.mean([c[1][:length] for c in curves], axis=0)
        panels = ((axes[0], 2, "held-out greedy success"), (axes[1], 3, "held-out KL(student || teacher)"))
        for ax, column, name in panels:
            values = np.array([c[column][:length] for c in curves])
            mean, std = values.mean(0), values.std(0)
            ax.plot(tokens, mean, marker="o", label=f"{LABELS[mode]} ({len(curves)} seeds)")
            ax.fill_between(tokens, mean - std, mean + std, alpha=0.2)
            ax.set_xlabel("student tokens generated in training (cumulative)")
            ax.set_ylabel(name)
            ax.grid(alpha=0.3)
        final[mode] = (len(curves), tokens[-1], np.array([c[2][length - 1] for c in curves]),
                       np.array([c[3][length - 1] for c in curves]))
    axes[0].legend(fontsize=8)
    axes[1].set_yscale("log")  # one seed's spike would flatten the rest
    fig.suptitle(f"BranchOPD on {env}: quality against student tokens (mean +- std over seeds)", fontsize=10)
    fig.tight_layout()
    out = cli.out or os.path.join(cli.runs_root, "branchopd_tokens.png")
    fig.savefig(out, dpi=120)

    reference = final.get("multi_rollout", (0, np.nan))[1]
    print(f"{'mode':16} {'seeds':>5} {'student tokens':>15} {'vs multi-rollout':>17} {'greedy success':>16} "
          f"{'held-out KL':>13}")
    for mode, (seeds, tokens, success, kl) in final.items():
        print(f"{mode:16} {seeds:5d} {tokens:15.0f} {tokens / reference:17.3f} "
              f"{success.mean():8.3f} +- {success.std():.3f} {np.nanmean(kl):7.3f} +- {np.nanstd(kl):.3f}")
    print(f"figure: {out}")


if __name__ == "__main__":
    main()
