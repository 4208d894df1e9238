import pytest

from matrix_ops import add, determinant, identity, minor, multiply, power
from matrix_ops import scale, shape, trace, transpose

SQUARE = [[1, 2], [3, 4]]
WIDE = [[1, 2, 3], [4, 5, 6]]


def test_shape():
    assert shape(WIDE) == (2, 3)
    assert shape([]) == (0, 0)
    with pytest.raises(ValueError):
        shape([[1, 2], [3]])


def test_identity():
    assert identity(3) == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    assert identity(0) == []


def test_add_and_scale():
    assert add(SQUARE, SQUARE) == [[2, 4], [6, 8]]
    assert scale(SQUARE, 3) == [[3, 6], [9, 12]]
    with pytest.raises(ValueError):
        add(SQUARE, WIDE)


def test_transpose():
    assert transpose(WIDE) == [[1, 4], [2, 5], [3, 6]]
    assert transpose(transpose(WIDE)) == WIDE


def test_multiply():
    assert multiply(SQUARE, SQUARE) == [[7, 10], [15, 22]]
    assert multiply(WIDE, transpose(WIDE)) == [[14, 32], [32, 77]]
    assert multiply(SQUARE, identity(2)) == SQUARE
    with pytest.raises(ValueError):
        multiply(WIDE, WIDE)


def test_minor():
    matrix = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert minor(matrix, 0, 0) == [[5, 6], [8, 9]]
    assert minor(matrix, 1, 2) == [[1, 2], [7, 8]]


def test_determinant():
    assert determinant([[5]]) == 5
    assert determinant(SQUARE) == -2
    assert determinant([[2, 0, 1], [1, 3, 2], [1, 1, 2]]) == 6
    assert determinant([[1, 2, 3], [4, 5, 6], [7, 8, 9]]) == 0
    assert determinant(identity(4)) == 1


def test_determinant_four():
    matrix = [[1, 0, 2, -1], [3, 0, 0, 5], [2, 1, 4, -3], [1, 0, 5, 0]]
    assert determinant(matrix) == 30


def test_not_square():
    with pytest.raises(ValueError):
        determinant(WIDE)
    with pytest.raises(ValueError):
        trace(WIDE)


def test_trace():
    assert trace(SQUARE) == 5
    assert trace(identity(5)) == 5


def test_power():
    assert power(SQUARE, 0) == identity(2)
    assert power(SQUARE, 1) == SQUARE
    assert power([[1, 1], [1, 0]], 10) == [[89, 55], [55, 34]]
    with pytest.raises(ValueError):
        power(SQUARE, -1)
