"""The env kit's shared contract: make_env errors, the fidelity checker (including a deliberately leaky
env it must catch), and 10,000 random action strings across envs that never raise."""

import copy
import random
import string

import pytest

from envs import (ReplaySnapshot, SnapshotFidelityError, TextEnv, check_snapshot_fidelity, env_class, make_env)


def available_envs():
    names = ["webshop", "math"]
    try:
        import alfworld  # noqa: F401
        names.append("alfworld")
    except ImportError:
        pass
    return names


def test_make_env_errors_list_what_exists():
    with pytest.raises(ValueError, match="available: .*math.*webshop"):
        make_env("webshopp")
    with pytest.raises(TypeError, match="unknown argument.*splt.*accepted: split"):
        make_env("math", splt="test")
    assert make_env("webshop", split="test").num_tasks > 0


class CounterEnv(TextEnv):
    """A tiny env whose state is a list of the actions seen; `leaky=True` makes its snapshot share that
    list between copies (the bug the checker exists for: a fault no shipped env has, built on purpose)."""

    def __init__(self, leaky: bool = False):
        super().__init__(leaky=leaky)
        self.leaky = leaky

    @property
    def num_tasks(self):
        return 1

    def _reset(self, seed, options):
        self.state = {"seen": []}
        return "start", {"won": False, "invalid": False, "admissible_actions": ["a", "b"], "task": "count"}

    def _step(self, action):
        self.state["seen"].append(action)
        done = len(self.state["seen"]) >= 6
        info = {"won": done, "invalid": action not in ("a", "b"), "admissible_actions": ["a", "b"]}
        return f"seen {len(self.state['seen'])}: {' '.join(self.state['seen'])}", float(done), done, False, info

    def expert_action(self):
        return "a"

    def vocabulary(self):
        return ["a", "b", "seen", "start"]

    def snapshot(self):
        if not self.leaky:
            return super().snapshot()
        env = self

        class SharedStateHandle:
            def restore(self):
                twin = copy.copy(env)  # shares env.state: every copy appends to the same list
                return twin

        return SharedStateHandle()


def test_checker_passes_an_exact_env_and_catches_a_leaky_one():
    exact = CounterEnv()
    _, info = exact.reset()
    exact.step("b")
    report = check_snapshot_fidelity(exact, info, num_restores=3, seed=1)
    assert report.ok and report.steps_compared >= 1

    leaky = CounterEnv(leaky=True)
    _, info = leaky.reset()
    leaky.step("b")
    with pytest.raises(SnapshotFidelityError, match="differs"):
        check_snapshot_fidelity(leaky, info, num_restores=3, seed=1)
    leaky = CounterEnv(leaky=True)
    _, info = leaky.reset()
    report = check_snapshot_fidelity(leaky, info, actions=["a", "b"], raise_on_error=False)
    assert not report.ok and "observation" in report.first_difference


def test_replay_snapshot_is_exact_and_independent():
    env = CounterEnv()
    env.reset()
    for action in ("a", "b", "x"):
        env.step(action)
    handle = ReplaySnapshot(env)
    first, second = handle.restore(), handle.restore()
    assert first.state == env.state == second.state and first.state is not second.state
    first.step("a")
    assert len(second.state["seen"]) == 3 and len(env.state["seen"]) == 3


@pytest.mark.parametrize("name", available_envs())
def test_fidelity_after_random_walks(name):
    env = make_env(name, split="test")
    rng = random.Random(0)
    for task_id in range(3):
        _, info = env.reset(options={"task_id": task_id})
        for _ in range(rng.randrange(4)):
            _, _, terminated, truncated, info = env.step(rng.choice(info.get("admissible_actions") or
                                                                    [env.expert_action()]))
            if terminated or truncated:
                _, info = env.reset(options={"task_id": task_id})
        assert check_snapshot_fidelity(env, info, num_restores=3, num_steps=6, seed=task_id).ok


def random_action(rng: random.Random, info: dict) -> str:
    kind = rng.random()
    if kind < 0.4:
        return "".join(rng.choice(string.printable) for _ in range(rng.randrange(0, 40)))
    if kind < 0.6:
        return rng.choice(["click[", "search[]", "click[]]", "[[x]]", "\\boxed{", "go to", "take", "", " ", "\x00"])
    admissible = info.get("admissible_actions") or ["search[shoes]"]
    action = rng.choice(admissible)
    return action if kind < 0.85 else action[: rng.randrange(len(action) + 1)] + rng.choice(string.printable)


def test_ten_thousand_random_actions_never_raise():
    names = available_envs()
    counts = {"webshop": 4500, "math": 4500, "alfworld": 1000} if "alfworld" in names else {"webshop": 5000,
                                                                                              "math": 5000}
    assert sum(counts.values()) == 10_000
    rng = random.Random(0)
    for name in names:
        env = make_env(name, split="train")
        _, info = env.reset(options={"task_id": 0})
        steps = 0
        for _ in range(counts[name]):
            obs, reward, terminated, truncated, info = env.step(random_action(rng, info))
            assert isinstance(obs, str) and isinstance(info["invalid"], bool) and isinstance(info["won"], bool)
            assert 0.0 <= reward <= 1.0
            steps += 1
            if terminated or truncated:
                _, info = env.reset(options={"task_id": rng.randrange(min(env.num_tasks, 20))})
        assert steps > 0
        assert env_class(name) is type(env)
