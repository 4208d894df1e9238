import pytest

from calendar_math import add_days, day_number, day_of_week, day_of_year
from calendar_math import days_between, days_in_month, is_leap, leap_years


def test_is_leap():
    assert is_leap(2024)
    assert is_leap(2000)
    assert not is_leap(1900)
    assert not is_leap(2023)


def test_days_in_month():
    assert days_in_month(2023, 1) == 31
    assert days_in_month(2023, 2) == 28
    assert days_in_month(2024, 2) == 29
    assert days_in_month(2023, 4) == 30
    assert days_in_month(2023, 12) == 31


def test_bad_month():
    with pytest.raises(ValueError):
        days_in_month(2023, 0)
    with pytest.raises(ValueError):
        days_in_month(2023, 13)


def test_day_of_year():
    assert day_of_year(2023, 1, 1) == 1
    assert day_of_year(2023, 3, 1) == 60
    assert day_of_year(2024, 3, 1) == 61
    assert day_of_year(2024, 12, 31) == 366


def test_bad_day():
    with pytest.raises(ValueError):
        day_of_year(2023, 2, 29)
    with pytest.raises(ValueError):
        day_of_year(2023, 5, 0)


def test_day_number():
    assert day_number(1, 1, 1) == 0
    assert day_number(1, 1, 2) == 1
    assert day_number(2, 1, 1) == 365


def test_day_of_week():
    assert day_of_week(1, 1, 1) == "monday"
    assert day_of_week(2000, 1, 1) == "saturday"
    assert day_of_week(2024, 2, 29) == "thursday"
    assert day_of_week(1969, 7, 20) == "sunday"


def test_days_between():
    assert days_between((2024, 1, 1), (2025, 1, 1)) == 366
    assert days_between((2023, 3, 1), (2023, 2, 1)) == -28


def test_add_days_forward():
    assert add_days(2023, 1, 30, 3) == (2023, 2, 2)
    assert add_days(2023, 12, 25, 10) == (2024, 1, 4)
    assert add_days(2024, 2, 28, 1) == (2024, 2, 29)


def test_add_days_backward():
    assert add_days(2024, 3, 1, -1) == (2024, 2, 29)
    assert add_days(2024, 1, 1, -1) == (2023, 12, 31)


def test_leap_years():
    assert leap_years(1896, 1912) == [1896, 1904, 1908]
    assert leap_years(2001, 2004) == []
