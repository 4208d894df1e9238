"""Binary search on sorted lists."""


def find(items, target):
    """Return an index of target in items, or -1."""
    low = 0
    high = len(items) - 1
    while low <= high:
        middle = (low + high) // 2
        if items[middle] == target:
            return middle
        if items[middle] < target:
            low = middle + 1
        else:
            high = middle - 1
    return -1


def lower_bound(items, target):
    """First index whose item is not less than target."""
    low = 0
    high = len(items)
    while low < high:
        middle = (low + high) // 2
        if items[middle] < target:
            low = middle + 1
        else:
            high = middle
    return low


def upper_bound(items, target):
    """First index whose item is greater than target."""
    low = 0
    high = len(items)
    while low < high:
        middle = (low + high) // 2
        if items[middle] <= target:
            low = middle + 1
        else:
            high = middle
    return low


def count(items, target):
    return upper_bound(items, target) - lower_bound(items, target)


def insert_sorted(items, item):
    """A new list with item placed in order."""
    place = upper_bound(items, item)
    return items[:place] + [item] + items[place:]


def closest(items, target):
    """The item nearest to target; the smaller one on a tie."""
    if not items:
        raise ValueError("empty list")
    place = lower_bound(items, target)
    if place == 0:
        return items[0]
    if place == len(items):
        return items[-1]
    before = items[place - 1]
    after = items[place]
    if target - before <= after - target:
        return before
    return after


def integer_sqrt(number):
    """Largest whole number whose square is at most number."""
    if number < 0:
        raise ValueError("negative number")
    low = 0
    high = number + 1
    while high - low > 1:
        middle = (low + high) // 2
        if middle * middle <= number:
            low = middle
        else:
            high = middle
    return low
