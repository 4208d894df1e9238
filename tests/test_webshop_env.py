"""WebShopEnv: pages, navigation, actions (spaced, invalid, random), step limit, reset options, snapshots."""

import random
import string
from math import isclose

import pytest
from tests.webshop_helpers import goal_on, walk
from tests.webshop_helpers import env_fixture  # noqa: F401  (fixtures)

from envs import check_snapshot_fidelity, make_env
from envs.webshop import WebShopEnv, expert_query, get_reward, parse_action


# ---------------------------------------------------------------------------------------------------
# Pages
# ---------------------------------------------------------------------------------------------------
def test_make_env():
    env = make_env("webshop", split="test")
    obs, info = env.reset(options={"task_id": 0})
    assert obs.startswith("WebShop [SEP] Instruction: [SEP] Find me ") and info["task_id"] == 0


def test_search_page(env):
    obs, info = env.reset(options={"task_id": 0})
    instruction = env.goals[0]["instruction_text"]
    assert obs == f"WebShop [SEP] Instruction: [SEP] {instruction} [SEP] Search"
    assert info["has_search_bar"] and info["admissible_actions"] == [] and not info["won"] and not info["invalid"]
    assert info["goal"] is env.goals[0] and info["task_id"] == 0


def test_results_pages(env):
    env.reset(options={"task_id": 0})
    instruction = env.goals[0]["instruction_text"]
    obs, reward, terminated, truncated, info = env.step("search[black]")
    results = env.state.results
    assert len(results) == 50 and reward == 0 and not (terminated or truncated or info["invalid"])
    items = " [SEP] ".join(f"{a} [SEP] {env.world.by_asin[a]['Title']} [SEP] {env.world.by_asin[a]['Price']}"
                           for a in results[:10])
    assert obs == (f"Instruction: [SEP] {instruction} [SEP] Back to Search [SEP] Page 1 (Total results: 50) "
                   f"[SEP] Next > [SEP] {items}")
    # admissible actions name each clickable as the page shows it (clicks are case-insensitive)
    assert info["admissible_actions"] == (["click[Back to Search]", "click[Next >]"]
                                          + [f"click[{a}]" for a in results[:10]])
    assert not info["has_search_bar"]
    obs, *_, info = env.step("click[next >]")
    assert "Page 2 (Total results: 50) [SEP] < Prev [SEP] Next > [SEP] " + results[10] in obs
    assert info["admissible_actions"][:3] == ["click[Back to Search]", "click[< Prev]", "click[Next >]"]
    obs, *_ = env.step("click[< prev]")
    assert "Page 1 (Total results: 50) [SEP] Next > [SEP] " + results[0] in obs
    # past the last page the list is empty and Next > stays, as in WebShop's template
    for _ in range(5):
        obs, *_ = env.step("click[next >]")
    assert obs.endswith("Page 6 (Total results: 50) [SEP] < Prev [SEP] Next >")


def test_item_and_sub_pages(env):
    task = goal_on(env, lambda p, g: len(p["options"]) == 2)
    walk(env, task, lambda e: e.state.page == "item")
    product = env.world.by_asin[env.state.asin]
    instruction = env.goals[task]["instruction_text"]
    options = " [SEP] ".join(f"{name} [SEP] " + " [SEP] ".join(values) for name, values in product["options"].items())
    expected = (f"Instruction: [SEP] {instruction} [SEP] Back to Search [SEP] < Prev [SEP] {options} [SEP] "
                f"{product['Title']} [SEP] Price: {product['Price']} [SEP] Rating: {product['Rating']} [SEP] "
                "Description [SEP] Features [SEP] Reviews [SEP] Buy Now")
    assert env.state.obs == expected
    head = f"Instruction: [SEP] {instruction} [SEP] Back to Search [SEP] < Prev [SEP] "
    obs, *_, info = env.step("click[description]")
    assert obs == head + product["Description"]
    assert info["admissible_actions"] == ["click[Back to Search]", "click[< Prev]"]
    obs, *_ = env.step("click[< prev]")
    assert obs == expected
    obs, *_ = env.step("click[features]")
    assert obs == head + " [SEP] ".join(product["BulletPoints"])
    env.step("click[< prev]")
    obs, *_ = env.step("click[reviews]")
    review = product["Reviews"][0]
    assert obs.startswith(head + f'"{review["title"]}" [SEP] {review["score"]} [SEP] {review["body"]}')


def test_navigation_and_options(env):
    task = goal_on(env, lambda p, g: len(p["options"]) == 2)
    walk(env, task, lambda e: e.state.page == "item")
    product = env.world.by_asin[env.state.asin]
    item_obs = env.state.obs
    (name1, values1), (name2, values2) = product["options"].items()
    obs, reward, *_, info = env.step(f"click[{values1[0]}]")
    assert obs == item_obs and not info["invalid"] and env.state.options == {name1: values1[0]}
    env.step(f"click[{values1[-1]}]")  # one value per option type
    env.step(f"click[{values2[0]}]")
    assert env.state.options == {name1: values1[-1], name2: values2[0]}
    env.step("click[features]")
    env.step("click[< prev]")  # sub-page -> item keeps the options
    assert env.state.page == "item" and env.state.options == {name1: values1[-1], name2: values2[0]}
    page_num = env.state.page_num
    obs, *_ = env.step("click[< prev]")  # item -> results clears them, as WebShop's results page does
    assert env.state.page == "results" and env.state.options == {} and env.state.page_num == page_num
    assert f"Page {page_num} (Total results:" in obs
    obs, *_, info = env.step("click[back to search]")
    assert obs.startswith("WebShop [SEP] Instruction:") and info["has_search_bar"] and env.state.keywords is None


def test_buy_now_reward_info(env):
    task = goal_on(env, lambda p, g: len(g["goal_options"]) == 2)
    walk(env, task, lambda e: e.state.page == "item")
    obs, reward, terminated, truncated, info = env.step("click[buy now]")  # no option selected
    goal = env.goals[task]
    n = len(goal["attributes"]) + len(goal["goal_options"]) + 1
    assert terminated and not truncated and isclose(reward, (n - 2) / n) and not info["won"]
    ri = info["reward_info"]
    assert ri["r_type"] == 1.0 and ri["r_att"] == 1.0 and ri["r_option"] == 0 and ri["r_price"] is True
    assert isclose(ri["w_att"] + ri["w_option"] + ri["w_price"], 1.0)
    assert obs.startswith("Thank you for shopping with us! [SEP] Your score (min 0.0, max 1.0) [SEP] 0.")
    # pricier copy of the goal product: everything matches but the price
    pricier = [p for p in env.world.products if p["variant"] == "pricier"
               and p["family"] == env.world.by_asin[goal["asin"]]["family"]]
    for p in pricier:
        r, info = get_reward(p, goal, env.world.prices[p["asin"]], goal["goal_options"], verbose=True)
        assert info["r_price"] is False and r < 1


# ---------------------------------------------------------------------------------------------------
# Actions
# ---------------------------------------------------------------------------------------------------
def test_parse_action():
    assert parse_action("click[Buy Now]") == ("click", "buy now")
    assert parse_action("click [ B07XYZ ]") == ("click", "b07xyz")
    assert parse_action("search [ red   shoes ]") == ("search", "red shoes")
    assert parse_action("nonsense") == ("nonsense", None)
    assert parse_action("click[]") == ("click[]", None)


def test_spaced_actions(env):
    task = goal_on(env, lambda p, g: "size" in p["options"] and "x-large" in p["options"]["size"])
    obs, info = env.reset(options={"task_id": task})
    query = expert_query(env.goals[task]["instruction_text"])
    obs, _, _, _, info = env.step(f"search [ {' '.join(query.upper().split())} ]")
    assert not info["invalid"] and env.state.keywords == query
    while env.goals[task]["asin"] not in env.state.results[(env.state.page_num - 1) * 10:env.state.page_num * 10]:
        assert not env.step("click [ next > ]")[-1]["invalid"]
    assert not env.step(f"click [ {env.goals[task]['asin']} ]")[-1]["invalid"]
    assert not env.step("click [ x - large ]")[-1]["invalid"] and env.state.options["size"] == "x-large"
    assert not env.step("click [ < prev ]")[-1]["invalid"] and env.state.page == "results"


def test_invalid_actions(env):
    obs, info = env.reset(options={"task_id": 1})
    for action in ["", "click[", "search[]", "search[ ]", "click[]", "buy now", "click[buy now]", "click[search]",
                   "click[next >]", "jump[home]", "search", "[x]", "\\boxed{3}", None, 12]:
        before = env.state.obs
        obs, reward, terminated, truncated, info = env.step(action)
        assert obs == before and reward == 0 and info["invalid"] and not terminated
    env.reset(options={"task_id": 1})
    obs, *_ = env.step("search[coffee]")
    for action in ["search[tea]", "click[b0nonexist]", "click[description]", "click[< prev]", "click[buy now]"]:
        o, reward, terminated, truncated, info = env.step(action)
        assert o == obs and reward == 0 and info["invalid"]
    # search from a results page is accepted with search_anywhere=True (the real text env's rule)
    anywhere = WebShopEnv(split="test", search_anywhere=True)
    anywhere.reset(options={"task_id": 1})
    anywhere.step("search[coffee]")
    assert not anywhere.step("search[tea]")[-1]["invalid"] and anywhere.state.keywords == "tea"


def would_be_valid(env, action):
    """Independent statement of the action rules: a search on the search page, or a click on a clickable."""
    name, arg = parse_action(action)
    if not arg:
        return False
    if name == "search":
        return env.state.page == "search"
    texts = ["".join(c[0].split()) for c in env.state.clickables if c[1] != "search"]
    return name == "click" and (arg in [c[0] for c in env.state.clickables if c[1] != "search"]
                                or texts.count("".join(arg.split())) == 1)


def test_random_strings_never_raise(env):
    rng = random.Random(0)
    alphabet = string.printable + "[]<>›é"
    pieces = ["click[", "search[", "]", "[", "buy now", "next >", "< prev", " ", "back to search", "description",
              "click [", " ] ", "CLICK[", "x-large", "b0"]
    starts = []
    env.reset(options={"task_id": 2})
    starts.append(env.snapshot())  # search page
    env.step("search[coffee]")
    starts.append(env.snapshot())  # results
    walk(env, 2, lambda e: e.state.page == "item")
    starts.append(env.snapshot())  # item
    env.step("click[description]")
    starts.append(env.snapshot())  # sub-page
    num_invalid = 0
    for i in range(5000):
        live = starts[i % len(starts)].restore()
        before = (live.state.obs, live.state.page, live.state.page_num, live.state.asin, dict(live.state.options))
        if rng.random() < 0.5:
            action = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        else:
            action = "".join(rng.choice(pieces + list("xyz09 ")) for _ in range(rng.randint(1, 6)))
        expected_valid = would_be_valid(live, action)
        obs, reward, terminated, truncated, info = live.step(action)  # never raises
        assert info["invalid"] == (not expected_valid), action
        if not expected_valid:
            num_invalid += 1
            after = (live.state.obs, live.state.page, live.state.page_num, live.state.asin, dict(live.state.options))
            assert reward == 0 and obs == before[0] and after == before and not terminated, action
    assert num_invalid >= 4500


def test_random_click_arguments_are_invalid(env):
    rng = random.Random(1)
    walk(env, 3, lambda e: e.state.page == "item")
    handle = env.snapshot()
    for _ in range(500):
        live = handle.restore()
        arg = "".join(rng.choice(string.ascii_letters + string.digits + " -<>") for _ in range(rng.randint(1, 12)))
        if "".join(arg.lower().split()) in {"".join(c[0].split()) for c in live.state.clickables}:
            continue
        obs, reward, terminated, truncated, info = live.step(f"click[{arg}]")
        assert info["invalid"] and reward == 0 and obs == env.state.obs


def test_actions_after_done(env):
    walk(env, 4, lambda e: e.state.page == "item")
    obs, reward, terminated, truncated, info = env.step("click[buy now]")
    assert terminated
    for action in ["click[buy now]", "search[x]", "click[back to search]", "garbage"]:
        o, r, te, tr, i = env.step(action)
        assert o == obs and r == 0 and i["invalid"] and te and not tr


def test_step_limit():
    env = WebShopEnv(split="test", max_steps=15)
    env.reset(options={"task_id": 0})
    for step in range(1, 16):
        obs, reward, terminated, truncated, info = env.step("click[nothing]")
        assert reward == 0 and not terminated and truncated == (step == 15)
    assert env.step(env.expert_action())[-1]["invalid"]
    # Buy Now on the last allowed step terminates with its reward instead of truncating
    walk(env, 0, lambda e: e.state.page == "item")
    actions = list(env.actions_taken)
    env = WebShopEnv(split="test", max_steps=len(actions) + 1)
    env.reset(options={"task_id": 0})
    for action in actions:
        assert not any(env.step(action)[2:4])
    obs, reward, terminated, truncated, info = env.step("click[buy now]")
    assert terminated and not truncated and reward > 0
    env = WebShopEnv(split="test", max_steps=6)
    # the step that reaches the limit on a valid non-terminal action truncates with reward 0
    env.reset(options={"task_id": 0})
    for _ in range(5):
        env.step("click[x]")
    obs, reward, terminated, truncated, info = env.step(env.expert_action())
    assert truncated and not terminated and reward == 0 and not info["invalid"]


def test_reset_options(env):
    obs1, info1 = env.reset(seed=5)
    obs2, info2 = env.reset(seed=5)
    assert obs1 == obs2 and info1["task_id"] == info2["task_id"]
    goal = dict(env.goals[7])
    obs, info = env.reset(options={"goal": goal})
    assert goal["instruction_text"] in obs and info["task_id"] is None and info["goal"] == goal
    while True:
        obs, reward, terminated, truncated, info = env.step(env.expert_action())
        if terminated or truncated:
            break
    assert info["won"]
    with pytest.raises(ValueError):
        env.reset(options={"goal": {"instruction_text": "x"}})
    with pytest.raises(ValueError):
        env.reset(options={"task_id": env.num_tasks})


# ---------------------------------------------------------------------------------------------------
# Snapshots
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("task", [0, 5, 11])
def test_snapshot_fidelity(task):
    env = WebShopEnv(split="test")
    points = [lambda e: True, lambda e: e.state.page == "results",
              lambda e: e.state.page == "item" and len(e.state.options) >= 1]
    for seed, until in enumerate(points):
        info = walk(env, task, until)
        report = check_snapshot_fidelity(env, info, seed=seed, num_steps=15)
        assert report.ok and report.steps_compared >= 1
    info = walk(env, task, lambda e: e.state.page == "item")
    env.step("click[reviews]")
    assert check_snapshot_fidelity(env, None, actions=["click[< prev]", "click[buy now]", "click[x]"]).ok


def test_restore_independence():
    env = WebShopEnv(split="test")
    task = goal_on(env, lambda p, g: len(g["goal_options"]) >= 1)
    walk(env, task, lambda e: e.state.page == "item")
    original = (env.state.obs, env.state.page, dict(env.state.options), env.state.steps)
    handle = env.snapshot()
    a, b = handle.restore(), handle.restore()
    assert a.world is env.world and a.state is not env.state and a.state.options is not env.state.options
    value = next(iter(env.goals[task]["goal_options"].values()))
    a.step(f"click[{value}]")
    _, reward_a, terminated_a, *_ = a.step("click[buy now]")
    b.step("click[< prev]")
    assert terminated_a and a.state.page == "done" and b.state.page == "results" and b.state.options == {}
    assert (env.state.obs, env.state.page, dict(env.state.options), env.state.steps) == original
    c = handle.restore()
    assert (c.state.obs, c.state.page, c.state.options, c.state.steps) == original
    assert c.actions_taken == env.actions_taken
