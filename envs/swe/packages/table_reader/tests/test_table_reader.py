import pytest

from table_reader import column, column_total, join_row, quote_field
from table_reader import read_table, split_row, to_numbers, write_table


def test_split_plain():
    assert split_row("a,b,c") == ["a", "b", "c"]
    assert split_row("a,,c") == ["a", "", "c"]
    assert split_row("") == [""]


def test_split_quoted():
    assert split_row('x,"a,b",y') == ["x", "a,b", "y"]
    assert split_row('"say ""hi""",z') == ['say "hi"', "z"]


def test_split_other_separator():
    assert split_row("a;b;c", sep=";") == ["a", "b", "c"]
    assert split_row("a,b;c", sep=";") == ["a,b", "c"]


def test_unclosed_quote():
    with pytest.raises(ValueError):
        split_row('a,"b')


def test_quote_field():
    assert quote_field("plain") == "plain"
    assert quote_field("a,b") == '"a,b"'
    assert quote_field('say "hi"') == '"say ""hi"""'
    assert quote_field(" pad") == '" pad"'


def test_join_round_trip():
    fields = ["a", "b,c", 'd"e', " f ", "7"]
    assert split_row(join_row(fields)) == fields
    assert join_row([1, 2.5, "x"]) == "1,2.5,x"


def test_read_table():
    rows = read_table("name,age\nann,31\n\nbob,27\n")
    assert rows == [{"name": "ann", "age": "31"}, {"name": "bob", "age": "27"}]
    assert read_table("") == []


def test_read_table_errors():
    with pytest.raises(ValueError):
        read_table("a,b\n1,2,3\n")


def test_write_table():
    rows = [{"name": "ann", "city": "new york, ny"}, {"name": "bob"}]
    text = write_table(rows, ["name", "city"])
    assert text == 'name,city\nann,"new york, ny"\nbob,\n'
    assert read_table(text)[0]["city"] == "new york, ny"


def test_numbers():
    assert to_numbers(["1", " -2 ", "3.5"]) == [1, -2, 3.5]
    assert isinstance(to_numbers(["4"])[0], int)
    with pytest.raises(ValueError):
        to_numbers(["four"])


def test_column_total():
    rows = read_table("item,price\npen,2\nbook,12.5\ncup,-1\n")
    assert column(rows, "item") == ["pen", "book", "cup"]
    assert column_total(rows, "price") == 13.5
