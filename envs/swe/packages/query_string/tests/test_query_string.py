import pytest

from query_string import add_param, build_query, decode_text, encode_text
from query_string import first_values, parse_query, split_url


def test_encode_safe_text():
    assert encode_text("hello-World_1.0~") == "hello-World_1.0~"


def test_encode_special():
    assert encode_text("a b") == "a+b"
    assert encode_text("a&b=c") == "a%26b%3Dc"
    assert encode_text("100%") == "100%25"
    assert encode_text("caf\u00e9") == "caf%C3%A9"


def test_decode():
    assert decode_text("a+b") == "a b"
    assert decode_text("a%26b%3dc") == "a&b=c"
    assert decode_text("caf%C3%A9") == "caf\u00e9"
    with pytest.raises(ValueError):
        decode_text("abc%4")


def test_round_trip():
    for text in ["x y z", "50% off!", "a/b?c#d", "\u00fcber", ""]:
        assert decode_text(encode_text(text)) == text


def test_parse_query():
    assert parse_query("?a=1&b=two+words&a=3") == {
        "a": ["1", "3"],
        "b": ["two words"],
    }


def test_parse_edge_cases():
    assert parse_query("") == {}
    assert parse_query("flag&&x=") == {"flag": [""], "x": [""]}
    assert parse_query("eq=a=b") == {"eq": ["a=b"]}


def test_build_query():
    assert build_query({"b": 2, "a": "x y"}) == "a=x+y&b=2"
    assert build_query({"tag": ["red", "blue"]}) == "tag=red&tag=blue"
    assert build_query({}) == ""


def test_build_then_parse():
    params = {"name": ["ann lee"], "q": ["1+1=2"]}
    assert parse_query(build_query(params)) == params


def test_first_values():
    params = {"a": ["1", "2"], "b": [], "c": ["3"]}
    assert first_values(params) == {"a": "1", "c": "3"}


def test_split_url():
    assert split_url("/search") == ("/search", {})
    assert split_url("/search?q=cats&page=2") == (
        "/search",
        {"q": ["cats"], "page": ["2"]},
    )


def test_add_param():
    assert add_param("/list", "page", 3) == "/list?page=3"
    assert add_param("/list?b=1", "a", "x") == "/list?a=x&b=1"
