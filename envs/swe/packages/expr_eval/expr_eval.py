"""Tokenize and evaluate arithmetic such as 2 * (3 + 4)."""


def tokenize(text):
    """Split text into numbers, operators and brackets."""
    tokens = []
    index = 0
    while index < len(text):
        char = text[index]
        if char.isspace():
            index += 1
        elif char.isdigit() or char == ".":
            start = index
            while index < len(text) and text[index] in "0123456789.":
                index += 1
            tokens.append(text[start:index])
        elif char in "+-*/()":
            tokens.append(char)
            index += 1
        else:
            raise ValueError("unexpected character: " + char)
    return tokens


def number(token):
    if token.count(".") > 1 or token == ".":
        raise ValueError("bad number: " + token)
    if "." in token:
        return float(token)
    return int(token)


class Parser:
    def __init__(self, tokens):
        self.tokens = tokens
        self.position = 0

    def peek(self):
        if self.position < len(self.tokens):
            return self.tokens[self.position]
        return None

    def take(self):
        token = self.peek()
        if token is None:
            raise ValueError("unexpected end")
        self.position += 1
        return token

    def expression(self):
        value = self.term()
        while self.peek() in ("+", "-"):
            if self.take() == "+":
                value = value + self.term()
            else:
                value = value - self.term()
        return value

    def term(self):
        value = self.factor()
        while self.peek() in ("*", "/"):
            if self.take() == "*":
                value = value * self.factor()
            else:
                divisor = self.factor()
                if divisor == 0:
                    raise ZeroDivisionError("division by zero")
                value = value / divisor
        return value

    def factor(self):
        token = self.take()
        if token == "-":
            return -self.factor()
        if token == "+":
            return self.factor()
        if token == "(":
            value = self.expression()
            if self.take() != ")":
                raise ValueError("missing closing bracket")
            return value
        return number(token)


def evaluate(text):
    parser = Parser(tokenize(text))
    value = parser.expression()
    if parser.peek() is not None:
        raise ValueError("extra input")
    return value
