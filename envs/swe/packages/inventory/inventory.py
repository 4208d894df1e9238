"""Track stock counts and prices of the items in a store."""


class Inventory:
    def __init__(self):
        self.counts = {}
        self.prices = {}

    def add(self, name, count, price=None):
        if count <= 0:
            raise ValueError("count must be positive")
        self.counts[name] = self.counts.get(name, 0) + count
        if price is not None:
            self.prices[name] = price
        elif name not in self.prices:
            self.prices[name] = 0

    def remove(self, name, count):
        have = self.counts.get(name, 0)
        if count > have:
            raise ValueError("not enough " + name)
        if count == have:
            del self.counts[name]
        else:
            self.counts[name] = have - count

    def stock(self, name):
        return self.counts.get(name, 0)

    def value(self):
        """Total price of everything in stock."""
        total = 0
        for name, count in self.counts.items():
            total += count * self.prices.get(name, 0)
        return total

    def low_stock(self, threshold):
        """Names with fewer than threshold items, sorted."""
        names = []
        for name, count in self.counts.items():
            if count < threshold:
                names.append(name)
        return sorted(names)

    def names(self):
        return sorted(self.counts)

    def restock_list(self, target):
        """How many of each item to order to reach target."""
        order = {}
        for name in self.names():
            missing = target - self.counts[name]
            if missing > 0:
                order[name] = missing
        return order

    def sell(self, name, count):
        """Remove count items and return the money they bring."""
        self.remove(name, count)
        return count * self.prices.get(name, 0)


def parse_orders(text):
    """Lines like "apple 3" into a list of (name, count)."""
    orders = []
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if len(words) != 2 or not words[1].isdigit():
            raise ValueError("bad order line: " + line)
        orders.append((words[0], int(words[1])))
    return orders


def fill_orders(inventory, orders):
    """Sell every order that can be filled; return the money."""
    money = 0
    for name, count in orders:
        if inventory.stock(name) >= count:
            money += inventory.sell(name, count)
    return money
