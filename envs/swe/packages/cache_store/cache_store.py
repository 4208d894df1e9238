"""A least recently used cache with hit and miss counts."""


class Cache:
    def __init__(self, capacity):
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self.data = {}
        self.order = []
        self.hits = 0
        self.misses = 0

    def touch(self, key):
        if key in self.order:
            self.order.remove(key)
        self.order.append(key)

    def get(self, key, default=None):
        if key not in self.data:
            self.misses += 1
            return default
        self.hits += 1
        self.touch(key)
        return self.data[key]

    def put(self, key, value):
        self.data[key] = value
        self.touch(key)
        while len(self.order) > self.capacity:
            oldest = self.order.pop(0)
            del self.data[oldest]

    def remove(self, key):
        if key in self.data:
            del self.data[key]
            self.order.remove(key)
            return True
        return False

    def keys(self):
        """Keys from the least to the most recently used."""
        return list(self.order)

    def __len__(self):
        return len(self.data)

    def __contains__(self, key):
        return key in self.data

    def hit_rate(self):
        total = self.hits + self.misses
        if total == 0:
            return 0.0
        return self.hits / total

    def clear(self):
        self.data.clear()
        self.order.clear()


def cached_calls(function, capacity):
    """Wrap a one argument function with a cache."""
    cache = Cache(capacity)

    def wrapper(argument):
        if argument in cache:
            return cache.get(argument)
        value = function(argument)
        cache.put(argument, value)
        return value

    wrapper.cache = cache
    return wrapper
