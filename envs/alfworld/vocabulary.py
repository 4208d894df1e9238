"""Every word a generated or official game can show or accept (for the word-level tokenizer)."""

from __future__ import annotations

import json
import re

import alfworld.gen.goal_library as alfred_goals

from envs.alfworld.generator import GRAMMAR_FILE, RECEPTACLE_TYPES, ROOM_OBJECTS, ROOM_RECEPTACLES, ROOM_SCENERY
from envs.alfworld.tasks import canonical_task_types

_WORD_RE = re.compile(r"\S+")


def _grammar_words(text: str) -> set[str]:
    """Words of a grammar's fixed text: rhs strings and command templates without their slots."""
    strings = re.findall(r'"rhs"\s*:\s*"((?:[^"\\]|\\.)*)"', text) + re.findall(r'template :: "([^"]*)"', text)
    words = set()
    for s in strings:
        s = s.replace("\\n", " ")
        s = re.sub(r"\{[^{}]*\}", " ", s)
        s = re.sub(r"#[^#\s]*#", " ", s)
        s = s.replace("[", " ").replace("]", " ").replace("}", " ")
        words.update(_WORD_RE.findall(s))
    return words


MAX_GENERATED_NUMBER = 10  # no generated room holds more than this many objects or receptacles of one type
_BASE_WORDS = ({str(d) for d in range(10)} | {str(n) for n in range(10, 40)} | {"Nothing", "happens.", "loc", "a",
                                                                                "put", "in/on", "move", "to"})


def generated_vocabulary(task_types=None) -> list[str]:
    """Words of every generated game: the grammar's text, all type names, numbers, task sentences."""
    words = set(_BASE_WORDS) | _grammar_words(GRAMMAR_FILE.read_text())
    types = set(RECEPTACLE_TYPES) | {"DeskLamp"} | {"SinkBasin", "BathtubBasin"}
    for room in ROOM_OBJECTS:
        types |= set(ROOM_OBJECTS[room]) | set(ROOM_SCENERY[room])
        types |= {r for r, _, _ in ROOM_RECEPTACLES[room]}
    words |= {t.lower() for t in types}
    # each name with every number it can carry: the tokenizer may keep `cabinet 3` whole (policy.WHOLE_NAMES_PATTERN)
    words |= {f"{t.lower()} {n}" for t in types for n in range(1, MAX_GENERATED_NUMBER + 1)}
    for task_type in canonical_task_types(task_types):
        for template in alfred_goals.gdict[task_type]["templates"]:
            for name in types:
                text = template.format(obj=name.lower(), recep=name.lower(), toggle=name.lower(), mrecep="")
                words.update((text + ".").split())
    return sorted(words)


_OFFICIAL_VOCAB: dict = {}


def official_vocabulary(game_paths: tuple[str, ...]) -> list[str]:
    """Words of the given game files: their grammars' text and task sentences, entity names, numbers."""
    if game_paths not in _OFFICIAL_VOCAB:
        words = set(_BASE_WORDS)
        seen_grammars = set()
        for path in game_paths:
            with open(path) as f:
                game = json.load(f)
            grammar = game["grammar"]
            task = re.search(r"Your task is to: ([^\"]*)", grammar)
            if task:
                words.update(("Your task is to: " + task.group(1)).split())
            key = re.sub(r"Your task is to: [^\"]*", "", grammar)
            if key not in seen_grammars:
                seen_grammars.add(key)
                words |= _grammar_words(grammar)
            counts: dict[str, int] = {}
            for name, _ in re.findall(r"^\s*(\S+) - (object|receptacle)\s*$", game["pddl_problem"], re.M):
                if "_bar_" in name:
                    base = name.split("_bar_", 1)[0].lower()
                    base = base + "basin" if "basin" in name.lower() else base
                    words.add(base)
                    counts[base] = counts.get(base, 0) + 1
            # a game numbers the objects of one type 1, 2, ...: each name with every number it can carry
            words |= {f"{base} {n}" for base, count in counts.items() for n in range(1, count + 1)}
        _OFFICIAL_VOCAB[game_paths] = sorted(words)
    return list(_OFFICIAL_VOCAB[game_paths])
