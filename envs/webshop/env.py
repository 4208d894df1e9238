"""The WebShop-compatible env: episode state, action parsing, pages, dynamics and the expert."""

from __future__ import annotations

import copy
import random
import re
from dataclasses import dataclass, field

from envs.base import TextEnv
from envs.webshop.data import SPLITS, get_world
from envs.webshop.pages import BACK_TO_SEARCH, END_BUTTON, NEXT_PAGE, PREV_PAGE, SEP, SUB_PAGES
from envs.webshop.reward import get_reward

ACTION_RE = re.compile(r"(.+)\[(.+)\]")


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
    """WebShop-compatible text shopping env (see docs/envs.md)."""

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

    # ---------------------------------------------------------------------------------------------------
    # Tasks
    # ---------------------------------------------------------------------------------------------------
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
            task_id = self.task_id_from(options)
            goal = self.goals[task_id]
        self.state = WebShopState(goal=goal, task_id=task_id)
        self._render()
        return self.state.obs, self._info(invalid=False)

    # ---------------------------------------------------------------------------------------------------
    # Rendering
    # ---------------------------------------------------------------------------------------------------
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
            "admissible_actions": [f"click[{self._shown(*c)}]" for c in s.clickables if c[1] != "search"],
            "has_search_bar": s.page == "search", "task_id": s.task_id, "goal": s.goal, "page": s.page,
            "task": s.goal["instruction_text"],
        }
        if s.reward_info is not None:
            info["reward_info"] = s.reward_info
        return info

    @staticmethod
    def _shown(text: str, kind: str, payload: str) -> str:
        """A clickable as the page shows it (`text` is its lowercased key)."""
        return {"back": BACK_TO_SEARCH, "prev": PREV_PAGE, "next": NEXT_PAGE, "buy": END_BUTTON,
                "product": payload, "sub": text.title()}.get(kind, text)

    # ---------------------------------------------------------------------------------------------------
    # Dynamics
    # ---------------------------------------------------------------------------------------------------
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

    # ---------------------------------------------------------------------------------------------------
    # Expert
    # ---------------------------------------------------------------------------------------------------
    def expert_queries(self) -> list[str]:
        goal = self.state.goal
        queries = [expert_query(goal["instruction_text"])]
        name = " ".join(goal.get("name", "").lower().split())
        if name and name not in queries:
            queries.append(name)
        return [q for q in queries if q]

    def expert_action(self) -> str:
        """Search the instruction's key words, page to the goal ASIN, pick its options, buy. Every click names
        its button, ASIN or option value exactly as the page shows it (clicks are case-insensitive)."""
        s = self.state
        target = s.goal.get("asin", "")
        if s.done:
            return f"click[{END_BUTTON}]"
        if s.page == "search":
            queries = self.expert_queries()
            for query in queries:
                if target in self.world.search(query):
                    return f"search[{query}]"
            return f"search[{queries[0] if queries else 'product'}]"
        if s.page in ("description", "features", "reviews"):
            return f"click[{PREV_PAGE}]" if (s.asin == target or target in s.results) else \
                f"click[{BACK_TO_SEARCH}]"
        if s.page == "item":
            if s.asin != target:
                return f"click[{PREV_PAGE}]" if target in s.results else f"click[{BACK_TO_SEARCH}]"
            for name, value in self._goal_option_clicks():
                if s.options.get(name) != value:
                    return f"click[{value}]"
            return f"click[{END_BUTTON}]"
        # results page
        if target not in s.results:
            return f"click[{BACK_TO_SEARCH}]"
        target_page = s.results.index(target) // self.results_per_page + 1
        if target_page == s.page_num:
            return f"click[{target}]"
        return f"click[{NEXT_PAGE}]" if target_page > s.page_num else f"click[{PREV_PAGE}]"

    def demo_action(self, rng: random.Random, mistake_prob: float) -> str:
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
                return f"click[{first}]"
        if s.page == "item":
            pending = [value for name, value in self._goal_option_clicks() if s.options.get(name) != value]
            if s.asin != target:
                return f"click[{pending[0]}]" if pending else f"click[{END_BUTTON}]"
            if len(pending) == 1 and len(s.goal["goal_options"]) > 1 and rng.random() < mistake_prob:
                return f"click[{END_BUTTON}]"
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

    # ---------------------------------------------------------------------------------------------------
    # Vocabulary
    # ---------------------------------------------------------------------------------------------------
    def vocabulary(self) -> list[str]:
        """Every word the env emits or accepts: whitespace-separated words of product texts, options,
        instructions, page texts and the action grammar (as written and lowercased), their letter/digit
        runs and punctuation marks, ASINs in both cases, numbers 0-100 (also as `50)`), digits and punctuation."""
        return list(self.world.vocabulary())
