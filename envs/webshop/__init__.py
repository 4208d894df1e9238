"""WebShop-compatible shopping environment in pure Python (Yao et al. 2022, arXiv 2207.01206).

    env = WebShopEnv(split="test")
    obs, info = env.reset(options={"task_id": 0})
    obs, reward, terminated, truncated, info = env.step("search[non slip running shoes]")

Pages, actions, reward, search, catalog, splits, data files and snapshots: docs/envs.md. Modules: `reward`
(WebShop's reward), `search` (BM25), `catalog` (generated products and goals), `data` (WebShop's data
files, splits, the shared world, vocabulary), `pages` (fixed page texts), `env` (WebShopEnv), `real` (the
real `web_agent_site` env).
"""

from envs.webshop.catalog import PRODUCT_TYPES, generate_catalog, generate_goals
from envs.webshop.data import WebShopWorld, get_world, load_webshop_data, split_sizes
from envs.webshop.env import WebShopEnv, WebShopState, expert_query, parse_action
from envs.webshop.real import RealWebShopEnv
from envs.webshop.reward import (fuzzy_score, get_attribute_reward, get_option_reward, get_reward, get_type_reward,
                                 normalize_color, title_nouns)
from envs.webshop.search import BM25Index, product_document

__all__ = ["WebShopEnv", "WebShopState", "RealWebShopEnv", "WebShopWorld", "get_world", "load_webshop_data",
           "split_sizes", "PRODUCT_TYPES", "generate_catalog", "generate_goals", "BM25Index", "product_document",
           "expert_query", "parse_action", "get_reward", "get_type_reward", "get_attribute_reward",
           "get_option_reward", "fuzzy_score", "normalize_color", "title_nouns"]
