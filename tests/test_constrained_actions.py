"""--constrain-actions in every script: the HF sampler draws only admissible actions, and the loss scores the
sampled tokens under the same masked distribution, so the sampler's log-probs are the loss's at the start (the
PPO ratio is 1 before the update). The flag is refused where an env does not list every admissible action."""

import importlib
import math

import pytest
import torch

from policy import action_choices, allowed_next, build_tiny_model, build_word_tokenizer

SCRIPTS = ["grpo_baseline", "bpo", "treepo", "branchopd"]
ADMISSIBLE = ["go to cabinet 1", "go to cabinet 2", "go to countertop 1", "open cabinet 1", "examine cabinet 1",
              "take apple 1 from cabinet 1", "look"]


@pytest.fixture(scope="module")
def tiny_policy():
    torch.manual_seed(0)
    words = "go to cabinet countertop open examine take apple from look put a in the room you see".split()
    tokenizer = build_word_tokenizer(words + ["cabinet 1", "cabinet 2", "countertop 1", "apple 1"], whole_names=True)
    return build_tiny_model(tokenizer).eval(), tokenizer


def test_choices_and_their_next_tokens(tiny_policy):
    _, tokenizer = tiny_policy
    eos = tokenizer.eos_token_id
    choices = action_choices(tokenizer, ADMISSIBLE, [])
    assert sorted(tokenizer.decode(c[:-1]) for c in choices) == sorted(ADMISSIBLE) and all(c[-1] == eos for c in
                                                                                          choices)
    go, to = tokenizer("go to", add_special_tokens=False)["input_ids"]
    after_go_to = {tokenizer.decode([t]) for t in allowed_next(choices, [go, to], eos)}
    assert after_go_to == {" cabinet 1", " cabinet 2", " countertop 1"}
    # a fork in the middle of an action keeps the admissible actions that start with its prefix, minus the prefix
    assert [tokenizer.decode(c[:-1]) for c in action_choices(tokenizer, ADMISSIBLE, [go, to])] == [
        " cabinet 1", " cabinet 2", " countertop 1"]
    assert allowed_next(choices, [to], eos) == [eos]  # nothing continues: EOS alone


@pytest.mark.parametrize("script", SCRIPTS)
def test_sampler_draws_only_admissible_actions_and_the_loss_scores_the_same_distribution(script, tiny_policy):
    module = importlib.import_module(script)
    model, tokenizer = tiny_policy
    encode = lambda text: [tokenizer.bos_token_id] + tokenizer(text, add_special_tokens=False)["input_ids"]
    prompts = [encode("you see a cabinet 1")] * 5 + [encode("go to the room")] * 3
    choices = [action_choices(tokenizer, ADMISSIBLE, [])] * len(prompts)
    torch.manual_seed(1)
    samples = module.HFSampler(model, tokenizer, max_new_tokens=8).generate(prompts, 1.0, None, choices)
    decisions = []
    for prompt, (ids, logprobs) in zip(prompts, samples):
        assert tokenizer.decode(ids, skip_special_tokens=True) in ADMISSIBLE and ids[-1] == tokenizer.eos_token_id
        allowed = [allowed_next(choices[0], ids[:t], tokenizer.eos_token_id) for t in range(len(ids))]
        decisions.append(module.Decision(prompt, ids, logprobs, allowed=allowed))
    with torch.no_grad():
        logprobs, entropy, mask = module.action_logprobs(model, decisions, tokenizer.pad_token_id, 1.0)
        unmasked = module.action_logprobs(model, [module.Decision(d.prompt_ids, d.action_ids, d.logprobs)
                                                  for d in decisions], tokenizer.pad_token_id, 1.0)[0]
    for row, d in enumerate(decisions):
        assert torch.allclose(logprobs[row][mask[row]], torch.tensor(d.logprobs), atol=1e-4)
        # positive control: the unmasked distribution gives the sampled tokens less mass (a ratio far from 1)
        assert (unmasked[row][mask[row]] < logprobs[row][mask[row]] - 1e-3).any()
        widths = torch.tensor([len(a) for a in d.allowed], dtype=torch.float)
        assert (entropy[row][mask[row]] <= widths.log() + 1e-5).all() and entropy[row][mask[row]].isfinite().all()
    # the masked policy is a distribution over the admissible actions: their probabilities sum to 1
    every = [module.Decision(prompts[0], c, [], allowed=[allowed_next(choices[0], c[:t], tokenizer.eos_token_id)
                                                         for t in range(len(c))]) for c in choices[0]]
    with torch.no_grad():
        logprobs, _, mask = module.action_logprobs(model, every, tokenizer.pad_token_id, 1.0)
    assert math.isclose(sum(math.exp(logprobs[row][mask[row]].sum()) for row in range(len(every))), 1, abs_tol=1e-4)


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_flag_is_refused_where_it_cannot_hold(script):
    module = importlib.import_module(script)
    for bad in (dict(env="webshop"), dict(env="alfworld", prompt_profile="chat", model="DIR"),
                dict(env="alfworld", backend="vllm")):
        with pytest.raises(SystemExit, match="--constrain-actions"):
            module.apply_env_defaults(module.Args(constrain_actions=True, **bad))
    assert module.apply_env_defaults(module.Args(env="alfworld")).constrain_actions is True  # the default there
    assert module.apply_env_defaults(module.Args(env="alfworld", backend="vllm")).constrain_actions is False
    assert module.apply_env_defaults(module.Args(env="webshop")).constrain_actions is False
