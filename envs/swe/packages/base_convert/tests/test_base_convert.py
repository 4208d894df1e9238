import pytest

from base_convert import convert, count_ones, digit_sum, from_base
from base_convert import is_palindrome, to_base, to_binary


def test_to_base():
    assert to_base(10, 2) == "1010"
    assert to_base(255, 16) == "ff"
    assert to_base(0, 7) == "0"
    assert to_base(35, 36) == "z"
    assert to_base(36, 36) == "10"


def test_to_base_negative():
    assert to_base(-10, 2) == "-1010"
    assert to_base(-255, 16) == "-ff"


def test_bad_base():
    with pytest.raises(ValueError):
        to_base(5, 1)
    with pytest.raises(ValueError):
        to_base(5, 37)
    with pytest.raises(ValueError):
        from_base("5", 0)


def test_from_base():
    assert from_base("1010", 2) == 10
    assert from_base("FF", 16) == 255
    assert from_base(" -z ", 36) == -35
    assert from_base("777", 8) == 511


def test_from_base_errors():
    with pytest.raises(ValueError):
        from_base("102", 2)
    with pytest.raises(ValueError):
        from_base("-", 10)
    with pytest.raises(ValueError):
        from_base("1.5", 10)


def test_round_trip():
    for base in [2, 3, 8, 10, 16, 36]:
        for number in [0, 1, 7, 100, 12345, -999]:
            assert from_base(to_base(number, base), base) == number


def test_convert():
    assert convert("ff", 16, 2) == "11111111"
    assert convert("1010", 2, 10) == "10"


def test_digit_sum():
    assert digit_sum(1234) == 10
    assert digit_sum(-99) == 18
    assert digit_sum(255, 16) == 30
    assert digit_sum(0) == 0


def test_binary():
    assert to_binary(5) == "101"
    assert to_binary(5, 8) == "00000101"
    assert count_ones(255) == 8
    assert count_ones(0) == 0


def test_is_palindrome():
    assert is_palindrome(121)
    assert not is_palindrome(123)
    assert is_palindrome(5, 2)
    assert not is_palindrome(6, 2)
