import pytest

from fraction_math import Fraction, as_fraction, gcd, parse_fraction


def test_gcd():
    assert gcd(12, 18) == 6
    assert gcd(-4, 6) == 2
    assert gcd(0, 5) == 5
    assert gcd(7, 1) == 1


def test_reduced_on_create():
    half = Fraction(2, 4)
    assert (half.top, half.bottom) == (1, 2)
    negative = Fraction(3, -6)
    assert (negative.top, negative.bottom) == (-1, 2)
    zero = Fraction(0, 7)
    assert (zero.top, zero.bottom) == (0, 1)


def test_zero_bottom():
    with pytest.raises(ZeroDivisionError):
        Fraction(1, 0)


def test_add_and_sub():
    assert Fraction(1, 2) + Fraction(1, 3) == Fraction(5, 6)
    assert Fraction(1, 2) - Fraction(1, 3) == Fraction(1, 6)
    assert Fraction(1, 4) + 1 == Fraction(5, 4)
    assert Fraction(1, 3) - Fraction(1, 2) == Fraction(-1, 6)


def test_mul_and_div():
    assert Fraction(2, 3) * Fraction(3, 4) == Fraction(1, 2)
    assert Fraction(2, 3) / Fraction(4, 9) == Fraction(3, 2)
    assert Fraction(5, 7) * 7 == 5
    with pytest.raises(ZeroDivisionError):
        Fraction(1, 2) / 0


def test_compare():
    assert Fraction(1, 3) < Fraction(1, 2)
    assert not Fraction(1, 2) < Fraction(1, 3)
    assert Fraction(-1, 2) < 0
    assert Fraction(4, 2) == 2


def test_float_and_repr():
    assert float(Fraction(3, 4)) == 0.75
    assert repr(Fraction(3, 4)) == "3/4"
    assert repr(Fraction(6, 3)) == "2"
    assert repr(Fraction(-2, 8)) == "-1/4"


def test_inverse_and_mixed():
    assert Fraction(2, 5).inverse() == Fraction(5, 2)
    whole, rest = Fraction(7, 3).mixed()
    assert whole == 2
    assert rest == Fraction(1, 3)


def test_as_fraction():
    assert as_fraction(3) == Fraction(3, 1)
    with pytest.raises(TypeError):
        as_fraction(0.5)


def test_parse_fraction():
    assert parse_fraction(" 3/9 ") == Fraction(1, 3)
    assert parse_fraction("-4") == Fraction(-4)
    assert parse_fraction("5/-10") == Fraction(-1, 2)
