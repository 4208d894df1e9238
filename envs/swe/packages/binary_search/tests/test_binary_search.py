import pytest

from binary_search import closest, count, find, insert_sorted, integer_sqrt
from binary_search import lower_bound, upper_bound

ITEMS = [1, 3, 3, 3, 5, 8, 13]


def test_find_present():
    assert find([1, 3, 5, 7, 9], 1) == 0
    assert find([1, 3, 5, 7, 9], 7) == 3
    assert find([1, 3, 5, 7, 9], 9) == 4


def test_find_missing():
    assert find([1, 3, 5, 7, 9], 4) == -1
    assert find([1, 3, 5, 7, 9], 10) == -1
    assert find([], 1) == -1


def test_find_every_item():
    items = list(range(0, 40, 2))
    for index, item in enumerate(items):
        assert find(items, item) == index


def test_lower_bound():
    assert lower_bound(ITEMS, 3) == 1
    assert lower_bound(ITEMS, 4) == 4
    assert lower_bound(ITEMS, 0) == 0
    assert lower_bound(ITEMS, 20) == 7


def test_upper_bound():
    assert upper_bound(ITEMS, 3) == 4
    assert upper_bound(ITEMS, 13) == 7
    assert upper_bound(ITEMS, 0) == 0


def test_count():
    assert count(ITEMS, 3) == 3
    assert count(ITEMS, 8) == 1
    assert count(ITEMS, 4) == 0


def test_insert_sorted():
    assert insert_sorted([1, 4, 9], 5) == [1, 4, 5, 9]
    assert insert_sorted([1, 4, 9], 0) == [0, 1, 4, 9]
    assert insert_sorted([], 2) == [2]
    items = [2, 6]
    insert_sorted(items, 3)
    assert items == [2, 6]


def test_closest():
    assert closest([1, 4, 9], 5) == 4
    assert closest([1, 4, 9], 7) == 9
    assert closest([1, 4, 9], -3) == 1
    assert closest([1, 4, 9], 100) == 9
    assert closest([2, 4], 3) == 2
    with pytest.raises(ValueError):
        closest([], 1)


def test_integer_sqrt():
    assert integer_sqrt(0) == 0
    assert integer_sqrt(1) == 1
    assert integer_sqrt(15) == 3
    assert integer_sqrt(16) == 4
    assert integer_sqrt(10 ** 12) == 10 ** 6
    with pytest.raises(ValueError):
        integer_sqrt(-1)
