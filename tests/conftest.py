import pytest


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    """One warm-start cache for the whole session, so end-to-end tests share small SFT policies."""
    return str(tmp_path_factory.mktemp("cache"))
