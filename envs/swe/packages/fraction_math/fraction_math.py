"""Exact fractions with whole number tops and bottoms."""


def gcd(first, second):
    first, second = abs(first), abs(second)
    while second:
        first, second = second, first % second
    return first


class Fraction:
    def __init__(self, top, bottom=1):
        if bottom == 0:
            raise ZeroDivisionError("bottom is zero")
        if bottom < 0:
            top, bottom = -top, -bottom
        common = gcd(top, bottom)
        self.top = top // common
        self.bottom = bottom // common

    def __add__(self, other):
        other = as_fraction(other)
        top = self.top * other.bottom + other.top * self.bottom
        return Fraction(top, self.bottom * other.bottom)

    def __sub__(self, other):
        other = as_fraction(other)
        top = self.top * other.bottom - other.top * self.bottom
        return Fraction(top, self.bottom * other.bottom)

    def __mul__(self, other):
        other = as_fraction(other)
        return Fraction(self.top * other.top, self.bottom * other.bottom)

    def __truediv__(self, other):
        other = as_fraction(other)
        if other.top == 0:
            raise ZeroDivisionError("division by zero")
        return Fraction(self.top * other.bottom, self.bottom * other.top)

    def __eq__(self, other):
        other = as_fraction(other)
        return self.top == other.top and self.bottom == other.bottom

    def __lt__(self, other):
        other = as_fraction(other)
        return self.top * other.bottom < other.top * self.bottom

    def __float__(self):
        return self.top / self.bottom

    def __repr__(self):
        if self.bottom == 1:
            return str(self.top)
        return str(self.top) + "/" + str(self.bottom)

    def inverse(self):
        return Fraction(self.bottom, self.top)

    def mixed(self):
        """Return (whole, rest) where the value is whole + rest."""
        whole = self.top // self.bottom
        return whole, self - whole


def as_fraction(value):
    if isinstance(value, Fraction):
        return value
    if isinstance(value, int):
        return Fraction(value)
    raise TypeError("expected a Fraction or an int")


def parse_fraction(text):
    text = text.strip()
    if "/" in text:
        top, bottom = text.split("/", 1)
        return Fraction(int(top), int(bottom))
    return Fraction(int(text))
