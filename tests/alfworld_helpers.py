"""Shared by the ALFWorld tests (importing it skips a test module where alfworld is not installed): the
real sample games, garbage actions, per-module generated games, and helpers that walk and record episodes."""

from pathlib import Path

import pytest

pytest.importorskip("alfworld", reason="the ALFWorld env needs the alfworld engine: pip install alfworld==0.4.2")

from envs.alfworld import AlfWorldEnv  # noqa: E402


REAL_SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "alfworld_real_sample"


MISSING_REAL = f"real ALFWorld sample games not found at {REAL_SAMPLE}"


needs_real = pytest.mark.skipif(not REAL_SAMPLE.is_dir(), reason=MISSING_REAL)


GARBAGE = ["", "   ", "jump", "go to the moon", "take apple 99 from nowhere", "put", "é ü 中文 \x00", "x" * 5000,
           "GO TO FRIDGE 1", "click[buy now]", "\\boxed{3}", "move"]


@pytest.fixture(scope="module", name="cache_dir")
def cache_dir_fixture(tmp_path_factory):
    return str(tmp_path_factory.mktemp("alfworld-games"))


@pytest.fixture(scope="module", name="gen")
def gen_fixture(cache_dir):
    """12 generated train games: task ids 0-5 and 6-11 each cover the six task types in GENERATED_ORDER."""
    return AlfWorldEnv(split="train", cache_dir=cache_dir, num_games=12)


@pytest.fixture(scope="module", name="real")
def real_fixture():
    if not REAL_SAMPLE.is_dir():
        pytest.skip(MISSING_REAL)
    return AlfWorldEnv(data_dir=str(REAL_SAMPLE))


def random_walk(env, rng, steps):
    """Take up to `steps` random admissible (sometimes invalid) actions; returns the last info."""
    info = env._info(invalid=False)
    for _ in range(steps):
        action = rng.choice(GARBAGE) if rng.random() < 0.1 else rng.choice(info["admissible_actions"])
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    return info


def trace(env, actions):
    out = []
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        out.append((obs, reward, terminated, truncated, info["won"], info["invalid"],
                    tuple(info["admissible_actions"])))
    return out
