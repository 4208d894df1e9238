"""BranchOPD's pieces on hand-built inputs: fork scores and eligibility, the teacher signal and its alignment
with the student's sampled ids, shared prefixes supervised once, protocol events and the PBR loss; and
short end-to-end runs of every mode."""

import csv
import math
import os
import random

import numpy as np
import pytest
import torch

import branchopd
from branchopd import (Args, Decision, Episode, assign_advantages, attach_teacher_logprobs,
                       pbr_loss, protocol_events, select_forks)
from envs import make_env
from policy import build_tiny_model, build_word_tokenizer, load_teacher, tokenizer_words
from tests.tree_checks import check_trees

WORDS = "search click buy now red blue shoes shirt the a of and one two three [SEP]".split()


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    tokenizer = build_word_tokenizer(WORDS)
    return build_tiny_model(tokenizer).eval(), build_tiny_model(tokenizer).eval(), tokenizer


def ids_of(tokenizer, text):
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def test_teacher_log_probs_are_aligned_with_the_sampled_ids(tiny):
    student, teacher, tokenizer = tiny
    prompt = [tokenizer.bos_token_id] + ids_of(tokenizer, "buy red shoes")
    action = ids_of(tokenizer, "click[blue shirt]") + [tokenizer.eos_token_id]
    decision = Decision(prompt, action, [0.0] * len(action))
    attach_teacher_logprobs(teacher, [decision, Decision(prompt[:2], action[:3], [0.0] * 3)], tokenizer.pad_token_id)
    with torch.no_grad():
        logits = teacher(input_ids=torch.tensor([prompt + action])).logits[0].log_softmax(-1)
    expected = [float(logits[len(prompt) + t - 1, token]) for t, token in enumerate(action)]  # t-1 predicts t
    assert decision.teacher_logprobs == pytest.approx(expected, abs=1e-5)
    assert decision.teacher_logprobs[-1] == pytest.approx(float(logits[len(prompt) + len(action) - 2,
                                                                       tokenizer.eos_token_id]), abs=1e-5)


def test_teacher_with_another_vocabulary_is_refused(tmp_path, tiny):
    _, _, tokenizer = tiny
    other = build_word_tokenizer(WORDS + ["green"])
    build_tiny_model(other).save_pretrained(tmp_path)
    other.save_pretrained(tmp_path)
    with pytest.raises(SystemExit, match="another vocabulary than the student"):
        load_teacher(str(tmp_path), "webshop", tokenizer, {})


def test_teacher_margin_says_whether_the_teacher_beats_the_student():
    teacher = {"teacher_success_sampled": 0.50, "teacher_success_sampled_se": 0.03,
               "teacher_success_greedy": 0.14, "teacher_success_greedy_se": 0.049}
    student = {"eval_success_sampled": 0.30, "eval_success_sampled_se": 0.03,
               "eval_success_greedy": 0.04, "eval_success_greedy_se": 0.028}
    sampled, greedy = branchopd.teacher_margin(teacher, student).split("; ")
    assert "+0.200 +- 0.042, beyond" in sampled  # 0.20 > 2 * hypot(0.03, 0.03)
    assert "+0.100 +- 0.056, NOT beyond" in greedy  # 0.10 < 2 * hypot(0.049, 0.028)


def test_signal_is_the_clipped_log_ratio_per_token():
    d = Decision([1], [5, 6, 7], [-1.0, -2.0, -0.5], teacher_logprobs=[-0.5, -9.0, -0.5])
    clipped = assign_advantages([d], [], Args(signal_clip=5.0))
    assert d.advantages == pytest.approx([0.5, -5.0, 0.0])  # log pT - log pS, clipped to [-5, 5]
    assert clipped == pytest.approx(1 / 3)


def hand_built(entropies, student, teacher, action_ids):
    decision = Decision([1], action_ids, student, teacher_logprobs=teacher)
    entropy = torch.tensor([entropies])
    mask = torch.ones_like(entropy, dtype=torch.bool)
    return [decision], Episode(0, 0, decisions=[0]), entropy, mask


def test_fork_scores_and_eligibility_on_math():
    tokenizer = build_word_tokenizer([str(d) for d in range(10)] + ["+", "=", ";", "\\boxed{", "}"], digits_apart=True)
    action = ids_of(tokenizer, "1 2 + 3 4 = 4 6 ; \\boxed{46}") + [tokenizer.eos_token_id]
    n = len(action)
    boxed = next(i for i in range(n) if tokenizer.decode(action[:i + 1]).endswith("\\"))  # where the answer starts
    entropies = [0.1] * n
    entropies[2], entropies[5], entropies[boxed + 1] = 3.0, 2.0, 9.0  # the answer's digits are not eligible
    decisions, episode, entropy, mask = hand_built(entropies, [-1.0] * n, [-1.0] * n, action)
    args = Args(env="math", num_forks=2, fork_selection="entropy", min_fork_gap=2)
    assert select_forks(episode, decisions, entropy, mask, tokenizer, args, random.Random(0)) == [(0, 2), (0, 5)]
    args.min_fork_gap = 4  # 5 is within 4 tokens of 2: the next best eligible position far enough
    forks = select_forks(episode, decisions, entropy, mask, tokenizer, args, random.Random(0))
    assert forks[0] == (0, 2) or forks[1] == (0, 2)
    assert all(abs(a[1] - b[1]) >= 4 for a in forks for b in forks if a != b)
    assert all(position < boxed for _, position in forks)
    # disagreement: the teacher disagrees only at the end of the working, which the window carries back
    teacher = [-1.0] * n
    teacher[boxed - 1] = -8.0
    decisions, episode, entropy, mask = hand_built([0.1] * n, [-1.0] * n, teacher, action)
    args = Args(env="math", num_forks=1, fork_selection="disagreement", window=3)
    assert select_forks(episode, decisions, entropy, mask, tokenizer, args, random.Random(0))[0][1] >= boxed - 3


def test_agent_forks_pick_turns_then_positions_among_the_turns_best():
    tokenizer = build_word_tokenizer(WORDS)
    eos = tokenizer.eos_token_id
    turns = [ids_of(tokenizer, t) + [eos] for t in ("search[red shoes]", "click[one]", "click[buy now]")]
    decisions = [Decision([1], a, [-1.0] * len(a), teacher_logprobs=[-1.0] * len(a)) for a in turns]
    width = max(len(a) for a in turns)
    entropy = torch.zeros(3, width)
    mask = torch.zeros(3, width, dtype=torch.bool)
    for row, a in enumerate(turns):
        mask[row, width - len(a):] = True
    entropy[1, width - len(turns[1]) + 2] = 5.0  # turn 1, position 2 is the most uncertain token
    episode = Episode(0, 0, decisions=[0, 1, 2])
    args = Args(env="webshop", num_forks=1, fork_selection="entropy", turn_top=1)
    assert select_forks(episode, decisions, entropy, mask, tokenizer, args, random.Random(0)) == [(1, 2)]
    args.fork_selection, args.alpha = "turn_initial", 1.0  # turns chosen by the score, the fork at their first token
    assert select_forks(episode, decisions, entropy, mask, tokenizer, args, random.Random(0)) == [(1, 0)]
    args.num_forks, args.fork_selection = 5, "mixed"  # more forks than turns: one per turn
    forks = select_forks(episode, decisions, entropy, mask, tokenizer, args, random.Random(0))
    assert [t for t, _ in forks] == [0, 1, 2]


def test_protocol_events():
    tokenizer = build_word_tokenizer(tokenizer_words(make_env("webshop", split="test"), "webshop"))
    eos = tokenizer.eos_token_id
    clean = ids_of(tokenizer, "click[Buy Now]") + [eos]
    assert protocol_events("webshop", tokenizer, [], clean, [], 24) == []
    second = ids_of(tokenizer, "click[Buy Now]click[Next >]") + [eos]  # a second action after a complete one
    events = protocol_events("webshop", tokenizer, [], second, [], 24)
    assert events == [(len(ids_of(tokenizer, "click[Buy Now]")), (eos,), True)]
    tag = ids_of(tokenizer, "search[red [SEP] shoes]") + [eos]
    events = protocol_events("webshop", tokenizer, [], tag, [], 24)
    assert len(events) == 1 and not events[0][2] and tag[events[0][0]] in events[0][1]
    capped = ids_of(tokenizer, "search[red red red red")
    assert protocol_events("webshop", tokenizer, [], capped, [], len(capped)) == [(len(capped) - 1, (eos,), True)]
    # a continuation: positions count from its own first token; the prefix's part is the main trajectory's
    prefix = ids_of(tokenizer, "click[Buy Now]")
    assert protocol_events("webshop", tokenizer, prefix, [eos], [], 24) == []
    assert protocol_events("webshop", tokenizer, prefix, ids_of(tokenizer, " now") + [eos], [], 24) == [
        (0, (eos,), True)]
    # ALFWorld: a complete admissible command; math: a boxed answer
    admissible = ["go to cabinet 1", "go to cabinet 10", "look"]
    alf = build_word_tokenizer("go to cabinet look 1 10 the".split())
    assert protocol_events("alfworld", alf, [], ids_of(alf, "go to cabinet 1 the") + [alf.eos_token_id], admissible,
                           12) == [(4, (alf.eos_token_id,), True)]
    math_tokenizer = build_word_tokenizer([str(d) for d in range(10)] + ["\\boxed{", "}", ";"], digits_apart=True)
    answer = ids_of(math_tokenizer, "\\boxed{4} ;") + [math_tokenizer.eos_token_id]
    boxed_length = len(ids_of(math_tokenizer, "\\boxed{4}"))
    assert protocol_events("math", math_tokenizer, [], answer, [], 64)[0][0] == boxed_length


def test_pbr_loss_zero_without_events_and_by_hand(tiny):
    student, _, tokenizer = tiny
    eos = tokenizer.eos_token_id
    d = Decision([tokenizer.bos_token_id], ids_of(tokenizer, "click[one] two") + [eos], [0.0] * 7)
    loss, count = pbr_loss(student, [d], tokenizer.pad_token_id, 1.0)
    assert float(loss) == 0.0 and count == 0
    position, sep = 4, tuple(tokenizer.convert_tokens_to_ids(["[SEP]", "Ġ[SEP]"]))
    d.events = [(position, (eos,), True), (position, sep, False)]
    loss, count = pbr_loss(student, [d], tokenizer.pad_token_id, 1.0)
    with torch.no_grad():
        full = student(input_ids=torch.tensor([d.prompt_ids + d.action_ids])).logits[0].log_softmax(-1)
    at = full[len(d.prompt_ids) + position - 1]
    expected = (-float(at[eos]) - math.log(1 - float(at[list(sep)].exp().sum()))) / 2
    assert count == 2 and float(loss.detach()) == pytest.approx(expected, abs=1e-4)


SMALL = dict(sft_steps=20, sft_episodes=40, tasks_per_step=2, eval_tasks=4, eval_every=2, minibatch_size=16,
             total_steps=2)


@pytest.mark.parametrize("env, mode", [("math", "branch"), ("webshop", "branch"), ("math", "vanilla"),
                                       ("webshop", "multi_rollout")])
def test_branchopd_runs_end_to_end(env, mode, tmp_path, cache_dir):
    run_dir = branchopd.main(Args(env=env, mode=mode, cache_dir=cache_dir, runs_dir=str(tmp_path),
                                  num_generations=3, **SMALL))
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        rows = list(csv.DictReader(f))
    assert rows[0].get("teacher_success_greedy") not in (None, "")  # the teacher is evaluated next to the student
    train = [r for r in rows if r.get("policy_loss")]
    assert len(train) == 2
    expected = {"branch": (1, 1 + 3 * 2), "vanilla": (1, 1), "multi_rollout": (3, 3)}[mode]
    for row in train:
        assert expected[0] <= float(row["returns_per_task"]) <= expected[1]
        for key in ("policy_loss", "teacher_student_kl", "signal_clipped_fraction", "pbr_loss"):
            assert math.isfinite(float(row[key])), key
    assert any(r.get("eval_kl_sampled") for r in rows)
    # the tree record: continuations fork off the main trajectory where its node was scored
    records = check_trees(run_dir, {"main", "fork"})
    for record in records:
        forks = [n for n in record["nodes"] if n["kind"] == "fork"]
        if forks:
            scored = [n for n in record["nodes"] if n.get("score") is not None]
            assert scored and all(0 <= n["score"] <= 1 and n["kind"] == "main" for n in scored)
    assert any(n["kind"] == "fork" for r in records for n in r["nodes"]) == (mode == "branch")


def test_continuations_supervise_only_their_own_tokens(tmp_path, cache_dir):
    """A continuation's decision at its fork turn is prompt + the main's prefix -> its own tokens only: the
    shared prefix is in the main trajectory's decision, counted once."""
    from policy import load_policy

    model, tokenizer, _, prompt = load_policy("tiny", "math", {}, cache_dir, 0, steps=20, episodes=40)
    args = branchopd.apply_env_defaults(Args(env="math", tasks_per_step=2, **prompt))
    sampler = branchopd.HFSampler(model, tokenizer, args.max_new_tokens)
    envs = [make_env("math", split="train") for _ in range(2)]
    decisions, episodes, forks = branchopd.grow_branches(envs, [3, 4], model, model, sampler, tokenizer, args,
                                                         random.Random(0))
    mains = {e.tree: e for e in episodes if e.branch_point is None}
    branches = [e for e in episodes if e.branch_point is not None]
    assert len(branches) == sum(len(f) for f in forks) * args.continuations > 0
    for e in branches:
        turn, position = forks[e.tree][e.branch_point]
        main = decisions[mains[e.tree].decisions[turn]]
        own = decisions[e.decisions[0]]
        assert own.prompt_ids == main.prompt_ids + main.action_ids[:position]
        assert len(own.logprobs) == len(own.action_ids) == len(own.teacher_logprobs)
    counted = sum(len(d.action_ids) for d in decisions)
    assert counted == sum(len(decisions[i].action_ids) for e in episodes for i in e.decisions)
    assert np.isfinite([lp for d in decisions for lp in d.teacher_logprobs]).all()


def bpe_chat_tokenizer():
    """A byte-level BPE, a real chat model's kind, whose `</think>` is three pieces `</`, `think`, `>` (the first
    one `</action>`'s too), with a ChatML template and EOS `<|im_end|>`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from policy import CHATML_TEMPLATE
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    replies = ["<think>red shoes</think><action>search[red shoes]</action>", "</think><action>click[buy now]</action>"]
    bpe.train_from_iterator(replies * 50, trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer


def test_excess_think_marker_pushes_down_the_piece_that_leaves_the_protocol():
    """Section 4.4, appendix B.5: an excess `</think>` is a negative event; its S is the piece where the tag leaves
    every legal one (`think`), not the `</` that the correct `</action>` starts with too."""
    tokenizer = bpe_chat_tokenizer()
    encode = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]
    eos = tokenizer.eos_token_id
    shared, think, _ = encode("</think>")
    assert [tokenizer.decode([t]) for t in encode("</think>")] == ["</", "think", ">"]
    assert encode("</action>")[0] == shared
    leading = encode("</think><action>look</action>") + [eos]
    assert protocol_events("alfworld", tokenizer, [], leading, [], 200, "chat") == [(1, (think,), False)]
    twice = encode("<think>x</think></think></think><action>look</action>") + [eos]
    events = protocol_events("alfworld", tokenizer, [], twice, [], 200, "chat")
    assert [tokens for _, tokens, _ in events] == [(think,), (think,)]
    assert all(twice[position] == think and not positive for position, _, positive in events)
    # a continuation forked right after `</`: the `think` it samples there is its own event
    assert protocol_events("alfworld", tokenizer, leading[:1], leading[1:], [], 200, "chat") == [(0, (think,), False)]
    # a tag that is one token (as Qwen3's `</think>`) is its own departing piece
    tokenizer.add_tokens(["</think>"])
    whole = encode("</think><action>look</action>") + [eos]
    assert protocol_events("alfworld", tokenizer, [], whole, [], 200, "chat") == [(0, (whole[0],), False)]
