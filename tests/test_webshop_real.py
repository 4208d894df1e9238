"""The adapter to the real `web_agent_site` env (runs only where WebShop is installed)."""

import pytest

from envs import check_snapshot_fidelity
from envs.webshop import RealWebShopEnv


def test_real_webshop_adapter():
    pytest.importorskip("web_agent_site", reason="WebShop's web_agent_site package is not installed")
    env = RealWebShopEnv(split="test")
    obs, info = env.reset(options={"task_id": 0})
    assert obs.startswith("WebShop [SEP] Instruction:") and info["has_search_bar"]
    obs, reward, terminated, truncated, info = env.step("search[shoes]")
    assert check_snapshot_fidelity(env, info, num_steps=5).ok


def test_real_adapter_reports_missing_package():
    try:
        import web_agent_site  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="web_agent_site"):
            RealWebShopEnv()
    else:  # pragma: no cover
        pytest.skip("web_agent_site is installed")
