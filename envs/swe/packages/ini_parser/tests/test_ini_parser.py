import pytest

from ini_parser import dump_ini, get_bool, get_int, get_list, get_value
from ini_parser import merge_ini, parse_ini

TEXT = """
# a comment
[server]
host = example.org
Port = 8080
debug: yes

; another comment
[users]
names = ann, bob , , cid
"""


def test_parse_sections():
    sections = parse_ini(TEXT)
    assert sorted(sections) == ["server", "users"]
    assert sections["server"]["host"] == "example.org"


def test_keys_are_lowercase():
    sections = parse_ini(TEXT)
    assert sections["server"]["port"] == "8080"
    assert "Port" not in sections["server"]


def test_colon_separator():
    sections = parse_ini(TEXT)
    assert sections["server"]["debug"] == "yes"


def test_value_with_equals_sign():
    sections = parse_ini("[a]\nquery = x=1\n")
    assert sections["a"]["query"] == "x=1"


def test_errors():
    with pytest.raises(ValueError):
        parse_ini("key = value\n")
    with pytest.raises(ValueError):
        parse_ini("[]\n")
    with pytest.raises(ValueError):
        parse_ini("[a]\njust words\n")


def test_get_value_and_int():
    sections = parse_ini(TEXT)
    assert get_value(sections, "server", "HOST") == "example.org"
    assert get_value(sections, "nothing", "host", "none") == "none"
    assert get_int(sections, "server", "port") == 8080
    assert get_int(sections, "server", "missing", 5) == 5


def test_get_bool():
    sections = parse_ini("[a]\none = On\ntwo = false\nthree = 1\nbad = maybe\n")
    assert get_bool(sections, "a", "one") is True
    assert get_bool(sections, "a", "two") is False
    assert get_bool(sections, "a", "three") is True
    assert get_bool(sections, "a", "four", True) is True
    with pytest.raises(ValueError):
        get_bool(sections, "a", "bad")


def test_get_list():
    sections = parse_ini(TEXT)
    assert get_list(sections, "users", "names") == ["ann", "bob", "cid"]
    assert get_list(sections, "users", "missing") == []


def test_dump_ini():
    sections = {"b": {"y": "2", "x": "1"}, "a": {"k": "v"}}
    assert dump_ini(sections) == "[a]\nk = v\n\n[b]\nx = 1\ny = 2\n"


def test_round_trip():
    sections = parse_ini(TEXT)
    assert parse_ini(dump_ini(sections)) == sections


def test_merge_ini():
    base = {"a": {"x": "1", "y": "2"}, "b": {"z": "3"}}
    extra = {"a": {"y": "20"}, "c": {"w": "4"}}
    merged = merge_ini(base, extra)
    assert merged == {
        "a": {"x": "1", "y": "20"},
        "b": {"z": "3"},
        "c": {"w": "4"},
    }
    assert base["a"]["y"] == "2"
