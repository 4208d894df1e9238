"""Points, distances, polygon areas and bounding boxes."""

import math


def distance(first, second):
    width = second[0] - first[0]
    height = second[1] - first[1]
    return math.sqrt(width * width + height * height)


def midpoint(first, second):
    return ((first[0] + second[0]) / 2, (first[1] + second[1]) / 2)


def perimeter(points):
    """Length of the closed path through the points."""
    total = 0.0
    for index in range(len(points)):
        total += distance(points[index - 1], points[index])
    return total


def signed_area(points):
    """Shoelace formula; positive for counter clockwise points."""
    total = 0.0
    count = len(points)
    for index in range(count):
        x_one, y_one = points[index]
        x_two, y_two = points[(index + 1) % count]
        total += x_one * y_two - x_two * y_one
    return total / 2


def area(points):
    if len(points) < 3:
        raise ValueError("a polygon needs three points")
    return abs(signed_area(points))


def is_clockwise(points):
    return signed_area(points) < 0


def bounding_box(points):
    """Return (min x, min y, max x, max y)."""
    if not points:
        raise ValueError("no points")
    xs = [point[0] for point in points]
    ys = [point[1] for point in points]
    return (min(xs), min(ys), max(xs), max(ys))


def box_contains(box, point):
    left, bottom, right, top = box
    return left <= point[0] <= right and bottom <= point[1] <= top


def boxes_overlap(first, second):
    if first[2] < second[0] or second[2] < first[0]:
        return False
    if first[3] < second[1] or second[3] < first[1]:
        return False
    return True


def box_area(box):
    left, bottom, right, top = box
    return (right - left) * (top - bottom)


def centroid(points):
    """The average of the points."""
    count = len(points)
    x_total = sum(point[0] for point in points)
    y_total = sum(point[1] for point in points)
    return (x_total / count, y_total / count)


def translate(points, right, up):
    return [(x + right, y + up) for x, y in points]
