import pytest

from inventory import Inventory, fill_orders, parse_orders


def make_store():
    store = Inventory()
    store.add("apple", 10, 50)
    store.add("pear", 3, 80)
    store.add("plum", 1, 20)
    return store


def test_add_and_stock():
    store = make_store()
    store.add("apple", 5)
    assert store.stock("apple") == 15
    assert store.stock("kiwi") == 0
    assert store.prices["apple"] == 50


def test_add_new_without_price():
    store = Inventory()
    store.add("nut", 2)
    assert store.prices["nut"] == 0
    with pytest.raises(ValueError):
        store.add("nut", 0)


def test_remove():
    store = make_store()
    store.remove("apple", 4)
    assert store.stock("apple") == 6
    store.remove("plum", 1)
    assert "plum" not in store.names()
    with pytest.raises(ValueError):
        store.remove("pear", 4)


def test_value():
    store = make_store()
    assert store.value() == 10 * 50 + 3 * 80 + 20
    assert Inventory().value() == 0


def test_low_stock():
    store = make_store()
    assert store.low_stock(5) == ["pear", "plum"]
    assert store.low_stock(3) == ["plum"]
    assert store.low_stock(1) == []


def test_names_sorted():
    store = Inventory()
    store.add("zucchini", 1)
    store.add("bean", 1)
    assert store.names() == ["bean", "zucchini"]


def test_restock_list():
    store = make_store()
    assert store.restock_list(4) == {"pear": 1, "plum": 3}
    assert store.restock_list(1) == {}


def test_sell():
    store = make_store()
    assert store.sell("pear", 2) == 160
    assert store.stock("pear") == 1


def test_parse_orders():
    text = "apple 3\n\n  pear 1 \n"
    assert parse_orders(text) == [("apple", 3), ("pear", 1)]
    with pytest.raises(ValueError):
        parse_orders("apple three")
    with pytest.raises(ValueError):
        parse_orders("apple 1 2")


def test_fill_orders():
    store = make_store()
    orders = [("apple", 4), ("pear", 5), ("plum", 1)]
    assert fill_orders(store, orders) == 4 * 50 + 20
    assert store.stock("pear") == 3
    assert store.stock("apple") == 6
