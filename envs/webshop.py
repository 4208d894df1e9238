"""WebShop-compatible shopping environment in pure Python (Yao et al. 2022, arXiv 2207.01206).

    env = WebShopEnv(split="test")
    obs, info = env.reset(options={"task_id": 0})
    # 'WebShop [SEP] Instruction: [SEP] Find me non slip running shoes with color: black, ... [SEP] Search'
    obs, reward, terminated, truncated, info = env.step("search[non slip running shoes]")
    obs, reward, terminated, truncated, info = env.step("click[b0x1y2z3w4]")

The real benchmark cannot be installed from package registries (its product data, search index and
spaCy models are downloaded by its own setup script), so this module re-implements the behaviour of
WebShop's `text` observation mode (`web_agent_site/envs/web_agent_text_env.py`) on our own catalog:

Pages (text nodes of WebShop's HTML templates joined by " [SEP] "):
    search    WebShop [SEP] Instruction: [SEP] {instruction} [SEP] Search
    results   Instruction: [SEP] {instruction} [SEP] Back to Search [SEP] Page {p} (Total results: {n})
              [SEP] < Prev (only when p > 1) [SEP] Next > [SEP] {ASIN} [SEP] {Title} [SEP] {Price} ...
    item      Instruction: [SEP] {instruction} [SEP] Back to Search [SEP] < Prev [SEP] {option name}
              [SEP] {value} ... [SEP] {Title} [SEP] Price: {Price} [SEP] Rating: {Rating}
              [SEP] Description [SEP] Features [SEP] Reviews [SEP] Buy Now
    sub-pages Instruction: [SEP] {instruction} [SEP] Back to Search [SEP] < Prev [SEP] {text nodes}
              (Description: the description; Features: one node per bullet; Reviews: "{title}",
              score and body per review)
    done      Thank you for shopping with us! [SEP] Your score (min 0.0, max 1.0) [SEP] {reward}
              (WebShop's done page also prints its MTurk code and hidden debug fields; dropped here)
As in WebShop, selecting an option does not change the text observation (the radio button state is
not text), `Next >` is always shown on results pages, and going back from an item to the results
(`< Prev`) clears the selected options.

Actions: `search[keywords]` and `click[text]`, parsed with WebShop's regex `(.+)\\[(.+)\\]`; the
argument is lowercased and stripped, and the spaced form a word-level tokenizer decodes to
(`click [ b07xyz ]`, `click [ x - large ]`) is accepted: the name is stripped and lowercased, and a
click argument that matches no clickable exactly is compared with all whitespace removed. A click
must name a clickable of the current page (buttons, product ASINs, option values; `click[search]` is
not an action, as in WebShop). `search[...]` is valid only on the search page (the page with a
search bar, `info["has_search_bar"]`); pass `search_anywhere=True` for the real text env's behaviour,
which accepts a search from any page. An invalid action (any string; nothing raises) leaves the page
unchanged and gives reward 0 with `info["invalid"] = True`. `Buy Now` is the only terminal action.
The step that reaches `max_steps` (15 by default, the common agent setting) is truncated.

Reward (WebShop's `get_reward`, reproduced here with rapidfuzz in place of thefuzz):
    R = r_type * (N_att + N_opt + [price <= price_upper]) / (|attributes| + |goal options| + 1)
Attributes and non-size options match when fuzz.token_set_ratio > 85 (thefuzz semantics: default
string processing, score rounded to an integer), or when the text occurs in the product's title,
bullets or description; sizes match exactly; option values go through WebShop's color
normalization. r_type is 1, 0.5, 0.1 or 0 from the query, category and title-noun overlap. WebShop
finds title nouns with spaCy (`en_core_web_lg`), which is not available here: `title_nouns` is a
deterministic stand-in that keeps every word containing a letter that is not a function word, a
color or a common product adjective. It reproduces the title scores in WebShop's own tests (0.85,
0.31, 0.17, < 0.05) and all four of its published reward vectors.

Search: Okapi BM25 as in Lucene (k1=0.9, b=0.4, idf = ln(1 + (N - df + 0.5) / (df + 0.5))) over
title + description + first bullet + options text, lowercased, Lucene's English stopwords removed
and a minimal English plural stemmer (Lucene's EnglishMinimalStemmer; pyserini uses Porter), top 50,
documents without a matching term dropped, ties broken by catalog order, 10 results per page.

Catalog (default): a seeded generator of products in 18 types over WebShop's five categories, with
short titles (3-7 words), WebShop-style attributes ("machine wash", "gluten free", ...), options
(color, size, flavor, scent) and prices. Products come in families built to defeat shortcuts: the
base product, pricier copies of it (same texts, price above any price limit a goal on the base can
have; most carry an extra keyword-rich sentence that ranks them above the base), an option variant
(same text, other option values), a same-type sibling with other attributes and a sibling of another
type with the same attributes. So the first search hit is usually not a good buy: on 200 test goals
the expert (which knows the target) wins 100%, "search the instruction's key words, click the first
result, select the goal's options, buy" about 17%, and the same clicking the first result priced
under the limit about 57% (the rest needs checking the options). Goals follow WebShop's synthetic
template "Find me {attributes} {noun} with {option}: {value}, and {option}: {value}, and price lower
than {X:.2f} dollars", with X drawn as in WebShop (two of the four multiples of 10 above the price,
the larger one); pricier copies are never goal targets. Splits as in WebShop: goals shuffled with
random.Random(233), test = first 500, eval = next 1000, train = rest, where 500 and 1000 are scaled
by n / 6910 when there are n < 6910 goals (rounded; at least 1 each when n >= 3): the default 1000
goals give test 72, eval 145, train 783; the default 3000 goals give test 217, eval 434, train 2349.

WebShop data (`data_dir`): `items_shuffle_1000.json` (or `items_shuffle.json`), `items_ins_v2_1000.json`
(or `items_ins_v2.json`) and, optionally, `items_human_ins.json` are loaded with WebShop's product
normalization (`load_products`) and goal construction (`get_human_goals` when the human file is there
and `human_goals` is not False, else `get_synthetic_goals`); `num_products` keeps the first products
(pass None for all) and `num_goals` does not apply.

Snapshots: all episode state is in `self.state` (a `WebShopState`); the catalog, index and goals are
shared, read-only, and built once per (seed, num_products, num_goals, data_dir) in this process.
`RealWebShopEnv` adapts the real `web_agent_site` text env when it is installed.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import os
import random
import re
import string
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from rapidfuzz import fuzz
from rapidfuzz import utils as fuzz_utils

from envs.base import ReplaySnapshot, TextEnv

SEP = " [SEP] "
END_BUTTON = "Buy Now"
NEXT_PAGE = "Next >"
PREV_PAGE = "< Prev"
BACK_TO_SEARCH = "Back to Search"
SUB_PAGES = ("Description", "Features", "Reviews")
SEARCH_RETURN_N = 50
SPLITS = ("train", "eval", "test")
REAL_NUM_GOALS = 6910  # WebShop's goal count that its 500 / 1000 test / eval split sizes refer to
REAL_TEST, REAL_EVAL = 500, 1000
SPLIT_SHUFFLE_SEED = 233
ACTION_RE = re.compile(r"(.+)\[(.+)\]")

# ================================================================================================
# Reward (behaviour of web_agent_site/engine/goal.py and normalize.py)
# ================================================================================================
COLOR_SET = [
    "alabaster", "apricot", "aqua", "ash", "asphalt", "azure", "banana", "beige", "black", "blue",
    "blush", "bordeaux", "bronze", "brown", "burgundy", "camel", "camo", "caramel", "champagne",
    "charcoal", "cheetah", "chestnut", "chocolate", "christmas", "coffee", "cognac", "copper", "coral",
    "cranberry", "cream", "crystal", "dark", "denim", "eggplant", "elephant", "espresso", "fuchsia",
    "gold", "granite", "grape", "graphite", "grass", "gray", "green", "grey", "heather", "indigo",
    "ivory", "ivy", "khaki", "lavender", "lemon", "leopard", "light", "lilac", "lime", "magenta",
    "maroon", "mauve", "merlot", "midnight", "mint", "mocha", "multicolor", "mushroom", "mustard",
    "natural", "navy", "nude", "olive", "orange", "peach", "pewter", "pink", "plum", "purple",
    "rainbow", "red", "rose", "royal", "rust", "sand", "sapphire", "seashell", "silver", "skull",
    "slate", "steel", "stone", "stonewash", "sunflower", "tan", "taupe", "teal", "tiger", "turquoise",
    "violet", "walnut", "wheat", "white", "wine", "yellow",
]
EXACT_MATCH_OPTS = ["size"]
PRICE_RANGE = [10.0 * i for i in range(1, 100)]
FUZZY_THRESHOLD = 85


def normalize_color(color_string: str) -> str:
    """WebShop's color normalization: the first COLOR_SET entry found inside the string, else the string."""
    for norm_color in COLOR_SET:
        if norm_color in color_string:
            return norm_color
    return color_string


def fuzzy_score(a: str, b: str) -> int:
    """thefuzz.fuzz.token_set_ratio: lowercase, non-alphanumerics to spaces, score rounded to int."""
    a, b = fuzz_utils.default_process(a), fuzz_utils.default_process(b)
    if not a or not b:
        return 0
    return int(round(fuzz.token_set_ratio(a, b)))


# Stand-in for spaCy's noun tagging in get_type_reward (see the module docstring).
_FUNCTION_WORDS = set("""
a about above across after against all along also an and any are around as at be because before
behind below beneath beside between both but by can de des do does down during each either en et
every for from had has have he her his how i if in inside into is it its la le les may me more most
my near nor not of off on once one only onto or other our out over own per plus since so some such
than that the their them then there these they this those through to too toward under until up upon
us very via vs was we were what when where which while who whose why will with within without x yet
you your
""".split())
_ADJECTIVES = set("""
adjustable anti assorted authentic automatic basic best better big black breathable bright casual
classic clean clear comfortable compact compatible cool cozy custom dark deep delicate deluxe
digital double dry durable easy elegant electric essential extra fast fine flat free fresh full
genuine gentle great heavy high hot ideal large latest light lightweight listed little long low
luxury magnetic matte medium mini modern multi multipurpose natural new non official old organic
original perfect plain plus portable premium professional pure quick real regular reusable round
safe sensitive sheer short simple single slim small smart smooth soft solid special stainless
standard strong stylish super sweet thick thin tiny true ultra unisex universal unscented vintage
warm waterproof wide wireless
""".split()) - {"unisex"}
NON_NOUNS = frozenset(_FUNCTION_WORDS | _ADJECTIVES | set(COLOR_SET))
_NOUN_SPLIT = re.compile(r"[\s\-/(),;:&+|\[\]\"!?*_]+")


def title_nouns(name: str) -> list[str]:
    """Deterministic stand-in for the nouns spaCy tags in a product name (a list, duplicates kept)."""
    nouns = []
    for token in _NOUN_SPLIT.split(name.lower()):
        token = token.strip(".'`,")
        if token and any(c.isalpha() for c in token) and token not in NON_NOUNS:
            nouns.append(token)
    return nouns


def get_type_reward(purchased_product: dict, goal: dict) -> dict:
    """r_type in {0, 0.1, 0.5, 1}: query match, >= 2 shared category levels, title-noun overlap."""
    query_match = purchased_product.get("query") == goal.get("query")
    purchased_category = {x.strip() for x in purchased_product.get("product_category", "").split("›")}
    goal_category = {x.strip() for x in goal.get("product_category", "").split("›")}
    category_match = len(purchased_category & goal_category) >= 2
    purchased_nouns = title_nouns(purchased_product.get("name", ""))
    desired_nouns = title_nouns(goal.get("name", ""))
    if not desired_nouns:
        title_score = 0.2
    else:
        title_score = len(set(purchased_nouns) & set(desired_nouns)) / len(desired_nouns)
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return dict(r_type=r_type, query_match=query_match, category_match=category_match, title_score=title_score)


def _product_texts(product: dict) -> tuple[str, str, str]:
    # ' '.join on a string joins its characters, as WebShop does when BulletPoints is a string
    return (product.get("Title", "").lower(), " ".join(product.get("BulletPoints", [])).lower(),
            product.get("Description", "").lower())


def get_attribute_reward(purchased_product: dict, goal: dict) -> tuple[float, int]:
    """Fraction and number of goal attributes found (fuzzy in Attributes, or verbatim in the texts)."""
    goal_attrs = goal["attributes"]
    texts = None
    num_attr_matches = 0
    for g_attr in goal_attrs:
        if any(fuzzy_score(p_attr, g_attr) > FUZZY_THRESHOLD for p_attr in purchased_product.get("Attributes", [])):
            num_attr_matches += 1
            continue
        texts = texts or _product_texts(purchased_product)
        if any(g_attr in text for text in texts):
            num_attr_matches += 1
    return (num_attr_matches / len(goal_attrs) if goal_attrs else 0.0), num_attr_matches


def get_option_reward(purchased_product: dict, goal_options, purchased_options: dict) -> tuple[float | None, int]:
    """Fraction of goal options hit by the purchased options (None when the goal has no options)."""
    purchased = {k: normalize_color(v) for k, v in purchased_options.items()}
    goal_values = [normalize_color(o) for o in goal_options]
    texts = None
    num_option_matches = 0
    for key, value in purchased.items():
        if key.lower() in EXACT_MATCH_OPTS:
            matched = value in goal_values
        else:
            matched = any(fuzzy_score(g, value) > FUZZY_THRESHOLD for g in goal_values)
        if not matched:
            texts = texts or _product_texts(purchased_product)
            matched = any(value in text for text in texts)
        num_option_matches += int(matched)
    r_option = num_option_matches / len(goal_values) if goal_values else None
    return r_option, num_option_matches


def get_reward(purchased_product: dict, goal: dict, price: float, options: dict, verbose: bool = False):
    """WebShop's total reward; with verbose=True also its reward_info dict (components and weights)."""
    type_info = get_type_reward(purchased_product, goal)
    r_price = (price <= goal["price_upper"]) if goal["price_upper"] > 0 else None
    r_att, num_attr_matches = get_attribute_reward(purchased_product, goal)
    goal_options = goal["goal_options"]
    goal_option_values = list(goal_options.values()) if isinstance(goal_options, dict) else list(goal_options)
    r_option, num_option_matches = get_option_reward(purchased_product, goal_option_values, options)
    denominator = len(goal["attributes"]) + len(goal_options) + 1
    total = (num_attr_matches + num_option_matches + int(bool(r_price))) / denominator
    total *= type_info["r_type"]
    if not verbose:
        return total
    info = dict(r_type=type_info["r_type"], r_att=r_att, w_att=len(goal["attributes"]) / denominator,
                query_match=type_info["query_match"], category_match=type_info["category_match"],
                title_score=type_info["title_score"])
    if r_option is not None:
        info["r_option"] = r_option
        info["w_option"] = len(goal_options) / denominator
    if r_price is not None:
        info["r_price"] = bool(r_price)
        info["w_price"] = 1 / denominator
    return total, info


# ================================================================================================
# BM25 search (Lucene-style)
# ================================================================================================
LUCENE_STOPWORDS = frozenset("""a an and are as at be but by for if in into is it no not of on or such that the
their then there these they this to was will with""".split())
_TOKEN_RE = re.compile(r"[a-z0-9]+(?:['.][a-z0-9]+)*")


def _minimal_stem(word: str) -> str:
    """Lucene's EnglishMinimalStemmer (plural 's' removal)."""
    n = len(word)
    if n < 3 or word[-1] != "s":
        return word
    second_last = word[-2]
    if second_last in "us":
        return word
    if second_last == "e":
        if n > 3 and word[-3] == "i" and word[-4] not in "ae":
            return word[:-3] + "y"
        if word[-3] in "iaoe":
            return word
    return word[:-1]


def analyze(text: str) -> list[str]:
    """Lowercase, tokenize, drop possessive 's and stopwords, stem plurals."""
    terms = []
    for token in _TOKEN_RE.findall(text.lower()):
        if token.endswith("'s"):
            token = token[:-2]
        if token and token not in LUCENE_STOPWORDS:
            terms.append(_minimal_stem(token))
    return terms


class BM25Index:
    """Inverted index with precomputed per-posting BM25 weights; `search` returns document ids."""

    def __init__(self, documents: list[str], k1: float = 0.9, b: float = 0.4):
        self.k1, self.b = k1, b
        analyzed = [analyze(doc) for doc in documents]
        self.num_docs = len(documents)
        avgdl = sum(len(terms) for terms in analyzed) / max(1, self.num_docs)
        term_freqs: dict[str, dict[int, int]] = defaultdict(dict)
        for doc_id, terms in enumerate(analyzed):
            for term in terms:
                term_freqs[term][doc_id] = term_freqs[term].get(doc_id, 0) + 1
        self.postings: dict[str, tuple[tuple[int, float], ...]] = {}
        for term, docs in term_freqs.items():
            idf = math.log(1 + (self.num_docs - len(docs) + 0.5) / (len(docs) + 0.5))
            self.postings[term] = tuple(
                (doc_id, idf * tf / (tf + k1 * (1 - b + b * len(analyzed[doc_id]) / avgdl)))
                for doc_id, tf in sorted(docs.items()))

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> list[int]:
        scores: dict[int, float] = {}
        for term in analyze(query):  # repeated query terms count again, as Lucene's SHOULD clauses
            for doc_id, weight in self.postings.get(term, ()):
                scores[doc_id] = scores.get(doc_id, 0.0) + weight
        ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
        return [doc_id for doc_id, score in ranked[:k] if score > 0]


def product_document(product: dict) -> str:
    """Indexed text, as WebShop's search_engine/convert_product_file_format.py builds it."""
    option_text = ", and ".join(f"{name}: {', '.join(values)}" for name, values in product.get("options", {}).items())
    bullets = product.get("BulletPoints") or [""]
    return " ".join([product.get("Title", ""), product.get("Description", ""), bullets[0], option_text]).lower()


# ================================================================================================
# Generated catalog
# ================================================================================================
@dataclass(frozen=True)
class ProductType:
    noun: str                 # title noun, also the goal's product noun ("running shoes")
    category: str             # WebShop's five: beauty, electronics, fashion, furniture, grocery
    product_category: str     # Amazon-style path with " › "
    attributes: tuple[str, ...]
    options: tuple[tuple[str, tuple[str, ...]], ...]  # (option name, all values)
    price: tuple[float, float]
    blurbs: tuple[str, ...]   # description sentences
    option_probability: float = 1.0  # chance that a product of this type has options


COLORS = ("black", "white", "grey", "red", "pink", "green", "blue", "brown", "beige", "purple", "navy", "silver")
CLOTHING_SIZES = ("small", "medium", "large", "x-large")

PRODUCT_TYPES: tuple[ProductType, ...] = (
    ProductType("running shoes", "fashion", "Clothing, Shoes & Jewelry › Men › Shoes › Athletic › Running",
                ("non slip", "rubber sole", "lace up", "memory foam", "arch support", "breathable mesh"),
                (("color", COLORS), ("size", ("6", "7", "8", "9", "10", "11", "12"))), (25, 95),
                ("Built for daily training.", "A light pick for road and gym.")),
    ProductType("slippers", "fashion", "Clothing, Shoes & Jewelry › Women › Shoes › Slippers",
                ("non slip", "rubber sole", "memory foam", "faux fur", "indoor outdoor"),
                (("color", COLORS), ("size", ("6", "7", "8", "9", "10", "11"))), (12, 45),
                ("Cozy comfort for lazy mornings.", "Soft to wear around the house.")),
    ProductType("t-shirt", "fashion", "Clothing, Shoes & Jewelry › Men › Clothing › Shirts › T-Shirts",
                ("machine wash", "short sleeve", "long sleeve", "relaxed fit", "moisture wicking", "cotton blend"),
                (("color", COLORS), ("size", CLOTHING_SIZES)), (9, 35),
                ("A wardrobe staple for any day.", "Soft fabric with a clean cut.")),
    ProductType("hoodie", "fashion",
                "Clothing, Shoes & Jewelry › Women › Clothing › Fashion Hoodies & Sweatshirts",
                ("machine wash", "long sleeve", "relaxed fit", "fleece lined", "drawstring hood"),
                (("color", COLORS), ("size", CLOTHING_SIZES)), (20, 60),
                ("Warm layers for cool evenings.", "Easy to throw on over a tee.")),
    ProductType("yoga pants", "fashion", "Clothing, Shoes & Jewelry › Women › Clothing › Active › Leggings",
                ("machine wash", "high waist", "tummy control", "quick drying", "moisture wicking"),
                (("color", COLORS), ("size", CLOTHING_SIZES)), (15, 50),
                ("Stretchy fabric for studio or street.", "Stays put through every pose.")),
    ProductType("shampoo", "beauty", "Beauty & Personal Care › Hair Care › Shampoo & Conditioner › Shampoos",
                ("sulfate free", "paraben free", "tea tree", "natural ingredients", "dry hair"),
                (("scent", ("lavender", "citrus", "coconut", "unscented")),
                 ("size", ("8 fl oz", "16 fl oz", "32 fl oz"))),
                (6, 30), ("Gentle cleansing for daily use.", "Leaves hair soft and clean.")),
    ProductType("face moisturizer", "beauty", "Beauty & Personal Care › Skin Care › Face › Creams & Moisturizers",
                ("fragrance free", "paraben free", "hyaluronic acid", "sensitive skin", "natural ingredients"),
                (("size", ("1.7 ounce", "3.4 ounce", "5 ounce")),), (10, 45),
                ("Light cream that sinks in fast.", "Hydration for morning and night.")),
    ProductType("lipstick", "beauty", "Beauty & Personal Care › Makeup › Lips › Lipstick",
                ("long lasting", "cruelty free", "matte finish", "paraben free"),
                (("color", ("red", "pink", "nude", "coral", "plum", "mauve")),), (6, 28),
                ("Rich pigment in one swipe.", "A bold look for any outfit.")),
    ProductType("hair dryer", "beauty", "Beauty & Personal Care › Hair Care › Styling Tools › Hair Dryers",
                ("fast drying", "low noise", "ionic technology", "cool shot"),
                (("color", ("black", "white", "pink", "purple")),), (20, 80),
                ("Salon results at home.", "Compact body with a long cord."), option_probability=0.5),
    ProductType("headphones", "electronics",
                "Electronics › Headphones, Earbuds & Accessories › Headphones › Over-Ear",
                ("noise cancelling", "hands free", "fast charging", "long battery life", "over ear"),
                (("color", ("black", "white", "silver", "blue", "red")),), (25, 150),
                ("Clear sound for music and calls.", "Fold flat for easy travel.")),
    ProductType("phone case", "electronics", "Cell Phones & Accessories › Cases, Holsters & Sleeves › Basic Cases",
                ("shock absorbing", "wireless charging", "heavy duty", "slim fit", "raised bezel"),
                (("color", COLORS), ("size", ("6.1 inch", "6.5 inch", "6.7 inch"))), (8, 30),
                ("Guards your phone from drops.", "Snug cover with easy grip.")),
    ProductType("usb cable", "electronics", "Electronics › Computers & Accessories › Cables › USB Cables",
                ("fast charging", "heavy duty", "braided nylon", "high speed"),
                (("color", ("black", "white", "grey", "blue")), ("size", ("3 ft", "6 ft", "10 ft"))), (6, 22),
                ("Charge and sync in one cord.", "Tough jacket for daily use.")),
    ProductType("bluetooth speaker", "electronics", "Electronics › Portable Audio & Video › Portable Speakers",
                ("hands free", "water resistant", "long battery life", "high fidelity"),
                (("color", ("black", "grey", "red", "green")),), (20, 120),
                ("Big sound in a small body.", "Take music to the beach or park.")),
    ProductType("coffee", "grocery",
                "Grocery & Gourmet Food › Beverages › Coffee, Tea & Cocoa › Coffee › Ground Coffee",
                ("dark roast", "medium roast", "fair trade", "usda organic", "low acid"),
                (("flavor", ("vanilla", "hazelnut", "caramel", "mocha")), ("size", ("12 ounce", "2 pound", "5 pound"))),
                (8, 40), ("Smooth cup from first sip.", "Roasted in small batches.")),
    ProductType("snack bars", "grocery", "Grocery & Gourmet Food › Snacks & Sweets › Snack Bars › Protein Bars",
                ("gluten free", "high protein", "low sugar", "non gmo", "usda organic"),
                (("flavor", ("chocolate", "peanut", "almond", "coconut")), ("size", ("12 count", "24 count"))),
                (10, 45), ("A tasty bite between meals.", "Fuel for busy days.")),
    ProductType("tea bags", "grocery",
                "Grocery & Gourmet Food › Beverages › Coffee, Tea & Cocoa › Tea › Herbal",
                ("caffeine free", "usda organic", "gluten free", "non gmo", "individually wrapped"),
                (("flavor", ("mint", "lemon", "ginger", "peach", "jasmine")),
                 ("size", ("20 count", "40 count", "100 count"))),
                (5, 25), ("A calm cup for any hour.", "Steep for three to five minutes.")),
    ProductType("office chair", "furniture",
                "Home & Kitchen › Furniture › Home Office Furniture › Home Office Chairs",
                ("lumbar support", "height adjustable", "easy assembly", "heavy duty", "mesh back"),
                (("color", ("black", "grey", "white", "blue")),), (60, 250),
                ("Sit through long days in comfort.", "Smooth wheels for any floor."), option_probability=0.7),
    ProductType("sheet set", "furniture",
                "Home & Kitchen › Bedding › Sheets & Pillowcases › Sheet & Pillowcase Sets",
                ("deep pocket", "wrinkle free", "machine wash", "cooling fabric", "easy care"),
                (("color", ("white", "grey", "beige", "blue", "green")), ("size", ("twin", "full", "queen", "king"))),
                (20, 90), ("Soft sheets for restful nights.", "Fits snug on the bed.")),
)

BRANDS = ("Acorda", "Belmora", "Corvina", "Daltrix", "Elmsy", "Fennick", "Glowen", "Harlo", "Istra",
          "Jovi", "Kestly", "Lumo", "Marlet", "Norvik", "Ostra", "Pellio", "Quinzy", "Rivana", "Sablo",
          "Tavio", "Ulmer", "Vexa", "Wendal", "Xylo", "Yarrow", "Zuma", "Brisco", "Dovely", "Faro", "Helio")
BULLET_TAILS = ("for everyday comfort", "you will notice", "that holds up over time", "for home and away",
                "in every detail")
EXTRA_BULLETS = ("Backed by a one year promise", "Ships in simple recycled packaging", "Loved by thousands of buyers")
REVIEWS = (("Great value", "Exactly as described and arrived fast."),
           ("Works well", "Does what it says, would buy again."),
           ("Not bad", "Good for the price, nothing fancy."),
           ("Love it", "My second one, still happy."),
           ("Okay", "Decent but runs a bit different than I hoped."))


def _asin(rng: random.Random, taken: set) -> str:
    while True:
        asin = "B0" + "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(8))
        if asin not in taken:
            taken.add(asin)
            return asin


def _title_case(words: str) -> str:
    return " ".join(w if w.isupper() else (w[:1].upper() + w[1:]) for w in words.split())


def _round_price(x: float) -> float:
    return float(math.floor(max(x, 2.0))) + 0.99


def _max_price_upper(price: float) -> float:
    """Largest price_upper a goal on a product of this price can get (4th multiple of 10 above it)."""
    return [p for p in PRICE_RANGE if p > price][3] if price < PRICE_RANGE[-4] else 1_000_000.0


def _make_product(rng: random.Random, taken: set, ptype: ProductType, brand: str, attributes: list[str],
                  options: dict[str, list[str]], price: float, variant: str, family: int) -> dict:
    title_attr = attributes[0]
    title = f"{brand} {_title_case(title_attr)} {_title_case(ptype.noun)}"
    desc = f"{brand} {ptype.noun} with {' and '.join(attributes)}. {rng.choice(ptype.blurbs)}"
    bullets = [f"{a[:1].upper()}{a[1:]} {rng.choice(BULLET_TAILS)}" for a in attributes[1:3]]
    bullets.append(rng.choice(EXTRA_BULLETS))
    reviews = [dict(title=t, score=rng.randint(3, 5), body=b) for t, b in rng.sample(REVIEWS, rng.randint(1, 2))]
    return {
        "asin": _asin(rng, taken), "name": title, "Title": title, "Description": desc, "BulletPoints": bullets,
        "Reviews": reviews, "Rating": f"{rng.randint(35, 50) / 10:.1f}", "pricing": [price], "Price": f"${price}",
        "options": {k: list(v) for k, v in options.items()}, "Attributes": list(attributes),
        "category": ptype.category, "query": ptype.noun, "product_category": ptype.product_category,
        "variant": variant, "family": family,
    }


def _draw_options(rng: random.Random, ptype: ProductType) -> dict[str, list[str]]:
    options = {}
    for name, values in ptype.options:
        k = min(len(values), rng.randint(2, 4))
        chosen = set(rng.sample(values, k))
        options[name] = [v for v in values if v in chosen]  # keep the type's natural order
    return options


def generate_catalog(seed: int = 0, num_products: int = 300) -> list[dict]:
    """Seeded catalog of product families (see the module docstring); exactly `num_products` products."""
    rng = random.Random(f"webshop-catalog-{seed}")
    taken: set = set()
    products: list[dict] = []
    family = 0
    while len(products) < num_products:
        ptype = rng.choice(PRODUCT_TYPES)
        brand = rng.choice(BRANDS)
        attrs = rng.sample(ptype.attributes, rng.choice((2, 2, 3)))
        has_options = rng.random() < ptype.option_probability
        options = _draw_options(rng, ptype) if has_options else {}
        price = _round_price(rng.uniform(*ptype.price))
        members = [_make_product(rng, taken, ptype, brand, attrs, options, price, "base", family)]
        for _ in range(rng.choice((1, 2, 2))):  # pricier copies: same text, above any goal's price limit
            twin_price = _round_price(_max_price_upper(price) + rng.uniform(1, 15))
            twin = _make_product(rng, taken, ptype, brand, attrs, options, twin_price, "pricier", family)
            twin.update({k: copy.deepcopy(members[0][k]) for k in ("Description", "BulletPoints")})
            if rng.random() < 0.6:  # a keyword-rich listing that outranks the base in search
                twin["Description"] += f" Premium {ptype.noun} with {' and '.join(attrs)}."
            members.append(twin)
        if options and rng.random() < 0.7:  # option variant: other values of one option group
            name, values = max(ptype.options, key=lambda kv: len(kv[1]))
            others = [v for v in values if v not in options[name]]
            if others:
                new_options = dict(options)
                k = min(len(others), rng.randint(2, 4))
                chosen = set(rng.sample(others, k))
                new_options[name] = [v for v in values if v in chosen]
                twin = _make_product(rng, taken, ptype, brand, attrs, new_options,
                                     _round_price(price * rng.uniform(0.85, 1.1)), "option", family)
                twin.update({k: copy.deepcopy(members[0][k]) for k in ("Description", "BulletPoints")})
                members.append(twin)
        # same type, other attributes (keeps at most one of the base's)
        others = [a for a in ptype.attributes if a not in attrs]
        if others:
            sib_attrs = rng.sample(others, min(len(others), rng.choice((1, 2))))
            if rng.random() < 0.5:
                sib_attrs.insert(rng.randint(0, len(sib_attrs)), rng.choice(attrs))
            members.append(_make_product(rng, taken, ptype, rng.choice(BRANDS), sib_attrs,
                                         _draw_options(rng, ptype) if has_options else {},
                                         _round_price(rng.uniform(*ptype.price)), "attribute", family))
        # another type sharing attributes
        partners = [t for t in PRODUCT_TYPES if t is not ptype and set(t.attributes) & set(attrs)]
        if partners and rng.random() < 0.6:
            other = rng.choice(partners)
            shared = [a for a in attrs if a in other.attributes]
            extra = [a for a in other.attributes if a not in shared]
            type_attrs = shared + rng.sample(extra, min(len(extra), max(0, 2 - len(shared))))
            members.append(_make_product(rng, taken, other, rng.choice(BRANDS), type_attrs,
                                         _draw_options(rng, other) if rng.random() < other.option_probability else {},
                                         _round_price(rng.uniform(*other.price)), "type", family))
        products.extend(members)
        family += 1
    products = products[:num_products]
    rng.shuffle(products)
    return products


def _price_limit(rng: random.Random, price: float) -> tuple[float, str]:
    """WebShop's price_upper: the larger of two draws among the four multiples of 10 above the price."""
    price_range = [p for p in PRICE_RANGE if p > price][:4]
    if len(price_range) >= 2:
        _, price_upper = sorted(rng.sample(price_range, 2))
        return price_upper, f", and price lower than {price_upper:.2f} dollars"
    return 1_000_000.0, ""


def _synthetic_goal(product: dict, instruction: str, attributes: list[str], goal_options: dict,
                    price_upper: float, price_text: str) -> dict:
    """A goal in WebShop's schema: the instruction followed by ` with {option}: {value}, and ...` and the price."""
    option_text = ", and ".join(f"{k}: {v}" for k, v in goal_options.items())
    option_text = f" with {option_text}" if option_text else ""
    return {"asin": product["asin"], "category": product["category"], "query": product["query"],
            "name": product["Title"], "product_category": product["product_category"],
            "instruction_text": f"{instruction}{option_text}{price_text}", "attributes": attributes,
            "price_upper": price_upper, "goal_options": goal_options, "weight": 1.0}


def generate_goals(products: list[dict], num_goals: int = 1000, seed: int = 0) -> list[dict]:
    """WebShop-style synthetic goals on the catalog's non-pricier products, several per product."""
    rng = random.Random(f"webshop-goals-{seed}")
    eligible = [p for p in products if p.get("variant") != "pricier"]
    goals: list[dict] = []
    seen = set()
    order: list[dict] = []
    attempts = 0
    while len(goals) < num_goals and attempts < 50 * num_goals + 1000:
        attempts += 1
        if not order:
            order = list(eligible)
            rng.shuffle(order)
        product = order.pop()
        attrs = product["Attributes"]
        k = min(len(attrs), rng.choice((1, 2, 2, 2)))
        chosen = set(rng.sample(attrs, k))
        goal_attrs = [a for a in attrs if a in chosen]
        goal_options = {name: rng.choice(product["options"][name]) for name in sorted(product["options"])}
        price_upper, price_text = _price_limit(rng, product["pricing"][0])
        key = (product["asin"], tuple(goal_attrs), tuple(goal_options.items()), price_upper)
        if key in seen:
            continue
        seen.add(key)
        goals.append(_synthetic_goal(product, f"Find me {' '.join(goal_attrs)} {product['query']}", goal_attrs,
                                     goal_options, price_upper, price_text))
    return goals


# ================================================================================================
# WebShop's own data files
# ================================================================================================
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


# ================================================================================================
# Shared, read-only world: catalog, prices, index, goals and splits (cached per process)
# ================================================================================================
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


PAGE_WORDS = ("WebShop", "Instruction:", "Search", BACK_TO_SEARCH, "Page", "(Total", "results:", PREV_PAGE,
              NEXT_PAGE, "Price:", "Rating:", *SUB_PAGES, END_BUTTON, "Thank you for shopping with us!",
              "Your score (min 0.0, max 1.0)", "[SEP]", "search[", "click[", "]", "N.A.", "$")
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


# ================================================================================================
# The environment
# ================================================================================================
@dataclass
class WebShopState:
    """One episode's state. `goal`, `results` and `clickables` are never mutated in place (they are
    replaced when they change), so copies share them; `options` is copied. `goal` (also returned as
    `info["goal"]`) is the split's own goal dict: treat it as read-only."""

    goal: dict
    task_id: int | None
    page: str = "search"                   # search | results | item | description | features | reviews | done
    keywords: str | None = None            # current search query
    results: tuple[str, ...] = ()          # ASINs of the current search (top 50)
    page_num: int = 1
    asin: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    steps: int = 0
    done: bool = False
    terminated: bool = False
    truncated: bool = False
    reward: float = 0.0
    reward_info: dict | None = None
    obs: str = ""
    clickables: tuple[tuple[str, str, str], ...] = ()  # (lowercased text, kind, value) in page order

    def __deepcopy__(self, memo):
        new = copy.copy(self)
        new.options = dict(self.options)
        new.reward_info = dict(self.reward_info) if self.reward_info is not None else None
        return new


def parse_action(action: str) -> tuple[str, str | None]:
    """WebShop's parse_action, lenient about spacing: ("click", "b07xyz") for "click [ B07XYZ ]"."""
    m = ACTION_RE.match(action)
    if m is None:
        return action.strip().lower(), None
    name, arg = m.groups()
    return name.strip().lower(), " ".join(arg.lower().split())


_GOAL_KEYS = ("instruction_text", "attributes", "goal_options", "price_upper")
_QUERY_STOPWORDS = frozenset("""i im i'm am is are a an the for me my need want looking find search buy get some
that which with and or of to in on be it its this please would like could can should you your also has have
having""".split())


def expert_query(instruction: str) -> str:
    """Key words of an instruction, without the price: the words between 'find me' and 'with' for
    the synthetic template, else the instruction's words minus filler words."""
    text = instruction.lower()
    text = re.split(r",?\s*and price lower than", text)[0]
    if text.startswith("find me "):
        text = text[len("find me "):].split(" with ")[0]
        return " ".join(text.split())
    words = [w for w in re.findall(r"[a-z0-9][a-z0-9'\-.]*", text) if w not in _QUERY_STOPWORDS]
    return " ".join(words)


class WebShopEnv(TextEnv):
    """WebShop-compatible text shopping env (see the module docstring)."""

    def __init__(self, split: str = "train", num_products: int | None = 300, num_goals: int = 3000, seed: int = 0,
                 max_steps: int = 15, results_per_page: int = 10, data_dir: str | None = None,
                 human_goals: bool | None = None, search_anywhere: bool = False):
        super().__init__(split=split, num_products=num_products, num_goals=num_goals, seed=seed, max_steps=max_steps,
                         results_per_page=results_per_page, data_dir=data_dir, human_goals=human_goals,
                         search_anywhere=search_anywhere)
        if split not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}; got {split!r}")
        if not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive int; got {max_steps!r}")
        if not isinstance(results_per_page, int) or results_per_page < 1:
            raise ValueError(f"results_per_page must be a positive int; got {results_per_page!r}")
        if num_products is not None and (not isinstance(num_products, int) or num_products < 1):
            raise ValueError(f"num_products must be a positive int (or None with data_dir); got {num_products!r}")
        if num_products is None and data_dir is None:
            raise ValueError("num_products=None (all products) needs data_dir")
        if not isinstance(num_goals, int) or num_goals < 1:
            raise ValueError(f"num_goals must be a positive int; got {num_goals!r}")
        self.split = split
        self.max_steps = max_steps
        self.results_per_page = results_per_page
        self.search_anywhere = search_anywhere
        self.world = get_world(seed, num_products, num_goals, data_dir, human_goals)
        self.goals = self.world.splits[split]

    # ---- tasks ----------------------------------------------------------------------------------
    @property
    def num_tasks(self) -> int:
        return len(self.goals)

    def _reset(self, seed, options):
        if "goal" in options:
            goal = options["goal"]
            if not isinstance(goal, dict) or any(k not in goal for k in _GOAL_KEYS):
                raise ValueError(f"options['goal'] must be a dict in WebShop's goal schema with keys {_GOAL_KEYS}")
            goal = copy.deepcopy(goal)
            for k in ("asin", "query", "category", "product_category", "name"):
                goal.setdefault(k, "")
            task_id = options.get("task_id")
        else:
            if not self.goals:
                raise ValueError(f"split {self.split!r} has no goals")
            if "task_id" in options:
                task_id = options["task_id"]
                if not isinstance(task_id, int) or not 0 <= task_id < len(self.goals):
                    raise ValueError(f"task_id must be an int in [0, {len(self.goals)}); got {task_id!r}")
            else:
                task_id = int(self.np_random.integers(len(self.goals)))
            goal = self.goals[task_id]
        self.state = WebShopState(goal=goal, task_id=task_id)
        self._render()
        return self.state.obs, self._info(invalid=False)

    # ---- rendering ------------------------------------------------------------------------------
    def _render(self):
        s = self.state
        instruction = s.goal["instruction_text"]
        head = ["Instruction:", instruction, BACK_TO_SEARCH]
        clickables: list[tuple[str, str, str]] = []
        if s.page == "search":
            nodes = ["WebShop", "Instruction:", instruction, "Search"]
            clickables.append(("search", "search", ""))
        elif s.page == "results":
            window = s.results[(s.page_num - 1) * self.results_per_page:s.page_num * self.results_per_page]
            nodes = head + [f"Page {s.page_num} (Total results: {len(s.results)})"]
            clickables.append((BACK_TO_SEARCH.lower(), "back", ""))
            if s.page_num > 1:
                nodes.append(PREV_PAGE)
                clickables.append((PREV_PAGE.lower(), "prev", ""))
            nodes.append(NEXT_PAGE)
            clickables.append((NEXT_PAGE.lower(), "next", ""))
            for asin in window:
                product = self.world.by_asin[asin]
                nodes += [asin, product["Title"], product["Price"]]
                clickables.append((asin.lower(), "product", asin))
        elif s.page == "item":
            product = self.world.by_asin[s.asin]
            nodes = head + [PREV_PAGE]
            clickables += [(BACK_TO_SEARCH.lower(), "back", ""), (PREV_PAGE.lower(), "prev", "")]
            option_clicks = {}
            for name, values in product["options"].items():
                nodes.append(name)
                for value in values:
                    nodes.append(value)
                    option_clicks[value] = name  # a value shared by two groups selects the last, as in WebShop
            clickables += [(v, "option", n) for v, n in option_clicks.items()]
            nodes += [product["Title"], f"Price: {product['Price']}", f"Rating: {product['Rating']}",
                      *SUB_PAGES, END_BUTTON]
            clickables += [(sub.lower(), "sub", sub.lower()) for sub in SUB_PAGES] + [(END_BUTTON.lower(), "buy", "")]
        elif s.page in ("description", "features", "reviews"):
            product = self.world.by_asin[s.asin]
            nodes = head + [PREV_PAGE]
            clickables += [(BACK_TO_SEARCH.lower(), "back", ""), (PREV_PAGE.lower(), "prev", "")]
            if s.page == "description":
                nodes.append(product["Description"])
            elif s.page == "features":
                nodes += list(product["BulletPoints"])
            else:
                for review in product["Reviews"]:
                    nodes += [f'"{review.get("title", "")}"', str(review.get("score", "")), review.get("body", "")]
        else:  # done
            nodes = ["Thank you for shopping with us!", "Your score (min 0.0, max 1.0)", str(round(s.reward, 4))]
        s.obs = SEP.join(str(n).strip() for n in nodes if str(n).strip())
        s.clickables = tuple(clickables)

    def _info(self, invalid: bool) -> dict:
        s = self.state
        info = {
            "won": s.reward >= 1.0 - 1e-9, "invalid": invalid,
            "admissible_actions": [f"click[{text}]" for text, kind, _ in s.clickables if kind != "search"],
            "has_search_bar": s.page == "search", "task_id": s.task_id, "goal": s.goal, "page": s.page,
            "task": s.goal["instruction_text"],
        }
        if s.reward_info is not None:
            info["reward_info"] = s.reward_info
        return info

    # ---- dynamics -------------------------------------------------------------------------------
    def _find_clickable(self, arg: str) -> tuple[str, str, str] | None:
        for clickable in self.state.clickables:
            if clickable[0] == arg:
                return clickable
        squashed = "".join(arg.split())
        matches = [c for c in self.state.clickables if "".join(c[0].split()) == squashed]
        return matches[0] if len(matches) == 1 else None

    def _apply(self, action: str) -> bool:
        """Apply a valid action to the state; False (and no change) when the action is invalid."""
        s = self.state
        name, arg = parse_action(action)
        if arg is None or not arg:
            return False
        if name == "search":
            if s.page != "search" and not (self.search_anywhere and s.page != "done"):
                return False
            s.keywords, s.results = arg, self.world.search(arg)
            s.page, s.page_num, s.asin, s.options = "results", 1, None, {}
            return True
        if name != "click":
            return False
        clickable = self._find_clickable(arg)
        if clickable is None:
            return False
        _, kind, value = clickable
        if kind == "search":
            return False
        if kind == "back":
            s.page, s.keywords, s.results, s.page_num, s.asin, s.options = "search", None, (), 1, None, {}
        elif kind == "next":
            s.page_num += 1
        elif kind == "prev":
            if s.page == "results":
                s.page_num -= 1
            elif s.page == "item":
                s.page, s.asin, s.options = "results", None, {}
            else:
                s.page = "item"
        elif kind == "product":
            s.page, s.asin, s.options = "item", value, {}
        elif kind == "option":
            s.options = {**s.options, value: clickable[0]}
        elif kind == "sub":
            s.page = value
        elif kind == "buy":
            product = self.world.by_asin[s.asin]
            s.reward, s.reward_info = get_reward(product, s.goal, self.world.prices[s.asin], s.options, verbose=True)
            s.page, s.done, s.terminated = "done", True, True
        return True

    def _step(self, action):
        s = self.state
        if s.done:
            return s.obs, 0.0, s.terminated, s.truncated, self._info(invalid=True)
        s.steps += 1
        valid = self._apply(action)
        if valid:
            self._render()
        reward = s.reward if s.terminated else 0.0
        if not s.terminated and s.steps >= self.max_steps:
            s.done, s.truncated = True, True
        return s.obs, reward, s.terminated, s.truncated, self._info(invalid=not valid)

    # ---- expert ---------------------------------------------------------------------------------
    def expert_queries(self) -> list[str]:
        goal = self.state.goal
        queries = [expert_query(goal["instruction_text"])]
        name = " ".join(goal.get("name", "").lower().split())
        if name and name not in queries:
            queries.append(name)
        return [q for q in queries if q]

    def expert_action(self) -> str:
        """Search the instruction's key words, page to the goal ASIN, pick its options, buy."""
        s = self.state
        target = s.goal.get("asin", "")
        if s.done:
            return f"click[{END_BUTTON.lower()}]"
        if s.page == "search":
            queries = self.expert_queries()
            for query in queries:
                if target in self.world.search(query):
                    return f"search[{query}]"
            return f"search[{queries[0] if queries else 'product'}]"
        if s.page in ("description", "features", "reviews"):
            return f"click[{PREV_PAGE.lower()}]" if (s.asin == target or target in s.results) else \
                f"click[{BACK_TO_SEARCH.lower()}]"
        if s.page == "item":
            if s.asin != target:
                return f"click[{PREV_PAGE.lower()}]" if target in s.results else f"click[{BACK_TO_SEARCH.lower()}]"
            for name, value in self._goal_option_clicks():
                if s.options.get(name) != value:
                    return f"click[{value}]"
            return f"click[{END_BUTTON.lower()}]"
        # results page
        if target not in s.results:
            return f"click[{BACK_TO_SEARCH.lower()}]"
        target_page = s.results.index(target) // self.results_per_page + 1
        if target_page == s.page_num:
            return f"click[{target.lower()}]"
        return f"click[{NEXT_PAGE.lower()}]" if target_page > s.page_num else f"click[{PREV_PAGE.lower()}]"

    def demo_action(self, rng: random.Random, mistake_prob: float = 0.25) -> str:
        """The SFT demonstrator: the expert with systematic, state-dependent mistakes, so that the cloned
        policy's most likely action is sometimes wrong and RL has something to fix (cloning randomly
        noisy demonstrations just recovers the expert). On a results page it clicks the page's first hit
        when that is not the target (with `mistake_prob`); on a wrong item it commits (selects the goal's
        options there, then buys); on the target it buys before selecting the last goal option (with
        `mistake_prob`)."""
        s = self.state
        target = s.goal.get("asin", "")
        if s.page == "results" and len(s.results) > (s.page_num - 1) * self.results_per_page:
            first = s.results[(s.page_num - 1) * self.results_per_page]
            if first != target and rng.random() < mistake_prob:
                return f"click[{first.lower()}]"
        if s.page == "item":
            pending = [value for name, value in self._goal_option_clicks() if s.options.get(name) != value]
            if s.asin != target:
                return f"click[{pending[0]}]" if pending else f"click[{END_BUTTON.lower()}]"
            if len(pending) == 1 and len(s.goal["goal_options"]) > 1 and rng.random() < mistake_prob:
                return f"click[{END_BUTTON.lower()}]"
        return self.expert_action()

    def _goal_option_clicks(self) -> list[tuple[str, str]]:
        """(option name, value) pairs to select on the goal product's page for the goal's options."""
        product = self.world.by_asin[self.state.asin]
        goal_options = self.state.goal["goal_options"]
        pairs = goal_options.items() if isinstance(goal_options, dict) else [(None, v) for v in goal_options]
        clicks = []
        for name, value in pairs:
            value = str(value).lower()
            group = name if name in product["options"] and value in product["options"][name] else None
            if group is None:
                group = next((n for n, vs in product["options"].items() if value in vs), None)
            if group is not None:
                clicks.append((group, value))
        # the page maps a value to the last group that has it; skip clicks that would select another group
        last_group = {}
        for n, vs in product["options"].items():
            for v in vs:
                last_group[v] = n
        return [(n, v) for n, v in clicks if last_group.get(v) == n]

    # ---- vocabulary -----------------------------------------------------------------------------
    def vocabulary(self) -> list[str]:
        """Every word the env emits or accepts: whitespace-separated words of product texts, options,
        instructions, page texts and the action grammar (as written and lowercased), their letter/digit
        runs and punctuation marks, ASINs in both cases, numbers 0-100 (also as `50)`), digits and punctuation."""
        return list(self.world.vocabulary())


# ================================================================================================
# Adapter to the real WebShop text env
# ================================================================================================
_REAL_SERVERS: dict[tuple, Any] = {}
_REAL_SESSION_IDS = itertools.count()


@dataclass
class RealWebShopState:
    task_id: int | None
    session: int
    steps: int = 0
    terminated: bool = False
    truncated: bool = False
    reward: float = 0.0


class RealWebShopEnv(TextEnv):
    """The real `web_agent_site` WebAgentTextEnv (text mode) behind this package's interface.

    Needs WebShop installed from its repository with its data and search index (its setup.sh).
    Split goal indices follow WebShop: test = goals 0-499, eval = 500-1499, train = the rest.
    Snapshots replay the episode (`ReplaySnapshot`); the loaded server is shared between instances.
    """

    def __init__(self, split: str = "test", num_products: int | None = None, human_goals: bool = True,
                 max_steps: int = 15):
        super().__init__(split=split, num_products=num_products, human_goals=human_goals, max_steps=max_steps)
        if split not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}; got {split!r}")
        try:
            from web_agent_site.envs.web_agent_text_env import WebAgentTextEnv
        except ImportError as e:  # pragma: no cover - depends on a local WebShop install
            raise ImportError("RealWebShopEnv needs WebShop's `web_agent_site` package, installed from "
                              "github.com/princeton-nlp/WebShop with the data and search index its setup.sh "
                              f"builds; it is not importable here ({e}). Use WebShopEnv instead.") from e
        key = (num_products, bool(human_goals))
        # the server keeps per-session state: a unique session prefix keeps instances (and restored
        # snapshots) from sharing sessions
        self._env = WebAgentTextEnv(observation_mode="text", num_products=num_products, human_goals=human_goals,
                                    server=_REAL_SERVERS.get(key), session_prefix=f"env{next(_REAL_SESSION_IDS)}-")
        _REAL_SERVERS[key] = self._env.server
        self.split, self.max_steps = split, max_steps
        n = len(self._env.server.goals)
        bounds = {"test": (0, min(REAL_TEST, n)), "eval": (min(REAL_TEST, n), min(REAL_TEST + REAL_EVAL, n)),
                  "train": (min(REAL_TEST + REAL_EVAL, n), n)}
        self._offset, end = bounds[split]
        self._num_tasks = end - self._offset

    @property
    def num_tasks(self) -> int:
        return self._num_tasks

    def _reset(self, seed, options):
        task_id = options.get("task_id")
        if task_id is None:
            task_id = int(self.np_random.integers(self._num_tasks))
        if not 0 <= task_id < self._num_tasks:
            raise ValueError(f"task_id must be in [0, {self._num_tasks}); got {task_id!r}")
        obs, _ = self._env.reset(session=self._offset + task_id)
        self.state = RealWebShopState(task_id=task_id, session=self._offset + task_id)
        return obs, self._info(False)

    def _goal(self) -> dict:
        return self._env.server.user_sessions[self._env.session]["goal"]

    def _info(self, invalid: bool) -> dict:
        available = self._env.get_available_actions()
        return {"won": self.state.reward >= 1.0 - 1e-9, "invalid": invalid,
                "admissible_actions": [f"click[{c}]" for c in available["clickables"] if c != "search"],
                "has_search_bar": available["has_search_bar"], "task_id": self.state.task_id, "goal": self._goal()}

    def _step(self, action):
        s = self.state
        if s.terminated or s.truncated:
            return self._env.observation, 0.0, s.terminated, s.truncated, self._info(True)
        s.steps += 1
        name, arg = parse_action(action)
        available = self._env.get_available_actions()
        valid = bool(arg) and ((name == "search" and available["has_search_bar"]) or
                               (name == "click" and arg in available["clickables"] and arg != "search"))
        reward = 0.0
        if valid:
            _, reward, terminated, _ = self._env.step(f"{name}[{arg}]")
            s.terminated, s.reward = bool(terminated), float(reward) if terminated else 0.0
        s.truncated = not s.terminated and s.steps >= self.max_steps
        return self._env.observation, float(reward), s.terminated, s.truncated, self._info(not valid)

    def snapshot(self):
        if self.state is None:
            raise RuntimeError("call reset() before snapshot()")
        return ReplaySnapshot(self)

    def expert_action(self) -> str:
        goal = self._goal()
        available = self._env.get_available_actions()
        clickables = available["clickables"]
        asin = goal["asin"].lower()
        if available["has_search_bar"]:
            return f"search[{expert_query(goal['instruction_text'])}]"
        if asin in clickables:
            return f"click[{asin}]"
        session = self._env.server.user_sessions[self._env.session]
        if "buy now" in clickables:
            if (session.get("asin") or "").lower() != asin:
                return "click[< prev]"
            values = goal["goal_options"].values() if isinstance(goal["goal_options"], dict) else goal["goal_options"]
            for value in values:
                value = str(value).lower()
                if value in clickables and value not in session.get("options", {}).values():
                    return f"click[{value}]"
            return "click[buy now]"
        if "next >" in clickables and (session.get("page") or 1) < SEARCH_RETURN_N // 10:
            return "click[next >]"
        return "click[back to search]"

    def vocabulary(self) -> list[str]:
        server = self._env.server
        world = WebShopWorld.__new__(WebShopWorld)
        world.products, world.all_goals = server.all_products, server.goals
        return _build_vocabulary(world)
