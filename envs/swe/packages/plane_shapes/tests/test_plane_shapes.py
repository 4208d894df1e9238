import pytest

from plane_shapes import area, box_area, box_contains, boxes_overlap
from plane_shapes import bounding_box, centroid, distance, is_clockwise
from plane_shapes import midpoint, perimeter, signed_area, translate

SQUARE = [(0, 0), (2, 0), (2, 2), (0, 2)]
TRIANGLE = [(0, 0), (4, 0), (0, 3)]


def test_distance():
    assert distance((0, 0), (3, 4)) == 5
    assert distance((1, 1), (1, 1)) == 0
    assert distance((-1, 2), (2, -2)) == 5


def test_midpoint():
    assert midpoint((0, 0), (4, 2)) == (2, 1)
    assert midpoint((1, 1), (2, 2)) == (1.5, 1.5)


def test_perimeter():
    assert perimeter(SQUARE) == 8
    assert perimeter(TRIANGLE) == 12


def test_area():
    assert area(SQUARE) == 4
    assert area(TRIANGLE) == 6
    assert area(list(reversed(TRIANGLE))) == 6
    with pytest.raises(ValueError):
        area([(0, 0), (1, 1)])


def test_signed_area_and_direction():
    assert signed_area(SQUARE) == 4
    assert signed_area(list(reversed(SQUARE))) == -4
    assert not is_clockwise(SQUARE)
    assert is_clockwise(list(reversed(SQUARE)))


def test_bounding_box():
    points = [(3, -1), (0, 4), (-2, 2)]
    assert bounding_box(points) == (-2, -1, 3, 4)
    assert bounding_box([(5, 6)]) == (5, 6, 5, 6)
    with pytest.raises(ValueError):
        bounding_box([])


def test_box_contains():
    box = (0, 0, 10, 5)
    assert box_contains(box, (3, 3))
    assert box_contains(box, (10, 5))
    assert not box_contains(box, (11, 3))
    assert not box_contains(box, (3, -1))


def test_boxes_overlap():
    assert boxes_overlap((0, 0, 2, 2), (1, 1, 3, 3))
    assert boxes_overlap((0, 0, 2, 2), (2, 0, 4, 2))
    assert not boxes_overlap((0, 0, 2, 2), (3, 0, 4, 2))
    assert not boxes_overlap((0, 0, 2, 2), (0, 3, 2, 4))
    assert not boxes_overlap((0, 3, 2, 4), (0, 0, 2, 2))


def test_box_area():
    assert box_area((0, 0, 4, 3)) == 12
    assert box_area((1, 2, 1, 9)) == 0


def test_centroid():
    assert centroid(SQUARE) == (1, 1)
    assert centroid([(0, 0), (6, 0), (0, 3)]) == (2, 1)


def test_translate():
    assert translate([(0, 0), (1, 2)], 3, -1) == [(3, -1), (4, 1)]
