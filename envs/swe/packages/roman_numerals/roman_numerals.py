"""Convert between whole numbers and roman numerals."""

PAIRS = [
    (1000, "M"),
    (900, "CM"),
    (500, "D"),
    (400, "CD"),
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
]

VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def to_roman(number):
    """Return the roman numeral for a number from 1 to 3999."""
    if not isinstance(number, int) or isinstance(number, bool):
        raise TypeError("number must be an int")
    if number < 1 or number > 3999:
        raise ValueError("number out of range")
    parts = []
    for value, letters in PAIRS:
        while number >= value:
            parts.append(letters)
            number -= value
    return "".join(parts)


def from_roman(text):
    """Return the value of a roman numeral such as XLII."""
    text = text.strip().upper()
    if not text:
        raise ValueError("empty numeral")
    total = 0
    for index, letter in enumerate(text):
        if letter not in VALUES:
            raise ValueError("bad letter: " + letter)
        value = VALUES[letter]
        after = text[index + 1:index + 2]
        if after and VALUES.get(after, 0) > value:
            total -= value
        else:
            total += value
    if total < 1 or to_roman(total) != text:
        raise ValueError("not a proper numeral: " + text)
    return total


def is_roman(text):
    """Return True when text is a proper roman numeral."""
    try:
        from_roman(text)
    except ValueError:
        return False
    return True


def add_roman(left, right):
    """Add two numerals and return the sum as a numeral."""
    return to_roman(from_roman(left) + from_roman(right))


def roman_range(start, stop):
    """Numerals from start up to and including stop."""
    return [to_roman(number) for number in range(start, stop + 1)]


def largest(numerals):
    """The numeral with the largest value."""
    if not numerals:
        raise ValueError("no numerals")
    best = numerals[0]
    for numeral in numerals[1:]:
        if from_roman(numeral) > from_roman(best):
            best = numeral
    return best
