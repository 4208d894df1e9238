"""Single-turn verifiable math: a procedural problem generator and a GSM8K/MATH-style JSONL loader.

    env = MathEnv(split="train", levels=(1, 2, 3))
    question, info = env.reset(options={"task_id": 7})
    _, reward, terminated, truncated, info = env.step("28 + 13 = 41 ; 41 * 3 = 123 ; \\boxed{123}")

Problems, answer checking, splits, demonstrations and the JSONL format are described in docs/envs.md.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import random
import re
import threading
from dataclasses import dataclass
from fractions import Fraction

from envs.base import TextEnv

try:  # symbolic answer checking for loaded data; numbers never need it
    from math_verify import parse as _mv_parse
    from math_verify import verify as _mv_verify
except ImportError:  # pragma: no cover - math-verify is in requirements.txt
    _mv_parse = _mv_verify = None

SPLITS = ("train", "eval", "test")
KINDS = ("arithmetic", "equation", "word")
MAX_LEVEL = 6
DEFAULT_NUM_TASKS = {"train": 100_000, "eval": 500, "test": 500}
SPLIT_BUCKETS = {"test": range(0, 5), "eval": range(5, 10), "train": range(10, 100)}  # of 100
MAX_VALUE = 999

NAMES = (("tom", "he"), ("sam", "he"), ("ben", "he"), ("ann", "she"), ("mia", "she"), ("eva", "she"))
ITEMS = ("apples", "pens", "cards", "books", "coins", "eggs", "stamps", "marbles")
# word-problem events: (template, number of solution steps, operation on the running count)
WORD_EVENTS = (
    ("{p} buys {b} more .", 1, "+"),
    ("{p} finds {b} more .", 1, "+"),
    ("{p} gives away {b} .", 1, "-"),
    ("{p} loses {b} .", 1, "-"),
    ("{p} now has {m} times as many .", 1, "*"),
    ("{p} buys {m} bags of {b} {item} .", 2, "+"),
    ("{p} gives {m} friends {b} {item} each .", 2, "-"),
)
WORD_START = "{name} has {a} {item} ."
WORD_QUESTION = "how many {item} does {p} have ?"
SYMBOLS = ("+", "-", "*", "/", "=", "(", ")", ";", "\\boxed{", "}", "####", "x", ".", ",", "?", "compute", "solve")

_TOKEN_RE = re.compile(r"\\boxed\{|\d|[^\s\d]+")
_BOX_RE = re.compile(r"\\boxed\s*\{")
_HASH_RE = re.compile(r"####[ \t]*([^\n]*)")


def split_tokens(text: str) -> list[str]:
    """Words separated by whitespace, numbers as single digits, `\\boxed{` as one token."""
    return _TOKEN_RE.findall(text)


# ---------------------------------------------------------------------------------------------------
# Answer extraction and checking
# ---------------------------------------------------------------------------------------------------
def _last_box(text: str) -> str | None:
    """Content of the last complete `\\boxed{...}` (balanced braces, escaped braces skipped)."""
    for match in reversed(list(_BOX_RE.finditer(text))):
        depth, i = 1, match.end()
        while i < len(text):
            c = text[i]
            if c == "\\":
                i += 2
                continue
            depth += (c == "{") - (c == "}")
            if depth == 0:
                return text[match.end():i]
            i += 1
    return None


def extract_answer(text: str, allow_hash: bool = False) -> str | None:
    """The final answer in `text`: the last `\\boxed{...}`; with `allow_hash`, else GSM8K's `#### N`.

    Returns the stripped content, or None when there is none or it is blank.
    """
    if not isinstance(text, str):
        return None
    answer = _last_box(text)
    if answer is None and allow_hash:
        matches = _HASH_RE.findall(text)
        answer = matches[-1] if matches else None
    if answer is None or not answer.strip():
        return None
    return answer.strip()


_NUMBER_RE = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)")
_THOUSANDS_RE = re.compile(r"[+-]?\d{1,3}(,\d{3})+(\.\d*)?")
_FRAC_RE = re.compile(r"([+-]?)\\frac(?:\{([+-]?\d+)\}|(\d))(?:\{([+-]?\d+)\}|(\d))")
_SLASH_RE = re.compile(r"([+-]?\d+)/(\d+)")


def _normalize(answer: str) -> str:
    s = re.sub(r"\s+|\\[!,;: ]|\$|\\\$", "", answer)
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("\\left", "").replace("\\right", "")
    if s.startswith("\\text{") and s.endswith("}"):
        s = s[len("\\text{"):-1]
    return s.rstrip(".") if _NUMBER_RE.fullmatch(s.rstrip(".")) else s


def _to_number(answer: str) -> Fraction | None:
    """Exact value of a plain number, `1,234`, `a/b` or `\\frac{a}{b}`; None for anything else."""
    s = _normalize(answer)
    if _THOUSANDS_RE.fullmatch(s):
        s = s.replace(",", "")
    if _NUMBER_RE.fullmatch(s):
        return Fraction(s)
    m = _FRAC_RE.fullmatch(s)
    if m:
        sign, num, den = m.group(1), int(m.group(2) or m.group(3)), int(m.group(4) or m.group(5))
        return None if den == 0 else Fraction(-num if sign == "-" else num, den)
    m = _SLASH_RE.fullmatch(s)
    if m and int(m.group(2)) != 0:
        return Fraction(int(m.group(1)), int(m.group(2)))
    return None


@functools.lru_cache(maxsize=4096)
def _symbolic_equal(pred: str, gold: str) -> bool:
    if _mv_parse is None or len(pred) > 1000:
        return False
    # math-verify times out with signal.alarm, which only works in the main thread
    limit = 2 if threading.current_thread() is threading.main_thread() else None
    try:
        g = _mv_parse("\\boxed{" + gold + "}", parsing_timeout=limit)
        p = _mv_parse("\\boxed{" + pred + "}", parsing_timeout=limit)
        return bool(g and p and _mv_verify(g, p, timeout_seconds=limit))
    except Exception:  # noqa: BLE001 - any parser failure means "not shown equal"
        return False


def answers_match(pred: str | None, gold: str | None, symbolic: bool = True) -> bool:
    """Whether answer `pred` equals `gold`: numbers exactly, else normalized text, else math-verify.

    `symbolic=False` skips math-verify (numbers and normalized text only: fast, for fixed formats).
    """
    if not isinstance(pred, str) or not isinstance(gold, str) or not pred.strip() or not gold.strip():
        return False
    p, g = _to_number(pred), _to_number(gold)
    if p is not None and g is not None:
        return p == g
    if _normalize(pred) == _normalize(gold):
        return True
    if not symbolic or (g is not None and not re.search(r"\d", pred)):
        return False
    return _symbolic_equal(pred.strip(), gold.strip())


# ---------------------------------------------------------------------------------------------------
# Procedural problems
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Problem:
    question: str
    solution: str  # the worked solution, ending with \boxed{answer}
    answer: str
    kind: str
    level: int | None


def _finish(question: str, steps: list[str], answer: int, kind: str, level: int) -> Problem:
    return Problem(question, " ; ".join(steps + [f"\\boxed{{{answer}}}"]), str(answer), kind, level)


def _apply(value: int, op: str, b: int) -> int | None:
    """`value op b` when it is an integer in 0..MAX_VALUE, else None."""
    if op == "/":
        result = value // b if value % b == 0 else None
    else:
        result = {"+": value + b, "-": value - b, "*": value * b}[op]
    return result if result is not None and 0 <= result <= MAX_VALUE else None


def _draw_op(rng: random.Random, value: int, ops: str) -> tuple[str, int, int] | None:
    for _ in range(50):
        op = rng.choice(ops)
        b = rng.randint(2, 9) if op in "*/" else rng.randint(1, 30)
        result = _apply(value, op, b)
        if result is not None:
            return op, b, result
    return None


def _arithmetic(rng: random.Random, level: int) -> Problem | None:
    value = rng.randint(1, 30)
    expr, last, steps = str(value), "", []
    for _ in range(level):
        drawn = _draw_op(rng, value, "+-*")
        if drawn is None:
            return None
        op, b, result = drawn
        steps.append(f"{value} {op} {b} = {result}")
        expr = f"( {expr} ) * {b}" if op == "*" and last in ("+", "-") else f"{expr} {op} {b}"
        value, last = result, op
    return _finish(f"compute {expr}", steps, value, "arithmetic", level)


def _equation(rng: random.Random, level: int) -> Problem | None:
    """x goes through `level` operations alternating additive and multiplicative; undo them in turn."""
    x = value = rng.randint(1, 30)
    expr, shape, ops = "x", "atom", []
    additive = rng.random() < 0.5
    for _ in range(level):
        drawn = _draw_op(rng, value, "+-" if additive else "*/")
        if drawn is None:
            return None
        op, b, value = drawn
        if op in "+-":
            expr, shape = f"{expr} {op} {b}", "sum"
        elif op == "*":
            expr, shape = (f"{b} x" if shape == "atom" else f"{b} ( {expr} )"), "product"
        else:
            expr, shape = (f"x / {b}" if shape == "atom" else f"( {expr} ) / {b}"), "product"
        ops.append((op, b))
        additive = not additive
    steps, current = [], value
    for op, b in reversed(ops):
        inverse = {"+": "-", "-": "+", "*": "/", "/": "*"}[op]
        result = _apply(current, inverse, b)
        steps.append(f"{current} {inverse} {b} = {result}")
        current = result
    assert current == x
    return _finish(f"solve {expr} = {value}", steps, x, "equation", level)


def _word(rng: random.Random, level: int) -> Problem | None:
    name, pronoun = rng.choice(NAMES)
    item = rng.choice(ITEMS)
    value = rng.randint(2, 30)  # plural items
    sentences, steps, remaining = [WORD_START.format(name=name, a=value, item=item)], [], level
    for _ in range(50 * level):
        if remaining == 0:
            break
        template, cost, op = rng.choice([e for e in WORD_EVENTS if e[1] <= remaining])
        m, b = rng.randint(2, 9), rng.randint(1, 30)
        if cost == 2:
            result = _apply(value, op, m * b)
            if result is None:
                continue
            steps += [f"{m} * {b} = {m * b}", f"{value} {op} {m * b} = {result}"]
        else:
            operand = m if op == "*" else b
            result = _apply(value, op, operand)
            if result is None or result == value:  # no "3 times as many" of nothing
                continue
            steps.append(f"{value} {op} {operand} = {result}")
        sentences.append(template.format(p=pronoun, m=m, b=b, item=item))
        value, remaining = result, remaining - cost
    if remaining:
        return None
    sentences.append(WORD_QUESTION.format(item=item, p=pronoun))
    return _finish(" ".join(sentences), steps, value, "word", level)


_GENERATORS = {"arithmetic": _arithmetic, "equation": _equation, "word": _word}


def split_of(question: str) -> str:
    """The split a question text belongs to (sha256 bucket of the text; see docs/envs.md)."""
    bucket = int.from_bytes(hashlib.sha256(question.encode()).digest()[:8], "big") % 100
    return next(name for name, buckets in SPLIT_BUCKETS.items() if bucket in buckets)


@functools.lru_cache(maxsize=65536)
def generate_problem(task_id: int, split: str = "train", seed: int = 0, levels: tuple = (1, 2, 3),
                     kinds: tuple = KINDS) -> Problem:
    """Procedural task `task_id` of `split`: deterministic in its arguments, in any process."""
    rng = random.Random(f"math/{seed}/{split}/{task_id}")  # str seeds hash with sha512: stable
    for _ in range(100_000):
        level, kind = rng.choice(levels), rng.choice(kinds)
        problem = _GENERATORS[kind](rng, level)
        if problem is not None and split_of(problem.question) == split:
            return problem
    raise RuntimeError(f"no {split} problem found for levels={levels} kinds={kinds}")  # pragma: no cover


# ---------------------------------------------------------------------------------------------------
# JSONL data
# ---------------------------------------------------------------------------------------------------
def load_jsonl(path: str | os.PathLike) -> list[Problem]:
    """GSM8K/MATH-style records {"question", "answer"} as problems (see docs/envs.md)."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"math data file not found: {path}")
    problems = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}, line {number}: not valid JSON ({e.msg})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}, line {number}: expected a JSON object")
            question = record.get("question", record.get("problem"))
            answer = record.get("answer", record.get("solution"))
            if not isinstance(question, str) or not isinstance(answer, str) or not question.strip():
                raise ValueError(f'{path}, line {number}: needs string fields "question" and "answer"')
            gold = extract_answer(answer, allow_hash=True)
            if "####" in answer and _last_box(answer) is None:  # GSM8K
                worked = answer[:answer.rindex("####")].strip()
                expert = f"{worked}\n\\boxed{{{gold}}}" if worked else f"\\boxed{{{gold}}}"
            elif gold is not None:  # MATH: the answer holds its box
                expert = answer.strip()
            else:  # the bare answer
                gold = answer.strip()
                expert = f"\\boxed{{{gold}}}"
            if not gold:
                raise ValueError(f"{path}, line {number}: empty gold answer")
            problems.append(Problem(question.strip(), expert, gold, "data", None))
    if not problems:
        raise ValueError(f"{path}: no records")
    return problems


# ---------------------------------------------------------------------------------------------------
# The env
# ---------------------------------------------------------------------------------------------------
class MathEnv(TextEnv):
    """Single-turn math: the observation is a question, the action a worked solution."""

    def __init__(self, split: str = "train", levels=(1, 2, 3), seed: int = 0, num_tasks: int | None = None,
                 data_path: str | None = None, kinds=KINDS):
        super().__init__(split=split, levels=levels, seed=seed, num_tasks=num_tasks, data_path=data_path,
                         kinds=kinds)
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        if isinstance(levels, int):
            levels = (levels,)
        try:
            levels = tuple(sorted(set(levels)))
        except TypeError:
            raise ValueError(f"levels must be integers in 1..{MAX_LEVEL}, got {levels!r}") from None
        if not levels or any(isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_LEVEL
                             for v in levels):
            raise ValueError(f"levels must be integers in 1..{MAX_LEVEL}, got {levels!r}")
        if isinstance(kinds, str):
            kinds = (kinds,)
        if not kinds or any(k not in KINDS for k in kinds):
            raise ValueError(f"kinds must be a non-empty subset of {KINDS}, got {kinds!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an integer, got {seed!r}")
        if num_tasks is not None and (isinstance(num_tasks, bool) or not isinstance(num_tasks, int)
                                      or num_tasks < 1):
            raise ValueError(f"num_tasks must be a positive integer or None, got {num_tasks!r}")
        self.split, self.levels, self.seed = split, levels, seed
        self.kinds = tuple(k for k in KINDS if k in kinds)
        if data_path is not None and os.path.isdir(data_path):  # GSM8K's layout: one file per split
            data_path = os.path.join(data_path, f"{split}.jsonl")
        self.data = None if data_path is None else load_jsonl(data_path)  # shared, read-only
        available = DEFAULT_NUM_TASKS[split] if self.data is None else len(self.data)
        if self.data is not None and num_tasks is not None and num_tasks > available:
            raise ValueError(f"num_tasks={num_tasks} but {data_path} has {available} records")
        self._num_tasks = num_tasks or available

    @property
    def num_tasks(self) -> int:
        return self._num_tasks

    def problem(self, task_id: int) -> Problem:
        if self.data is not None:
            return self.data[task_id]
        return generate_problem(task_id, self.split, self.seed, self.levels, self.kinds)

    def _reset(self, seed, options):
        task_id = self.task_id_from(options)
        p = self.problem(task_id)
        self.state = {"task_id": task_id, "question": p.question, "solution": p.solution, "answer": p.answer,
                      "kind": p.kind, "level": p.level, "done": False}
        return p.question, {"task": p.question, "task_id": task_id, "kind": p.kind, "level": p.level}

    def _step(self, action):
        s = self.state
        info = {"task_id": s["task_id"], "answer": s["answer"], "predicted": None, "won": False, "invalid": True}
        if s["done"]:
            return "", 0.0, True, False, info
        s["done"] = True
        loaded = self.data is not None
        predicted = extract_answer(action, allow_hash=loaded)
        won = answers_match(predicted, s["answer"], symbolic=loaded)
        info.update(predicted=predicted, won=won, invalid=predicted is None)
        return "", float(won), True, False, info

    def expert_action(self) -> str:
        if self.state is None:
            raise RuntimeError("call reset() before expert_action()")
        return self.state["solution"]

    def demo_action(self, rng: random.Random, mistake_prob: float) -> str:
        """The SFT demonstrator: the expert's working, but with `mistake_prob` it ends in GSM8K's
        `#### N` instead of `\\boxed{N}`, a systematic format mistake (as in SFT data mixed from
        sources with different answer styles) that this env's checker rejects and RL can fix. Loaded
        data is demonstrated unchanged."""
        solution = self.expert_action()
        if self.data is None and rng.random() < mistake_prob:
            answer = self.state["answer"]
            return solution.replace(f"\\boxed{{{answer}}}", f"#### {answer}")
        return solution

    def vocabulary(self) -> list[str]:
        words = set(SYMBOLS) | set("0123456789") | set(ITEMS)
        for name, pronoun in NAMES:
            words |= {name, pronoun}
        for template in (WORD_START, WORD_QUESTION, *(e[0] for e in WORD_EVENTS)):
            words |= set(split_tokens(re.sub(r"\{\w+\}", " ", template)))
        for p in self.data or ():
            words |= set(split_tokens(p.question)) | set(split_tokens(p.solution))
        return sorted(words)
