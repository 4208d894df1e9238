"""Every action argument a page offers is short and copyable for the tiny model's word-level tokenizer:
an ASIN is one token, an option value or a button at most one token per word or number, an ALFWorld object or
receptacle with its number (`cabinet 10`) one token, and no observation or admissible action of a few hundred
episodes has an unknown token."""

import random

import pytest

from envs import make_env
from policy import WARM_START_DEFAULTS, build_word_tokenizer, tokenizer_words


def walk(env, episodes: int, seed: int, max_steps: int = 15):
    """Observations and admissible actions of demonstrator episodes with random detours."""
    rng = random.Random(seed)
    for _ in range(episodes):
        obs, info = env.reset(options={"task_id": rng.randrange(env.num_tasks)})
        for _ in range(max_steps):
            yield obs, info
            admissible = info.get("admissible_actions") or []
            if admissible and rng.random() < 0.3:
                action = rng.choice(admissible)
            else:
                action = env.demo_action(rng, 0.25)
            obs, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break


def tokens(tokenizer, text: str) -> list[str]:
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert tokenizer.unk_token_id not in ids, (text, tokenizer.convert_ids_to_tokens(ids))
    assert tokenizer.decode(ids) == text  # lossless
    return tokenizer.convert_ids_to_tokens(ids)


def test_webshop_arguments_are_copyable():
    env = make_env("webshop", split="train")
    tokenizer = build_word_tokenizer(tokenizer_words(env, "webshop"))
    empty = len(tokens(tokenizer, "click[]"))
    arguments, asins = set(), set()
    for obs, info in walk(env, episodes=300, seed=0):
        tokens(tokenizer, obs)
        for action in info["admissible_actions"]:
            arguments.add(action[len("click["):-1])
    for argument in arguments:
        count = len(tokens(tokenizer, f"click[{argument}]")) - empty
        if argument.startswith("B0") and len(argument) == 10:
            asins.add(argument)
            assert count == 1, argument  # an ASIN is one token
        else:
            assert count <= len(argument.split()), (argument, tokens(tokenizer, argument))
    assert len(asins) > 100 and len(arguments) > len(asins) + 20  # the walk saw many products and options
    # the expert clicks exactly what the page shows
    env.reset(options={"task_id": 0})
    for _ in range(15):
        action = env.expert_action()
        if action.startswith("click["):
            shown = [a[len("click["):-1] for a in env._info(False)["admissible_actions"]]
            assert action[len("click["):-1] in shown, (action, shown)
        if env.step(action)[2]:
            break


@pytest.mark.slow
def test_alfworld_commands_are_copyable():
    pytest.importorskip("alfworld")
    env = make_env("alfworld", split="train", num_games=40)
    tokenizer = build_word_tokenizer(tokenizer_words(env, "alfworld"), whole_names=True)  # as the warm start's
    assert WARM_START_DEFAULTS["alfworld"]["whole_names"]
    commands = set()
    for obs, info in walk(env, episodes=30, seed=0, max_steps=12):
        tokens(tokenizer, obs)
        tokens(tokenizer, info["task"])
        commands.update(info["admissible_actions"])
    assert len(commands) > 200
    for command in commands:  # an object or receptacle with its number (`cabinet 10`) is one token
        words = command.split()
        assert len(tokens(tokenizer, command)) == len(words) - sum(w.isdigit() for w in words), command
    assert tokens(tokenizer, "take apple 1 from cabinet 10") == ["take", "ĠappleĠ1", "Ġfrom", "ĠcabinetĠ10"]
