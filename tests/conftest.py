import os

import pytest


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    """One warm-start cache for the whole session, so end-to-end tests share small SFT policies."""
    return str(tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def reap_swe_sandboxes():
    """Every container and snapshot image a test module made is removed at its end (found by their label)."""
    yield
    from envs.swe import sandbox
    from envs.swe.engine import docker_client
    client = docker_client()
    if client is not None:
        sandbox.reap(client)


@pytest.fixture(scope="module")
def docker_engine(reap_swe_sandboxes):
    """The Docker engine the swe tests run on: without one the test skips with the reason, except where
    TREE_RL_REQUIRE_DOCKER=1 (CI), where it fails."""
    from envs.swe.engine import docker_client
    client = docker_client()
    if client is None:
        missing = pytest.fail if os.environ.get("TREE_RL_REQUIRE_DOCKER") == "1" else pytest.skip
        missing("no Docker engine answers (envs/swe/docker_engine.sh)")
    return client


@pytest.fixture
def docker_engine_if_swe(request):
    """The Docker engine for a test parametrized with env_name "swe" (the swe env needs one to be built)."""
    if request.getfixturevalue("env_name") == "swe":
        return request.getfixturevalue("docker_engine")
    return None
