"""The vocabulary covers every word of generated and real play (as policy.py's pre-tokenizer splits it)."""

import random
import re

from tests.alfworld_helpers import needs_real
from tests.alfworld_helpers import cache_dir_fixture, gen_fixture, real_fixture  # noqa: F401  (fixtures)

from envs.alfworld import AlfWorldEnv

PIECE = re.compile(r"[^\W\d_]+|\d|[^\w\s]|_")  # policy.py's pre-tokenizer: letter runs, digits, punctuation


def pieces(words):
    return {p for w in words for p in PIECE.findall(w)}


def played_words(env, task_ids, walks=("expert", "random")):
    """Words of every observation and admissible command along the expert's solution and a random walk."""
    texts = []
    for task_id in task_ids:
        rng = random.Random(task_id)
        for walk in walks:
            obs, info = env.reset(options={"task_id": task_id})
            texts += [obs] + info["admissible_actions"]
            actions = env.expert_plan() if walk == "expert" else [None] * 12
            for action in actions:
                obs, _, terminated, truncated, info = env.step(action or rng.choice(info["admissible_actions"]))
                texts += [obs] + info["admissible_actions"]
                if terminated or truncated:
                    break
    return {w for t in texts for w in t.split()}


def test_vocabulary_covers_generated_play(gen, cache_dir):
    vocab = gen.vocabulary()
    assert vocab == sorted(set(vocab)) and {"apple", "sinkbasin", "desklamp", "move", "Nothing"} <= set(vocab)
    missing = pieces(played_words(gen, range(6))) - pieces(vocab)
    assert not missing
    ood = AlfWorldEnv(split="eval_ood", cache_dir=cache_dir, num_games=6)
    assert not pieces(played_words(ood, range(6))) - pieces(vocab)  # held-out games use the same words


@needs_real
def test_vocabulary_covers_real_play(real):
    missing = pieces(played_words(real, range(6), walks=("random", "random"))) - pieces(real.vocabulary())
    assert not missing
