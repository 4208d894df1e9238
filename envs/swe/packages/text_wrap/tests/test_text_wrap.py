import pytest

from text_wrap import center, count_lines, fill, indent, justify
from text_wrap import longest_line, shorten, wrap_words

TEXT = "the quick brown fox jumps over the lazy dog"


def test_wrap_words():
    assert wrap_words(TEXT, 10) == [
        "the quick",
        "brown fox",
        "jumps over",
        "the lazy",
        "dog",
    ]


def test_wrap_exact_fit():
    assert wrap_words("ab cd", 5) == ["ab cd"]
    assert wrap_words("ab cd", 4) == ["ab", "cd"]


def test_wrap_long_word():
    assert wrap_words("abcdefgh ij", 3) == ["abc", "def", "gh", "ij"]
    assert wrap_words("xy abcdef", 3) == ["xy", "abc", "def"]


def test_wrap_empty_and_errors():
    assert wrap_words("   ", 5) == []
    with pytest.raises(ValueError):
        wrap_words("abc", 0)


def test_fill_and_count():
    assert fill("one two three", 7) == "one two\nthree"
    assert count_lines(TEXT, 10) == 5
    assert count_lines(TEXT, 100) == 1


def test_center():
    assert center("ab", 6) == "  ab  "
    assert center("ab", 5) == " ab  "
    assert center("abc", 7, "*") == "**abc**"
    assert center("long", 2) == "long"


def test_justify():
    assert justify("a b c", 9) == "a   b   c"
    assert justify("ab cd ef", 10) == "ab  cd  ef"
    assert justify("ab cd ef", 11) == "ab   cd  ef"
    assert justify("word", 6) == "word  "


def test_shorten():
    assert shorten("hello world", 20) == "hello world"
    assert shorten("hello world", 8) == "hello..."
    assert shorten("hello world", 9) == "hello..."
    assert shorten("hello world", 2) == ".."


def test_indent():
    assert indent("a\n\nb") == "    a\n\n    b"
    assert indent("x", "> ") == "> x"


def test_longest_line():
    assert longest_line("ab\nabcd\nabc") == 4
    assert longest_line("") == 0
