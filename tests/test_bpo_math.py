"""BPO's equations on hand-built trees: Eq. 4 (sibling leave-one-out), Eq. 5 (lambda propagation),
TopM-with-spacing branch point selection, compute matching."""

import random

import pytest
import torch

from bpo import (Args, Decision, Episode, assign_advantages, backbone_step_advantages, select_branch_points,
                 sibling_advantages, sibling_step_advantages)


def test_eq4_sibling_leave_one_out():
    advantages = sibling_advantages(torch.tensor([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]]))
    assert torch.allclose(advantages[0], torch.tensor([2 / 3, -2 / 3, -2 / 3, 2 / 3]))
    assert torch.equal(advantages[1], torch.zeros(4))
    assert torch.allclose(advantages.sum(dim=1), torch.zeros(2), atol=1e-6)  # leave-one-out advantages sum to 0


@pytest.mark.parametrize("lam, expected", [
    (0.0, [0.0, 0.5, 0.0, -1.0, -1.0]),
    (0.5, [0.5 * 0.5 + 0.125 * -1.0, 0.5 + 0.25 * -1.0, 0.5 * -1.0, -1.0, -1.0]),
    (1.0, [-0.5, -0.5, -1.0, -1.0, -1.0]),
])
def test_eq5_lambda_propagation(lam, expected):
    # backbone of 5 steps, branch points at steps 1 and 3 with backbone branch advantages 0.5 and -1
    got = backbone_step_advantages([1, 3], [0.5, -1.0], 5, lam, "sibling")
    assert got == pytest.approx(expected)
    # literal Eq. 5: the step after the last branch point has no downstream comparison
    assert backbone_step_advantages([1, 3], [0.5, -1.0], 5, lam, "zero")[-1] == 0.0


def test_sibling_post_branch_credit():
    assert sibling_step_advantages(0.75, 3, "sibling") == [0.75, 0.75, 0.75]
    assert sibling_step_advantages(0.75, 3, "zero") == [0.75, 0.0, 0.0]


def test_topm_with_spacing():
    entropies = [0.1, 0.9, 0.8, 0.2, 0.7]
    positions = [0, 10, 20, 70, 100]
    rng = random.Random(0)
    # highest entropy first; 2 is within 64 tokens of 1 and is skipped
    assert select_branch_points(entropies, positions, 2, 64, "entropy", rng) == [1, 4]
    assert select_branch_points(entropies, positions, 2, 64, "inverted", rng) == [0, 3]
    assert select_branch_points(entropies, positions, 2, 0, "entropy", rng) == [1, 2]
    assert select_branch_points(entropies, positions, 2, 64, "uniform", rng) == [1, 3]
    assert select_branch_points(entropies, positions, 3, 1000, "entropy", rng) == [1]  # spacing leaves one
    for seed in range(20):
        chosen = select_branch_points(entropies, positions, 2, 64, "random", random.Random(seed))
        assert len(chosen) == 2 and abs(positions[chosen[0]] - positions[chosen[1]]) >= 64


def turn_level_tree():
    """Backbone decisions 0-2 (return 1); fork at 0: decisions 3-4 (return 0); fork at 2: decision 5 (return 1)."""
    decisions = [Decision([1], [5, 6], [0.0, 0.0]) for _ in range(6)]
    episodes = [Episode(task_id=0, tree=0, branch_point=2, reward=1.0, decisions=[5]),
                Episode(task_id=0, tree=0, reward=1.0, decisions=[0, 1, 2]),
                Episode(task_id=0, tree=0, branch_point=0, reward=0.0, decisions=[3, 4])]
    return decisions, episodes


def test_assign_advantages_on_a_turn_level_tree():
    """Backbone of 3 decisions (return 1) with branch points at decisions 0 and 2, K = 2 (one fork
    each): the fork at 0 has two decisions and return 0, the fork at 2 has one decision and return 1.
    Each sibling names its tree and branch point; the episode order does not matter."""
    args = Args(branch_factor=2, lam=0.5, branch_level="turn", post_branch_credit="sibling")
    decisions, episodes = turn_level_tree()
    assign_advantages(decisions, episodes, [[0, 2]], args)
    # Eq. 4 with K = 2: branch 0 -> (1 - 0, 0 - 1) = (1, -1); branch 2 -> (0, 0)
    # Eq. 5 on the backbone: t=0: 1 + 0.25 * 0 = 1; t=1: 0.5 * 0 = 0; t=2: 0
    assert [decisions[d].advantages for d in (0, 1, 2)] == [[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]
    assert [decisions[d].advantages for d in (3, 4)] == [[-1.0, -1.0], [-1.0, -1.0]]
    assert decisions[5].advantages == [0.0, 0.0]
    args.post_branch_credit = "zero"
    assign_advantages(decisions, episodes, [[0, 2]], args)
    assert [decisions[d].advantages for d in (3, 4)] == [[-1.0, -1.0], [0.0, 0.0]]


def test_assign_advantages_on_two_trees_keeps_them_apart():
    """Two trees of one step with the same task: siblings are matched by (tree, branch point)."""
    args = Args(branch_factor=2, lam=1.0, branch_level="turn")
    decisions = [Decision([1], [5], [0.0]) for _ in range(4)]
    episodes = [Episode(task_id=3, tree=0, reward=1.0, decisions=[0]),
                Episode(task_id=3, tree=1, reward=0.0, decisions=[1]),
                Episode(task_id=3, tree=1, branch_point=0, reward=1.0, decisions=[2]),
                Episode(task_id=3, tree=0, branch_point=0, reward=1.0, decisions=[3])]
    assign_advantages(decisions, episodes, [[0], [0]], args)
    assert [decisions[d].advantages for d in range(4)] == [[0.0], [-1.0], [1.0], [0.0]]


def test_assign_advantages_on_a_token_level_tree():
    """Math: one action of 4 tokens, branch point at token 2, K = 2; the fork continues from token 2."""
    args = Args(branch_factor=2, lam=1.0, branch_level="token")
    decisions = [Decision([1], [5, 6, 7, 8], [0.0] * 4), Decision([1, 5, 6], [9, 8], [0.0] * 2)]
    episodes = [Episode(task_id=0, tree=0, reward=0.0, decisions=[0]),
                Episode(task_id=0, tree=0, branch_point=2, reward=1.0, decisions=[1])]
    assign_advantages(decisions, episodes, [[2]], args)
    assert decisions[0].advantages == [-1.0, -1.0, -1.0, -1.0]  # pre-branch (lam = 1), branch, post-branch
    assert decisions[1].advantages == [1.0, 1.0]


def test_compute_matching_default():
    args = Args()
    assert 1 + args.num_branch_points * (args.branch_factor - 1) == 7


def test_variance_toy_matches_closed_form():
    """bench/variance_toy.py: Monte Carlo agrees with K/(K-1)(sigma^2 + nu^2) and K/(K-1) sigma^2."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from variance_toy import closed_form, simulate

    for values, probs, sigma2, k in [((0.8, 0.2), (0.5, 0.5), 0.05, 4), ((0.9, 0.5, 0.1), (0.2, 0.3, 0.5), 0.02, 3)]:
        grpo, bpo = simulate(values, probs, sigma2, k, groups=100_000, seed=1)
        grpo_closed, bpo_closed, _ = closed_form(values, probs, sigma2, k)
        assert grpo == pytest.approx(grpo_closed, rel=0.02) and bpo == pytest.approx(bpo_closed, rel=0.02)
    assert closed_form((0.8, 0.2), (0.5, 0.5), 0.05, 4)[:2] == pytest.approx((0.18667, 0.06667), abs=1e-4)


def test_invalid_action_gets_no_positive_advantage():
    """The turn-level tree of the test above with the backbone's first action rejected by the env: it keeps no
    positive credit (Eq. 5 gave it +1); --credit-invalid-actions gives it back."""
    args = Args(branch_factor=2, lam=0.5, branch_level="turn", post_branch_credit="sibling")
    decisions, episodes = turn_level_tree()
    decisions[0].invalid = decisions[3].invalid = True
    assign_advantages(decisions, episodes, [[0, 2]], args)
    assert decisions[0].advantages == [0.0, 0.0] and decisions[3].advantages == [-1.0, -1.0]
    args.credit_invalid_actions = True
    assign_advantages(decisions, episodes, [[0, 2]], args)
    assert decisions[0].advantages == [1.0, 1.0] and decisions[3].advantages == [-1.0, -1.0]


def two_point_tree(fresh: bool = False):
    """A backbone of 4 decisions (return 1) with branch points at decisions 1 and 3, K = 3. Reused backbone: 2 forks
    per point, returns 0, 0 at decision 1 and 1, 0 at decision 3. Fresh siblings: 3 forks per point, returns 0, 0,
    1 and 1, 0, 1. Every fork plays one decision."""
    fork_returns = {1: [0.0, 0.0, 1.0], 3: [1.0, 0.0, 1.0]} if fresh else {1: [0.0, 0.0], 3: [1.0, 0.0]}
    decisions = [Decision([1], [5], [0.0]) for _ in range(4)]
    episodes = [Episode(task_id=0, tree=0, reward=1.0, decisions=[0, 1, 2, 3])]
    for point, returns in fork_returns.items():
        for reward in returns:
            episodes.append(Episode(task_id=0, tree=0, branch_point=point, reward=reward, decisions=[len(decisions)]))
            decisions.append(Decision([1], [6], [0.0]))
    return decisions, episodes


def test_the_two_readings_of_the_branch_action_credit_on_a_two_point_tree():
    """Eq. 4 at the two points (K = 3, backbone first): decision 1 -> (1, -0.5, -0.5); decision 3 -> (0.5, 0.5, -1).
    Eq. 5 (lambda 0.5) on the backbone: step 0: 0.5 * 1 + 0.125 * 0.5 = 0.5625; step 2: 0.5 * 0.5 = 0.25; step 3:
    0.5. The backbone's action at decision 1 gets, read literally (`eq5`: branch points at depth >= t, the point
    itself included), 1 + 0.25 * 0.5 = 1.125, and the three advantages at decision 1 sum to 0.125, not 0: the
    backbone's action is favoured over its siblings by the later comparison. Read as Eq. 4 alone (`eq4`), it gets
    1.0 and both points sum to 0. At the last point both readings agree."""
    for credit, backbone in (("eq5", [0.5625, 1.125, 0.25, 0.5]), ("eq4", [0.5625, 1.0, 0.25, 0.5])):
        args = Args(branch_factor=3, lam=0.5, branch_level="turn", branch_action_credit=credit)
        decisions, episodes = two_point_tree()
        diagnostics = assign_advantages(decisions, episodes, [[1, 3]], args)
        assert [decisions[d].advantages[0] for d in range(4)] == pytest.approx(backbone), credit
        assert [decisions[d].advantages[0] for d in (4, 5, 6, 7)] == pytest.approx([-0.5, -0.5, 0.5, -1.0])
        at_first = backbone[1] + decisions[4].advantages[0] + decisions[5].advantages[0]
        at_last = backbone[3] + decisions[6].advantages[0] + decisions[7].advantages[0]
        assert (at_first, at_last) == pytest.approx((0.125, 0.0) if credit == "eq5" else (0.0, 0.0))
        # the open questions' diagnostics: the pre-branch step's advantage, the backbone's lead over its siblings
        assert diagnostics == pytest.approx({"pre_branch_advantage": 0.5625, "backbone_minus_siblings": 0.75})
    assert Args().branch_action_credit == "eq5"  # the default is Eq. 5 as written


def test_fresh_siblings_compare_k_exchangeable_draws():
    """--fresh-siblings: K = 3 new forks per point, Eq. 4 among them (decision 1: 0, 0, 1 -> -0.5, -0.5, 1; decision 3:
    1, 0, 1 -> 0.5, -1, 0.5; each point sums to 0); the backbone's branch advantage is its return minus their mean
    (1 - 1/3 and 1 - 2/3), propagated by Eq. 5."""
    args = Args(branch_factor=3, lam=0.5, branch_level="turn", fresh_siblings=True)
    decisions, episodes = two_point_tree(fresh=True)
    diagnostics = assign_advantages(decisions, episodes, [[1, 3]], args)
    assert [decisions[d].advantages[0] for d in range(4, 10)] == pytest.approx([-0.5, -0.5, 1.0, 0.5, -1.0, 0.5])
    first, second = 2 / 3, 1 / 3
    assert [decisions[d].advantages[0] for d in range(4)] == pytest.approx(
        [0.5 * first + 0.125 * second, first + 0.25 * second, 0.5 * second, second])
    assert diagnostics["backbone_minus_siblings"] == pytest.approx((first + second) / 2)
