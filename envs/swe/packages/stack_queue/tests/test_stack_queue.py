import pytest

from stack_queue import Queue, Stack, balanced, max_depth, reverse_words


def test_stack_order():
    stack = Stack()
    for item in [1, 2, 3]:
        stack.push(item)
    assert stack.peek() == 3
    assert stack.pop() == 3
    assert stack.pop() == 2
    assert stack.size() == 1


def test_stack_empty():
    stack = Stack()
    assert stack.is_empty()
    with pytest.raises(IndexError):
        stack.pop()
    with pytest.raises(IndexError):
        stack.peek()
    stack.push("x")
    assert not stack.is_empty()


def test_queue_order():
    queue = Queue()
    for item in "abc":
        queue.put(item)
    assert queue.get() == "a"
    queue.put("d")
    assert queue.get() == "b"
    assert queue.get() == "c"
    assert queue.get() == "d"


def test_queue_front_and_size():
    queue = Queue()
    queue.put(1)
    queue.put(2)
    assert queue.front() == 1
    assert queue.size() == 2
    queue.get()
    assert queue.size() == 1


def test_queue_empty():
    queue = Queue()
    with pytest.raises(IndexError):
        queue.get()


def test_balanced():
    assert balanced("")
    assert balanced("(a[b]{c})")
    assert balanced("()[]{}")
    assert not balanced("(]")
    assert not balanced("(()")
    assert not balanced("())")


def test_reverse_words():
    assert reverse_words("one two three") == "three two one"
    assert reverse_words("  solo ") == "solo"


def test_max_depth():
    assert max_depth("a(b(c)d)") == 2
    assert max_depth("()()") == 1
    assert max_depth("none") == 0
