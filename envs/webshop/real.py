"""Adapter to the real WebShop text env (`web_agent_site`, installed from its repository)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from envs.base import ReplaySnapshot, TextEnv
from envs.webshop.data import REAL_EVAL, REAL_TEST, SPLITS, WebShopWorld, _build_vocabulary
from envs.webshop.env import expert_query, parse_action
from envs.webshop.search import SEARCH_RETURN_N

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
        task_id = self.task_id_from(options)
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
