"""Every change this package makes to textworld and fast-downward, applied once, when it is imported.

All of them are speed or hygiene fixes that leave traces identical (observations, admissible commands,
rewards: tests/test_alfworld_patches.py compares them with the patches off; `bench/alfworld_step.py`
measures each part). `memoize_grammar(False)` switches the speed-ups off for comparisons.

- `textworld.envs.pddl.textgen._parse_and_convert` (memoized): textworld re-parses its text grammar with
  tatsu at every step. The cache hands out a deep copy of the parse (derivations set each symbol's context).
- `textworld.logic.Rule.parse_conjunctive_query` (memoized): the same queries are parsed at every step; a
  parsed Rule is only read (by `State.all_assignments`), so it is shared.
- `textworld.envs.pddl.textgen.copy_context` (shallow): textworld deep-copies every entity of the derivation
  context for each symbol; derivations add keys to `variables` and `mapping` but never modify the entity
  objects, so copying the dicts is enough.
- `textworld.envs.pddl.PddlEnv._gather_infos` (admissible commands memoized): at every step textworld derives
  the text of each applicable action (~20) from its grammar template, most of the step's time. A command's
  text depends only on its template, its variable bindings and the state's facts of the predicates the
  template queries (`{r.name | receptacleatlocation(r, lend)}`, facts that never change in ALFWorld), so it
  is cached per game under that key; templates that name grammar symbols (`#...#`, whose rules may test any
  fact) are derived as before. The facts list of the derivation context is built once per step, not once
  per action (derivations only read it).
- `fast_downward.pddl2sas`: fast-downward's translator overwrites `sys.argv`; the wrapper restores it
  (always) and, when the speed-ups are on, memoizes translations: the last 8 in memory (so the load-time
  reset does not translate the game twice more) and all of them on disk under `translation_cache_dir()`,
  keyed by the domain and problem text and the translator's version (translation is most of a game's
  load time, and every run and evaluation loads the same games again).
- `fast_downward.load_lib`: textworld loads a private copy of libdownward for every `PddlEnv` and never
  unloads it; the wrapper hands out the copy of an engine that is gone (`_FREE_LIBS`, filled by
  `Engine.__del__`) before loading a new one, as textworld's own gym env reuses one library per env.

(The handcoded expert's move-grammar fix is a subclass and its private rng a per-call swap: `experts`.)
"""

from __future__ import annotations

import copy
import hashlib
import os
import pickle
import sys
from collections import OrderedDict
from importlib import metadata
from pathlib import Path

import re

import fast_downward
import textworld.envs.pddl.textgen as _tw_textgen
from textworld.envs.pddl import PddlEnv as _TwPddlEnv
from textworld.logic import Rule as _TwRule


def _original(function):
    """The library's own function, also when another copy of this module (a reload) already patched it."""
    return getattr(function, "original", function)


_ORIGINALS = {
    "textgen_parse": _original(_tw_textgen._parse_and_convert),
    "conjunctive_query": _original(_TwRule.__dict__["parse_conjunctive_query"].__func__),
    "copy_context": _original(_tw_textgen.copy_context),
    "pddl2sas": _original(fast_downward.pddl2sas),
    "load_lib": _original(fast_downward.load_lib),
    "gather_infos": _original(_TwPddlEnv._gather_infos),
}
_TEXTGEN_CACHE: dict = {}
_QUERY_CACHE: dict = {}
_SAS_CACHE: "OrderedDict" = OrderedDict()
_SPEEDUPS = {"memoize": False, "shallow_contexts": False, "memoize_commands": False}
_FAST_DOWNWARD_VERSION = metadata.version("fast-downward-textworld")


def _memo_textgen_parse(*args, **kwargs):
    key = (args, tuple(sorted(kwargs.items())))
    try:
        parsed = _TEXTGEN_CACHE[key]
    except KeyError:
        parsed = _TEXTGEN_CACHE[key] = _ORIGINALS["textgen_parse"](*args, **kwargs)
    return copy.deepcopy(parsed)  # derivations set each symbol's context: never hand out the cached objects


def _memo_conjunctive_query(cls, expr):
    try:
        return _QUERY_CACHE[expr]
    except KeyError:  # a Rule is only read by State.all_assignments: sharing it is safe
        rule = _QUERY_CACHE[expr] = _ORIGINALS["conjunctive_query"](cls, expr)
        return rule


def _shallow_copy_context(context):
    """textgen.copy_context without deep-copying the entities: derivations add keys to `variables` and
    `mapping` but never modify the EntityInfo / Placeholder / Variable objects in them."""
    return {"state": context["state"], "facts": context["facts"], "variables": dict(context["variables"]),
            "mapping": dict(context["mapping"]), "entity_infos": context["entity_infos"]}


_PREDICATE = re.compile(r"(\w+)\s*\(")


def _queried_predicates(template: str) -> frozenset | None:
    """The predicate names a command template's queries can test (an over-approximation: every `name(` in
    it), or None when it names a grammar symbol (`#...#`), whose production rules may test any fact."""
    if "#" in template:
        return None
    return frozenset(_PREDICATE.findall(template))


def _memo_gather_infos(self):
    """PddlEnv._gather_infos with each admissible command's text cached per game (see the module docstring);
    everything it stores in `self.state` is what the original stores."""
    self.state["command_templates"] = sorted(set(action.template for action in self._logic.actions.values()))
    self.state["won"] = self._pddl_state.check_goal()
    self.state["lost"] = False
    self.state["_entity_infos"] = dict(self._entity_infos)
    self.state["_facts"] = list(self._pddl_state.facts)
    if self.request_infos.facts:
        self.state["facts"] = list(map(self._get_human_readable_fact, self.state["_facts"]))
    self.state["last_action"] = None
    self.state["_last_action"] = self._last_action
    self.state["_valid_actions"] = list(self._pddl_state.all_applicable_actions())

    mapping = {k: info.name for k, info in self._entity_infos.items()}
    cache = self.__dict__.setdefault("_command_text_cache", {})  # per PddlEnv, i.e. per game
    facts, facts_of = self.state["_facts"], {}  # facts: read only by the derivations
    self.state["_valid_commands"] = []
    for action in self.state["_valid_actions"]:
        template = action.command_template
        names = _queried_predicates(template)
        key = None
        if names is not None:
            if names not in facts_of:
                facts_of[names] = frozenset(fact for signature, props in self._pddl_state._facts.items()
                                            if signature.name in names for fact in props)
            key = (template, tuple(sorted((ph.name, var.name) for ph, var in action.mapping.items())),
                   facts_of[names])
        text = cache.get(key) if key is not None else None
        if text is None:
            context = {"state": self._pddl_state, "facts": facts,
                       "variables": {ph.name: self._entity_infos[var.name] for ph, var in action.mapping.items()},
                       "mapping": action.mapping, "entity_infos": self._entity_infos}
            text = self._logic.grammar.derive(template, context)
            if key is not None:
                cache[key] = text
        action.command_template = text
        self.state["_valid_commands"].append(action.format_command(mapping))
    self.state["admissible_commands"] = sorted(set(self.state["_valid_commands"]))
    if self.request_infos.moves:
        self.state["moves"] = self._moves
    if self.request_infos.policy_commands:
        self.state["policy_commands"] = self._pddl_state.replan(self._entity_infos)


def translation_cache_dir() -> Path:
    """Where translated games are kept on disk (`ALFWORLD_TRANSLATION_CACHE` overrides)."""
    from envs.alfworld.generator import default_cache_dir

    return Path(os.environ.get("ALFWORLD_TRANSLATION_CACHE") or default_cache_dir() / "translations")


def _translate(domain, problem, verbose=False, optimize=False):
    """fast_downward.pddl2sas, keeping `sys.argv` (the translator overwrites it), memoized when enabled: in
    memory (the last 8) and on disk, keyed by the domain and problem text (a game's translation is 85% of
    its load time, and every run loads the same games again)."""
    argv = list(sys.argv)
    try:
        if not _SPEEDUPS["memoize"]:
            return _ORIGINALS["pddl2sas"](domain, problem, verbose=verbose, optimize=optimize)
        key = (domain, problem, bool(verbose), bool(optimize))
        if key in _SAS_CACHE:  # the task object is only read by textworld after translation
            _SAS_CACHE.move_to_end(key)
        else:
            digest = hashlib.sha1(repr((key, _FAST_DOWNWARD_VERSION)).encode()).hexdigest()
            path = translation_cache_dir() / f"{digest}.pkl"
            try:
                with open(path, "rb") as f:
                    _SAS_CACHE[key] = pickle.load(f)
            except (OSError, EOFError, pickle.UnpicklingError):
                _SAS_CACHE[key] = _ORIGINALS["pddl2sas"](domain, problem, verbose=verbose, optimize=optimize)
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    tmp = path.with_suffix(f".tmp{os.getpid()}")
                    with open(tmp, "wb") as f:
                        pickle.dump(_SAS_CACHE[key], f)
                    os.replace(tmp, path)  # atomic: a concurrent reader never sees half a file
                except OSError:
                    pass  # a read-only cache only costs speed
            while len(_SAS_CACHE) > 8:
                _SAS_CACHE.popitem(last=False)
        return _SAS_CACHE[key]
    finally:
        sys.argv[:] = argv


def memoize_grammar(enabled: bool = True, shallow_contexts: bool | None = None,
                    memoize_commands: bool | None = None) -> None:
    """Switch textworld's text generation speed-ups on (the default at import) or off (for comparisons).

    `enabled`: memoize `textgen._parse_and_convert` (a deep copy of the cached parse per call),
    `Rule.parse_conjunctive_query` and the PDDL translation (so the load-time reset does not translate
    the game twice more). `shallow_contexts` (default: same as `enabled`): copy derivation contexts
    without deep-copying their entity objects. `memoize_commands` (default: same as `enabled`): cache the
    admissible commands' text per game. Either way traces are identical."""
    _SPEEDUPS["memoize"] = bool(enabled)
    _SPEEDUPS["shallow_contexts"] = bool(enabled if shallow_contexts is None else shallow_contexts)
    _SPEEDUPS["memoize_commands"] = bool(enabled if memoize_commands is None else memoize_commands)
    _TwPddlEnv._gather_infos = _memo_gather_infos if _SPEEDUPS["memoize_commands"] else _ORIGINALS["gather_infos"]
    _tw_textgen._parse_and_convert = _memo_textgen_parse if enabled else _ORIGINALS["textgen_parse"]
    _TwRule.parse_conjunctive_query = classmethod(_memo_conjunctive_query if enabled
                                                  else _ORIGINALS["conjunctive_query"])
    _tw_textgen.copy_context = (_shallow_copy_context if _SPEEDUPS["shallow_contexts"]
                                else _ORIGINALS["copy_context"])
    fast_downward.pddl2sas = _translate  # always: it restores sys.argv; memoizes only when enabled


for _patch, _name in [(_memo_textgen_parse, "textgen_parse"), (_memo_conjunctive_query, "conjunctive_query"),
                      (_shallow_copy_context, "copy_context"), (_translate, "pddl2sas"),
                      (_memo_gather_infos, "gather_infos")]:
    _patch.original = _ORIGINALS[_name]


def grammar_speedups() -> dict:
    """Which speed-ups are on: {"memoize": bool, "shallow_contexts": bool, "memoize_commands": bool}."""
    return dict(_SPEEDUPS)


memoize_grammar(True)


# textworld loads a private copy of libdownward for every PddlEnv and never unloads it; reuse the copies
# of engines that are gone (loading another game into a library is what textworld's own gym env does).
_FREE_LIBS: list = []  # filled by Engine.__del__


def _load_lib():
    return _FREE_LIBS.pop() if _FREE_LIBS else _ORIGINALS["load_lib"]()


_load_lib.original = _ORIGINALS["load_lib"]
fast_downward.load_lib = _load_lib
