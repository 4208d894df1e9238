"""Math env: determinism, disjoint splits, expert solutions, answer checking, JSONL data, snapshots."""

import json
import os
import random
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envs import ReplaySnapshot, check_snapshot_fidelity, make_env
from envs.math import (KINDS, MAX_LEVEL, MathEnv, answers_match, extract_answer, generate_problem, split_of,
                       split_tokens)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def questions(env, n=None):
    return [env.reset(options={"task_id": i})[0] for i in range(n or env.num_tasks)]


def wrong_solution(solution):
    answer = extract_answer(solution)
    return solution.replace(f"\\boxed{{{answer}}}", f"\\boxed{{{int(answer) + 1}}}")


# ---------------------------------------------------------------------------------------------------
# Generator
# ---------------------------------------------------------------------------------------------------
def test_deterministic_in_process_and_across_processes():
    env_a, env_b = MathEnv(split="test"), MathEnv(split="test")
    assert questions(env_a, 50) == questions(env_b, 50)
    assert questions(MathEnv(split="test", seed=1), 50) != questions(env_a, 50)
    code = ("from envs.math import generate_problem as g; "
            "print(repr([g(i, 'train', 3, (1, 2, 3, 4)) for i in range(20)]))")
    outputs = {subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": h}).stdout for h in ("1", "2")}
    assert len(outputs) == 1
    assert outputs.pop().strip() == repr([generate_problem(i, "train", 3, (1, 2, 3, 4)) for i in range(20)])


def test_splits_are_disjoint():
    test, evals = set(questions(MathEnv(split="test"))), set(questions(MathEnv(split="eval")))
    train = set(questions(MathEnv(split="train"), 5000))
    assert len(test) > 400 and len(evals) > 400 and len(train) > 4500
    assert not test & evals and not test & train and not evals & train
    # other seeds, levels and sizes stay disjoint too: the split is a function of the question text
    other = questions(MathEnv(split="train", seed=7, levels=(1,), num_tasks=3000))
    assert not set(other) & (test | evals)
    assert all(split_of(q) == "train" for q in other) and all(split_of(q) == "test" for q in test)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("level", range(1, MAX_LEVEL + 1))
def test_expert_solves_every_test_task(kind, level):
    env = MathEnv(split="test", levels=(level,), kinds=(kind,))
    assert env.num_tasks == 500
    for task_id in range(env.num_tasks):
        question, info = env.reset(options={"task_id": task_id})
        assert (info["level"], info["kind"], info["task"]) == (level, kind, question)
        solution = env.expert_action()
        steps = solution.split(" ; ")
        assert len(steps) == level + 1 and steps[-1].startswith("\\boxed{")
        for step in steps[:-1]:  # each step is one operation with its result, all in 0..999
            a, op, b, eq, c = step.split(" ")
            assert eq == "=" and all(0 <= int(v) <= 999 for v in (a, b, c))
            assert {"+": int(a) + int(b), "-": int(a) - int(b), "*": int(a) * int(b),
                    "/": int(a) / int(b)}[op] == int(c)
        obs, reward, terminated, truncated, info = env.step(solution)
        assert (obs, reward, terminated, truncated) == ("", 1.0, True, False)
        assert info["won"] and not info["invalid"] and info["predicted"] == info["answer"]


def test_questions_compute_their_answers():
    for kind in ("arithmetic", "equation"):
        env = MathEnv(split="eval", levels=range(1, MAX_LEVEL + 1), kinds=(kind,))
        for task_id in range(200):
            question, _ = env.reset(options={"task_id": task_id})
            answer = int(env.state["answer"])
            if kind == "arithmetic":
                assert eval(question.removeprefix("compute ")) == answer  # noqa: S307 - own digits and +-*()
            else:
                lhs, rhs = question.removeprefix("solve ").split(" = ")
                lhs = re.sub(r"(\d) ([x(])", r"\1 * \2", lhs)  # implicit products: 3 x, 3 ( ... )
                assert eval(lhs.replace("x", str(answer))) == int(rhs)  # noqa: S307


def test_wrong_and_unanswered_solutions_score_zero():
    env = MathEnv(split="test", levels=(1, 2, 3, 4))
    for task_id in range(100):
        env.reset(options={"task_id": task_id})
        _, reward, _, _, info = env.step(wrong_solution(env.expert_action()))
        assert reward == 0.0 and not info["won"] and not info["invalid"]
        env.reset(options={"task_id": task_id})
        _, reward, _, _, info = env.step(f"the answer is {env.state['answer']}")  # fixed format: box only
        assert reward == 0.0 and info["invalid"] and info["predicted"] is None


def test_word_level_decoding_is_accepted():
    """A word-level policy decodes tokens joined by spaces: `\\boxed{ 1 2 3 }` reads as 123, as in LaTeX."""
    env = MathEnv(split="test", levels=(3,))
    for task_id in range(50):
        env.reset(options={"task_id": task_id})
        assert env.step(" ".join(split_tokens(env.expert_action())))[1] == 1.0


def test_symbolic_check_works_in_threads():
    with ThreadPoolExecutor(1) as pool:  # math-verify's signal timeout only works in the main thread
        assert pool.submit(answers_match, "\\sqrt{3}", "\\sqrt 3").result()
        assert not pool.submit(answers_match, "\\sqrt{5}", "\\sqrt 3").result()


def test_step_after_the_end_is_invalid():
    env = MathEnv(split="test")
    env.reset(options={"task_id": 0})
    solution = env.expert_action()
    assert env.step(solution)[1] == 1.0
    obs, reward, terminated, truncated, info = env.step(solution)
    assert (obs, reward, terminated, truncated) == ("", 0.0, True, False)
    assert info["invalid"] and not info["won"]


def test_vocabulary_covers_every_text():
    env = MathEnv(split="train", levels=range(1, MAX_LEVEL + 1))
    vocabulary = set(env.vocabulary())
    for task_id in range(3000):
        question, _ = env.reset(options={"task_id": task_id})
        assert set(split_tokens(question + " " + env.expert_action())) <= vocabulary
    assert set("0123456789") <= vocabulary and {"\\boxed{", "}", ";", "=", "(", ")"} <= vocabulary
    assert split_tokens("41 * 3 = 123 ; \\boxed{123}") == ["4", "1", "*", "3", "=", "1", "2", "3", ";",
                                                           "\\boxed{", "1", "2", "3", "}"]


def test_level_statistics():
    lengths = {}
    for level in range(1, MAX_LEVEL + 1):
        for kind in KINDS:
            env = MathEnv(split="train", levels=(level,), kinds=(kind,))
            problems = [env.problem(i) for i in range(300)]
            lengths[level, kind] = (sum(len(split_tokens(p.question)) for p in problems) / len(problems),
                                    sum(len(split_tokens(p.solution)) for p in problems) / len(problems))
    print("\nmean tokens (words and single digits), question / solution:")
    for level in range(1, MAX_LEVEL + 1):
        print(f"  level {level}: " + "  ".join(f"{kind} {q:5.1f} / {s:5.1f}"
                                                for kind in KINDS for q, s in [lengths[level, kind]]))
    for kind in KINDS:
        solution_lengths = [lengths[level, kind][1] for level in range(1, MAX_LEVEL + 1)]
        assert solution_lengths == sorted(solution_lengths)
        assert solution_lengths[2] < 50  # level 3 stays short for a tiny model


def test_demonstrator_makes_a_systematic_format_mistake():
    """The SFT demonstrator writes the expert's working and ends it, with mistake_prob, in `#### N`
    (rejected as invalid) instead of `\\boxed{N}`; none at mistake_prob 0; the same seed gives the
    same demonstrations."""
    env = MathEnv(split="train")

    def play(seed, mistake_prob):
        rng, demos = random.Random(seed), []
        for task_id in range(300):
            env.reset(options={"task_id": task_id})
            expert, demo = env.expert_action(), env.demo_action(rng, mistake_prob)
            _, reward, _, _, info = env.step(demo)
            demos.append((expert, demo, reward, info["invalid"]))
        return demos

    demos = play(0, 0.5)
    assert play(0, 0.5) == demos
    mistakes = [(expert, demo, reward, invalid) for expert, demo, reward, invalid in demos if demo != expert]
    assert 0.4 < len(mistakes) / len(demos) < 0.6
    for expert, demo, reward, invalid in mistakes:
        answer = extract_answer(expert)
        assert demo == expert.replace(f"\\boxed{{{answer}}}", f"#### {answer}") and reward == 0.0 and invalid
    assert all(reward == 1.0 for expert, demo, reward, _ in demos if demo == expert)
    assert all(demo == expert for expert, demo, _, _ in play(0, 0.0))


# ---------------------------------------------------------------------------------------------------
# Answer checking
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, allow_hash, expected", [
    ("so \\boxed{42}", False, "42"),
    ("\\boxed{ 42 }", False, "42"),
    ("\\boxed{1} then \\boxed{2}", False, "2"),
    ("\\boxed{\\frac{1}{2}}", False, "\\frac{1}{2}"),
    ("\\boxed{\\{1, 2\\}}", False, "\\{1, 2\\}"),
    ("\\boxed {7}", False, "7"),
    ("\\boxed{3} and \\boxed{4", False, "3"),  # an unclosed last box does not count
    ("\\boxed{}", False, None),
    ("\\boxed{  }", False, None),
    ("the answer is 42", False, None),
    ("", False, None),
    ("}}{{\\boxed", False, None),
    ("work <<2*3=6>> 6\n#### 1,234", True, "1,234"),
    ("work\n#### 1,234", False, None),
    ("#### 5 \\boxed{6}", True, "6"),
    ("####", True, None),
])
def test_extract_answer(text, allow_hash, expected):
    assert extract_answer(text, allow_hash=allow_hash) == expected


@pytest.mark.parametrize("pred, gold", [
    ("42", "42"), ("42.0", "42"), (" 42 ", "42"), ("1,234", "1234"), ("1,234,567.50", "1234567.5"),
    ("-7", "-7"), ("0.5", "\\frac{1}{2}"), ("\\dfrac{1}{2}", "0.5"), ("1/2", "0.5"), ("\\frac12", "0.5"),
    ("-\\frac{3}{4}", "-0.75"), ("$5$", "5"), ("5.", "5"), ("1 2 3", "123"), ("\\text{42}", "42"),
    ("\\sqrt{2}", "\\sqrt 2"), ("2\\pi", "2 \\pi"), ("(1, 2)", "(1,2)"),
])
def test_answers_match(pred, gold):
    assert answers_match(pred, gold)


@pytest.mark.parametrize("pred, gold", [
    ("41", "42"), ("-7", "7"), ("0.5", "\\frac{1}{3}"), ("1,23", "123"), ("42", ""), ("", "42"),
    (None, "42"), ("garbage", "42"), ("\\frac{1}{0}", "0"), ("1/0", "0"), ("\\sqrt{3}", "\\sqrt{2}"),
])
def test_answers_do_not_match(pred, gold):
    assert not answers_match(pred, gold)


@settings(max_examples=200, deadline=None)
@given(st.integers(-10**7, 10**7))
def test_number_formats_match(n):
    assert answers_match(f"{n:,}", str(n), symbolic=False)
    assert answers_match(f"{n}.0", str(n), symbolic=False)
    assert answers_match(f" {n} ", str(n), symbolic=False)
    assert not answers_match(str(n + 1), str(n), symbolic=False)


# ---------------------------------------------------------------------------------------------------
# JSONL data
# ---------------------------------------------------------------------------------------------------
def write_jsonl(path, records):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return str(path)


RECORDS = [
    {"question": "Tom has 3 apples and buys 4. How many?", "answer": "3 + 4 = <<3+4=7>>7\n#### 7"},
    {"question": "What is half of 1?", "answer": "Half of 1 is $\\boxed{\\frac{1}{2}}$."},
    {"problem": "Simplify sqrt(8)/2.", "solution": "$\\sqrt{8}/2 = \\boxed{\\sqrt{2}}$"},
    {"question": "How many is 1,000 plus 234?", "answer": "1,234"},
]


def test_jsonl_loader(tmp_path):
    path = write_jsonl(tmp_path / "data.jsonl", RECORDS[:2] + [""] + RECORDS[2:])
    env = MathEnv(data_path=path, split="test")
    assert env.num_tasks == 4 and MathEnv(data_path=path, num_tasks=2).num_tasks == 2
    golds = []
    for task_id in range(env.num_tasks):
        question, info = env.reset(options={"task_id": task_id})
        assert question and info["kind"] == "data"
        _, reward, _, _, info = env.step(env.expert_action())
        assert reward == 1.0 and info["won"], info
        golds.append(info["answer"])
    assert golds == ["7", "\\frac{1}{2}", "\\sqrt{2}", "1,234"]
    env.reset(options={"task_id": 0})
    assert env.expert_action() == "3 + 4 = <<3+4=7>>7\n\\boxed{7}"
    for task_id, answer, reward in [(0, "so #### 7", 1.0), (0, "#### 8", 0.0), (1, "\\boxed{0.5}", 1.0),
                                    (2, "\\boxed{\\sqrt 2}", 1.0), (3, "\\boxed{1234}", 1.0), (3, "1234", 0.0)]:
        env.reset(options={"task_id": task_id})
        assert env.step(answer)[1] == reward, (task_id, answer)
    vocabulary = set(env.vocabulary())
    assert {"Tom", "apples", "\\sqrt{", "#"} - vocabulary == {"#"}  # the expert writes boxes, not ####


@pytest.mark.parametrize("line, message", [
    ("{not json", "line 2: not valid JSON"),
    ("[1, 2]", "line 2: expected a JSON object"),
    ('{"question": "q"}', "line 2: needs string fields"),
    ('{"question": "q", "answer": 5}', "line 2: needs string fields"),
    ('{"question": "q", "answer": "####  "}', "line 2: empty gold answer"),
])
def test_jsonl_bad_lines(tmp_path, line, message):
    path = write_jsonl(tmp_path / "bad.jsonl", [RECORDS[0], line])
    with pytest.raises(ValueError, match=message):
        MathEnv(data_path=path)


def test_jsonl_missing_or_empty_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        MathEnv(data_path=str(tmp_path / "nope.jsonl"))
    with pytest.raises(ValueError, match="no records"):
        MathEnv(data_path=write_jsonl(tmp_path / "empty.jsonl", []))
    with pytest.raises(ValueError, match="num_tasks=9"):
        MathEnv(data_path=write_jsonl(tmp_path / "one.jsonl", RECORDS[:1]), num_tasks=9)


# ---------------------------------------------------------------------------------------------------
# Invalid inputs
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [
    {"split": "valid"}, {"levels": ()}, {"levels": (0,)}, {"levels": (MAX_LEVEL + 1,)}, {"levels": ("1",)},
    {"levels": (True,)}, {"levels": None}, {"kinds": ()}, {"kinds": ("geometry",)}, {"seed": "0"},
    {"num_tasks": 0}, {"num_tasks": 2.5},
])
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        MathEnv(**kwargs)


def test_bad_task_ids_and_random_task():
    env = MathEnv(split="test", num_tasks=10)
    for task_id in (-1, 10, "3", 1.0, True):
        with pytest.raises(ValueError, match="task_id"):
            env.reset(options={"task_id": task_id})
    first = env.reset(seed=5)[1]["task_id"]
    assert 0 <= first < 10 and env.reset(seed=5)[1]["task_id"] == first
    with pytest.raises(RuntimeError):
        MathEnv().expert_action()


def test_random_strings_never_raise(tmp_path):
    rng = random.Random(0)
    pieces = ["\\boxed{", "{", "}", "\\", "####", "\n", " ", "-", ".", ",", "/", "\\frac", "x", "=", "é", "\x00",
              "1", "42", "999", "e10", "inf", "nan", "(", ")", "^", "\\sqrt", "$"]
    procedural = MathEnv(split="test", levels=(1, 2, 3, 4))
    loaded = MathEnv(data_path=write_jsonl(tmp_path / "d.jsonl", RECORDS))
    for i in range(5000):
        text = "".join(rng.choice(pieces) if rng.random() < 0.8 else chr(rng.randrange(0x20, 0x2FFF))
                       for _ in range(rng.randrange(0, 30)))
        env = loaded if i % 10 == 0 else procedural  # loaded data also runs math-verify
        env.reset(options={"task_id": i % env.num_tasks})
        _, reward, terminated, truncated, info = env.step(text)
        assert reward in (0.0, 1.0) and terminated and not truncated
        assert info["invalid"] == (info["predicted"] is None)
    procedural.reset(options={"task_id": 0})
    assert procedural.step(12345)[1] == 0.0  # a non-string action is read as its str()


# ---------------------------------------------------------------------------------------------------
# Snapshots and registry
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("action", ["expert", "wrong", "", "\\boxed{"])
def test_snapshot_fidelity(action):
    env = MathEnv(split="test")
    for task_id in range(5):
        _, info = env.reset(options={"task_id": task_id})
        text = {"expert": env.expert_action(), "wrong": wrong_solution(env.expert_action())}.get(action, action)
        report = check_snapshot_fidelity(env, info, actions=[text, text])
        assert report.ok and report.steps_compared == 1


def test_restored_copies_are_independent():
    env = MathEnv(split="test")
    env.reset(options={"task_id": 3})
    handle = env.snapshot()
    first, second = handle.restore(), handle.restore()
    assert first.step(first.expert_action())[1] == 1.0
    assert not second.state["done"] and not env.state["done"]
    assert second.step(second.expert_action())[1] == 1.0 and env.step(env.expert_action())[1] == 1.0
    assert handle.restore().step(wrong_solution(env.expert_action()))[1] == 0.0
    replayed = ReplaySnapshot(env).restore()  # the universal fallback rebuilds it from init_kwargs
    assert replayed.state == env.state and replayed.step("\\boxed{0}")[4]["invalid"]


def test_make_env():
    env = make_env("math", split="test", levels=(2,))
    question, info = env.reset(options={"task_id": 0})
    assert isinstance(env, MathEnv) and env.num_tasks == 500 and info["level"] == 2
    assert env.step(env.expert_action())[1] == 1.0
    with pytest.raises(TypeError):
        make_env("math", difficulty=3)
