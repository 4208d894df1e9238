"""A stack, a queue made of two stacks, and bracket matching."""

PAIRS = {")": "(", "]": "[", "}": "{"}


class Stack:
    def __init__(self):
        self.items = []

    def push(self, item):
        self.items.append(item)

    def pop(self):
        if not self.items:
            raise IndexError("pop from empty stack")
        return self.items.pop()

    def peek(self):
        if not self.items:
            raise IndexError("peek at empty stack")
        return self.items[-1]

    def size(self):
        return len(self.items)

    def is_empty(self):
        return len(self.items) == 0


class Queue:
    """First in, first out, built from two stacks."""

    def __init__(self):
        self.inbox = Stack()
        self.outbox = Stack()

    def put(self, item):
        self.inbox.push(item)

    def move(self):
        if self.outbox.is_empty():
            while not self.inbox.is_empty():
                self.outbox.push(self.inbox.pop())

    def get(self):
        self.move()
        if self.outbox.is_empty():
            raise IndexError("get from empty queue")
        return self.outbox.pop()

    def front(self):
        self.move()
        return self.outbox.peek()

    def size(self):
        return self.inbox.size() + self.outbox.size()


def balanced(text):
    """True when every bracket is closed in the right order."""
    stack = Stack()
    for char in text:
        if char in "([{":
            stack.push(char)
        elif char in PAIRS:
            if stack.is_empty() or stack.pop() != PAIRS[char]:
                return False
    return stack.is_empty()


def reverse_words(text):
    stack = Stack()
    for word in text.split():
        stack.push(word)
    words = []
    while not stack.is_empty():
        words.append(stack.pop())
    return " ".join(words)


def max_depth(text):
    """Deepest nesting of round brackets."""
    depth = 0
    best = 0
    for char in text:
        if char == "(":
            depth += 1
            best = max(best, depth)
        elif char == ")":
            depth -= 1
    return best
