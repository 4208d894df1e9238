import pytest

from bank_account import Account, Bank


def test_open_account():
    account = Account("ann", 500)
    assert account.balance == 500
    assert account.history == []
    with pytest.raises(ValueError):
        Account("bob", -1)


def test_deposit():
    account = Account("ann")
    assert account.deposit(250) == 250
    assert account.deposit(50) == 300
    assert account.history == [("deposit", 250), ("deposit", 50)]
    with pytest.raises(ValueError):
        account.deposit(0)


def test_withdraw():
    account = Account("ann", 100)
    assert account.withdraw(40) == 60
    assert account.history == [("withdraw", 40)]
    assert account.withdraw(60) == 0
    with pytest.raises(ValueError):
        account.withdraw(1)
    with pytest.raises(ValueError):
        account.withdraw(-5)


def test_overdraft_limit():
    account = Account("ann", 100, limit=50)
    assert account.withdraw(150) == -50
    with pytest.raises(ValueError):
        account.withdraw(1)


def test_transfer():
    first = Account("ann", 100)
    second = Account("bob", 20)
    first.transfer(second, 30)
    assert first.balance == 70
    assert second.balance == 50
    assert first.history == [("transfer out", 30)]
    assert second.history == [("transfer in", 30)]


def test_failed_transfer_changes_nothing():
    first = Account("ann", 10)
    second = Account("bob")
    with pytest.raises(ValueError):
        first.transfer(second, 11)
    assert first.balance == 10
    assert second.balance == 0
    assert second.history == []


def test_interest():
    account = Account("ann", 1050)
    assert account.add_interest(10) == 105
    assert account.balance == 1155
    assert account.history == [("interest", 105)]
    assert Account("bob", 5).add_interest(10) == 0
    assert Account("cid", 0).add_interest(10) == 0


def test_total_and_statement():
    account = Account("ann", 0)
    account.deposit(100)
    account.deposit(25)
    account.withdraw(30)
    assert account.total("deposit") == 125
    assert account.total("withdraw") == 30
    assert account.statement() == "ann: 95\ndeposit 100\ndeposit 25\nwithdraw 30"


def test_bank():
    bank = Bank()
    bank.open("ann", 100)
    bank.open("bob", 300)
    bank.open("cid")
    with pytest.raises(ValueError):
        bank.open("ann")
    with pytest.raises(KeyError):
        bank.get("dan")
    assert bank.total_money() == 400
    assert bank.richest() == "bob"


def test_bank_move():
    bank = Bank()
    bank.open("ann", 100)
    bank.open("bob", 100)
    bank.move("ann", "bob", 60)
    assert bank.get("ann").balance == 40
    assert bank.get("bob").balance == 160
    assert bank.richest() == "bob"
    assert Bank().richest() is None
