"""BPO against Algorithm 1 and Eq. 4 on trees grown by `bpo.grow_tree` itself, with a tiny random-init chat model
(its entropies only rank candidates) and a scripted sampler: Eq. 4 compares returns over the same span (from the
branch point on: a format penalty earned before it is no part of the comparison), and branch points are drawn from
{0..T0-1}, never the backbone's last action (token level: its last token), for every schedule."""

import importlib
import random

import pytest

import policy
from envs import make_env

bpo = importlib.import_module("bpo")
SCHEDULES = ["entropy", "random", "uniform", "inverted"]


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    torch.manual_seed(0)  # the same random init on every run
    directory = policy.build_tiny_chat_model(str(tmp_path_factory.mktemp("chat_model")), ["webshop", "math"])
    return (AutoModelForCausalLM.from_pretrained(directory, local_files_only=True).eval(),
            AutoTokenizer.from_pretrained(directory, local_files_only=True))


class ScriptedSampler:
    """FAKE sampler, named as such: a random-init chat model never writes a well-formed reply, and these tests must
    fix what every rollout writes. WebShop: `search[red shirt]` on the search page, `click[Back to Search]` after a
    search (both valid), inside `<action>` tags except at the backbone's turn `malformed_turn` (the backbone plays
    first, one prompt per call: its turn t is call t). Math: `reply` (at token level a sibling writes it after its
    fixed prefix)."""

    def __init__(self, tokenizer, malformed_turn: int | None = None, reply: str | None = None):
        self.tokenizer, self.malformed_turn, self.reply, self.calls = tokenizer, malformed_turn, reply, 0

    def generate(self, prompts, temperature, seeds=None, choices=None):
        out = []
        for prompt in prompts:
            text = self.reply
            if text is None:
                action = ("click[Back to Search]" if "Last action: search[" in self.tokenizer.decode(prompt)
                          else "search[red shirt]")
                text = action if self.calls == self.malformed_turn else f"<action>{action}</action>"
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]
            out.append((ids, [-1.0] * len(ids)))
        self.calls += 1
        return out

    def any_rank(self, flag):  # one process
        return flag


def grow(chat_model, sampler, env: str, **flags):
    model, tokenizer = chat_model
    args = bpo.Args(env=env, prompt_profile="chat", history_window=0, include_admissible=False, delta_min=0,
                    branch_level="token" if env == "math" else "turn", **flags)
    decisions, episodes, branch_points, _ = bpo.grow_tree([make_env(env, split="train")], [0], model, sampler,
                                                          tokenizer, args, random.Random(0))
    diagnostics = bpo.assign_advantages(decisions, episodes, branch_points, args)
    return decisions, episodes, branch_points, diagnostics


def test_eq4_compares_returns_from_the_branch_point_on(chat_model):
    """A backbone of 4 decisions, one branch point (uniform: an inner decision, >= 1), K = 3; every continuation
    is the same and earns 0. A malformed reply before the branch point (turn 0) costs the backbone 0.1 that its
    siblings, starting at s_t, never could earn: Eq. 4 over returns from t on gives every action 0 (comparing whole
    returns gave the backbone -0.1 and each sibling +0.05). A malformed reply after it (turn 3) is part of the
    backbone's return from t: Eq. 4 gives it -0.1 and each sibling +0.05."""
    for malformed_turn, backbone_advantage in ((0, 0.0), (3, -0.1)):
        decisions, episodes, branch_points, diagnostics = grow(
            chat_model, ScriptedSampler(chat_model[1], malformed_turn), "webshop", max_turns=4, num_branch_points=1,
            branch_factor=3, schedule="uniform", format_penalty=0.1)
        backbone, siblings = episodes[0], episodes[1:]
        (point,), = branch_points
        assert len(backbone.decisions) == 4 and point >= 1 and len(siblings) == 2  # the tree this test is about
        assert backbone.malformed_replies == 1 and backbone.reward == pytest.approx(-0.1)
        assert all(s.reward == 0.0 and s.invalid_actions == 0 for s in siblings)
        assert decisions[backbone.decisions[point]].advantages[0] == pytest.approx(backbone_advantage), malformed_turn
        assert [decisions[s.decisions[0]].advantages[0] for s in siblings] == pytest.approx(
            [-backbone_advantage / 2] * 2), malformed_turn
        assert diagnostics["backbone_minus_siblings"] == pytest.approx(backbone_advantage), malformed_turn
        if malformed_turn == 0:  # Eq. 5 propagates the zero comparison: no action of the tree has an advantage
            assert all(a == pytest.approx(0.0) for d in decisions for a in d.advantages)
            assert diagnostics["pre_branch_advantage"] == pytest.approx(0.0)
        # what the backbone earned strictly before each decision: a reply's own penalty is not before it
        assert backbone.rewards_before == pytest.approx([0.0, -0.1, -0.1, -0.1] if malformed_turn == 0 else [0.0] * 4)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_branch_points_exclude_the_last_action(chat_model, schedule):
    """Algorithm 1 draws B from {0..T0-1} for actions a_0..a_T0. With M = 2 and no spacing, every schedule takes
    every candidate: a 2-decision backbone branches at decision 0 only; a 1-decision backbone has no candidate,
    hence no branch point and no sibling, and its action gets advantage 0 (no comparison)."""
    decisions, episodes, branch_points, _ = grow(chat_model, ScriptedSampler(chat_model[1]), "webshop",
                                                 max_turns=2, num_branch_points=2, branch_factor=2, schedule=schedule)
    assert len(episodes[0].decisions) == 2
    assert branch_points == [[0]] and [e.branch_point for e in episodes[1:]] == [0]
    decisions, episodes, branch_points, _ = grow(chat_model, ScriptedSampler(chat_model[1]), "webshop",
                                                 max_turns=1, num_branch_points=2, branch_factor=2, schedule=schedule)
    assert len(episodes[0].decisions) == 1
    assert branch_points == [[]] and len(episodes) == 1
    assert all(a == 0.0 for d in decisions for a in d.advantages)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_token_level_branch_points_exclude_the_last_token(chat_model, schedule):
    """Math: one action per episode, branched at token positions inside it. With as many points as tokens and no
    spacing, every schedule takes every candidate: all positions but the last (the stop token); a one-token reply
    has none."""
    decisions, episodes, branch_points, _ = grow(chat_model, ScriptedSampler(chat_model[1], reply="\\boxed{4}"),
                                                 "math", num_branch_points=20, branch_factor=2, schedule=schedule)
    length = len(decisions[episodes[0].decisions[0]].action_ids)
    assert len(episodes[0].decisions) == 1 and 2 < length < 20
    assert branch_points == [list(range(length - 1))]
    decisions, episodes, branch_points, _ = grow(chat_model, ScriptedSampler(chat_model[1], reply=""), "math",
                                                 num_branch_points=2, branch_factor=2, schedule=schedule)
    assert len(decisions[0].action_ids) == 1 and branch_points == [[]] and decisions[0].advantages == [0.0]


def test_the_entropy_pass_runs_in_micro_batches_with_the_same_entropies(chat_model, monkeypatch):
    """Eq. 3's entropies come from forwards of --micro-batch-size decisions (the memory plan's rows), not one forward
    over every backbone decision: one decision a pass ranks the candidates with the same entropies as all at once."""
    entropies, passes, forward = {}, [], bpo.action_logprobs
    monkeypatch.setattr(bpo, "action_logprobs", lambda model, batch, *rest: passes.append(len(batch)) or forward(
        model, batch, *rest))  # the real function, its batch sizes recorded
    for micro_batch_size in (None, 1):
        passes.clear()
        _, episodes, _, _ = grow(chat_model, ScriptedSampler(chat_model[1]), "webshop", max_turns=5,
                                 micro_batch_size=micro_batch_size, minibatch_size=64)
        entropies[micro_batch_size] = episodes[0].entropies
    assert passes == [1] * 5  # the backbone's 5 decisions, one a pass
    assert len(entropies[1]) >= 3 and entropies[1] == pytest.approx(entropies[None], abs=1e-5)
