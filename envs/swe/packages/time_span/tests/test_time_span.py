import pytest

from time_span import add_spans, format_clock, format_span, parse_clock
from time_span import parse_span, split_evenly


def test_parse_span():
    assert parse_span("1h30m") == 5400
    assert parse_span("2d 4h") == 187200
    assert parse_span("45s") == 45
    assert parse_span("90") == 90
    assert parse_span("1M5") == 65


def test_parse_span_errors():
    with pytest.raises(ValueError):
        parse_span("")
    with pytest.raises(ValueError):
        parse_span("h5")
    with pytest.raises(ValueError):
        parse_span("3w")


def test_format_span():
    assert format_span(0) == "0s"
    assert format_span(5400) == "1h30m"
    assert format_span(90061) == "1d1h1m1s"
    assert format_span(59) == "59s"
    assert format_span(3600) == "1h"


def test_format_clock():
    assert format_clock(0) == "0:00:00"
    assert format_clock(3725) == "1:02:05"
    assert format_clock(86399) == "23:59:59"
    assert format_clock(90000) == "25:00:00"
    with pytest.raises(ValueError):
        format_clock(-1)


def test_parse_clock():
    assert parse_clock("1:02:05") == 3725
    assert parse_clock("02:05") == 125
    assert parse_clock("0:00:59") == 59


def test_parse_clock_errors():
    with pytest.raises(ValueError):
        parse_clock("1:60:00")
    with pytest.raises(ValueError):
        parse_clock("1:00:60")
    with pytest.raises(ValueError):
        parse_clock("1:2:3:4")


def test_clock_round_trip():
    for seconds in [0, 1, 59, 60, 3599, 3600, 45296]:
        assert parse_clock(format_clock(seconds)) == seconds


def test_add_spans():
    assert add_spans("1h", "30m", "30m") == "2h"
    assert add_spans("59s", "1s") == "1m"


def test_split_evenly():
    assert split_evenly(10, 3) == [4, 3, 3]
    assert split_evenly(9, 3) == [3, 3, 3]
    assert split_evenly(2, 4) == [1, 1, 0, 0]
    with pytest.raises(ValueError):
        split_evenly(5, 0)
