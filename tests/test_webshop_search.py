"""WebShop's BM25 search: ranking, stopwords, speed on the default catalog."""

import time

from envs.webshop import BM25Index, get_world


def test_bm25():
    index = BM25Index(["red running shoes", "blue running shoes", "coffee beans", "red red red hat", "running shoes"])
    assert index.search("red shoes") == [0, 3, 4, 1]
    assert index.search("tea") == []
    assert index.search("the and of") == []
    assert index.search("running")[:3] == [4, 0, 1]  # shortest document first, ties by order
    world = get_world()
    start = time.perf_counter()
    for i in range(200):
        world.index.search(f"non slip running shoes with memory foam {i}")
    assert (time.perf_counter() - start) / 200 < 0.002
    assert len(world.search("shoes")) <= 50
