import pytest

from cache_store import Cache, cached_calls


def test_put_and_get():
    cache = Cache(2)
    cache.put("a", 1)
    assert cache.get("a") == 1
    assert cache.get("b") is None
    assert cache.get("b", 0) == 0


def test_capacity_check():
    with pytest.raises(ValueError):
        Cache(0)
    assert len(Cache(1)) == 0


def test_evicts_least_recent():
    cache = Cache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("c", 3)
    assert "a" not in cache
    assert cache.keys() == ["b", "c"]


def test_get_refreshes():
    cache = Cache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.get("a")
    cache.put("c", 3)
    assert cache.keys() == ["a", "c"]
    assert "b" not in cache


def test_update_existing_key():
    cache = Cache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("a", 10)
    assert len(cache) == 2
    assert cache.get("a") == 10
    assert cache.keys() == ["b", "a"]


def test_remove():
    cache = Cache(3)
    cache.put("a", 1)
    assert cache.remove("a") is True
    assert cache.remove("a") is False
    assert len(cache) == 0
    assert cache.keys() == []


def test_hit_rate():
    cache = Cache(2)
    assert cache.hit_rate() == 0.0
    cache.put("a", 1)
    cache.get("a")
    cache.get("a")
    cache.get("x")
    cache.get("y")
    assert cache.hits == 2
    assert cache.misses == 2
    assert cache.hit_rate() == 0.5


def test_clear():
    cache = Cache(2)
    cache.put("a", 1)
    cache.clear()
    assert len(cache) == 0
    assert cache.keys() == []


def test_cached_calls():
    calls = []

    def square(number):
        calls.append(number)
        return number * number

    fast = cached_calls(square, 2)
    assert fast(3) == 9
    assert fast(3) == 9
    assert calls == [3]
    fast(4)
    fast(5)
    assert fast(3) == 9
    assert calls == [3, 4, 5, 3]
    assert fast.cache.hits == 1
