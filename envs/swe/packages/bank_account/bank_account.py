"""Bank accounts with deposits, withdrawals and transfers.

Amounts are whole cents.
"""


class Account:
    def __init__(self, owner, balance=0, limit=0):
        if balance < 0:
            raise ValueError("opening balance is negative")
        self.owner = owner
        self.balance = balance
        self.limit = limit
        self.history = []

    def deposit(self, amount):
        if amount <= 0:
            raise ValueError("deposit must be positive")
        self.balance += amount
        self.history.append(("deposit", amount))
        return self.balance

    def withdraw(self, amount):
        """Take money out; the balance may go down to minus limit."""
        if amount <= 0:
            raise ValueError("withdrawal must be positive")
        if amount > self.balance + self.limit:
            raise ValueError("not enough money")
        self.balance -= amount
        self.history.append(("withdraw", amount))
        return self.balance

    def transfer(self, other, amount):
        self.withdraw(amount)
        other.deposit(amount)
        self.history[-1] = ("transfer out", amount)
        other.history[-1] = ("transfer in", amount)

    def add_interest(self, rate):
        """Add rate percent of a positive balance, rounded down."""
        if self.balance <= 0:
            return 0
        interest = self.balance * rate // 100
        if interest > 0:
            self.deposit(interest)
            self.history[-1] = ("interest", interest)
        return interest

    def total(self, kind):
        """Sum of the amounts of one kind of history entry."""
        return sum(amount for name, amount in self.history if name == kind)

    def statement(self):
        lines = [self.owner + ": " + str(self.balance)]
        for name, amount in self.history:
            lines.append(name + " " + str(amount))
        return "\n".join(lines)


class Bank:
    def __init__(self):
        self.accounts = {}

    def open(self, owner, balance=0):
        if owner in self.accounts:
            raise ValueError("account exists")
        account = Account(owner, balance)
        self.accounts[owner] = account
        return account

    def get(self, owner):
        if owner not in self.accounts:
            raise KeyError(owner)
        return self.accounts[owner]

    def move(self, source, target, amount):
        self.get(source).transfer(self.get(target), amount)

    def total_money(self):
        return sum(account.balance for account in self.accounts.values())

    def richest(self):
        best = None
        for owner in sorted(self.accounts):
            account = self.accounts[owner]
            if best is None or account.balance > best.balance:
                best = account
        return best.owner if best else None
