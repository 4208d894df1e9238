"""The expert (near 100%, recovers from any state; the first-hit shortcut does not) and the SFT
demonstrator's systematic mistakes."""

import random

from tests.webshop_helpers import env_fixture  # noqa: F401  (fixtures)

from envs.webshop import WebShopEnv


def run_policy(env, policy, num_goals):
    wins = 0
    for task in range(num_goals):
        obs, info = env.reset(options={"task_id": task})
        while True:
            obs, reward, terminated, truncated, info = env.step(policy(env))
            if terminated or truncated:
                break
        wins += info["won"]
    return wins / num_goals


def first_hit(env, select_options=False):
    s = env.state
    if s.page == "search":
        return f"search[{env.expert_queries()[0]}]"
    if s.page == "results":
        return f"click[{s.results[0].lower()}]" if s.results else "click[back to search]"
    if select_options and s.page == "item":
        product = env.world.by_asin[s.asin]
        for name, value in s.goal["goal_options"].items():
            if value in product["options"].get(name, []) and s.options.get(name) != value:
                return f"click[{value}]"
    return "click[buy now]"


def test_expert_and_first_hit_success():
    env = WebShopEnv(split="test")  # 217 test goals with the default 3000 goals
    assert env.num_tasks >= 200
    expert = run_policy(env, lambda e: e.expert_action(), 200)
    first = run_policy(env, first_hit, 200)
    first_options = run_policy(env, lambda e: first_hit(e, select_options=True), 200)
    print(f"\nsuccess on 200 test goals: expert {expert:.3f}, first hit + buy {first:.3f}, "
          f"first hit + goal options + buy {first_options:.3f}")
    assert expert >= 0.95
    assert first < 0.5 and first_options < 0.5 and expert - first_options > 0.4


def test_expert_recovers_from_any_state(env):
    rng = random.Random(3)
    wins = 0
    for task in range(30):
        obs, info = env.reset(options={"task_id": task})
        for _ in range(rng.randint(0, 4)):  # wander first
            choices = info["admissible_actions"] or ["search[" + rng.choice(["coffee", "shoes", "red"]) + "]"]
            action = rng.choice([a for a in choices if a != "click[buy now]"] or choices)
            obs, _, terminated, truncated, info = env.step(action)
        big = WebShopEnv(split="test", max_steps=30)
        big.state, big.reset_args = env.state, env.reset_args
        while True:
            obs, reward, terminated, truncated, info = big.step(big.expert_action())
            if terminated or truncated:
                break
        wins += info["won"]
    assert wins >= 28


def test_demonstrator_makes_systematic_mistakes():
    """The SFT demonstrator is the expert plus state-dependent mistakes: it wins clearly less often than
    the expert, less the more often it errs, exactly as the expert without mistakes; the same rng seed
    gives the same demonstrations."""
    env = WebShopEnv(split="train")

    def play(seed, mistake_prob):
        rng, actions, wins = random.Random(seed), [], 0
        for task_id in range(200):
            _, info = env.reset(options={"task_id": task_id})
            assert info["task"] == info["goal"]["instruction_text"]
            done = False
            while not done:
                actions.append(env.demo_action(rng, mistake_prob))
                _, _, terminated, truncated, info = env.step(actions[-1])
                done = terminated or truncated
            wins += info["won"]
        return wins / 200, actions

    success, actions = play(0, 0.25)  # the warm start's mistake_prob
    print(f"\ndemonstrator success on 200 train goals: {success:.3f} (mistake_prob 0.25)")
    assert 0.4 < success < 0.85, success
    assert play(0, 0.25)[1] == actions
    more_mistakes = play(0, mistake_prob=0.5)[0]
    print(f"demonstrator success on 200 train goals: {more_mistakes:.3f} (mistake_prob 0.5)")
    assert more_mistakes < success
    assert play(0, mistake_prob=0.0)[0] == 1.0
