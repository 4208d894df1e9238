"""The generated catalog and its goals: consistent with the reward, goals in WebShop's template."""

import itertools

from tests.webshop_helpers import env_fixture  # noqa: F401  (fixtures)

from envs.webshop import PRODUCT_TYPES, fuzzy_score, normalize_color


def test_catalog_is_consistent_with_the_reward(env):
    """Texts never mention another product's attributes or contain an option value of their own product
    (either would let a wrong purchase score), attributes of different names never fuzzy-match, and
    option values of a group stay distinct after color normalization."""
    universe = sorted({a for t in PRODUCT_TYPES for a in t.attributes})
    for a, b in itertools.combinations(universe, 2):
        assert fuzzy_score(a, b) <= 85 and a not in b and b not in a, (a, b)
    for ptype in PRODUCT_TYPES:
        for name, values in ptype.options:
            normalized = [normalize_color(v) for v in values]
            assert len(set(normalized)) == len(values)
            if name != "size":
                assert all(fuzzy_score(a, b) <= 85 for a, b in itertools.combinations(normalized, 2)), ptype.noun
    asins = set()
    for p in env.world.products:
        assert len(p["asin"]) == 10 and p["asin"].startswith("B0") and p["asin"] == p["asin"].upper()
        asins.add(p["asin"])
        assert 3 <= len(p["Title"].split()) <= 7
        texts = [p["Title"].lower(), " ".join(p["BulletPoints"]).lower(), p["Description"].lower()]
        for a in universe:
            if a not in p["Attributes"]:
                assert not any(a in t for t in texts), (p["Title"], a)
        for values in p["options"].values():
            assert not any(normalize_color(v) in t for v in values for t in texts), p["Title"]
    assert len(asins) == len(env.world.products) == 300
    assert len({p["query"] for p in env.world.products}) >= 15
    assert {p["category"] for p in env.world.products} == {"beauty", "electronics", "fashion", "furniture", "grocery"}


def test_goals_follow_the_template(env):
    for goal in env.world.all_goals:
        product = env.world.by_asin[goal["asin"]]
        assert goal["instruction_text"].startswith("Find me ")
        assert goal["instruction_text"].endswith(f"and price lower than {goal['price_upper']:.2f} dollars")
        assert goal["attributes"] and set(goal["attributes"]) <= set(product["Attributes"])
        assert "  " not in goal["instruction_text"]
        assert product["pricing"][0] < goal["price_upper"] <= product["pricing"][0] + 40
        assert goal["price_upper"] % 10 == 0
        for name, value in goal["goal_options"].items():
            assert value in product["options"][name] and f"{name}: {value}" in goal["instruction_text"]
        assert product["variant"] != "pricier"
    assert any(not g["goal_options"] for g in env.world.all_goals)
