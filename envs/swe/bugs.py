"""Procedural bug injection on one module, in the style of SWE-smith.

`find_bugs(source)` walks the module's AST and lists every candidate bug of the kinds in `KINDS`. A bug
is never written with `ast.unparse` (that would reformat the whole file): it is a text edit at the
node's line and column offsets, so exactly one line of the file changes and the fix is "put the
original line back". Every candidate is checked before it is listed: the edited file parses, and its
AST is exactly the original AST with the one intended change (so an edit that changed the meaning in
some other way, say through operator precedence, is dropped).

    bugs = find_bugs(source, package="roman_numerals", file="roman_numerals.py")
    picked = pick_bugs(bugs, 10, seed="0:roman_numerals")     # deterministic, kinds interleaved
    buggy = picked[0].apply(source)                           # one line differs
    assert picked[0].revert(buggy) == source

Kinds:

- `flip_operator`: `+`/`-`, `*`/`/`, `//`/`%`, `<`/`<=`, `>`/`>=`, `==`/`!=`, `in`/`not in`,
  `is`/`is not`, `and`/`or`, and the augmented forms (`+=`/`-=`, ...).
- `off_by_one`: an int literal `c` becomes `c + 1` or `c - 1`.
- `swap_arguments`: two neighbouring positional arguments of a call trade places.
- `invert_condition`: `if x:` becomes `if not x:` (and `if not x:` becomes `if x:`); also `while`,
  `a if x else b` and comprehension filters.
- `remove_statement`: an assignment, augmented assignment, call statement or `return value` inside a
  function becomes `pass` at the same indentation.
- `swap_operands`: `a - b` becomes `b - a` for the operators where order matters.
- `change_constant`: a string, number or bool literal becomes another plausible value.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import random
import re
from dataclasses import asdict, dataclass

KINDS = ("flip_operator", "off_by_one", "swap_arguments", "invert_condition", "remove_statement",
         "swap_operands", "change_constant")

SYMBOLS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.MatMult: "@",
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
    ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not",
    ast.And: "and", ast.Or: "or",
}
BINARY_FLIPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
                ast.FloorDiv: ast.Mod, ast.Mod: ast.FloorDiv}
COMPARE_FLIPS = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
                 ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot,
                 ast.IsNot: ast.Is}
BOOL_FLIPS = {ast.And: ast.Or, ast.Or: ast.And}
NON_COMMUTATIVE = (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.RShift)
SYMMETRIC_CALLS = {"max", "min"}  # swapping their arguments gives the same value: never a bug
REMOVABLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return)
# expressions that need brackets when they are moved next to another operator or after `not`
COMPOUND = (ast.BinOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.UnaryOp, ast.Lambda, ast.NamedExpr)
WORD_PATTERNS = {"not in": r"\bnot\s+in\b", "is not": r"\bis\s+not\b", "in": r"\bin\b", "is": r"\bis\b",
                 "and": r"\band\b", "or": r"\bor\b"}
CHAR_SWAPS = {",": ";", ";": ",", ".": ",", ":": ";", "-": "_", "_": "-", "(": "[", "[": "(", ")": "]",
              "]": ")", "{": "[", "}": "]", "+": "-", "*": "+", "/": "-", "=": ":", "#": "@", "@": "#",
              "%": "#", " ": "", "?": "!", "!": "?", "&": "+", "|": "/", "<": ">", ">": "<", "~": "-",
              "$": "#", "^": "*", "\n": " ", "\t": " ", '"': "'", "'": '"'}


@dataclass(frozen=True)
class Bug:
    """One injected bug: line `line` (1-based) of `file` reads `buggy_line` instead of `original_line`."""

    package: str
    file: str
    kind: str
    line: int
    original_line: str
    buggy_line: str

    @property
    def key(self) -> str:
        """A short stable hash of the bug (package, file, line and buggy text)."""
        text = f"{self.package}/{self.file}:{self.line}:{self.buggy_line}"
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]

    def apply(self, source: str) -> str:
        """`source` with the bug in it (`source` must hold the original line)."""
        return replace_line(source, self.line, self.buggy_line, expect=self.original_line)

    def revert(self, source: str) -> str:
        """The fix: put the original line back."""
        return replace_line(source, self.line, self.original_line, expect=self.buggy_line)

    def to_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------------------------------------------
# lines
# ---------------------------------------------------------------------------------------------------
def split_lines(source: str) -> list[str]:
    """Lines with their endings, split the way Python's tokenizer counts them (\\n, \\r\\n, \\r)."""
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", source)


def line_text(line: str) -> str:
    return line.rstrip("\r\n")


def replace_line(source: str, number: int, new_text: str, expect: str | None = None) -> str:
    """`source` with line `number` (1-based) replaced by `new_text`, keeping its line ending."""
    if "\n" in new_text or "\r" in new_text:
        raise ValueError("a replacement line cannot hold a line break")
    lines = split_lines(source)
    if not 1 <= number <= len(lines):
        raise ValueError(f"line {number} is outside the file ({len(lines)} lines)")
    old = lines[number - 1]
    text = line_text(old)
    if expect is not None and text != expect:
        raise ValueError(f"line {number} reads {text!r}, expected {expect!r}")
    lines[number - 1] = new_text + old[len(text):]
    return "".join(lines)


# ---------------------------------------------------------------------------------------------------
# the AST walk and text edits
# ---------------------------------------------------------------------------------------------------
def walk(node, path=(), parents=()):
    """(node, path, ancestors) for every node; a path is a tuple of (field, index or None)."""
    yield node, path, parents
    for field, value in ast.iter_fields(node):
        if isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, ast.AST):
                    yield from walk(item, path + ((field, index),), parents + (node,))
        elif isinstance(value, ast.AST):
            yield from walk(value, path + ((field, None),), parents + (node,))


def locate(tree, path):
    node = tree
    for field, index in path:
        node = getattr(node, field) if index is None else getattr(node, field)[index]
    return node


def put(tree, path, new):
    """Put `new` at `path`; return what was there."""
    parent = locate(tree, path[:-1])
    field, index = path[-1]
    if index is None:
        old = getattr(parent, field)
        setattr(parent, field, new)
    else:
        items = getattr(parent, field)
        old = items[index]
        items[index] = new
    return old


class Lines:
    """The module's lines as UTF-8 bytes (AST column offsets count bytes)."""

    def __init__(self, source: str):
        self.texts = [line_text(line) for line in split_lines(source)]
        self.raw = [text.encode("utf-8") for text in self.texts]

    def span(self, node) -> tuple[int, int, int] | None:
        """(line, start, end) of a node that sits on one line, else None."""
        if getattr(node, "lineno", None) is None or node.lineno != node.end_lineno:
            return None
        return node.lineno, node.col_offset, node.end_col_offset

    def segment(self, line: int, start: int, end: int) -> str:
        return self.raw[line - 1][start:end].decode("utf-8")

    def edit(self, line: int, edits) -> str:
        """Line `line` with the byte ranges of `edits` [(start, end, new text)] replaced."""
        raw = self.raw[line - 1]
        for start, end, new in sorted(edits, reverse=True):
            raw = raw[:start] + new.encode("utf-8") + raw[end:]
        return raw.decode("utf-8")

    def operator_span(self, line: int, start: int, end: int, symbol: str) -> tuple[int, int] | None:
        """Byte range of the operator `symbol` in the gap [start, end) between two operands; None when the
        gap holds anything but the operator, brackets and spaces."""
        gap = self.segment(line, start, end)
        pattern = WORD_PATTERNS.get(symbol, re.escape(symbol))
        found = list(re.finditer(pattern, gap))
        if len(found) != 1:
            return None
        match = found[0]
        rest = gap[:match.start()] + gap[match.end():]
        if rest.strip(" \t()"):
            return None
        return start + len(gap[:match.start()].encode()), start + len(gap[:match.end()].encode())

    def widen(self, line: int, start: int, end: int) -> tuple[int, int]:
        """Grow [start, end) over brackets that wrap exactly this expression."""
        raw = self.raw[line - 1]
        while True:
            left = start - 1
            while left >= 0 and raw[left:left + 1] in (b" ", b"\t"):
                left -= 1
            right = end
            while right < len(raw) and raw[right:right + 1] in (b" ", b"\t"):
                right += 1
            if left >= 0 and raw[left:left + 1] == b"(" and raw[right:right + 1] == b")":
                start, end = left, right + 1
            else:
                return start, end


def shallow(node, **changes):
    new = copy.copy(node)
    for field, value in changes.items():
        setattr(new, field, value)
    return new


def literal_node(value):
    """The node `ast.parse` gives for the literal `repr(value)` (a negative number is a unary minus)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        return ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=-value))
    return ast.Constant(value=value)


# ---------------------------------------------------------------------------------------------------
# new literal values
# ---------------------------------------------------------------------------------------------------
def other_int(value: int) -> int | None:
    """A plausible wrong value for an int literal (0 and 1 are left to off_by_one)."""
    if value < 2:
        return None
    if value < 10:
        return value * 2
    digits = str(value)
    if digits[-1] != digits[-2]:
        return int(digits[:-2] + digits[-1] + digits[-2])
    if value % 10 == 0:
        return value // 10
    return value * 10


def other_float_text(text: str) -> str | None:
    """A float literal with its first nonzero digit changed (0.5 -> 0.6, 273.15 -> 373.15)."""
    for index, char in enumerate(text):
        if char in "123456789":
            new = "8" if char == "9" else str(int(char) + 1)
            return text[:index] + new + text[index + 1:]
        if char in "eE":
            break
    if "0" in text:
        index = text.index("0")
        return text[:index] + "1" + text[index + 1:]
    return None


def other_string(value: str) -> str | None:
    """A plausible wrong value for a string literal."""
    if value == "":
        return " "
    if len(value) == 1:
        if value in CHAR_SWAPS:
            return CHAR_SWAPS[value]
        if value.isdigit():
            return str((int(value) + 1) % 10)
        if value.swapcase() != value:
            return value.swapcase()
        return None
    if value.strip() and value.strip() != value:
        return value.strip()
    for index, char in enumerate(value):
        if char.isalpha() and char.swapcase() != char and len(char.swapcase()) == 1:
            return value[:index] + char.swapcase() + value[index + 1:]
    return value[:-1]


def string_literal(value: str, quote: str) -> str:
    if quote not in value and "\\" not in value and value.isprintable():
        return quote + value + quote
    return repr(value)


# ---------------------------------------------------------------------------------------------------
# candidate sites: each yields (kind, line, new line text, path to replace, replacement node); the new
# text may be a list of alternatives, the first one that checks out is taken
# ---------------------------------------------------------------------------------------------------
def is_docstring(node, parents) -> bool:
    return bool(parents) and isinstance(parents[-1], ast.Expr) and isinstance(node, ast.Constant) \
        and isinstance(node.value, str)


def inside(parents, types) -> bool:
    return any(isinstance(parent, types) for parent in parents)


def is_string(node) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def joins_text(node, parents) -> bool:
    """True for a `+` of a chain `a + b + ...` that has a string literal in it (text, not arithmetic), and
    for `"..." % value` (formatting)."""
    if isinstance(node.op, ast.Mod):
        return is_string(node.left)
    if not isinstance(node.op, ast.Add):
        return is_string(node.left) or is_string(node.right)
    top = node
    for parent in reversed(parents):
        if not (isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Add)):
            break
        top = parent
    todo = [top]
    while todo:
        item = todo.pop()
        if isinstance(item, ast.BinOp) and isinstance(item.op, ast.Add):
            todo += [item.left, item.right]
        elif is_string(item):
            return True
    return False


def binary_sites(node, path, parents, lines):
    span = lines.span(node)
    if span is None:
        return
    line = span[0]
    left, right = lines.span(node.left), lines.span(node.right)
    if left is None or right is None:
        return
    symbol = SYMBOLS.get(type(node.op))
    text_math = joins_text(node, parents)
    found = lines.operator_span(line, left[2], right[1], symbol) if symbol else None
    flip = BINARY_FLIPS.get(type(node.op))
    if found and flip and not text_math:
        new = lines.edit(line, [(found[0], found[1], SYMBOLS[flip])])
        yield "flip_operator", line, new, path, shallow(node, op=flip())
    if isinstance(node.op, NON_COMMUTATIVE) and not text_math:
        swapped = shallow(node, left=node.right, right=node.left)
        first = lines.widen(line, left[1], left[2])
        second = lines.widen(line, right[1], right[2])
        left_text, right_text = lines.segment(line, *first), lines.segment(line, *second)
        if left_text == right_text:
            return
        plain = lines.edit(line, [(*first, right_text), (*second, left_text)])
        # the same swap with brackets, for when the plain one changes the meaning (a - b - c)
        bracketed = lines.edit(line, [(*first, bracket(right_text, node.right)),
                                      (*second, bracket(left_text, node.left))])
        yield "swap_operands", line, [plain, bracketed], path, swapped


def bracket(text, node):
    """`text` in brackets when `node` is compound and not bracketed as a whole already."""
    if not isinstance(node, COMPOUND):
        return text
    depth = 0
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            if index == len(text) - 1 and text.startswith("("):
                return text
            break
    return "(" + text + ")"


def compare_sites(node, path, lines):
    if lines.span(node) is None:
        return
    line = node.lineno
    operands = [node.left] + list(node.comparators)
    for index, op in enumerate(node.ops):
        before, after = lines.span(operands[index]), lines.span(operands[index + 1])
        if before is None or after is None:
            continue
        found = lines.operator_span(line, before[2], after[1], SYMBOLS[type(op)])
        if found is None:
            continue
        flip = COMPARE_FLIPS[type(op)]
        ops = list(node.ops)
        ops[index] = flip()
        new = lines.edit(line, [(found[0], found[1], SYMBOLS[flip])])
        yield "flip_operator", line, new, path, shallow(node, ops=ops)


def bool_sites(node, path, lines):
    if lines.span(node) is None:
        return
    line = node.lineno
    flip = BOOL_FLIPS[type(node.op)]
    edits = []
    for first, second in zip(node.values, node.values[1:]):
        before, after = lines.span(first), lines.span(second)
        found = before and after and lines.operator_span(line, before[2], after[1], SYMBOLS[type(node.op)])
        if not found:
            return
        edits.append((found[0], found[1], SYMBOLS[flip]))
    yield "flip_operator", line, lines.edit(line, edits), path, shallow(node, op=flip())


def augmented_sites(node, path, lines):
    span, target, value = lines.span(node), lines.span(node.target), lines.span(node.value)
    flip = BINARY_FLIPS.get(type(node.op))
    if span is None or target is None or value is None or flip is None or is_string(node.value):
        return
    found = lines.operator_span(span[0], target[2], value[1], SYMBOLS[type(node.op)] + "=")
    if found:
        new = lines.edit(span[0], [(found[0], found[1], SYMBOLS[flip] + "=")])
        yield "flip_operator", span[0], new, path, shallow(node, op=flip())


def constant_sites(node, path, parents, lines):
    span = lines.span(node)
    if span is None or is_docstring(node, parents) or inside(parents, (ast.JoinedStr, ast.Raise)):
        return
    line, start, end = span
    text = lines.segment(line, start, end)
    value = node.value
    negated = bool(parents) and isinstance(parents[-1], ast.UnaryOp) and isinstance(parents[-1].op, ast.USub)
    if isinstance(value, bool):
        if text in ("True", "False"):
            yield "change_constant", line, lines.edit(line, [(start, end, str(not value))]), path, \
                ast.Constant(value=not value)
    elif isinstance(value, int):
        for new in (value + 1, value - 1):
            if new == 0 and negated:
                continue
            yield "off_by_one", line, lines.edit(line, [(start, end, str(new))]), path, literal_node(new)
        new = other_int(value)
        if new is not None:
            yield "change_constant", line, lines.edit(line, [(start, end, str(new))]), path, literal_node(new)
    elif isinstance(value, float):
        new_text = other_float_text(text)
        if new_text is not None:
            try:
                new = float(new_text)
            except ValueError:
                return
            if new != value:
                yield "change_constant", line, lines.edit(line, [(start, end, new_text)]), path, \
                    ast.Constant(value=new)
    elif isinstance(value, str):
        if text[:1] not in ("'", '"') or text[:3] in ("'''", '"""'):
            return  # prefixed (r"", b"", f"") or triple quoted: left alone
        new = other_string(value)
        if new is not None and new != value:
            literal = string_literal(new, text[0])
            yield "change_constant", line, lines.edit(line, [(start, end, literal)]), path, ast.Constant(value=new)


def call_sites(node, path, lines):
    if isinstance(node.func, ast.Name) and node.func.id in SYMMETRIC_CALLS:
        return
    args = node.args
    for index in range(len(args) - 1):
        first, second = args[index], args[index + 1]
        if isinstance(first, ast.Starred) or isinstance(second, ast.Starred):
            continue
        one, two = lines.span(first), lines.span(second)
        if one is None or two is None or one[0] != two[0]:
            continue
        line = one[0]
        first_text, second_text = lines.segment(*one), lines.segment(*two)
        if first_text == second_text:
            continue
        new = lines.edit(line, [(one[1], one[2], second_text), (two[1], two[2], first_text)])
        swapped = list(args)
        swapped[index], swapped[index + 1] = second, first
        yield "swap_arguments", line, new, path, shallow(node, args=swapped)


def negate_sites(test, path, lines):
    """`x` -> `not x` and `not x` -> `x` for the condition `test` at `path`."""
    span = lines.span(test)
    if span is None:
        return
    line, start, end = span
    text = lines.segment(line, start, end)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = lines.widen(line, test.operand.col_offset, test.operand.end_col_offset)
        if inner[0] < start:  # the operand's brackets reach outside `not ...`: leave it alone
            return
        new = lines.edit(line, [(start, end, lines.segment(line, *inner))])
        yield "invert_condition", line, new, path, test.operand
    else:
        wrapped = "not (" + text + ")" if isinstance(test, COMPOUND) else "not " + text
        yield "invert_condition", line, lines.edit(line, [(start, end, wrapped)]), path, \
            ast.UnaryOp(op=ast.Not(), operand=test)


def statement_sites(node, path, parents, lines):
    if not isinstance(node, REMOVABLE) or not inside(parents, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return
    if isinstance(node, ast.Expr) and not isinstance(node.value, ast.Call):
        return
    if isinstance(node, (ast.Return, ast.AnnAssign)) and node.value is None:
        return
    span = lines.span(node)
    if span is None:
        return
    line, start, end = span
    raw = lines.raw[line - 1]
    before, after = raw[:start], raw[end:].strip()
    if before.strip() or (after and not after.startswith(b"#")):
        return  # the line holds something besides this statement
    yield "remove_statement", line, before.decode("utf-8") + "pass", path, ast.Pass()


def sites(tree, lines):
    for node, path, parents in walk(tree):
        if isinstance(node, ast.BinOp):
            yield from binary_sites(node, path, parents, lines)
        elif isinstance(node, ast.Compare):
            yield from compare_sites(node, path, lines)
        elif isinstance(node, ast.BoolOp):
            yield from bool_sites(node, path, lines)
        elif isinstance(node, ast.AugAssign):
            yield from augmented_sites(node, path, lines)
        elif isinstance(node, ast.Constant):
            yield from constant_sites(node, path, parents, lines)
        elif isinstance(node, ast.Call):
            yield from call_sites(node, path, lines)
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            yield from negate_sites(node.test, path + (("test", None),), lines)
        elif isinstance(node, ast.comprehension):
            for index, test in enumerate(node.ifs):
                yield from negate_sites(test, path + (("ifs", index),), lines)
        if isinstance(node, ast.stmt):
            yield from statement_sites(node, path, parents, lines)


# ---------------------------------------------------------------------------------------------------
# the public API
# ---------------------------------------------------------------------------------------------------
def find_bugs(source: str, package: str = "", file: str = "", kinds=KINDS) -> list[Bug]:
    """Every candidate bug of `kinds` in `source`, each checked (one line changes, the file parses, the
    AST changes exactly as intended), without duplicates, sorted by line, kind and text."""
    tree = ast.parse(source)
    lines = Lines(source)
    bugs: dict[tuple[int, str], Bug] = {}
    for kind, line, alternatives, path, replacement in sites(tree, lines):
        if kind not in kinds:
            continue
        old_text = lines.texts[line - 1]
        for new_text in [alternatives] if isinstance(alternatives, str) else alternatives:
            if new_text == old_text or (line, new_text) in bugs:
                continue
            if checks_out(source, tree, line, new_text, path, replacement):
                bugs[(line, new_text)] = Bug(package, file, kind, line, old_text, new_text)
                break
    order = {kind: index for index, kind in enumerate(KINDS)}
    return sorted(bugs.values(), key=lambda bug: (bug.line, order[bug.kind], bug.buggy_line))


def checks_out(source, tree, line, new_text, path, replacement) -> bool:
    """True when `source` with line `line` reading `new_text` parses to `tree` with `replacement` at
    `path` and nothing else changed."""
    try:
        buggy_tree = ast.parse(replace_line(source, line, new_text))
    except SyntaxError:
        return False
    # the other top-level statements are the same text on the same lines: same places suffice
    if [(type(node), node.lineno, node.end_lineno) for node in buggy_tree.body] != \
            [(type(node), node.lineno, node.end_lineno) for node in tree.body]:
        return False
    top = path[0][1]
    old = put(tree, path, replacement)
    try:
        return ast.dump(buggy_tree.body[top]) == ast.dump(tree.body[top])
    finally:
        put(tree, path, old)


def order_bugs(bugs: list[Bug], seed) -> list[Bug]:
    """All of `bugs` in a deterministic random order (random.Random(seed)) that interleaves the kinds:
    one of each kind in turn (in a shuffled kind order), each kind's bugs shuffled."""
    rng = random.Random(seed)
    groups = {kind: [bug for bug in bugs if bug.kind == kind] for kind in KINDS}
    for kind in KINDS:
        rng.shuffle(groups[kind])
    kinds = [kind for kind in KINDS if groups[kind]]
    rng.shuffle(kinds)
    ordered = []
    while any(groups[kind] for kind in kinds):
        for kind in kinds:
            if groups[kind]:
                ordered.append(groups[kind].pop(0))
    return ordered


def pick_bugs(bugs: list[Bug], count: int, seed) -> list[Bug]:
    """`count` of `bugs` (all if fewer), chosen deterministically with random.Random(seed)."""
    return order_bugs(bugs, seed)[:count]


def count_by_kind(bugs: list[Bug]) -> dict[str, int]:
    return {kind: sum(bug.kind == kind for bug in bugs) for kind in KINDS}
