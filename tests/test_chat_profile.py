"""The chat prompt profile (`--prompt-profile chat`): a real chat model's template, `<think>`/`<action>` replies,
the format penalty, BranchOPD's protocol events for that protocol, and every script end to end with a BPE
tokenizer and a ChatML template (`policy.build_tiny_chat_model`, a random-init tiny Llama saved with
`save_pretrained` and loaded with `from_pretrained`); plus `--preset paper`, `--bf16` and
`--gradient-checkpointing`."""

import csv
import importlib
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import policy  # noqa: E402
from envs import make_env  # noqa: E402

SCRIPTS = ["grpo_baseline", "bpo", "treepo", "branchopd"]


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory):
    return policy.build_tiny_chat_model(str(tmp_path_factory.mktemp("chat_model")), ["webshop", "math", "alfworld"])


@pytest.fixture(scope="module")
def chat_tokenizer(chat_model):
    from transformers import AutoTokenizer
    return AutoTokenizer.from_pretrained(chat_model, local_files_only=True)


def test_the_tiny_chat_model_is_a_bpe_tokenizer_with_a_chatml_template(chat_tokenizer):
    assert chat_tokenizer.backend_tokenizer.model.__class__.__name__ == "BPE"
    assert chat_tokenizer.eos_token == "<|im_end|>" and chat_tokenizer.pad_token == "<|endoftext|>"
    reply = "<think>the red one</think><action>click[B0P51F5OIU]</action>"
    ids = chat_tokenizer(reply, add_special_tokens=False)["input_ids"]
    assert chat_tokenizer.decode(ids) == reply  # byte-level: lossless on anything a model writes
    assert len(ids) > len(reply.split())  # subwords, not the tiny profile's one token per word


def test_a_chat_prompt_has_the_template_the_task_recent_turns_and_admissible_actions(chat_tokenizer):
    ids = policy.build_prompt(chat_tokenizer, "alfworld", "chat", "put a clean apple in the fridge",
                              "You are in the kitchen.", [("obs 1", "go to fridge 1"), ("obs 2", "open fridge 1")],
                              window=1, admissible=["take apple 1 from countertop 1", "look"])
    text = chat_tokenizer.decode(ids)
    assert text.startswith("<|im_start|>system\n") and text.endswith("<|im_start|>assistant\n")
    assert policy.CHAT_PROTOCOL in text and "Task: put a clean apple in the fridge" in text
    assert "Observation: obs 2\nAction: open fridge 1" in text and "obs 1" not in text  # a window of 1 turn
    assert "Admissible actions:\n- take apple 1 from countertop 1\n- look" in text
    # the tiny profile is the warm start's prompt, unchanged
    tiny = policy.build_prompt(chat_tokenizer, "webshop", "tiny", "task", "obs", [], 0, None)
    assert tiny == policy.encode_prompt(chat_tokenizer, "webshop", policy.format_prompt("task", "obs", [], 0, None))


def test_parse_reply():
    assert policy.parse_reply("<think>a</think><action> search[red shirt] </action>", "webshop", "chat") == (
        "search[red shirt]", True)
    assert policy.parse_reply("<action>look</action><action>go to fridge 1</action>", "alfworld", "chat") == (
        "go to fridge 1", True)  # the last one, as verl-agent
    assert policy.parse_reply("  search[red shirt]", "webshop", "chat") == ("search[red shirt]", False)
    assert policy.parse_reply("<action>unclosed", "webshop", "chat") == ("<action>unclosed", False)
    assert policy.parse_reply("so \\boxed{4}", "math", "chat") == ("so \\boxed{4}", True)  # math: the reply
    assert policy.parse_reply("search[x]", "webshop", "tiny") == ("search[x]", True)


class ReplayingSampler:
    """FAKE sampler, named as such: it replays fixed replies, because a random-init chat model never writes a
    well-formed one, and the well-formed path (the env steps with the text inside `<action>`) must be shown."""

    def __init__(self, tokenizer, replies):
        self.tokenizer, self.replies = tokenizer, list(replies)

    def generate(self, prompts, temperature, seeds=None, choices=None):
        out = []
        for _ in prompts:
            ids = self.tokenizer(self.replies.pop(0), add_special_tokens=False)["input_ids"]
            out.append((ids + [self.tokenizer.eos_token_id], [-1.0] * (len(ids) + 1)))
        return out

    def any_rank(self, flag):  # one process
        return flag


def test_rollout_steps_the_env_with_the_action_and_charges_the_format_penalty(chat_tokenizer):
    grpo = importlib.import_module("grpo_baseline")
    args = grpo.Args(env="webshop", prompt_profile="chat", max_turns=2, history_window=1, include_admissible=False,
                     format_penalty=0.25)
    envs = [make_env("webshop", split="train") for _ in range(2)]
    sampler = ReplayingSampler(chat_tokenizer, ["<think>look</think><action>search[red shirt]</action>",
                                                "search[red shirt]",  # no tag: malformed
                                                "<action>click[Next >]</action>", "<action>click[Next >]</action>"])
    decisions, episodes = grpo.rollout(grpo.reset_starts(envs, [0, 0]), sampler, chat_tokenizer, args, 1.0)
    assert episodes[0].actions[0] == "search[red shirt]" and episodes[0].malformed_replies == 0
    assert episodes[1].actions[0] == "search[red shirt]" and episodes[1].malformed_replies == 1
    assert episodes[0].invalid_actions == 0  # the env understood the extracted action
    assert episodes[1].reward == pytest.approx(episodes[0].reward - 0.25)
    assert chat_tokenizer.decode(decisions[0].prompt_ids).endswith("<|im_start|>assistant\n")


def test_rollout_marks_the_decisions_the_env_rejected(chat_tokenizer):
    """The env's `invalid` flag lands on the decision that caused it (assign_advantages withholds its gains)."""
    grpo = importlib.import_module("grpo_baseline")
    args = grpo.Args(env="webshop", prompt_profile="chat", max_turns=2, history_window=1, include_admissible=False)
    sampler = ReplayingSampler(chat_tokenizer, ["<action>search[red shirt]</action>",
                                                "<action>click[Buy Now]</action>"])  # no Buy Now on a results page
    decisions, episodes = grpo.rollout(grpo.reset_starts([make_env("webshop", split="train")], [0]), sampler,
                                       chat_tokenizer, args, 1.0)
    assert [d.invalid for d in decisions] == [False, True] and episodes[0].invalid_actions == 1


def test_branchopd_protocol_events_for_the_chat_protocol(chat_tokenizer):
    branchopd = importlib.import_module("branchopd")
    eos = chat_tokenizer.eos_token_id
    closed = chat_tokenizer("<think>x</think><action>look</action>", add_special_tokens=False)["input_ids"]
    # the reply goes on after </action>: EOS should have come right there (a positive event)
    events = branchopd.protocol_events("alfworld", chat_tokenizer, [], closed + closed, [], 200, "chat")
    assert (len(closed), (eos,), True) in events
    assert branchopd.protocol_events("alfworld", chat_tokenizer, [], closed + [eos], [], 200, "chat") == []


@pytest.mark.parametrize("script", SCRIPTS)
def test_preset_paper_sets_the_papers_defaults_and_a_flag_still_wins(script):
    module = importlib.import_module(script)
    paper = module.parse_args(["--preset", "paper"])
    assert paper.preset == "paper"
    assert all(getattr(paper, k) == v for k, v in module.PRESETS["paper"].items())
    assert module.parse_args([]).preset == "none"
    if "beta" in module.PRESETS["paper"]:
        assert module.parse_args(["--preset", "paper", "--beta", "0.5"]).beta == 0.5
    assert module.parse_args(["--preset", "paper", "--seed", "3"]).seed == 3


def test_the_chat_profile_needs_a_chat_model():
    grpo = importlib.import_module("grpo_baseline")
    with pytest.raises(SystemExit, match="--prompt-profile chat is for chat models"):
        grpo.apply_env_defaults(grpo.Args(prompt_profile="chat"))


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS)
def test_every_script_runs_two_steps_with_a_chat_model(script, chat_model, tmp_path):
    command = [sys.executable, f"{script}.py", "--env", "webshop", "--model", chat_model, "--prompt-profile", "chat",
               "--total-steps", "2", "--tasks-per-step", "2", "--eval-tasks", "2", "--max-new-tokens", "12",
               "--max-turns", "4", "--runs-dir", str(tmp_path), "--tree-log-every", "0", "--bf16",
               "--gradient-checkpointing"]
    command += {"grpo_baseline": ["--num-generations", "2"], "bpo": ["--branch-factor", "2"],
                "treepo": ["--num-generations", "4"], "branchopd": ["--teacher", chat_model]}[script]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (run_dir,) = [os.path.join(tmp_path, d) for d in os.listdir(tmp_path)]
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        rows = [r for r in csv.DictReader(f) if r.get("malformed_reply_rate")]
    assert len(rows) == 2
    assert all(0.0 <= float(r["malformed_reply_rate"]) <= 1.0 for r in rows)
    config = json.load(open(os.path.join(run_dir, "config.json")))
    assert config["prompt_profile"] == "chat" and config["bf16"] and config["gradient_checkpointing"]
    with open(os.path.join(run_dir, "transcripts.jsonl")) as f:
        assert f.readline()  # held-out episodes, as played
