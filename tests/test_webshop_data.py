"""The world an episode reads: splits, determinism, vocabulary, and WebShop's own data files."""

import pytest
from tests.webshop_helpers import env_fixture, write_fixture  # noqa: F401  (fixtures)

from envs.webshop import WebShopEnv, generate_catalog, load_webshop_data, split_sizes


def test_splits_and_determinism():
    assert split_sizes(6910) == {"test": 500, "eval": 1000, "train": 5410}
    assert split_sizes(12087) == {"test": 500, "eval": 1000, "train": 10587}
    assert split_sizes(1000) == {"test": 72, "eval": 145, "train": 783}
    assert split_sizes(3) == {"test": 1, "eval": 1, "train": 1}
    sizes = {split: WebShopEnv(split=split).num_tasks for split in ("train", "eval", "test")}
    assert sizes == split_sizes(3000) == {"test": 217, "eval": 434, "train": 2349}
    a, b = generate_catalog(seed=0), generate_catalog(seed=0)
    assert a == b
    c = generate_catalog(seed=1)
    assert {p["asin"] for p in a} != {p["asin"] for p in c}
    env0, env0b, env1 = WebShopEnv(split="test"), WebShopEnv(split="test"), WebShopEnv(split="test", seed=1)
    assert env0.goals == env0b.goals and env0.goals != env1.goals
    assert env0.world is env0b.world  # built once per process
    assert env0.world.index is WebShopEnv(split="test", num_goals=500).world.index  # one index per catalog
    train = WebShopEnv(split="train")
    assert all(g not in train.goals for g in env0.goals)  # splits do not share goals
    with pytest.raises(ValueError, match="split"):
        WebShopEnv(split="validation")
    with pytest.raises(ValueError):
        WebShopEnv(max_steps=0)


def test_vocabulary_covers_pages_and_actions(env):
    vocab = set(env.vocabulary())
    assert env.vocabulary() == env.vocabulary() and len(vocab) > 500
    for task in range(10):
        obs, info = env.reset(options={"task_id": task})
        while True:
            action = env.expert_action()
            assert set(action.replace("[", " [ ").replace("]", " ] ").split()) <= vocab, action
            assert set(obs.split()) <= vocab and env.observation_space.contains(obs)
            obs, _, terminated, truncated, info = env.step(action)
            for a in info["admissible_actions"]:
                assert set(a.replace("[", " [ ").replace("]", " ] ").split()) <= vocab
            if terminated or truncated:
                break
    assert {"[SEP]", "search", "click", "[", "]", "<", ">", "prev", "next", "buy", "now"} <= vocab
    assert env.goals[0]["asin"] in vocab and env.goals[0]["asin"].lower() in vocab


# ---------------------------------------------------------------------------------------------------
# WebShop's data files
# ---------------------------------------------------------------------------------------------------
def test_loader_normalizes_like_webshop(tmp_path):
    write_fixture(tmp_path)
    products, goals = load_webshop_data(str(tmp_path), human_goals=False)
    assert [p["asin"] for p in products] == ["B000000001", "B000000002", "B000000003"]
    shampoo, shoes, mug = products
    assert shampoo["Title"] == "Acme Tea Tree Shampoo for Dry Hair" and shampoo["Price"] == "$12.99"
    assert shampoo["options"] == {"size": ["8 fl oz", "16 fl oz"], "scent": ["mint | lemon"]}
    assert shampoo["option_to_image"]["mint | lemon"] == "http://x/1.jpg" and shampoo["query"] == "shampoo"
    assert shampoo["Rating"] == "N.A." and shampoo["Reviews"] == [] and shampoo["MainImage"] == "http://x/main1.jpg"
    assert shoes["pricing"] == [30.0, 40.0] and shoes["Price"] == "$30.0 to $40.0"
    assert shoes["BulletPoints"] == ["Rubber sole"]
    assert mug["Attributes"] == ["DUMMY_ATTR"] and mug["pricing"] == [100.0] and mug["options"] == {}
    # synthetic goals: one per option combination of each instructed product
    assert len(goals) == 2 + 1
    assert goals[0]["instruction_text"].startswith(
        "i need a tea tree shampoo for dry hair with scent: mint | lemon, and size: 8 fl oz")
    assert goals[0]["goal_options"] == {"scent": "mint | lemon", "size": "8 fl oz"}
    human_products, human_goals = load_webshop_data(str(tmp_path))
    assert [g["instruction_text"].split(",")[0] for g in human_goals] == ["I want a tea tree shampoo in 16 fl oz",
                                                                        "running shoes with rubber sole"]
    assert human_goals[0]["goal_options"] == ["16 fl oz"]


def test_env_on_webshop_data(tmp_path):
    write_fixture(tmp_path)
    for human in (None, False):
        env = WebShopEnv(split="train", data_dir=str(tmp_path), num_products=None, human_goals=human)
        total = sum(WebShopEnv(split=s, data_dir=str(tmp_path), num_products=None, human_goals=human).num_tasks
                    for s in ("train", "eval", "test"))
        assert total == len(env.world.all_goals)
        for task in range(env.num_tasks):
            obs, info = env.reset(options={"task_id": task})
            while True:
                obs, reward, terminated, truncated, info = env.step(env.expert_action())
                if terminated or truncated:
                    break
            assert info["won"], info.get("reward_info")


def test_missing_data_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="setup"):
        WebShopEnv(data_dir=str(tmp_path / "nowhere"))
    (tmp_path / "items_shuffle_1000.json").write_text("[]")
    with pytest.raises(FileNotFoundError) as err:
        WebShopEnv(data_dir=str(tmp_path))
    message = str(err.value)
    assert "items_ins_v2_1000.json" in message and str(tmp_path) in message and "setup script" in message
    write_fixture(tmp_path, human=False)
    with pytest.raises(FileNotFoundError, match="items_human_ins.json"):
        load_webshop_data(str(tmp_path), human_goals=True)
    assert load_webshop_data(str(tmp_path))[1]  # synthetic goals without the human file
