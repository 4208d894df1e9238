"""TreePO's pieces on hand-built inputs: the segment sampler's log-probs against a from-scratch forward, the
budget rule and its closed form, the subgroup tree advantage (the official code's, not the paper's Eq. 5),
whitening, the repetition stop, DAPO's overlong shaping; and short end-to-end runs."""

import csv
import math
import os
import random

import numpy as np
import pytest
import torch

import treepo
from policy import build_tiny_model, build_word_tokenizer
from tests.tree_checks import branch_points, check_trees
from envs import make_env
from policy import tokenizer_words
from treepo import (Args, Decision, Episode, HFSampler, SegmentSampler, Path, action_logprobs, allocation_temperature,
                    children_per_path, depth_advantages, fallback_path, math_stop, overlong_penalty, repeats,
                    tree_advantages)

WORDS = "search click buy red blue shoes shirt the a of and one two three four five six".split()


@pytest.fixture(scope="module")
def tiny_policy():
    torch.manual_seed(0)
    tokenizer = build_word_tokenizer(WORDS)
    model = build_tiny_model(tokenizer).eval()
    with torch.no_grad():  # sharper, so a wrong cache row changes the log-probs visibly
        model.model.embed_tokens.weight.mul_(3.0)
    return model, tokenizer


def encode(tokenizer, text):
    return [tokenizer.bos_token_id] + tokenizer(text, add_special_tokens=False)["input_ids"]


def test_segment_log_probs_equal_a_from_scratch_forward(tiny_policy):
    """Rows copied from the previous call's cache, prompts of different lengths, finished rows dropped mid
    segment, and fallback prefixes (shorter and longer than the batch) merged into the same cache."""
    model, tokenizer = tiny_policy
    sampler = SegmentSampler(HFSampler(model, tokenizer, max_new_tokens=64))
    short, long = encode(tokenizer, "red shoes"), encode(tokenizer, "click the blue shirt and buy a red one of two")
    torch.manual_seed(3)
    rows = [list(p) for p in (short, short, long)]  # full token sequence of each row
    prompt_length = [len(p) for p in rows]
    logprobs = [[], [], []]
    for i, (ids, lps) in enumerate(sampler.segments([short, short, long], 1.0, 4)):
        rows[i] += ids
        logprobs[i] += lps
    for depth in range(3):
        live = [i for i in range(len(rows)) if sampler.rows[i] >= 0]
        sources = [i for i in live for _ in range(2)]  # every live row forks in two
        new_rows = [list(rows[i]) for i in sources]
        new_prompt = [prompt_length[i] for i in sources]
        new_logprobs = [list(logprobs[i]) for i in sources]
        fallback = rows[live[0]][:prompt_length[live[0]] + 2] if depth != 1 else long + rows[2][len(long):] * 2
        sources.append(fallback)  # a prefix to prefill: shorter than the batch, or longer (depth 1)
        new_rows.append(list(fallback))
        new_prompt.append(len(fallback))
        new_logprobs.append([])
        for i, (ids, lps) in enumerate(sampler.segments(sources, 1.0, 3)):
            new_rows[i] += ids
            new_logprobs[i] += lps
        rows, prompt_length, logprobs = new_rows, new_prompt, new_logprobs
    decisions = [Decision(r[:n], r[n:], lp) for r, n, lp in zip(rows, prompt_length, logprobs) if len(r) > n]
    with torch.no_grad():
        recomputed, _, mask = action_logprobs(model, decisions, tokenizer.pad_token_id, 1.0)
    for row, d in enumerate(decisions):
        assert torch.allclose(recomputed[row][mask[row]], torch.tensor(d.logprobs), atol=1e-4), row


def test_budget_rule_doubles_to_the_width_and_transfers_finished_budget():
    args = Args(num_generations=16, first_step_divergence=2)
    paths = lambda n: [Path(0, [i]) for i in range(n)]
    rng = random.Random(0)
    assert children_per_path(paths(2), 0, 0, args, rng) == [2, 2]
    assert children_per_path(paths(8), 0, 0, args, rng) == [2] * 8
    assert children_per_path(paths(16), 0, 0, args, rng) == [1] * 16
    # 3 of 16 finished at this depth: their budget goes to the 13 still active, remainder to the last path
    assert children_per_path(paths(13), 3, 3, args, rng) == [1] * 12 + [1]
    assert sum(children_per_path(paths(5), 8, 3, args, rng)) == 8  # min(16 - 8, 3*2 + 2*5)
    assert children_per_path(paths(3), 16, 0, args, rng) == [1, 1, 1]  # at least one child per active path
    args.branch_allocation = "random"  # a control: one child each, the rest drawn at random
    counts = children_per_path(paths(4), 0, 0, args, random.Random(1))
    assert sum(counts) == 8 and min(counts) >= 1


def test_probability_allocation_gives_the_official_counts():
    """Paper section 4.4: p_k = softmax(logprob_k / T) over the last segments' log-probs; the official code gives
    one child each and the rest by largest remainders. Four one-token segments at depth 3 (budget 8) with
    log-probs -1, -2, -3, -4 at T = 2: p = 0.455, 0.276, 0.167, 0.102, so 4 p = 1.82, 1.10, 0.67, 0.41 -> 3, 2, 2, 1
    (high_prob) and 1, 2, 2, 3 (low_prob); tests/test_treepo_allocation.py has the mean score and the budget."""
    paths = [Path(0, [i], segment_logprob=-1.0 - i, segment_tokens=1) for i in range(4)]
    for mode, expected in (("high_prob", [3, 2, 2, 1]), ("low_prob", [1, 2, 2, 3]), ("fixed_avg", [2, 2, 2, 2])):
        args = Args(num_generations=16, branch_allocation=mode)
        assert children_per_path(paths, 0, 0, args, random.Random(0), temperature=2.0) == expected, mode
    # the width caps the tree: 2 paths with 14 leaves have room for 2 children, one each whatever the scores
    args = Args(num_generations=16, branch_allocation="high_prob")
    assert children_per_path([Path(0, [0], segment_logprob=0.0, segment_tokens=1),
                              Path(0, [1], segment_logprob=-10.0, segment_tokens=1)], 14, 0,
                             args, random.Random(0), temperature=2.0) == [1, 1]
    # the scheduled variant anneals T linearly over the run (the paper: 5 -> 1)
    scheduled = Args(allocation_temperature=5.0, allocation_temperature_end=1.0, total_steps=5)
    assert [allocation_temperature(scheduled, step) for step in range(5)] == [5.0, 4.0, 3.0, 2.0, 1.0]
    assert allocation_temperature(Args(), 7) == 2.0  # the paper's static T
    with pytest.raises(SystemExit, match="now `random`.*`fixed_avg`"):
        treepo.apply_env_defaults(Args(env="math", branch_allocation="uniform"))


def test_probability_allocation_sees_each_turns_log_prob_on_an_agent_env(monkeypatch):
    """On a turn-level tree (WebShop) the allocation scores each path by its last turn's log-prob, the sum over
    the tokens of the action that turn sampled divided by their count (--allocation-score mean), and gives the
    official counts from it (before, only math's token segments carried log-probs, so agent envs were split
    without saying so by a random draw)."""
    torch.manual_seed(0)
    env = make_env("webshop", split="train")
    tokenizer = build_word_tokenizer(tokenizer_words(env, "webshop"))
    model = build_tiny_model(tokenizer).eval()
    args = Args(env="webshop", branch_allocation="high_prob", num_generations=8, segment_length=0, max_depth=3,
                max_new_tokens=4, history_window=0, include_admissible=False, recent_actions=1)
    calls, means = [], []

    def spy(paths, leaves, finished_now, call_args, rng, temperature=2.0):
        counts = children_per_path(paths, leaves, finished_now, call_args, rng, temperature)
        calls.append(([sum(p.decisions[-1].logprobs) for p in paths], [p.segment_logprob for p in paths], leaves,
                      finished_now, temperature, counts))
        assert [p.segment_tokens for p in paths] == [len(p.decisions[-1].logprobs) for p in paths]
        means.append([p.segment_logprob / p.segment_tokens for p in paths])
        return counts

    monkeypatch.setattr(treepo, "children_per_path", spy)
    envs = [make_env("webshop", split="train") for _ in range(2)]
    treepo.grow_trees(envs, [3, 5], SegmentSampler(HFSampler(model, tokenizer, 4)), tokenizer, args,
                      random.Random(0), temperature=0.5)
    assert calls
    for (turn_logprobs, scored, leaves, finished_now, temperature, counts), mean in zip(calls, means):
        assert scored == pytest.approx(turn_logprobs)  # the last turn's log-prob, not a placeholder
        budget = max(len(scored), min(8 - leaves, 2 * finished_now + 2 * len(scored)))
        shares = np.exp(np.array(mean) / temperature) / np.exp(np.array(mean) / temperature).sum()
        rest = budget - len(mean)
        extra = np.floor(shares * rest).astype(int)
        extra[np.argsort(-(shares * rest - extra), kind="stable")[:rest - extra.sum()]] += 1
        assert counts == (1 + extra).tolist()
    assert any(len(set(np.round(scored, 6))) > 1 for _, scored, *_ in calls)  # the paths' log-probs differ


def test_repetition_stop_looks_at_the_new_segment_and_fallback_cuts():
    """The repetition stop reads the new segment (paper, official code), or the whole path (--repetition-scope
    path); a fallback restarts at a random boundary (official) or before the leaf's last segment (paper)."""
    tokenizer = build_word_tokenizer(WORDS)
    repeated = tokenizer("the red shoes " * 12, add_special_tokens=False)["input_ids"]
    path = Path(0, [1, 2], action_ids=repeated + repeated[:3])
    args = Args(env="math", segment_length=3, max_depth=9, max_new_tokens=500, repetition_window=8,
                repetition_count=4)
    assert math_stop(path, repeated[:3], tokenizer, args) == ""  # the new segment alone holds no repeat
    assert math_stop(path, repeated, tokenizer, args) == "repetition"
    args.repetition_scope = "path"
    assert math_stop(path, repeated[:3], tokenizer, args) == "repetition"
    leaf = Path(0, [1, 2, 3, 4], action_ids=list(range(12)), logprobs=[0.0] * 12, stop="eos")
    args = Args(env="math", segment_length=3, fallback_cut="last")
    cut = fallback_path([leaf], args, random.Random(0))
    assert cut.node_ids == [1, 2, 3] and cut.action_ids == list(range(9))
    args.fallback_cut = "random"
    assert {len(fallback_path([leaf], args, random.Random(s)).node_ids) for s in range(40)} == {
        0, 1, 2, 3}


def test_segments_of_a_full_tree_match_the_closed_form():
    """Without early stops, a tree decodes 2 + 4 + ... + w + w (d - log2 w) segments against w d for
    independent sampling (w = 16, d = 14: 1.18x)."""
    args = Args(num_generations=16, first_step_divergence=2)
    rng, paths, segments = random.Random(0), [Path(0, [])], 0
    counts = [2]
    for _ in range(14):
        paths = [Path(0, p.node_ids + [k]) for p, c in zip(paths, counts) for k in range(c)]
        segments += len(paths)
        counts = children_per_path(paths, 0, 0, args, rng)
    assert segments == 2 + 4 + 8 + 16 + 16 * (14 - 4)
    assert 16 * 14 / segments == pytest.approx(1.18, abs=0.01)


def worked_example():
    """Leaf X (index 0, R = 1): its depth-1, -2, -3 subgroups have means 0.6, 0.8, 1.0; the root 0.5."""
    leaves = [([1, 3, 5], 1), ([1, 3, 5], 1),  # X and Y: depth-3 node 5
              ([1, 3, 6], 1), ([1, 3, 6], 1), ([1, 3, 6], 0),  # depth-2 node 3 = {X, Y, ...}: mean 0.8
              ([1, 4, 7], 1), ([1, 4, 7], 1), ([1, 4, 7], 0), ([1, 4, 8], 0), ([1, 4, 8], 0),  # node 1: mean 0.6
              ([2, 9, 10], 0), ([2, 9, 10], 0)]  # the root's other child: the root mean is 0.5
    return [r for _, r in leaves], [ids for ids, _ in leaves]


def test_tree_advantage_worked_example():
    rewards, node_ids = worked_example()
    per_depth = depth_advantages(rewards, node_ids, drop_zero_std=False)
    assert [a for a, _ in per_depth[0]] == pytest.approx([0.5, 0.4, 0.2, 0.0])
    assert [n for _, n in per_depth[0]] == [12, 10, 5, 2]
    assert tree_advantages(rewards, node_ids, Args())[0][0] == pytest.approx((0.5 + 0.4 + 0.2) / 4)
    assert tree_advantages(rewards, node_ids, Args(tree_advantage="group_size"))[0][0] == pytest.approx(11 / 29)
    # the paper's Eq. 5 as printed divides by the std over the J-1 depths below the root (0.4, 0.2, 0.0)
    std = np.std([0.4, 0.2, 0.0])
    advantages, skipped = tree_advantages(rewards, node_ids, Args(normalize="paper_depth_std"))
    assert advantages[0] == pytest.approx(0.275 / std)
    # the root's other child's two leaves agree at every depth below the root: std 0, the division is skipped
    assert skipped == 2 and advantages[10] == pytest.approx(np.mean([-0.5, 0.0, 0.0, 0.0]))
    # flat: GRPO's group advantage over the 12 leaves
    flat = tree_advantages(rewards, node_ids, Args(advantage="flat"))[0]
    assert flat[0] == pytest.approx(0.5 / (np.std(rewards, ddof=1) + 1e-4))


def same(per_depth, expected):
    return [n for _, n in per_depth] == [n for _, n in expected] and [a for a, _ in per_depth] == pytest.approx(
        [a for a, _ in expected])


def test_singletons_zero_variance_and_early_leaves():
    # leaf 2 ends at depth 1 beside deeper siblings; leaf 3 is alone in its depth-2 node
    rewards, node_ids = [1.0, 0.0, 1.0, 1.0], [[1, 3], [1, 3], [1], [2, 4]]
    per_depth = depth_advantages(rewards, node_ids, drop_zero_std=False)
    assert same(per_depth[2], [(0.25, 4), (1 - 2 / 3, 3)])  # root and depth 1 only
    assert same(per_depth[3], [(0.25, 4)])  # depth 1 and 2 subgroups have one member: skipped; the root counts
    assert same(per_depth[0], [(0.25, 4), (1 / 3, 3), (0.5, 2)])
    # zero-variance subgroups are dropped on request (the root is kept)
    rewards = [1.0, 1.0, 0.0, 0.0]
    node_ids = [[1], [1], [2], [2]]
    assert same(depth_advantages(rewards, node_ids, drop_zero_std=True)[0], [(0.5, 4)])
    assert same(depth_advantages(rewards, node_ids, drop_zero_std=False)[0], [(0.5, 4), (0.0, 2)])


def two_task_batch():
    """Two tasks of two one-decision leaves each (1, 3, 2 and 2 tokens), one winning leaf per task."""
    decisions = [Decision([1], [5] * n, [0.0] * n) for n in (1, 3, 2, 2)]
    episodes = [Episode(0, 0, reward=r, decisions=[i], node_ids=[1 + i % 2]) for i, r in enumerate((1.0, 0.0))]
    episodes += [Episode(1, 1, reward=r, decisions=[2 + i], node_ids=[3 + i]) for i, r in enumerate((0.0, 1.0))]
    return decisions, episodes


def test_assign_advantages_returns_the_leaves_that_skipped_eq5():
    """The count is logged as depth_std_skipped (it was lost: the function returned nothing)."""
    rewards, node_ids = worked_example()
    decisions = [Decision([1], [5], [0.0]) for _ in rewards]
    episodes = [Episode(0, 0, reward=r, decisions=[i], node_ids=ids)
                for i, (r, ids) in enumerate(zip(rewards, node_ids))]
    assert treepo.assign_advantages(decisions, episodes, Args(normalize="paper_depth_std")) == 2
    assert treepo.assign_advantages(decisions, episodes, Args()) == 0


def test_a_tampered_turn_stays_on_the_path_through_children_and_fallbacks():
    """swe's tamper flag is part of a path's totals: children inherit it, a fallback restores it."""
    class Env:
        def snapshot(self):
            return self

        def restore(self):
            return self

    root = Path(0, [], start=treepo.Start(Env(), "obs", {}, [], 0, 0), episode=Episode(0, 0, tampered=True))
    children = treepo.turn_children(root, 2, iter(range(10)).__next__)
    assert all(child.episode.tampered for child in children)
    leaf = children[0]
    leaf.stop = "done"
    assert fallback_path([leaf], Args(env="webshop", segment_length=None), random.Random(0)).episode.tampered


def test_batch_whitening_weights_each_leaf_by_its_tokens():
    decisions, episodes = two_task_batch()
    treepo.assign_advantages(decisions, episodes, Args())
    tokens = np.array([a for d in decisions for a in d.advantages])  # unbiased std, as verl's masked_whiten
    assert tokens.mean() == pytest.approx(0.0, abs=1e-6) and tokens.std(ddof=1) == pytest.approx(1.0, abs=1e-4)
    assert decisions[0].advantages[0] > 0 > decisions[1].advantages[0]
    assert len(set(decisions[1].advantages)) == 1  # one value per leaf, on each of its tokens


def test_invalid_action_gets_no_positive_advantage():
    """The whitened leaf values of the test above, with the winning leaf's action rejected by the env: it keeps
    no positive credit; --credit-invalid-actions gives it back."""
    decisions, episodes = two_task_batch()
    decisions[0].invalid = True
    treepo.assign_advantages(decisions, episodes, Args())
    assert decisions[0].advantages == [0.0] and decisions[3].advantages[0] > 0
    treepo.assign_advantages(decisions, episodes, Args(credit_invalid_actions=True))
    assert decisions[0].advantages[0] > 0


def test_repetition_stop_and_overlong_shaping():
    assert repeats("ab" * 200, 32, 8) and not repeats("the quick brown fox jumps over the lazy dog " * 2, 32, 8)
    assert overlong_penalty(48, 64, 16, 1.0) == 0.0 and overlong_penalty(50, 64, 16, 1.0) == pytest.approx(-0.125)
    assert overlong_penalty(56, 64, 16, 1.0) == pytest.approx(-0.5)
    assert overlong_penalty(64, 64, 16, 1.0) == pytest.approx(-1.0)
    assert overlong_penalty(64, 64, 0, 1.0) == 0.0


SMALL = dict(sft_steps=20, sft_episodes=40, tasks_per_step=2, num_generations=4, eval_tasks=4, eval_every=2,
             minibatch_size=16, total_steps=2)


@pytest.mark.parametrize("env, extra", [("math", {}), ("math", dict(sampling="independent", advantage="flat")),
                                        ("webshop", {})])
def test_treepo_runs_end_to_end(env, extra, tmp_path, cache_dir):
    run_dir = treepo.main(treepo.Args(env=env, cache_dir=cache_dir, runs_dir=str(tmp_path), **SMALL, **extra))
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        rows = [r for r in csv.DictReader(f) if r.get("policy_loss")]
    assert len(rows) == 2
    for row in rows:
        assert float(row["decoded_tokens"]) <= float(row["independent_tokens"])
        if extra.get("sampling") == "independent":
            assert float(row["decoded_tokens"]) == float(row["independent_tokens"])
        assert float(row["returns_per_task"]) >= 1
        for key in ("policy_loss", "approx_kl", "entropy", "advantage_variance"):
            assert math.isfinite(float(row[key])), key
    # the tree record: one leaf per episode, each with why it stopped; cousins share their prefix's segments
    for record in check_trees(run_dir, {"segment"}):
        leaves = [n for n in record["nodes"] if n.get("leaves")]
        assert leaves and all(len(n["leaves"]) == 1 and n["stop"] for n in leaves)
        assert not [n for n in record["nodes"] if n.get("stop") and not n.get("leaves")]  # only leaves stop
        if extra.get("sampling") == "independent":
            assert not [p for p in branch_points(record) if p["id"] != 0]


def test_dynamic_sampling_keeps_each_tree_whole_across_rounds(monkeypatch):
    """Dynamic sampling's bookkeeping on hand-built trees (grow_trees replaced by a stand-in that returns
    them): round 1 keeps one of four trees, round 2 keeps all three new ones. Every kept tree gets the next
    index, its leaves point at their own decisions, and the dropped trees are counted."""
    rounds = iter([[(0, 1), (0, 0), (1, 1), (0, 0)], [(1, 0), (0, 1), (1, 0)]])  # leaf rewards per tree

    def hand_built_trees(envs, task_ids, sampler, tokenizer, args, rng, seeds=None, temperature=2.0):
        decisions, episodes = [], []
        for tree, (task_id, rewards) in enumerate(zip(task_ids, next(rounds))):
            for leaf, reward in enumerate(rewards):
                episodes.append(Episode(task_id, tree, reward=float(reward), decisions=[len(decisions)]))
                decisions.append(Decision([0], [1000 * task_id + leaf], [0.0]))
        return decisions, episodes, {"calls": 1, "decoded_tokens": len(decisions)}

    class Env:
        num_tasks = 10**6  # distinct task ids with overwhelming probability

    monkeypatch.setattr(treepo, "grow_trees", hand_built_trees)
    args = Args(env="math", tasks_per_step=4, dynamic_sampling=True, max_sampling_rounds=3)
    task_ids, decisions, episodes, totals = treepo.sample_batch([Env()] * 4, random.Random(0), None, None, args,
                                                                random.Random(0))
    assert len(task_ids) == 4 and totals["dropped_tasks"] == 3 and totals["sampling_rounds"] == 2
    assert sorted(e.tree for e in episodes) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert len(decisions) == 8 and sorted(i for e in episodes for i in e.decisions) == list(range(8))
    for e in episodes:
        assert task_ids[e.tree] == e.task_id
        assert decisions[e.decisions[0]].action_ids[0] // 1000 == e.task_id
        assert len({x.reward for x in episodes if x.tree == e.tree}) == 2
