"""Write whole numbers in any base from 2 to 36."""

DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def check_base(base):
    if base < 2 or base > 36:
        raise ValueError("base must be from 2 to 36")


def to_base(number, base):
    check_base(base)
    if number == 0:
        return "0"
    sign = ""
    if number < 0:
        sign = "-"
        number = -number
    digits = []
    while number > 0:
        number, rest = divmod(number, base)
        digits.append(DIGITS[rest])
    return sign + "".join(reversed(digits))


def from_base(text, base):
    check_base(base)
    text = text.strip().lower()
    sign = 1
    if text.startswith("-"):
        sign = -1
        text = text[1:]
    if not text:
        raise ValueError("no digits")
    total = 0
    for char in text:
        value = DIGITS.find(char)
        if value < 0 or value >= base:
            raise ValueError("bad digit: " + char)
        total = total * base + value
    return sign * total


def convert(text, source, target):
    return to_base(from_base(text, source), target)


def digit_sum(number, base=10):
    total = 0
    number = abs(number)
    while number:
        total += number % base
        number //= base
    return total


def to_binary(number, width=0):
    """Binary digits, padded with zeros on the left to width."""
    return to_base(number, 2).rjust(width, "0")


def count_ones(number):
    return to_binary(number).count("1")


def is_palindrome(number, base=10):
    text = to_base(number, base)
    return text == text[::-1]
