"""Leap years, month lengths and the day of the week."""

DAY_NAMES = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
]

MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


def is_leap(year):
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year, month):
    if month < 1 or month > 12:
        raise ValueError("month must be from 1 to 12")
    if month == 2 and is_leap(year):
        return 29
    return MONTH_DAYS[month - 1]


def check_date(year, month, day):
    if day < 1 or day > days_in_month(year, month):
        raise ValueError("day out of range")


def day_of_year(year, month, day):
    check_date(year, month, day)
    total = day
    for earlier in range(1, month):
        total += days_in_month(year, earlier)
    return total


def day_number(year, month, day):
    """Days since 1 January of year 1, which is day 0."""
    past = year - 1
    total = past * 365 + past // 4 - past // 100 + past // 400
    return total + day_of_year(year, month, day) - 1


def day_of_week(year, month, day):
    """Name of the weekday; 1 January of year 1 was a monday."""
    return DAY_NAMES[day_number(year, month, day) % 7]


def days_between(first, second):
    """Days from the first (year, month, day) to the second."""
    return day_number(*second) - day_number(*first)


def add_days(year, month, day, count):
    """The date count days after the given one."""
    check_date(year, month, day)
    day += count
    while day > days_in_month(year, month):
        day -= days_in_month(year, month)
        month += 1
        if month > 12:
            month = 1
            year += 1
    while day < 1:
        month -= 1
        if month < 1:
            month = 12
            year -= 1
        day += days_in_month(year, month)
    return year, month, day


def leap_years(start, stop):
    """Leap years from start up to but not including stop."""
    return [year for year in range(start, stop) if is_leap(year)]
