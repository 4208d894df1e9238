"""Small matrix helpers on lists of rows."""


def shape(matrix):
    rows = len(matrix)
    columns = len(matrix[0]) if rows else 0
    for row in matrix:
        if len(row) != columns:
            raise ValueError("rows have different lengths")
    return rows, columns


def identity(size):
    result = []
    for row in range(size):
        result.append([1 if row == column else 0 for column in range(size)])
    return result


def add(first, second):
    if shape(first) != shape(second):
        raise ValueError("shapes differ")
    result = []
    for left, right in zip(first, second):
        result.append([a + b for a, b in zip(left, right)])
    return result


def scale(matrix, factor):
    return [[value * factor for value in row] for row in matrix]


def transpose(matrix):
    rows, columns = shape(matrix)
    result = []
    for column in range(columns):
        result.append([matrix[row][column] for row in range(rows)])
    return result


def multiply(first, second):
    rows, inner = shape(first)
    other, columns = shape(second)
    if inner != other:
        raise ValueError("inner sizes differ")
    result = []
    for row in range(rows):
        line = []
        for column in range(columns):
            total = 0
            for step in range(inner):
                total += first[row][step] * second[step][column]
            line.append(total)
        result.append(line)
    return result


def minor(matrix, row, column):
    """The matrix without one row and one column."""
    result = []
    for index, line in enumerate(matrix):
        if index != row:
            result.append(line[:column] + line[column + 1:])
    return result


def determinant(matrix):
    size, columns = shape(matrix)
    if size != columns:
        raise ValueError("matrix is not square")
    if size == 1:
        return matrix[0][0]
    if size == 2:
        return matrix[0][0] * matrix[1][1] - matrix[0][1] * matrix[1][0]
    total = 0
    for column in range(size):
        sign = -1 if column % 2 else 1
        part = determinant(minor(matrix, 0, column))
        total += sign * matrix[0][column] * part
    return total


def trace(matrix):
    size, columns = shape(matrix)
    if size != columns:
        raise ValueError("matrix is not square")
    return sum(matrix[index][index] for index in range(size))


def power(matrix, exponent):
    if exponent < 0:
        raise ValueError("negative exponent")
    result = identity(len(matrix))
    for step in range(exponent):
        result = multiply(result, matrix)
    return result
