import pytest

from json_path import all_paths, get_path, has_path, join_path, set_path
from json_path import split_path

DATA = {
    "user": {"name": "ann", "tags": ["admin", "dev"]},
    "items": [{"id": 1}, {"id": 2, "price": 9.5}],
    "count": 0,
}


def test_split_path():
    assert split_path("a.b[2].c") == ["a", "b", 2, "c"]
    assert split_path("items[0][1]") == ["items", 0, 1]
    assert split_path("[3]") == [3]
    assert split_path("x[-1]") == ["x", -1]
    assert split_path("") == []


def test_split_path_errors():
    with pytest.raises(ValueError):
        split_path("a[1")
    with pytest.raises(ValueError):
        split_path("a[b]")


def test_get_path():
    assert get_path(DATA, "user.name") == "ann"
    assert get_path(DATA, "user.tags[1]") == "dev"
    assert get_path(DATA, "items[1].price") == 9.5
    assert get_path(DATA, "user.tags[-1]") == "dev"
    assert get_path(DATA, "count") == 0


def test_get_path_missing():
    assert get_path(DATA, "user.age") is None
    assert get_path(DATA, "user.tags[2]", "none") == "none"
    assert get_path(DATA, "user.tags[-3]", "none") == "none"
    assert get_path(DATA, "user.name.first", 5) == 5
    assert get_path(DATA, "user[0]") is None


def test_get_whole():
    assert get_path(DATA, "") is DATA


def test_has_path():
    assert has_path(DATA, "items[0].id")
    assert has_path({"a": None}, "a")
    assert not has_path(DATA, "items[5]")


def test_set_path():
    data = {"a": [{"b": 1}]}
    set_path(data, "a[0].b", 2)
    set_path(data, "x.y.z", "deep")
    assert data == {"a": [{"b": 2}], "x": {"y": {"z": "deep"}}}
    with pytest.raises(ValueError):
        set_path(data, "", 1)


def test_set_list_item():
    data = {"list": [1, 2, 3]}
    assert set_path(data, "list[-1]", 30) == {"list": [1, 2, 30]}


def test_join_path():
    assert join_path(["a", 0, "b"]) == "a[0].b"
    assert join_path([2, "x"]) == "[2].x"
    assert join_path([]) == ""
    assert split_path(join_path(["q", 4, "r", "s"])) == ["q", 4, "r", "s"]


def test_all_paths():
    assert all_paths(DATA) == [
        "user.name",
        "user.tags[0]",
        "user.tags[1]",
        "items[0].id",
        "items[1].id",
        "items[1].price",
        "count",
    ]
