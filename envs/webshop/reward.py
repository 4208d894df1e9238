"""WebShop's reward (web_agent_site/engine/goal.py and normalize.py), with rapidfuzz for thefuzz and a
deterministic stand-in for spaCy's title nouns; see docs/envs.md (WebShop: reward)."""

from __future__ import annotations

import re

from rapidfuzz import fuzz
from rapidfuzz import utils as fuzz_utils

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


# Stand-in for spaCy's noun tagging in get_type_reward (see docs/envs.md, WebShop: reward).
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
