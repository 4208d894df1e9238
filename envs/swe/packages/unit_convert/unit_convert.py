"""Convert lengths, weights, temperatures and money."""

LENGTH = {
    "mm": 0.001,
    "cm": 0.01,
    "m": 1.0,
    "km": 1000.0,
    "inch": 0.0254,
    "foot": 0.3048,
    "mile": 1609.344,
}

WEIGHT = {
    "g": 1.0,
    "kg": 1000.0,
    "pound": 453.59237,
    "ounce": 28.349523125,
}

# units of each currency that one usd buys
RATES = {"usd": 1.0, "eur": 0.5, "gbp": 0.25, "yen": 100.0}


def convert_length(value, source, target):
    if source not in LENGTH or target not in LENGTH:
        raise ValueError("unknown length unit")
    return value * LENGTH[source] / LENGTH[target]


def convert_weight(value, source, target):
    if source not in WEIGHT or target not in WEIGHT:
        raise ValueError("unknown weight unit")
    return value * WEIGHT[source] / WEIGHT[target]


def to_celsius(value, scale):
    if scale == "c":
        return value
    if scale == "f":
        return (value - 32) * 5 / 9
    if scale == "k":
        return value - 273.15
    raise ValueError("unknown scale")


def from_celsius(value, scale):
    if scale == "c":
        return value
    if scale == "f":
        return value * 9 / 5 + 32
    if scale == "k":
        return value + 273.15
    raise ValueError("unknown scale")


def convert_temperature(value, source, target):
    return from_celsius(to_celsius(value, source), target)


def to_cents(amount):
    """Round money to whole cents, halves away from zero."""
    cents = abs(amount) * 100 + 0.5
    sign = -1 if amount < 0 else 1
    return sign * int(cents + 0.000001)


def convert_money(amount, source, target):
    """Convert with RATES and round to whole cents."""
    if source not in RATES or target not in RATES:
        raise ValueError("unknown currency")
    usd = amount / RATES[source]
    return to_cents(usd * RATES[target]) / 100


def format_money(cents, symbol="$"):
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    whole = str(cents // 100)
    part = str(cents % 100).rjust(2, "0")
    return sign + symbol + whole + "." + part


def split_bill(cents, people):
    """Split cents among people; the first ones pay a cent more."""
    if people < 1:
        raise ValueError("need at least one person")
    share, rest = divmod(cents, people)
    return [share + 1 if index < rest else share for index in range(people)]
