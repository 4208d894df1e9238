"""The world an episode reads: WebShop's own data files or the generated catalog, prices, the search
index, goals and their splits (cached per process), and the vocabulary of it all."""

from __future__ import annotations

import copy
import itertools
import json
import os
import random
import re
import string
import threading
from collections import defaultdict
from decimal import Decimal

from envs.webshop.catalog import _price_limit, _synthetic_goal, generate_catalog, generate_goals
from envs.webshop.pages import PAGE_WORDS
from envs.webshop.search import BM25Index, product_document

SPLITS = ("train", "eval", "test")
REAL_NUM_GOALS = 6910  # WebShop's goal count that its 500 / 1000 test / eval split sizes refer to
REAL_TEST, REAL_EVAL = 500, 1000
SPLIT_SHUFFLE_SEED = 233


# ---------------------------------------------------------------------------------------------------
# WebShop's own data files
# ---------------------------------------------------------------------------------------------------
SETUP_HINT = ("it is one of WebShop's data files, downloaded by WebShop's setup script "
              "(github.com/princeton-nlp/WebShop: ./setup.sh -d small, into its data/ folder)")


def _data_file(data_dir: str, *names: str, required: bool = True) -> str | None:
    for name in names:
        path = os.path.join(data_dir, name)
        if os.path.exists(path):
            return path
    if required:
        raise FileNotFoundError(f"WebShop data file {names[0]!r} not found in directory {data_dir!r}: {SETUP_HINT}")
    return None


def normalize_webshop_products(raw_products: list[dict], attributes: dict, human_attributes: dict | None,
                               human_goals: bool, num_products: int | None = None,
                               reviews: dict | None = None) -> list[dict]:
    """WebShop's load_products normalization of items_shuffle records (deep-copied, input untouched)."""
    products = copy.deepcopy(raw_products if num_products is None else raw_products[:num_products])
    all_products, asins = [], set()
    reviews = reviews or {}
    for p in products:
        asin = p.get("asin")
        if not isinstance(asin, str) or asin == "nan" or len(asin) > 10 or asin in asins:
            continue
        asins.add(asin)
        p["Title"] = p.get("name", "")
        p["Description"] = p.get("full_description", "") or ""
        p["Reviews"], p["Rating"] = reviews.get(asin, ([], "N.A."))
        for r in p["Reviews"]:
            if "score" not in r:
                r["score"] = r.pop("stars", 0)
            r["body"] = r.pop("review", "") if "body" not in r else r["body"]
        small = p.get("small_description", "")
        p["BulletPoints"] = small if isinstance(small, list) else [small]
        pricing = p.get("pricing")
        if not pricing:
            pricing, price_tag = [100.0], "$100.0"
        else:
            pricing = [float(Decimal(re.sub(r"[^\d.]", "", price) or "0"))
                       for price in pricing.split("$")[1:]] or [100.0]
            if len(pricing) == 1:
                price_tag = f"${pricing[0]}"
            else:
                price_tag = f"${pricing[0]} to ${pricing[1]}"
                pricing = pricing[:2]
        p["pricing"], p["Price"] = pricing, price_tag
        options, option_to_image = {}, {}
        for option_name, contents in (p.get("customization_options") or {}).items():
            if contents is None:
                continue
            values = []
            for content in contents:
                value = content["value"].strip().replace("/", " | ").lower()
                values.append(value)
                option_to_image[value] = content.get("image")
            options[option_name.lower()] = values
        p["options"], p["option_to_image"] = options, option_to_image
        entry = attributes.get(asin, {})
        p["Attributes"] = entry["attributes"] if "attributes" in entry else ["DUMMY_ATTR"]
        if human_goals:
            if human_attributes and asin in human_attributes:
                p["instructions"] = human_attributes[asin]
        else:
            p["instruction_text"] = entry.get("instruction")
            p["instruction_attributes"] = entry.get("instruction_attributes")
        images = p.get("images") or [None]
        p["MainImage"] = images[0]
        p["query"] = (p.get("query") or "").lower().strip()
        p.setdefault("category", "")
        p.setdefault("product_category", "")
        all_products.append(p)
    return all_products


def product_prices(products: list[dict], seed: int = 0) -> dict[str, float]:
    """WebShop's generate_product_prices (a uniform draw inside a price range), seeded."""
    rng = random.Random(f"webshop-prices-{seed}")
    prices = {}
    for p in products:
        pricing = p["pricing"]
        prices[p["asin"]] = 100.0 if not pricing else (pricing[0] if len(pricing) == 1 else rng.uniform(*pricing[:2]))
    return prices


def human_goals_from(products: list[dict], prices: dict[str, float], rng: random.Random) -> list[dict]:
    """WebShop's get_human_goals."""
    goals = []
    for item in products:
        for ins in item.get("instructions", []):
            attributes = ins.get("instruction_attributes") or []
            if not attributes:
                continue
            price_upper, price_text = _price_limit(rng, prices[item["asin"]])
            goals.append({
                "asin": item["asin"], "category": item["category"], "query": item["query"],
                "name": item.get("name", ""),
                "product_category": item["product_category"],
                "instruction_text": ins["instruction"].strip(".") + price_text, "attributes": attributes,
                "price_upper": price_upper, "goal_options": ins.get("instruction_options") or [], "weight": 1,
            })
    return goals


def synthetic_goals_from(products: list[dict], prices: dict[str, float], rng: random.Random) -> list[dict]:
    """WebShop's get_synthetic_goals: one goal per option combination of each instructed product."""
    goals = []
    counts: dict[str, int] = defaultdict(int)
    for product in products:
        if product.get("instruction_text") is None or not product.get("instruction_attributes"):
            continue
        price_upper, price_text = _price_limit(rng, prices[product["asin"]])
        names = sorted(product["options"])
        for combination in itertools.product(*(product["options"][n] for n in names)):
            goal_options = dict(zip(names, combination))
            goals.append(_synthetic_goal(product, product["instruction_text"], product["instruction_attributes"],
                                         goal_options, price_upper, price_text))
            for att in product["instruction_attributes"]:
                counts[att] += 1
    for goal in goals:
        goal["weight"] = sum(1.0 / counts[a] for a in goal["attributes"]) / len(goal["attributes"])
    return goals


def load_webshop_data(data_dir: str, num_products: int | None = None, human_goals: bool | None = None,
                      seed: int = 0) -> tuple[list[dict], list[dict]]:
    """Products and goals from WebShop's data files; human goals when available unless human_goals=False."""
    if not os.path.isdir(data_dir):
        raise FileNotFoundError(f"WebShop data directory {data_dir!r} does not exist: it should hold "
                                f"items_shuffle_1000.json and items_ins_v2_1000.json; {SETUP_HINT}")
    items_path = _data_file(data_dir, "items_shuffle_1000.json", "items_shuffle.json")
    attrs_path = _data_file(data_dir, "items_ins_v2_1000.json", "items_ins_v2.json")
    human_path = _data_file(data_dir, "items_human_ins.json", required=human_goals is True)
    use_human = human_path is not None and human_goals is not False
    with open(items_path) as f:
        raw = json.load(f)
    with open(attrs_path) as f:
        attributes = json.load(f)
    human_attributes = None
    if use_human:
        with open(human_path) as f:
            human_attributes = json.load(f)
    reviews = None
    reviews_path = _data_file(data_dir, "reviews.json", required=False)
    if reviews_path:
        with open(reviews_path) as f:
            reviews = {r["asin"]: (r.get("reviews", []), r.get("average_rating", "N.A.")) for r in json.load(f)}
    products = normalize_webshop_products(raw, attributes, human_attributes, use_human, num_products, reviews)
    prices = product_prices(products, seed)
    rng = random.Random(f"webshop-goal-prices-{seed}")
    goals = (human_goals_from if use_human else synthetic_goals_from)(products, prices, rng)
    return products, goals


# ---------------------------------------------------------------------------------------------------
# Shared, read-only world: catalog, prices, index, goals and splits (cached per process)
# ---------------------------------------------------------------------------------------------------
def split_sizes(n: int) -> dict[str, int]:
    """WebShop's 500 test / 1000 eval / rest train, scaled by n / 6910 below 6910 goals."""
    if n >= REAL_NUM_GOALS:
        test, eval_ = REAL_TEST, REAL_EVAL
    else:
        test, eval_ = round(n * REAL_TEST / REAL_NUM_GOALS), round(n * REAL_EVAL / REAL_NUM_GOALS)
        if n >= 3:
            test, eval_ = max(1, test), max(1, eval_)
    test, eval_ = min(test, n), min(eval_, max(0, n - test))
    return {"test": test, "eval": eval_, "train": n - test - eval_}


class WebShopWorld:
    """Everything an episode only reads: products, prices, the BM25 index, goals by split."""

    def __init__(self, products: list[dict], goals: list[dict], prices: dict[str, float] | None = None,
                 index: BM25Index | None = None):
        self.products = products
        self.by_asin = {p["asin"]: p for p in products}
        self.prices = prices if prices is not None else {p["asin"]: p["pricing"][0] for p in products}
        self.index = index if index is not None else BM25Index([product_document(p) for p in products])
        shuffled = list(goals)
        random.Random(SPLIT_SHUFFLE_SEED).shuffle(shuffled)
        sizes = split_sizes(len(shuffled))
        self.all_goals = shuffled
        self.splits = {"test": shuffled[:sizes["test"]],
                       "eval": shuffled[sizes["test"]:sizes["test"] + sizes["eval"]],
                       "train": shuffled[sizes["test"] + sizes["eval"]:]}
        self._search_cache: dict[str, tuple[str, ...]] = {}
        self._vocabulary: list[str] | None = None
        self._lock = threading.Lock()

    def search(self, query: str) -> tuple[str, ...]:
        hit = self._search_cache.get(query)
        if hit is None:
            hit = tuple(self.products[i]["asin"] for i in self.index.search(query))
            if len(self._search_cache) > 50_000:
                self._search_cache.clear()
            self._search_cache[query] = hit
        return hit

    def vocabulary(self) -> list[str]:
        with self._lock:
            if self._vocabulary is None:
                self._vocabulary = _build_vocabulary(self)
            return self._vocabulary


_WORLD_CACHE: dict[tuple, WebShopWorld] = {}
_CATALOG_CACHE: dict[tuple, tuple] = {}
_WORLD_LOCK = threading.Lock()


def get_world(seed: int = 0, num_products: int | None = 300, num_goals: int = 1000, data_dir: str | None = None,
              human_goals: bool | None = None) -> WebShopWorld:
    """The shared world for these settings, built on first use."""
    if data_dir is not None:
        data_dir = os.path.abspath(data_dir)
        key = ("data", seed, num_products, data_dir, human_goals)
    else:
        key = ("gen", seed, num_products, num_goals)
    with _WORLD_LOCK:
        world = _WORLD_CACHE.get(key)
        if world is None:
            if data_dir is not None:
                products, goals = load_webshop_data(data_dir, num_products, human_goals, seed)
                world = WebShopWorld(products, goals, product_prices(products, seed))
            else:
                catalog_key = (seed, num_products)
                if catalog_key not in _CATALOG_CACHE:
                    products = generate_catalog(seed, num_products)
                    _CATALOG_CACHE[catalog_key] = (products, BM25Index([product_document(p) for p in products]))
                products, index = _CATALOG_CACHE[catalog_key]
                world = WebShopWorld(products, generate_goals(products, num_goals, seed), index=index)
            _WORLD_CACHE[key] = world
        return world


# ---------------------------------------------------------------------------------------------------
# Vocabulary
# ---------------------------------------------------------------------------------------------------
_WORD_PIECES = re.compile(r"[A-Za-z0-9]+|[^A-Za-z0-9\s]")


def _build_vocabulary(world: WebShopWorld) -> list[str]:
    texts: list[str] = list(PAGE_WORDS)
    for p in world.products:
        texts += [p["asin"], p["asin"].lower(), p.get("Title", ""), p.get("Description", ""), str(p.get("Price", "")),
                  str(p.get("Rating", "")), *p.get("BulletPoints", [])]
        for r in p.get("Reviews", []):
            texts += [f'"{r.get("title", "")}"', str(r.get("score", "")), r.get("body", "")]
        for name, values in p.get("options", {}).items():
            texts += [name, *values]
    texts += [g["instruction_text"] for g in world.all_goals]
    texts += [f"{i} {i})" for i in range(101)] + list(string.digits) + list(string.punctuation)
    words = set()
    for text in texts:
        for word in text.split():
            words.add(word)
            words.add(word.lower())
            words.update(_WORD_PIECES.findall(word))
            words.update(_WORD_PIECES.findall(word.lower()))
    return sorted(words)
