"""The chat prompt profile (`--prompt-profile chat`): a real chat model's template, `<think>`/`<action>` replies,
the format penalty, BranchOPD's protocol events for that protocol, and every script end to end with a BPE
tokenizer and a ChatML template (`policy.build_tiny_chat_model`, a random-init tiny Llama saved with
`save_pretrained` and loaded with `from_pretrained`: tests/test_gpu_check.py runs bench/gpu_check.py --smoke, two
steps of every script with `--bf16` and `--gradient-checkpointing`); plus `--preset paper`."""

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
    import torch
    torch.manual_seed(0)  # the same random init on every run
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


def test_reply_layout_finds_the_action_inside_the_protocol(chat_tokenizer):
    eos = chat_tokenizer.eos_token_id
    encode = lambda text: chat_tokenizer(text, add_special_tokens=False)["input_ids"]
    for reply, action in (("<think>the red one</think><action>click[B0P51F5OIU]</action>", "click[B0P51F5OIU]"),
                          ("<think>x</think><action> look </action>", "look"),
                          ("<think>x</think>search[red shoes]", "search[red shoes]"),  # malformed: after </think>
                          ("<think>x</think><action>go to fridge 1", "go to fridge 1")):  # unclosed
        ids = encode(reply) + [eos]
        first, end, protocol = policy.reply_layout(chat_tokenizer, ids, "webshop", "chat")
        assert chat_tokenizer.decode(ids[first:end]).strip() == action, reply
        assert protocol[-1] and not any(protocol[first:end])  # EOS is protocol, the action is not
        tags = "".join(chat_tokenizer.decode([t]) for t, p in zip(ids, protocol) if p and t != eos)
        assert set(tags) <= set("</>thinkaco"), tags  # only tag characters are protocol
    ids = encode("search[x]") + [eos]  # the tiny profile and math: the whole reply is the action
    assert policy.reply_layout(chat_tokenizer, ids, "webshop", "tiny")[:2] == (0, len(ids))
    assert policy.reply_layout(chat_tokenizer, ids, "math", "chat")[:2] == (0, len(ids))


SURE_REPLY = "<think>sure</think><action>search[shoes]</action>"
UNSURE_REPLIES = ["<think>unsure</think><action>click[Next >]</action>",
                  "<think>unsure</think><action>search[red shoes]</action>",
                  "<think>unsure</think><action>click[Back to Search]</action>"]


@pytest.fixture(scope="module")
def protocol_trained_chat_model(chat_model, tmp_path_factory):
    """The tiny chat model after a short SFT (about 5 s) on replies after the assistant header, behind random
    prefixes: `<think>sure</think>` is followed by one action, `<think>unsure</think>` by one of three. The
    protocol tokens (`<think>`) become near-certain at every decision, as in a real chat model, while the action's
    first token is certain after `sure` and uncertain (about log 3) after `unsure`."""
    import random
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(chat_model, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(chat_model, local_files_only=True)
    header = tokenizer("<|im_start|>assistant\n", add_special_tokens=False)["input_ids"]
    replies = [tokenizer(r, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
               for r in [SURE_REPLY] * 3 + UNSURE_REPLIES]
    rng, threads = random.Random(0), torch.get_num_threads()
    torch.manual_seed(0)
    torch.set_num_threads(1)  # tiny matrices: one thread is fastest, and immune to a busy machine
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(150):  # left-padded rows: every reply ends at the last column
        rows = [[rng.randrange(len(tokenizer)) for _ in range(rng.randrange(61))] + header + r for r in replies]
        length, width = max(map(len, rows)), max(map(len, replies))
        input_ids = torch.tensor([[tokenizer.pad_token_id] * (length - len(r)) + r for r in rows])
        attention_mask = torch.tensor([[0] * (length - len(r)) + [1] * len(r) for r in rows])
        targets = torch.tensor([[-100] * (width - len(r)) + r for r in replies])
        logits = model(input_ids=input_ids, attention_mask=attention_mask, logits_to_keep=width + 1,
                       position_ids=(attention_mask.cumsum(-1) - 1).clamp(min=0)).logits[:, :-1]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    torch.set_num_threads(threads)
    directory = str(tmp_path_factory.mktemp("protocol_trained"))
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def test_bpo_measures_the_entropy_where_the_action_begins(protocol_trained_chat_model):
    """Chat replies start with `<think>`, whose entropy is near 0 at every decision; measured there, BPO's entropy
    schedule would branch at the earliest decisions. Measured at the first token inside `<action>` (or over the
    action's tokens, `--entropy-mode mean`), the first decision's certain action ranks below the later decisions'
    uncertain ones, and the branch point is a later decision."""
    import random
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    bpo = importlib.import_module("bpo")
    tokenizer = AutoTokenizer.from_pretrained(protocol_trained_chat_model, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(protocol_trained_chat_model, local_files_only=True).eval()
    replies = [SURE_REPLY, UNSURE_REPLIES[0], UNSURE_REPLIES[0]] + [UNSURE_REPLIES[1]] * 6  # backbone, forks
    for mode in ("first", "mean"):
        args = bpo.Args(env="webshop", prompt_profile="chat", max_turns=3, history_window=1, include_admissible=False,
                        num_branch_points=1, branch_factor=2, delta_min=0, branch_level="turn", entropy_mode=mode)
        envs = [make_env("webshop", split="train")]
        decisions, episodes, branch_points, _ = bpo.grow_tree(envs, [3], model, ReplayingSampler(tokenizer, replies),
                                                              tokenizer, args, random.Random(0))
        with torch.no_grad():
            _, entropy, mask = bpo.action_logprobs(model, decisions[:3], tokenizer.pad_token_id, 1.0)
        assert all(entropy[d][mask[d]][0] < 0.2 for d in range(3))  # `<` of `<think>`: certain everywhere
        backbone, expected = episodes[0], []
        for d in backbone.decisions:  # what BPO ranked: the entropy at (or over) the action inside `<action>`
            first, end, _ = policy.reply_layout(tokenizer, decisions[d].action_ids, "webshop", "chat")
            action = entropy[d][mask[d]][first:end]
            assert first > 0
            expected.append(float(action[0] if mode == "first" else action.mean()))
        assert backbone.entropies == pytest.approx(expected, abs=1e-5), mode
        assert backbone.entropies[0] < min(backbone.entropies[1:]), (mode, backbone.entropies)
        assert branch_points[0] in ([1], [2]), mode  # not simply the first decision


def test_branchopd_fork_scores_ignore_the_protocol_tokens(chat_model, chat_tokenizer):
    """BranchOPD scores every generated token of a main trajectory for a fork; a protocol tag's tokens (`<think>`,
    `</action>`, ...) are not eligible: a fork there would resample the protocol, not a decision."""
    import random
    import torch
    from transformers import AutoModelForCausalLM
    branchopd = importlib.import_module("branchopd")
    model = AutoModelForCausalLM.from_pretrained(chat_model, local_files_only=True).eval()
    args = branchopd.Args(env="webshop", prompt_profile="chat", max_turns=2, history_window=1,
                          include_admissible=False, num_forks=2, window=8)
    sampler = ReplayingSampler(chat_tokenizer, [SURE_REPLY, UNSURE_REPLIES[0]])
    decisions, episodes = branchopd.rollout(branchopd.reset_starts([make_env("webshop", split="train")], [3]), sampler,
                                            chat_tokenizer, args, 1.0)
    branchopd.attach_teacher_logprobs(model, decisions, chat_tokenizer.pad_token_id)
    with torch.no_grad():
        _, entropy, mask = branchopd.action_logprobs(model, decisions, chat_tokenizer.pad_token_id, 1.0)
    forks = branchopd.select_forks(episodes[0], decisions, entropy, mask, chat_tokenizer, args, random.Random(0))
    protocol = [policy.reply_layout(chat_tokenizer, decisions[d].action_ids, "webshop", "chat")[2]
                for d in episodes[0].decisions]
    assert sum(map(sum, protocol)) > 4  # the replies do hold protocol tokens
    assert episodes[0].fork_scores and forks
    assert not any(protocol[turn][position] for turn, position in episodes[0].fork_scores)
    assert not any(protocol[turn][position] for turn, position in forks)


def test_branchopd_excess_think_markers_are_negative_events(chat_tokenizer):
    """Appendix B.5: an excess `</think>` (none open before it), leading or repeated, is a harmful protocol event."""
    branchopd = importlib.import_module("branchopd")
    eos = chat_tokenizer.eos_token_id
    encode = lambda text: chat_tokenizer(text, add_special_tokens=False)["input_ids"]
    clean = encode("<think>x</think><action>look</action>") + [eos]
    assert branchopd.protocol_events("alfworld", chat_tokenizer, [], clean, [], 200, "chat") == []
    leading = encode("</think><action>look</action>") + [eos]
    assert chat_tokenizer.decode([leading[2]]) == "think"  # `<`, `/`, `think`, `>`: `<` and `/` begin `</action>` too
    assert branchopd.protocol_events("alfworld", chat_tokenizer, [], leading, [], 200, "chat") == [
        (2, (leading[2],), False)]
    twice = encode("<think>x</think></think></think><action>look</action>") + [eos]
    events = branchopd.protocol_events("alfworld", chat_tokenizer, [], twice, [], 200, "chat")
    starts = [p for p, _, positive in events if not positive]
    assert len(starts) == 2 and all(chat_tokenizer.decode(twice[p:]).startswith("think") for p in starts)
    # in a continuation, an excess marker in the fixed prefix is not the continuation's event
    assert branchopd.protocol_events("alfworld", chat_tokenizer, leading[:3], leading[3:], [], 200, "chat") == []
