import pytest

from unit_convert import convert_length, convert_money, convert_temperature
from unit_convert import convert_weight, format_money, from_celsius
from unit_convert import split_bill, to_celsius, to_cents


def test_length():
    assert convert_length(1, "km", "m") == pytest.approx(1000)
    assert convert_length(12, "inch", "foot") == pytest.approx(1)
    assert convert_length(5, "cm", "mm") == pytest.approx(50)
    assert convert_length(1, "mile", "km") == pytest.approx(1.609344)


def test_length_unknown():
    with pytest.raises(ValueError):
        convert_length(1, "yard", "m")
    with pytest.raises(ValueError):
        convert_length(1, "m", "yard")


def test_weight():
    assert convert_weight(2, "kg", "g") == pytest.approx(2000)
    assert convert_weight(1, "pound", "ounce") == pytest.approx(16)
    with pytest.raises(ValueError):
        convert_weight(1, "stone", "kg")


def test_temperature():
    assert to_celsius(212, "f") == pytest.approx(100)
    assert to_celsius(0, "k") == pytest.approx(-273.15)
    assert from_celsius(100, "f") == pytest.approx(212)
    assert from_celsius(0, "k") == pytest.approx(273.15)
    assert convert_temperature(-40, "c", "f") == pytest.approx(-40)
    assert convert_temperature(25, "c", "c") == 25


def test_temperature_unknown():
    with pytest.raises(ValueError):
        to_celsius(1, "x")
    with pytest.raises(ValueError):
        from_celsius(1, "x")


def test_to_cents():
    assert to_cents(1.005) == 101
    assert to_cents(2.675) == 268
    assert to_cents(-0.125) == -13
    assert to_cents(3) == 300
    assert to_cents(0.004) == 0


def test_money():
    assert convert_money(10, "usd", "eur") == 5.0
    assert convert_money(1, "gbp", "yen") == 400.0
    assert convert_money(0.33, "usd", "gbp") == 0.08
    with pytest.raises(ValueError):
        convert_money(1, "usd", "peso")


def test_format_money():
    assert format_money(123456) == "$1234.56"
    assert format_money(5) == "$0.05"
    assert format_money(-250, "E") == "-E2.50"


def test_split_bill():
    assert split_bill(1000, 3) == [334, 333, 333]
    assert split_bill(900, 3) == [300, 300, 300]
    assert sum(split_bill(1001, 4)) == 1001
    with pytest.raises(ValueError):
        split_bill(100, 0)
