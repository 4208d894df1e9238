"""Merge, insert and measure closed number intervals."""


def check(interval):
    start, end = interval
    if start > end:
        raise ValueError("start is after end")
    return start, end


def merge(intervals):
    """Merge overlapping or touching intervals into sorted ones."""
    pairs = sorted(check(interval) for interval in intervals)
    merged = []
    for start, end in pairs:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [tuple(pair) for pair in merged]


def insert(intervals, new):
    return merge(list(intervals) + [new])


def covered(intervals):
    """Total length covered by the intervals."""
    return sum(end - start for start, end in merge(intervals))


def overlaps(first, second):
    return first[0] <= second[1] and second[0] <= first[1]


def intersect(first, second):
    """The common part of two intervals, or None."""
    if not overlaps(first, second):
        return None
    return (max(first[0], second[0]), min(first[1], second[1]))


def gaps(intervals):
    """The holes between the merged intervals."""
    merged = merge(intervals)
    holes = []
    for index in range(1, len(merged)):
        holes.append((merged[index - 1][1], merged[index][0]))
    return holes


def contains(intervals, point):
    for start, end in merge(intervals):
        if start <= point <= end:
            return True
    return False


def remove(intervals, cut):
    """Take the interval cut out of every interval."""
    result = []
    for start, end in merge(intervals):
        if end <= cut[0] or start >= cut[1]:
            result.append((start, end))
            continue
        if start < cut[0]:
            result.append((start, cut[0]))
        if end > cut[1]:
            result.append((cut[1], end))
    return result


def longest(intervals):
    """The longest merged interval."""
    best = None
    for start, end in merge(intervals):
        if best is None or end - start > best[1] - best[0]:
            best = (start, end)
    return best
