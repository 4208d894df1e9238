"""Shared by the WebShop tests: a test-split env per test module, helpers that walk it, and a small set of
WebShop's own data files."""

import json

import pytest

from envs.webshop import WebShopEnv


@pytest.fixture(scope="module", name="env")
def env_fixture():
    return WebShopEnv(split="test")


def goal_on(env, predicate):
    """First task id of env's split whose goal product satisfies predicate(product, goal)."""
    for i, goal in enumerate(env.goals):
        if predicate(env.world.by_asin[goal["asin"]], goal):
            return i
    raise LookupError("no such goal")


def walk(env, task_id, until):
    """Reset to task_id and follow the expert until until(env) holds; returns the last info."""
    obs, info = env.reset(options={"task_id": task_id})
    while not until(env):
        obs, _, terminated, truncated, info = env.step(env.expert_action())
        assert not (terminated or truncated)
    return info


def write_fixture(tmp_path, human=True):
    items = [
        {"asin": "B000000001", "name": "Acme Tea Tree Shampoo for Dry Hair",
         "full_description": "A shampoo with tea tree oil.",
         "small_description": ["Sulfate free formula", "Made in USA"], "pricing": "$12.99",
         "customization_options": {"Size": [{"value": "8 Fl Oz", "image": None}, {"value": "16 Fl Oz", "image": None}],
                                   "Scent": [{"value": "Mint/Lemon", "image": "http://x/1.jpg"}]},
         "images": ["http://x/main1.jpg"], "category": "beauty", "query": " Shampoo ",
         "product_category": "Beauty & Personal Care › Hair Care › Shampoos", "brand": "Acme", "seller_id": "s"},
        {"asin": "B000000002", "name": "Zuma Running Shoes", "full_description": "Light shoes.",
         "small_description": "Rubber sole", "pricing": "$30.00 - $40.00", "customization_options": None,
         "images": ["http://x/main2.jpg"], "category": "fashion", "query": "running shoes",
         "product_category": "Clothing, Shoes & Jewelry › Men › Shoes"},
        {"asin": "B000000001", "name": "duplicate", "full_description": "", "small_description": [], "pricing": "",
         "customization_options": {}, "images": [""], "category": "", "query": "", "product_category": ""},
        {"asin": "nan", "name": "bad", "full_description": "", "small_description": [], "pricing": "",
         "customization_options": {}, "images": [""], "category": "", "query": "", "product_category": ""},
        {"asin": "B000000003", "name": "Plain Mug", "full_description": "", "small_description": [""], "pricing": "",
         "customization_options": {"Color": None}, "images": [""], "category": "kitchen", "query": "mug",
         "product_category": "Home"},
    ]
    attributes = {
        "B000000001": {"attributes": ["tea tree", "dry hair"], "instruction": "i need a tea tree shampoo for dry hair",
                       "instruction_attributes": ["tea tree", "dry hair"]},
        "B000000002": {"attributes": ["rubber sole"], "instruction": "find running shoes with a rubber sole",
                       "instruction_attributes": ["rubber sole"]},
    }
    (tmp_path / "items_shuffle_1000.json").write_text(json.dumps(items))
    (tmp_path / "items_ins_v2_1000.json").write_text(json.dumps(attributes))
    if human:
        human_ins = {"B000000001": [{"instruction": "I want a tea tree shampoo in 16 fl oz.",
                                     "instruction_attributes": ["tea tree"], "instruction_options": ["16 fl oz"]},
                                    {"instruction": "skip me", "instruction_attributes": [],
                                     "instruction_options": []}],
                     "B000000002": [{"instruction": "running shoes with rubber sole",
                                     "instruction_attributes": ["rubber sole"], "instruction_options": []}]}
        (tmp_path / "items_human_ins.json").write_text(json.dumps(human_ins))
    return tmp_path
