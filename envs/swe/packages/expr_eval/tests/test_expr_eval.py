import pytest

from expr_eval import Parser, evaluate, number, tokenize


def test_tokenize():
    assert tokenize("2 * (3 + 4)") == ["2", "*", "(", "3", "+", "4", ")"]
    assert tokenize("12.5/3") == ["12.5", "/", "3"]
    assert tokenize("  ") == []


def test_tokenize_errors():
    with pytest.raises(ValueError):
        tokenize("2 ^ 3")


def test_number():
    assert number("42") == 42
    assert number("0.5") == 0.5
    assert isinstance(number("7"), int)
    with pytest.raises(ValueError):
        number("1.2.3")
    with pytest.raises(ValueError):
        number(".")


def test_simple_sums():
    assert evaluate("1 + 2") == 3
    assert evaluate("10 - 4 - 3") == 3
    assert evaluate("7") == 7


def test_precedence():
    assert evaluate("2 + 3 * 4") == 14
    assert evaluate("2 * 3 + 4") == 10
    assert evaluate("20 / 4 / 5") == 1
    assert evaluate("8 - 6 / 2") == 5


def test_brackets():
    assert evaluate("2 * (3 + 4)") == 14
    assert evaluate("((1))") == 1
    assert evaluate("(10 - 4) * (1 + 1)") == 12


def test_unary_signs():
    assert evaluate("-3 + 5") == 2
    assert evaluate("--4") == 4
    assert evaluate("+2 * -3") == -6
    assert evaluate("-(2 + 3)") == -5


def test_decimals_and_division():
    assert evaluate("7 / 2") == 3.5
    assert evaluate("0.5 * 4") == 2.0
    with pytest.raises(ZeroDivisionError):
        evaluate("1 / (2 - 2)")


def test_bad_input():
    for text in ["", "1 +", "(1 + 2", "1 2", "* 3", "1 + 2)"]:
        with pytest.raises(ValueError):
            evaluate(text)


def test_parser_peek_and_take():
    parser = Parser(["1", "+"])
    assert parser.peek() == "1"
    assert parser.take() == "1"
    assert parser.take() == "+"
    assert parser.peek() is None
    with pytest.raises(ValueError):
        parser.take()
