"""Advantage and loss math of grpo_baseline.py against hand-computed values, and the HF sampler."""

import math

import pytest
import torch

from grpo_baseline import (Args, Decision, Episode, HFSampler, action_logprobs, assign_advantages, compute_advantages,
                           policy_loss)
from policy import build_tiny_model, build_word_tokenizer


def test_grpo_advantage_group_normalized():
    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0], [0.5, 0.5, 0.5, 0.5]])
    advantages = compute_advantages(rewards, "grpo", "group")
    std = math.sqrt(1 / 3)  # unbiased std of (1, 0, 0, 1)
    expected = 0.5 / (std + 1e-4)
    assert torch.allclose(advantages[0], torch.tensor([expected, -expected, -expected, expected]), atol=1e-6)
    assert torch.equal(advantages[1], torch.zeros(4))  # all-equal group: no signal


def test_grpo_advantage_unscaled():
    advantages = compute_advantages(torch.tensor([[1.0, 0.0, 0.0, 0.0]]), "grpo", "none")
    assert torch.allclose(advantages, torch.tensor([[0.75, -0.25, -0.25, -0.25]]))


def test_rloo_advantage_leave_one_out():
    advantages = compute_advantages(torch.tensor([[1.0, 0.0, 0.0, 1.0]]), "rloo")
    # 1 - mean(0, 0, 1) = 2/3 ; 0 - mean(1, 0, 1) = -2/3
    assert torch.allclose(advantages, torch.tensor([[2 / 3, -2 / 3, -2 / 3, 2 / 3]]))
    # RLOO = N/(N-1) x (unscaled GRPO)
    rewards = torch.rand(3, 5)
    expected = 5 / 4 * compute_advantages(rewards, "grpo", "none")
    assert torch.allclose(compute_advantages(rewards, "rloo"), expected, atol=1e-6)


def test_policy_loss_clipping_by_hand():
    # token 1: ratio e^0.5 = 1.6487, A=+1 -> clipped at 1.2 -> -1.2
    # token 2: ratio e^-0.5 = 0.6065, A=+1 -> min(ratio, clip) -> -0.6065 (unclipped side is worse)
    # token 3: ratio e^0.5, A=-1 -> max(1.6487, 1.2) = 1.6487 (pessimistic: unclipped)
    # token 4: masked out
    logprobs = torch.tensor([[0.5, -0.5], [0.5, 9.0]])
    old = torch.zeros(2, 2)
    advantages = torch.tensor([[1.0, 1.0], [-1.0, -1.0]])  # per token
    mask = torch.tensor([[True, True], [True, False]])
    loss, stats = policy_loss(logprobs, old, None, advantages, mask, 0.2, 0.2, 0.0)
    expected = (-1.2 - math.exp(-0.5) + math.exp(0.5)) / 3
    assert loss.item() == pytest.approx(expected, abs=1e-6)
    assert stats["clipfrac"] == pytest.approx(1.0)  # |ratio - 1| > 0.2 on all three tokens
    # clip-higher: upper bound 1.28 for token 1
    loss_high, _ = policy_loss(logprobs, old, None, advantages, mask, 0.2, 0.28, 0.0)
    assert loss_high.item() == pytest.approx((-1.28 - math.exp(-0.5) + math.exp(0.5)) / 3, abs=1e-6)


def test_policy_loss_k3_kl():
    logprobs = torch.tensor([[math.log(0.5)]])
    ref = torch.tensor([[math.log(0.25)]])
    loss, stats = policy_loss(logprobs, logprobs.clone(), ref, torch.tensor([[0.0]]),
                              torch.ones(1, 1, dtype=torch.bool),
                              0.2, 0.2, beta=0.1)
    k3 = 0.5 - math.log(0.5) - 1  # exp(ref - logp) - (ref - logp) - 1 with ref - logp = log 0.5
    assert stats["kl_ref"] == pytest.approx(k3, abs=1e-6)
    assert loss.item() == pytest.approx(0.1 * k3, abs=1e-6)


def test_policy_gradient_direction():
    """A positive advantage raises the log-prob of the action, a negative one lowers it."""
    for sign in (1.0, -1.0):
        logprobs = torch.tensor([[-1.0]], requires_grad=True)
        loss, _ = policy_loss(logprobs, logprobs.detach(), None, torch.tensor([[sign]]),
                              torch.ones(1, 1, dtype=torch.bool), 0.2, 0.2, 0.0)
        loss.backward()
        assert logprobs.grad.item() == pytest.approx(-sign)


@pytest.fixture(scope="module")
def tiny_policy():
    torch.manual_seed(0)
    tokenizer = build_word_tokenizer("search click buy red blue shoes shirt the a of and".split())
    model = build_tiny_model(tokenizer).eval()
    return model, tokenizer


def test_hf_sampler_logprobs_match_full_forward(tiny_policy):
    """Cache-expanded sampling (shared prefixes prefilled once, left padding, finished rows dropped)
    gives the same log-probs as a from-scratch forward of prompt + action."""
    model, tokenizer = tiny_policy
    encode = lambda text: [tokenizer.bos_token_id] + tokenizer(text, add_special_tokens=False)["input_ids"]
    prompts = [encode("search red shoes"), encode("click the blue shirt and buy a red one of the shoes")]
    prompts = [prompts[0]] * 3 + [prompts[1]] * 2 + [encode("buy")]
    torch.manual_seed(1)
    samples = HFSampler(model, tokenizer, max_new_tokens=12).generate(prompts, temperature=1.0)
    decisions = [Decision(p, ids, lps) for p, (ids, lps) in zip(prompts, samples)]
    with torch.no_grad():
        logprobs, _, mask = action_logprobs(model, decisions, tokenizer.pad_token_id, 1.0)
    for row, d in enumerate(decisions):
        assert len(d.action_ids) == len(d.logprobs) >= 1
        recomputed = logprobs[row][mask[row]]
        assert torch.allclose(recomputed, torch.tensor(d.logprobs), atol=1e-4), (recomputed, d.logprobs)


def test_hf_sampler_greedy_is_deterministic_and_stops_at_eos(tiny_policy):
    model, tokenizer = tiny_policy
    prompt = [tokenizer.bos_token_id] + tokenizer("search red", add_special_tokens=False)["input_ids"]
    sampler = HFSampler(model, tokenizer, max_new_tokens=6)
    first = sampler.generate([prompt, prompt], temperature=0.0)
    alone = sampler.generate([prompt], temperature=0.0)[0]
    assert first[0][0] == first[1][0] == alone[0]
    assert torch.allclose(torch.tensor(first[0][1]), torch.tensor(alone[1]), atol=1e-5)
    for ids, _ in first:
        assert len(ids) <= 6 and (tokenizer.eos_token_id not in ids[:-1])


def test_word_tokenizer_round_trips_actions():
    # numbers are whole tokens (`PRETOKENIZE_PATTERN`): the vocabulary lists the ones the texts use
    tokenizer = build_word_tokenizer("search click buy now red running shoes b07xyz x-large boxed 28 13 41 123".split())
    for text in ["click[b07xyz]", "search[red running shoes]", "click[buy now]", "click[x-large]",
                 "28 + 13 = 41 ; \\boxed{123}"]:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        assert tokenizer.unk_token_id not in ids
        assert tokenizer.decode(ids) == text


def test_digits_apart_tokenizer_gives_each_digit_one_token():
    tokenizer = build_word_tokenizer([str(d) for d in range(10)] + ["compute", "boxed"], digits_apart=True)
    text = "compute 27 * 8 = 216 ; \\boxed{216}"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    tokens = tokenizer.convert_ids_to_tokens(ids)
    assert tokenizer.decode(ids) == text and tokenizer.unk_token_id not in ids
    assert "Ġ2" not in tokens and tokens.count("2") == 3  # the same token for the 2 of 27 and of 216 (twice)


def test_invalid_action_gets_no_positive_advantage():
    """An action the env rejected (it changed nothing) shares its episode's negative advantage, never its positive
    one; --credit-invalid-actions gives it the episode's advantage like every other action."""
    decisions = [Decision([1], [5, 6], [0.0, 0.0]) for _ in range(4)]
    decisions[1].invalid = decisions[3].invalid = True
    episodes = [Episode(task_id=0, tree=0, reward=1.0, decisions=[0, 1]),
                Episode(task_id=0, tree=0, reward=0.0, decisions=[2, 3])]
    args = Args(num_generations=2, scale_rewards="none")
    assign_advantages(decisions, episodes, args)
    assert [d.advantages for d in decisions] == [[0.5, 0.5], [0.0, 0.0], [-0.5, -0.5], [-0.5, -0.5]]
    args.credit_invalid_actions = True
    assign_advantages(decisions, episodes, args)
    assert [d.advantages for d in decisions] == [[0.5, 0.5], [0.5, 0.5], [-0.5, -0.5], [-0.5, -0.5]]
