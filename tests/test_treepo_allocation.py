"""TreePO's probability-based branch allocation (paper section 4.4) as the official code's last-segment policy
does it: each path scored by its last segment's per-token mean log-prob (--allocation-score mean), one child per
active path, the rest of the depth's budget split by largest remainders of p_k x rest."""

import random

import pytest
import torch

import treepo
from envs import make_env
from policy import build_tiny_model, build_word_tokenizer, tokenizer_words
from treepo import Args, HFSampler, Path, SegmentSampler, children_per_path


def segment_path(i: int, token_logprobs: list[float]) -> Path:
    """An active path whose last segment sampled tokens with these log-probs, recorded as grow_trees records it."""
    path = Path(0, [i], logprobs=list(token_logprobs))
    path.segment_logprob, path.segment_tokens = float(sum(token_logprobs)), len(token_logprobs)
    return path


def allocation_args(mode: str, score: str = "mean") -> Args:
    args = Args(num_generations=16, first_step_divergence=2, branch_allocation=mode)
    args.allocation_score = score
    return args


def test_mean_score_spreads_long_segments_where_the_sum_gives_one_path_the_budget():
    """Four 300-token segments whose tokens differ by 0.02 nats: per-token means -0.50 ... -0.56 give p_k within
    0.25 +- 0.004 at T = 2, so the budget of 12 (4 leaves, 4 finished now: min(16 - 4, 4 x 2 + 2 x 4)) splits
    3, 3, 3, 3. The sums -150 ... -168 give p_1 = 0.95: 9 children to one path, the minimum to the others."""
    paths = [segment_path(i, [-0.50 - 0.02 * i] * 300) for i in range(4)]
    rng = random.Random(0)
    assert children_per_path(paths, 4, 4, allocation_args("high_prob"), rng, temperature=2.0) == [3, 3, 3, 3]
    assert children_per_path(paths, 4, 4, allocation_args("low_prob"), rng, temperature=2.0) == [3, 3, 3, 3]
    assert children_per_path(paths, 4, 4, allocation_args("high_prob", "sum"), rng, temperature=2.0) == [9, 1, 1, 1]
    assert children_per_path(paths, 4, 4, allocation_args("low_prob", "sum"), rng, temperature=2.0) == [1, 1, 1, 9]


def test_allocation_gives_every_path_a_child_and_exactly_the_budget():
    """Random trees: the children sum to the transfer rule's budget, max(active, min(w - leaves, finished now x 2 +
    2 x active)), never more (so never past the width w unless every active path needs its one child), and
    every active path gets at least one."""
    rng = random.Random(0)
    for _ in range(400):
        n, leaves, finished_now = rng.randint(1, 10), rng.randint(0, 16), rng.randint(0, 4)
        paths = [segment_path(i, [rng.uniform(-3.0, 0.0) for _ in range(rng.randint(1, 400))]) for i in range(n)]
        budget = max(n, min(max(16 - leaves, 0), 2 * finished_now + 2 * n))
        for mode in ("high_prob", "low_prob"):
            for score in ("mean", "sum"):
                counts = children_per_path(paths, leaves, finished_now, allocation_args(mode, score), rng,
                                           temperature=rng.choice([0.5, 2.0, 5.0]))
                assert len(counts) == n and min(counts) >= 1, (mode, score, counts)
                assert sum(counts) == budget <= max(n, 16 - leaves), (mode, score, counts, budget)


def test_largest_remainders_on_a_hand_computed_case():
    """Four 10-token segments with per-token log-probs -1, -2, -3, -4 at T = 2: p = softmax(-0.5, -1, -1.5, -2) =
    0.455, 0.276, 0.167, 0.102. Depth 3 (budget 8): one child each, rest 4, p x 4 = 1.82, 1.10, 0.67, 0.41 ->
    floors 1, 1, 0, 0 and the 2 left go to the largest remainders (0.82, 0.67): 3, 2, 2, 1. Rounding p x 8 =
    3.64, 2.21, 1.34, 0.81 instead would give 4, 2, 1, 1."""
    paths = [segment_path(i, [-1.0 - i] * 10) for i in range(4)]
    rng = random.Random(0)
    assert children_per_path(paths, 0, 0, allocation_args("high_prob"), rng, temperature=2.0) == [3, 2, 2, 1]
    assert children_per_path(paths, 0, 0, allocation_args("low_prob"), rng, temperature=2.0) == [1, 2, 2, 3]
    one_token = [segment_path(i, [-1.0 - i]) for i in range(4)]  # the sum of one token is its mean
    assert children_per_path(one_token, 0, 0, allocation_args("high_prob", "sum"), rng, temperature=2.0) == [3, 2, 2, 1]
    # equal scores: remainders tie (1/3 each), the earlier path wins
    ties = [segment_path(i, [-1.0] * 5) for i in range(3)]
    assert children_per_path(ties, 12, 0, allocation_args("high_prob"), rng) == [2, 1, 1]  # budget min(4, 6)
    assert Args().allocation_score == "mean"  # the official code's last-segment score


def test_math_paths_record_their_last_segments_token_count(monkeypatch):
    """grow_trees records each path's last segment: its summed log-prob and its token count, so the allocation
    sees the per-token mean (a math segment is `segment_length` tokens while the path goes on)."""
    torch.manual_seed(0)
    tokenizer = build_word_tokenizer(tokenizer_words(make_env("math", split="train"), "math"))
    model = build_tiny_model(tokenizer).eval()
    args = Args(env="math", branch_allocation="high_prob", num_generations=8, segment_length=4, max_depth=4,
                max_new_tokens=16, history_window=0, include_admissible=False, recent_actions=1)
    seen = []

    def spy(paths, leaves, finished_now, call_args, rng, temperature=2.0):
        seen.extend((p.segment_tokens, p.segment_logprob, list(p.logprobs)) for p in paths)
        return children_per_path(paths, leaves, finished_now, call_args, rng, temperature)

    monkeypatch.setattr(treepo, "children_per_path", spy)
    envs = [make_env("math", split="train") for _ in range(2)]
    treepo.grow_trees(envs, [3, 5], SegmentSampler(HFSampler(model, tokenizer, 16)), tokenizer, args,
                      random.Random(0))
    assert seen
    for tokens, logprob, path_logprobs in seen:
        assert tokens == args.segment_length
        assert logprob == pytest.approx(sum(path_logprobs[-tokens:]))
