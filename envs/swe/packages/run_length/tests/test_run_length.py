import pytest

from run_length import decode, decode_short, encode, encode_short, expand
from run_length import longest_run, ratio, runs


def test_runs():
    assert runs("aaab") == [["a", 3], ["b", 1]]
    assert runs([1, 1, 2, 1]) == [[1, 2], [2, 1], [1, 1]]
    assert runs("") == []


def test_encode():
    assert encode("aaab") == "3a1b"
    assert encode("abc") == "1a1b1c"
    assert encode("") == ""
    assert encode("wwwwwwwwwwww") == "12w"


def test_encode_digits():
    with pytest.raises(ValueError):
        encode("a1")


def test_decode():
    assert decode("3a1b") == "aaab"
    assert decode("12w") == "wwwwwwwwwwww"
    assert decode("") == ""


def test_decode_errors():
    with pytest.raises(ValueError):
        decode("ab")
    with pytest.raises(ValueError):
        decode("3a4")


def test_round_trip():
    for text in ["hello", "aabbbcccc", "x", "  !!"]:
        assert decode(encode(text)) == text


def test_short_forms():
    assert encode_short("aaabcc") == "3ab2c"
    assert decode_short("3ab2c") == "aaabcc"
    assert decode_short(encode_short("mississippi")) == "mississippi"


def test_expand():
    assert expand([["x", 2], ["y", 3]]) == ["x", "x", "y", "y", "y"]
    assert expand(runs([5, 5, 6])) == [5, 5, 6]


def test_longest_run():
    assert longest_run("abbbcc") == ("b", 3)
    assert longest_run("aabb") == ("a", 2)
    assert longest_run("") is None


def test_ratio():
    assert ratio("") == 0.0
    assert ratio("aaaa") == 0.5
    assert ratio("ab") == 2.0
