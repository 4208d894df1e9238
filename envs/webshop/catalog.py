"""The default catalog: seeded product families over WebShop's five categories, and WebShop-style
synthetic goals on them (see docs/envs.md, WebShop: catalog)."""

from __future__ import annotations

import copy
import math
import random
import string
from dataclasses import dataclass

from envs.webshop.reward import PRICE_RANGE


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
    """Seeded catalog of product families (see docs/envs.md); exactly `num_products` products."""
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
