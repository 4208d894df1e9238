import pytest

from interval_merge import contains, covered, gaps, insert, intersect
from interval_merge import longest, merge, overlaps, remove


def test_merge_overlapping():
    assert merge([(1, 3), (2, 6), (8, 10), (15, 18)]) == [
        (1, 6),
        (8, 10),
        (15, 18),
    ]


def test_merge_touching_and_inside():
    assert merge([(1, 4), (4, 5)]) == [(1, 5)]
    assert merge([(1, 10), (2, 3)]) == [(1, 10)]
    assert merge([(5, 6), (1, 2)]) == [(1, 2), (5, 6)]
    assert merge([]) == []


def test_merge_bad_interval():
    with pytest.raises(ValueError):
        merge([(3, 1)])


def test_insert():
    assert insert([(1, 2), (6, 9)], (2, 5)) == [(1, 5), (6, 9)]
    assert insert([], (0, 1)) == [(0, 1)]


def test_covered():
    assert covered([(0, 10), (5, 15), (20, 21)]) == 16
    assert covered([]) == 0


def test_overlaps_and_intersect():
    assert overlaps((1, 5), (5, 8))
    assert not overlaps((1, 4), (5, 8))
    assert intersect((1, 5), (3, 9)) == (3, 5)
    assert intersect((3, 9), (1, 5)) == (3, 5)
    assert intersect((1, 2), (3, 4)) is None


def test_gaps():
    assert gaps([(1, 3), (6, 7), (2, 4), (9, 12)]) == [(4, 6), (7, 9)]
    assert gaps([(1, 2)]) == []


def test_contains():
    intervals = [(1, 3), (7, 9)]
    assert contains(intervals, 1)
    assert contains(intervals, 8)
    assert not contains(intervals, 5)
    assert not contains(intervals, 10)


def test_remove():
    assert remove([(0, 10)], (3, 5)) == [(0, 3), (5, 10)]
    assert remove([(0, 4), (6, 9)], (3, 7)) == [(0, 3), (7, 9)]
    assert remove([(0, 2)], (5, 6)) == [(0, 2)]
    assert remove([(3, 4)], (0, 10)) == []


def test_longest():
    assert longest([(0, 2), (5, 9), (3, 4)]) == (5, 9)
    assert longest([(0, 3), (4, 7)]) == (0, 3)
    assert longest([]) is None
