import pytest

from roman_numerals import add_roman, from_roman, is_roman, largest
from roman_numerals import roman_range, to_roman


def test_small_numbers():
    assert to_roman(1) == "I"
    assert to_roman(3) == "III"
    assert to_roman(4) == "IV"
    assert to_roman(9) == "IX"
    assert to_roman(14) == "XIV"


def test_large_numbers():
    assert to_roman(40) == "XL"
    assert to_roman(90) == "XC"
    assert to_roman(400) == "CD"
    assert to_roman(1994) == "MCMXCIV"
    assert to_roman(3999) == "MMMCMXCIX"


def test_out_of_range():
    with pytest.raises(ValueError):
        to_roman(0)
    with pytest.raises(ValueError):
        to_roman(4000)


def test_wrong_type():
    with pytest.raises(TypeError):
        to_roman("5")
    with pytest.raises(TypeError):
        to_roman(True)


def test_from_roman():
    assert from_roman("XLII") == 42
    assert from_roman("mcmxciv") == 1994
    assert from_roman(" VII ") == 7
    assert from_roman("CDXLIV") == 444


def test_from_roman_errors():
    for text in ["", "ABC", "IIII", "VX", "IC"]:
        with pytest.raises(ValueError):
            from_roman(text)


def test_round_trip():
    for number in range(1, 4000):
        assert from_roman(to_roman(number)) == number


def test_is_roman():
    assert is_roman("MMXXIV")
    assert is_roman("iv")
    assert not is_roman("IIV")
    assert not is_roman("hello")


def test_add_roman():
    assert add_roman("XIX", "I") == "XX"
    assert add_roman("D", "D") == "M"
    assert add_roman("IV", "V") == "IX"


def test_roman_range():
    assert roman_range(8, 11) == ["VIII", "IX", "X", "XI"]
    assert roman_range(5, 5) == ["V"]
    assert roman_range(5, 4) == []


def test_largest():
    assert largest(["X", "IX", "XI", "V"]) == "XI"
    assert largest(["MM"]) == "MM"
    with pytest.raises(ValueError):
        largest([])
