"""ALFWorld (Shridhar et al., ICLR 2021) on its real engine: alfworld 0.4.2 / textworld's PDDL backend.

    env = AlfWorldEnv(split="train")                 # generated households (default)
    env = AlfWorldEnv(split="eval_ood", data_dir="~/alfworld/json_2.1.1")   # official game files
    obs, info = env.reset(options={"task_id": 0})   # info["admissible_actions"], info["task"]
    obs, reward, terminated, truncated, info = env.step("go to countertop 1")
    sibling = env.snapshot().restore()               # microseconds, independent, restorable many times

Games. The official ALFWorld game files cannot be downloaded on every machine, but the wheel ships the
PDDL domain (`alfworld/data/alfred.pddl`) and the text grammar (`alfworld/data/alfred.twl2`), and a game
is just `game.tw-pddl` (JSON: `pddl_domain`, `grammar` with the task sentence, `pddl_problem`,
`solvable`) next to a `traj_data.json` (`task_type`, `pddl_params`). So by default the env generates
households: kitchens, living rooms, bedrooms and bathrooms with ALFRED's receptacle and object types,
closed cabinets, drawers, fridges, microwaves and safes, distractor objects, scenery, a desk lamp for the
lighting tasks, and all six task types. Games are written lazily (on first use; `generate()` writes a
whole split) under `cache_dir/<generator version>-seed<seed>/<split>/` in ALFWorld's
`<task>-<Object>-None-<Parent>-<scene>/trial_*` layout, and every game is checked solvable by the planner
before it is marked `solvable`. Everything is a function of `seed`: layouts, held-out pairs, games.

Splits (ALFWorld's names in parentheses):
- `train` (train): 3553 games by default over seen layouts and seen (object, receptacle) task pairs.
- `eval` (eval_in_distribution / valid_seen): 140 new games over the same layouts and pairs.
- `eval_ood` (eval_out_of_distribution / valid_unseen): 134 games in held-out layouts (6 of the 30 per
  room type) with held-out (object, parent receptacle) pairs (about one pair in five per task type).
- `test`: the same games as `eval_ood`. ALFWorld has no separate test games; papers report its
  out-of-distribution split as the test set, so `test` is an alias of it.
ALFWorld's own names (`eval_in_distribution`, `eval_out_of_distribution`) are accepted as aliases too.

Official data: `data_dir=` (or `$ALFWORLD_DATA` when it holds `json_2.1.1/`, where `alfworld-download`
puts it) is walked the way `alfworld.agents.environment.AlfredTWEnv` does: folders with a `traj_data.json`
and a `game.tw-pddl`, skipping `movable` and `Sliced` tasks and games not marked `solvable`, filtered by
task type. Split folders are `json_2.1.1/{train,valid_seen,valid_unseen}` or `{train,valid_seen,
valid_unseen}` under `data_dir`; a folder of games without split folders serves every split. Each game
carries its own grammar: files made before alfworld 0.4 say `put X in/on Y`, 0.4 says `move X to Y`;
both work.

Episodes follow ALFWorld: names from `AlfredDemangler` ("apple 1"), the intro ending in "Your task is
to: ...", `info["admissible_actions"]`, reward 1 when the goal is reached (`info["won"]`, terminated),
truncation after `max_steps` (50) steps, and "Nothing happens." for any other string
(`info["invalid"] = True`); no action string raises.

Snapshots are native. Every live episode of one game shares that game's engine (a textworld `PddlEnv`
with its own copy of the fast-downward library), and the game state lives in two places: the planner's
state id in the library and the Python-side facts of textworld. An env owns a frozen copy of both and
installs it into the shared engine before each of its steps (10-40 us), so a snapshot is a reference to
that frozen state and a restore is a new env object pointing at it: both take microseconds, and any
number of restored envs can run interleaved. The engine's `reset()` frees every stored planner state, so
it runs only once, when a game is loaded; episodes start by installing the game's initial state. Loading
a game takes 0.2-1 s (PDDL translation); the last `ENGINE_CACHE_SIZE` games stay loaded, and the library
copy of an engine nobody holds any more is reused by the next one.

Experts: `expert="planner"` (default) is fast-downward's optimal plan from the current state (computed
once per state, milliseconds to a few seconds on large official kitchens, and kept while the episode
follows it; 100% on generated and official games). `expert="handcoded"` is alfworld's observation-driven
`HandCodedTWAgent`, with its `move` grammar bug fixed (0.4.2 tracks a put only when the command contains
"put", so it keeps believing it holds the first object of pick_two tasks), fed every step as
`AlfredExpert` does (its first action is "look"), seeded, and translated for games in the old grammar.

Speed: textworld re-parses its text grammar with tatsu at every step and deep-copies every entity of the
derivation context for each symbol. `memoize_grammar()` (on by default) caches `textgen._parse_and_convert`
(returning a deep copy: derivations mutate their symbols), `Rule.parse_conjunctive_query` and the PDDL
translation (which also restores the `sys.argv` that fast-downward's translator overwrites), and copies
derivation contexts shallowly (their entity objects are never modified). Traces are identical (tested);
`bench/alfworld_step.py` measures each part.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import random
import re
import sys
import weakref
from collections import Counter, OrderedDict, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import alfworld
    import alfworld.agents.expert.handcoded_expert as _handcoded_module
    import alfworld.gen.constants as alfred_constants
    import alfworld.gen.goal_library as alfred_goals
    import fast_downward
    import textworld
    import textworld.envs.pddl.textgen as _tw_textgen
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos
    from alfworld.agents.expert import HandCodedAgentFailed, HandCodedAgentTimeout, HandCodedTWAgent
    from textworld.logic import Rule as _TwRule
except ImportError as _error:  # pragma: no cover - exercised by a test that hides the package
    raise ImportError(
        "the ALFWorld env needs the alfworld engine: pip install alfworld==0.4.2 (it brings textworld[pddl] "
        f"and builds fast-downward from source, which needs g++ and cmake); import failed with: {_error}"
    ) from _error

from envs.base import TextEnv

TASK_TYPES = {1: "pick_and_place_simple",  # ALFWorld's numbering (config `env.task_types`)
              2: "look_at_obj_in_light",
              3: "pick_clean_then_place_in_recep",
              4: "pick_heat_then_place_in_recep",
              5: "pick_cool_then_place_in_recep",
              6: "pick_two_obj_and_place"}
# Order in which generated games cycle through the task types (game i has type GENERATED_ORDER[i % 6]).
GENERATED_ORDER = ("pick_and_place_simple", "pick_clean_then_place_in_recep", "pick_heat_then_place_in_recep",
                   "pick_cool_then_place_in_recep", "look_at_obj_in_light", "pick_two_obj_and_place")

SPLITS = ("train", "eval", "eval_ood", "test")
_SPLIT_ALIASES = {"eval_in_distribution": "eval", "valid_seen": "eval", "eval_out_of_distribution": "eval_ood",
                  "valid_unseen": "eval_ood", "test": "eval_ood"}
_OFFICIAL_SPLIT_DIRS = {"train": "train", "eval": "valid_seen", "eval_ood": "valid_unseen"}
DEFAULT_NUM_GAMES = {"train": 3553, "eval": 140, "eval_ood": 134}  # ALFWorld's split sizes
DEFAULT_MAX_STEPS = 50
EXPERTS = ("planner", "handcoded")

WHEEL_DATA = Path(alfworld.__file__).resolve().parent / "data"  # the domain and grammar shipped with alfworld
DOMAIN_FILE = WHEEL_DATA / "alfred.pddl"
GRAMMAR_FILE = WHEEL_DATA / "alfred.twl2"
GENERATOR_VERSION = "gen1"


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tree-rl" / "alfworld"


def canonical_split(split: str) -> str:
    split = _SPLIT_ALIASES.get(split, split)
    if split not in ("train", "eval", "eval_ood"):
        raise ValueError(f"split must be one of {', '.join(SPLITS)} (or ALFWorld's eval_in_distribution / "
                         f"eval_out_of_distribution); got {split!r}")
    return split


def canonical_task_types(task_types) -> tuple[str, ...]:
    """Task type names from names or ALFWorld's numbers 1-6 (None: all six)."""
    if task_types is None:
        return tuple(TASK_TYPES.values())
    if isinstance(task_types, (str, int)):
        task_types = [task_types]
    names = []
    for t in task_types:
        name = TASK_TYPES.get(t, t) if isinstance(t, int) else t
        if name not in TASK_TYPES.values():
            raise ValueError(f"unknown task type {t!r}; use one of {', '.join(TASK_TYPES.values())} or 1-6")
        names.append(name)
    return tuple(dict.fromkeys(names))


# ==================================================================================================
# Faster text generation: memoized grammar parsing, light derivation contexts, memoized translation
# ==================================================================================================
def _original(function):
    """The library's own function, also when another copy of this module (`python -m`) patched it."""
    return getattr(function, "original", function)


_ORIGINALS = {
    "textgen_parse": _original(_tw_textgen._parse_and_convert),
    "conjunctive_query": _original(_TwRule.__dict__["parse_conjunctive_query"].__func__),
    "copy_context": _original(_tw_textgen.copy_context),
    "pddl2sas": _original(fast_downward.pddl2sas),
    "load_lib": _original(fast_downward.load_lib),
}
_TEXTGEN_CACHE: dict = {}
_QUERY_CACHE: dict = {}
_SAS_CACHE: "OrderedDict" = OrderedDict()
_SPEEDUPS = {"memoize": False, "shallow_contexts": False}


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


def _translate(domain, problem, verbose=False, optimize=False):
    """fast_downward.pddl2sas, keeping `sys.argv` (the translator overwrites it), memoized when enabled."""
    argv = list(sys.argv)
    try:
        if not _SPEEDUPS["memoize"]:
            return _ORIGINALS["pddl2sas"](domain, problem, verbose=verbose, optimize=optimize)
        key = (domain, problem, bool(verbose), bool(optimize))
        if key in _SAS_CACHE:  # the task object is only read by textworld after translation
            _SAS_CACHE.move_to_end(key)
        else:
            _SAS_CACHE[key] = _ORIGINALS["pddl2sas"](domain, problem, verbose=verbose, optimize=optimize)
            while len(_SAS_CACHE) > 8:
                _SAS_CACHE.popitem(last=False)
        return _SAS_CACHE[key]
    finally:
        sys.argv[:] = argv


def memoize_grammar(enabled: bool = True, shallow_contexts: bool | None = None) -> None:
    """Switch textworld's text generation speed-ups on (the default at import) or off (for comparisons).

    `enabled`: memoize `textgen._parse_and_convert` (a deep copy of the cached parse per call),
    `Rule.parse_conjunctive_query` and the PDDL translation (so the load-time reset does not translate
    the game twice more). `shallow_contexts` (default: same as `enabled`): copy derivation contexts
    without deep-copying their entity objects. Either way traces are identical."""
    _SPEEDUPS["memoize"] = bool(enabled)
    _SPEEDUPS["shallow_contexts"] = bool(enabled if shallow_contexts is None else shallow_contexts)
    _tw_textgen._parse_and_convert = _memo_textgen_parse if enabled else _ORIGINALS["textgen_parse"]
    _TwRule.parse_conjunctive_query = classmethod(_memo_conjunctive_query if enabled
                                                  else _ORIGINALS["conjunctive_query"])
    _tw_textgen.copy_context = (_shallow_copy_context if _SPEEDUPS["shallow_contexts"]
                                else _ORIGINALS["copy_context"])
    fast_downward.pddl2sas = _translate  # always: it restores sys.argv; memoizes only when enabled


for _patch, _name in [(_memo_textgen_parse, "textgen_parse"), (_memo_conjunctive_query, "conjunctive_query"),
                      (_shallow_copy_context, "copy_context"), (_translate, "pddl2sas")]:
    _patch.original = _ORIGINALS[_name]


def grammar_speedups() -> dict:
    """Which speed-ups are on: {"memoize": bool, "shallow_contexts": bool}."""
    return dict(_SPEEDUPS)


memoize_grammar(True)


# ==================================================================================================
# Household generator
# ==================================================================================================
# Receptacles per room type: (type, min count, max count), in ALFRED's types.
ROOM_RECEPTACLES = {
    "Kitchen": [("CounterTop", 1, 3), ("Cabinet", 3, 8), ("Drawer", 2, 5), ("Fridge", 1, 1), ("Microwave", 1, 1),
                ("SinkBasin", 1, 1), ("StoveBurner", 2, 4), ("CoffeeMachine", 1, 1), ("Toaster", 0, 1),
                ("GarbageCan", 1, 1), ("DiningTable", 0, 1), ("Shelf", 0, 2)],
    "LivingRoom": [("Sofa", 1, 1), ("ArmChair", 0, 2), ("CoffeeTable", 1, 1), ("SideTable", 1, 2), ("TVStand", 0, 1),
                   ("DiningTable", 0, 1), ("Drawer", 0, 3), ("Cabinet", 0, 3), ("Shelf", 0, 4), ("GarbageCan", 1, 1),
                   ("Ottoman", 0, 1), ("Dresser", 0, 1), ("Safe", 0, 1)],
    "Bedroom": [("Bed", 1, 1), ("Desk", 0, 1), ("Drawer", 2, 5), ("Dresser", 0, 1), ("SideTable", 1, 2),
                ("Shelf", 0, 3), ("GarbageCan", 1, 1), ("LaundryHamper", 0, 1), ("ArmChair", 0, 1), ("Safe", 0, 1)],
    "Bathroom": [("Toilet", 1, 1), ("ToiletPaperHanger", 1, 1), ("TowelHolder", 1, 1), ("HandTowelHolder", 0, 2),
                 ("SinkBasin", 1, 2), ("BathtubBasin", 0, 1), ("CounterTop", 1, 1), ("Cabinet", 2, 4),
                 ("Drawer", 0, 3), ("GarbageCan", 1, 1), ("Shelf", 0, 2)],
}
# Objects that can be picked up, per room type.
ROOM_OBJECTS = {
    "Kitchen": ["Apple", "Bowl", "Bread", "ButterKnife", "CellPhone", "CreditCard", "Cup", "DishSponge", "Egg",
                "Fork", "Glassbottle", "Kettle", "Knife", "Ladle", "Lettuce", "Mug", "Pan", "PepperShaker", "Plate",
                "Pot", "Potato", "SaltShaker", "SoapBottle", "Spatula", "Spoon", "Tomato", "WineBottle"],
    "LivingRoom": ["Bowl", "Box", "Candle", "CellPhone", "CreditCard", "KeyChain", "Laptop", "Newspaper", "Pillow",
                   "Plate", "RemoteControl", "Statue", "TissueBox", "Vase", "Watch", "WateringCan"],
    "Bedroom": ["AlarmClock", "BaseballBat", "BasketBall", "Book", "Bowl", "Box", "CD", "CellPhone", "Cloth",
                "CreditCard", "KeyChain", "Laptop", "Mug", "Pen", "Pencil", "Pillow", "Statue", "TennisRacket",
                "Vase", "Watch"],
    "Bathroom": ["Candle", "Cloth", "DishSponge", "HandTowel", "Plunger", "SoapBar", "SoapBottle", "SprayBottle",
                 "TissueBox", "ToiletPaper", "Towel"],
}
# Things that stand next to receptacles and cannot be taken (shown by `look`).
ROOM_SCENERY = {
    "Kitchen": ["Chair", "HousePlant", "LightSwitch", "StoveKnob", "Window"],
    "LivingRoom": ["Curtains", "HousePlant", "LightSwitch", "Painting", "Television", "Window"],
    "Bedroom": ["Blinds", "Chair", "LightSwitch", "Mirror", "Painting", "Poster", "Window"],
    "Bathroom": ["LightSwitch", "Mirror", "ShowerDoor", "ShowerGlass", "Window"],
}
# ALFRED's scene numbers: kitchens 1-30, living rooms 201-230, bedrooms 301-330, bathrooms 401-430;
# layouts 1-6 of each room type are held out for eval_ood (like ALFRED's unseen scenes).
ROOM_SCENE_BASE = {"Kitchen": 0, "LivingRoom": 200, "Bedroom": 300, "Bathroom": 400}
LAYOUTS_PER_ROOM = 30
HELD_OUT_LAYOUTS = 6
HELD_OUT_PAIR_FRACTION = 5  # one (object, parent) pair in 5 is held out for eval_ood

TASK_ROOMS = {name: sorted(rooms) for name, rooms in alfred_constants.GOALS_VALID.items()}
LAMP_RECEPTACLES = ("Desk", "SideTable", "Dresser")
OPENABLE = set(alfred_constants.OPENABLE_CLASS_LIST)
ACTION_PROPERTIES = {"cleanable": "Cleanable", "heatable": "Heatable", "coolable": "Coolable",
                     "sliceable": "Sliceable", "toggleable": "Toggleable"}
CAN_CONTAIN = {r: set(objs) for r, objs in alfred_constants.VAL_RECEPTACLE_OBJECTS.items()}
PICKUPABLE = set().union(*CAN_CONTAIN.values())
RECEPTACLE_TYPES = sorted(set(alfred_constants.STATIC_RECEPTACLES) - {"Sink", "Bathtub"})
OBJECT_TYPES = sorted(set(alfred_constants.OBJECTS) - set(RECEPTACLE_TYPES))
# Task types whose target must be processed at an appliance that is then not a valid parent.
_PROCESS = {"pick_clean_then_place_in_recep": ("Cleanable", {"SinkBasin", "BathtubBasin"}),
            "pick_heat_then_place_in_recep": ("Heatable", {"Microwave"}),
            "pick_cool_then_place_in_recep": ("Coolable", {"Fridge"})}


def _stable_int(*parts) -> int:
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:12], 16)


def _mangle(name: str) -> str:
    """ALFRED ids as PDDL names: `Apple|+01.08|+00.73|-01.07` -> `Apple_bar__plus_01_dot_08_...`."""
    return name.replace("|", "_bar_").replace("+", "_plus_").replace("-", "_minus_").replace(".", "_dot_")


def _coords(rng: random.Random, used: set) -> str:
    while True:
        c = "|".join(f"{rng.uniform(-4.0, 4.0):+06.2f}" for _ in range(3))
        if c not in used:
            used.add(c)
            return c


@dataclass
class Layout:
    scene: int
    room: str
    receptacles: list[tuple[str, str, str]]  # (type, mangled id, mangled location)
    start: str  # the agent's starting location (no receptacle there)


def make_layout(seed: int, scene: int) -> Layout:
    """Floor plan `scene` (ALFRED numbering): which receptacles, their ids and locations."""
    room = next(r for r, base in sorted(ROOM_SCENE_BASE.items(), key=lambda x: -x[1]) if scene > base)
    rng = random.Random(f"alfworld-{GENERATOR_VERSION}|layout|{seed}|{scene}")
    used_coords: set = set()
    locations: set = set()

    def new_location() -> str:
        while True:
            x, z, rotation, horizon = rng.randint(-12, 12), rng.randint(-12, 12), rng.randint(0, 3), rng.choice(
                [0, 15, 30, 45, 60])
            loc = f"loc|{x}|{z}|{rotation}|{horizon}"
            if loc not in locations:
                locations.add(loc)
                return _mangle(loc)

    counts = {rtype: rng.randint(lo, hi) for rtype, lo, hi in ROOM_RECEPTACLES[room]}
    if room in ("LivingRoom", "Bedroom") and not any(counts.get(t, 0) for t in LAMP_RECEPTACLES):
        counts["SideTable"] = 1
    receptacles = []
    for rtype, count in counts.items():
        for _ in range(count):
            c = _coords(rng, used_coords)
            if rtype.endswith("Basin"):  # ALFRED: Sink|x|y|z|SinkBasin, shown as "sinkbasin"
                rid = f"{rtype[:-len('Basin')]}|{c}|{rtype}"
            else:
                rid = f"{rtype}|{c}"
            receptacles.append((rtype, _mangle(rid), new_location()))
    rng.shuffle(receptacles)
    return Layout(scene=scene, room=room, receptacles=receptacles, start=new_location())


def _split_layouts(split: str) -> dict[str, list[int]]:
    held_out = split == "eval_ood"
    layouts = {}
    for room, base in ROOM_SCENE_BASE.items():
        numbers = range(base + 1, base + LAYOUTS_PER_ROOM + 1)
        layouts[room] = [n for n in numbers if (n - base <= HELD_OUT_LAYOUTS) == held_out]
    return layouts


def _pair_held_out(seed: int, task_type: str, obj: str, parent: str) -> bool:
    return _stable_int("pair", seed, task_type, obj, parent) % HELD_OUT_PAIR_FRACTION == 0


def _candidate_pairs(task_type: str, layout: Layout) -> list[tuple[str, str]]:
    """(object type, parent type) targets possible in `layout` for `task_type`."""
    present = sorted({r[0] for r in layout.receptacles})
    objects = ROOM_OBJECTS[layout.room]
    if task_type == "look_at_obj_in_light":
        if not any(t in present for t in LAMP_RECEPTACLES):
            return []
        return [(o, "DeskLamp") for o in objects if any(o in CAN_CONTAIN.get(r, ()) for r in present)]
    pairs = []
    for obj in objects:
        if task_type in _PROCESS:
            prop, excluded = _PROCESS[task_type]
            if obj not in alfred_constants.VAL_ACTION_OBJECTS[prop]:
                continue
        else:
            excluded = set()
        # the object must also fit somewhere else, so it does not start in the goal receptacle type
        homes = [r for r in present if obj in CAN_CONTAIN.get(r, ())]
        for parent in homes:
            if parent not in excluded and any(h != parent for h in homes):
                pairs.append((obj, parent))
    return pairs


@dataclass
class GameSpec:
    """Everything that defines one generated game (deterministic in seed, split, index, attempt)."""
    seed: int
    split: str
    index: int
    attempt: int
    task_type: str
    layout: Layout
    object_target: str
    parent_target: str  # "" for look_at_obj_in_light
    toggle_target: str  # "DeskLamp" for look_at_obj_in_light, else ""
    task_desc: str
    dirname: str  # <task>-<Object>-None-<Parent>-<scene>/trial_...


def game_spec(seed: int, split: str, index: int, attempt: int = 0) -> GameSpec:
    """Choose task type, room, layout, target pair and task sentence of generated game `index`."""
    split = canonical_split(split)
    task_type = GENERATED_ORDER[index % len(GENERATED_ORDER)]
    rng = random.Random(f"alfworld-{GENERATOR_VERSION}|game|{seed}|{split}|{index}|{attempt}")
    layouts = _split_layouts(split)
    held_out = split == "eval_ood"
    for _ in range(1000):
        room = rng.choice(TASK_ROOMS[task_type])
        layout = make_layout(seed, rng.choice(layouts[room]))
        pairs = [p for p in _candidate_pairs(task_type, layout) if _pair_held_out(seed, task_type, *p) == held_out]
        if pairs:
            break
    else:  # pragma: no cover - the pools make this unreachable
        raise RuntimeError(f"no feasible task for {task_type} in split {split}")
    obj, parent = rng.choice(pairs)
    toggle = ""
    if task_type == "look_at_obj_in_light":
        toggle, parent = parent, ""
    template = rng.choice(alfred_goals.gdict[task_type]["templates"])
    task_desc = template.format(obj=obj.lower(), recep=parent.lower(), toggle=toggle.lower())
    scene = layout.scene
    dirname = (f"{task_type}-{obj}-None-{parent or toggle}-{scene}/"
               f"trial_{GENERATOR_VERSION}_{split}_{index:05d}_{attempt}")
    return GameSpec(seed, split, index, attempt, task_type, layout, obj, parent, toggle, task_desc, dirname)


def _populate(spec: GameSpec) -> tuple[list[str], list[str]]:
    """Objects of the game: (PDDL object declarations, init facts)."""
    rng = random.Random(f"alfworld-{GENERATOR_VERSION}|objects|{spec.seed}|{spec.split}|{spec.index}|{spec.attempt}")
    layout = spec.layout
    used: set = set()
    receptacles_by_type: dict[str, list] = defaultdict(list)
    for rtype, rid, loc in layout.receptacles:
        receptacles_by_type[rtype].append((rid, loc))
    load: Counter = Counter()
    objects: list[tuple[str, str, str | None, str]] = []  # (type, id, receptacle id or None, location)

    def place(otype: str, forbidden: set) -> bool:
        homes = [(rid, loc) for rtype, rid, loc in layout.receptacles
                 if otype in CAN_CONTAIN.get(rtype, ()) and rtype not in forbidden]
        if not homes:
            return False
        weights = [1.0 / (1 + load[rid]) for rid, _ in homes]  # spread objects out
        rid, loc = rng.choices(homes, weights=weights)[0]
        load[rid] += 1
        objects.append((otype, _mangle(f"{otype}|{_coords(rng, used)}"), rid, loc))
        return True

    target, parent = spec.object_target, spec.parent_target
    forbidden = {parent} if parent else set()
    if spec.task_type == "pick_two_obj_and_place":
        n_target = rng.randint(2, 4)
    else:
        n_target = rng.randint(1, 3)
    for _ in range(n_target):
        if not place(target, forbidden):  # pragma: no cover - guaranteed by _candidate_pairs
            raise RuntimeError(f"cannot place {target} in scene {layout.scene}")
    # distractors: other object types, some of them alike (same receptacles), 1-3 instances each
    pool = [o for o in ROOM_OBJECTS[layout.room] if o != target]
    for otype in rng.sample(pool, k=min(len(pool), rng.randint(6, 11))):
        for _ in range(rng.randint(1, 3)):
            place(otype, set())
    # a desk lamp on a desk, side table or dresser: needed for lighting tasks, common in bedrooms
    lamp_homes = [(rid, loc) for rtype, rid, loc in layout.receptacles if rtype in LAMP_RECEPTACLES]
    if lamp_homes and (spec.task_type == "look_at_obj_in_light" or rng.random() < 0.5):
        rid, loc = rng.choice(lamp_homes)
        objects.append(("DeskLamp", _mangle(f"DeskLamp|{_coords(rng, used)}"), rid, loc))
    # scenery next to receptacles
    for otype in rng.sample(ROOM_SCENERY[layout.room], k=rng.randint(2, 4)):
        _, _, loc = rng.choice(layout.receptacles)
        objects.append((otype, _mangle(f"{otype}|{_coords(rng, used)}"), None, loc))

    declarations = [f"{oid} - object" for _, oid, _, _ in objects]
    facts = []
    present_types = sorted({t for t, _, _, _ in objects})
    for rtype in sorted(receptacles_by_type):
        for otype in present_types:
            if otype in CAN_CONTAIN.get(rtype, ()):
                facts.append(f"(canContain {rtype}Type {otype}Type)")
    for rtype, rid, loc in layout.receptacles:
        facts.append(f"(receptacleType {rid} {rtype}Type)")
        facts.append(f"(receptacleAtLocation {rid} {loc})")
        if rtype in OPENABLE:
            facts.append(f"(openable {rid})")
    for otype, oid, rid, loc in objects:
        facts.append(f"(objectType {oid} {otype}Type)")
        facts.append(f"(objectAtLocation {oid} {loc})")
        if rid is not None:
            facts.append(f"(inReceptacle {oid} {rid})")
        if otype in PICKUPABLE:
            facts.append(f"(pickupable {oid})")
        if otype in alfred_constants.MOVABLE_RECEPTACLES_SET:
            facts.append(f"(isReceptacleObject {oid})")
        for predicate, group in ACTION_PROPERTIES.items():
            if otype in alfred_constants.VAL_ACTION_OBJECTS[group]:
                facts.append(f"({predicate} {oid})")
    return declarations, facts


def game_files(spec: GameSpec) -> tuple[dict, dict]:
    """(game.tw-pddl content without `solvable`, traj_data.json content) of a generated game."""
    layout = spec.layout
    declarations, facts = _populate(spec)
    objects = (["agent1 - agent"] + [f"{t}Type - otype" for t in OBJECT_TYPES]
               + [f"{t}Type - rtype" for t in RECEPTACLE_TYPES] + declarations
               + [f"{rid} - receptacle" for _, rid, _ in layout.receptacles]
               + [f"{loc} - location" for loc in [layout.start] + [loc for _, _, loc in layout.receptacles]])
    facts = [f"(atLocation agent1 {layout.start})"] + facts
    goal = alfred_goals.gdict[spec.task_type]["pddl"].format(
        obj=spec.object_target, recep=spec.parent_target, toggle=spec.toggle_target, mrecep="").replace("#", "-")
    problem = (f"\n(define (problem plan_trial_{GENERATOR_VERSION}_{spec.split}_{spec.index:05d})\n(:domain alfred)\n"
               "(:objects\n        " + "\n        ".join(objects) + "\n        )\n\n(:init\n        "
               + "\n        ".join(facts) + "\n        )\n\n" + goal)
    grammar = GRAMMAR_FILE.read_text().replace("UNKNOWN GOAL", spec.task_desc)
    game = {"pddl_domain": DOMAIN_FILE.read_text(), "grammar": grammar, "pddl_problem": problem}
    traj = {
        "task_id": f"trial_{GENERATOR_VERSION}_{spec.split}_{spec.index:05d}_{spec.attempt}",
        "task_type": spec.task_type,
        "pddl_params": {"object_target": spec.object_target, "parent_target": spec.parent_target,
                        "toggle_target": spec.toggle_target, "mrecep_target": "", "object_sliced": False},
        "scene": {"floor_plan": f"FloorPlan{layout.scene}", "scene_num": layout.scene, "room_type": layout.room},
        "turk_annotations": {"anns": [{"task_desc": spec.task_desc, "high_descs": [], "assignment_id": "generated"}]},
        "generator": {"version": GENERATOR_VERSION, "seed": spec.seed, "split": spec.split, "index": spec.index,
                      "attempt": spec.attempt},
    }
    return game, traj


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)  # atomic: concurrent writers of the same game write the same bytes


def generated_root(cache_dir, seed: int) -> Path:
    return Path(cache_dir or default_cache_dir()).expanduser() / f"{GENERATOR_VERSION}-seed{seed}"


def ensure_generated_game(root: Path, seed: int, split: str, index: int, max_attempts: int = 20) -> str:
    """Path of generated game `index` of `split`, writing and planner-checking it on first use."""
    for attempt in range(max_attempts):
        spec = game_spec(seed, split, index, attempt)
        folder = root / spec.split / spec.dirname
        game_file = folder / "game.tw-pddl"
        if game_file.exists():
            try:
                solvable = json.loads(game_file.read_text()).get("solvable")
            except ValueError:
                solvable = None  # a torn file from a killed writer: rewrite it
            if solvable is True:
                return str(game_file)
            if solvable is False:
                continue
        folder.mkdir(parents=True, exist_ok=True)
        game, traj = game_files(spec)
        _write_json(folder / "traj_data.json", traj)
        # no `solvable` key until checked: another process that reads it now checks it too (same bytes,
        # same verdict); only an explicit False sends readers on to the next attempt
        _write_json(game_file, game)
        engine = get_engine(str(game_file))
        solvable = not engine.initial.tw_state["won"] and len(engine.plan(engine.initial)) > 0
        _write_json(game_file, dict(game, solvable=solvable))
        if solvable:
            return str(game_file)
        drop_engine(str(game_file))
    raise RuntimeError(f"could not generate a solvable game for {split} #{index}")  # pragma: no cover


# ==================================================================================================
# Official data loader
# ==================================================================================================
def official_data_from_environment() -> str | None:
    """`$ALFWORLD_DATA` when it holds the official download (`json_2.1.1/`), else None.

    (Importing alfworld sets `ALFWORLD_DATA` to `~/.cache/alfworld` when unset, so the variable alone does
    not mean a user has the data.)"""
    path = os.environ.get("ALFWORLD_DATA")
    if path and (Path(path).expanduser() / "json_2.1.1").is_dir():
        return path
    return None


def official_split_root(data_dir, split: str) -> Path:
    root = Path(data_dir).expanduser()
    sub = _OFFICIAL_SPLIT_DIRS[canonical_split(split)]
    for candidate in (root / "json_2.1.1" / sub, root / sub):
        if candidate.is_dir():
            return candidate
    return root  # a plain folder of games serves every split


_OFFICIAL_CACHE: dict = {}


def collect_game_files(root, task_types=None) -> list[str]:
    """Solvable game files under `root`, as `AlfredTWEnv.collect_game_files` selects them (sorted)."""
    names = canonical_task_types(task_types)
    key = (str(Path(root).resolve()), names)
    if key in _OFFICIAL_CACHE:
        return list(_OFFICIAL_CACHE[key])
    games = []
    for dirpath, _, files in os.walk(root):
        if "traj_data.json" not in files:
            continue
        relative = os.path.relpath(dirpath, root)
        if "movable" in relative or "Sliced" in relative:
            continue
        with open(os.path.join(dirpath, "traj_data.json")) as f:
            if json.load(f).get("task_type") not in names:
                continue
        game_file = os.path.join(dirpath, "game.tw-pddl")
        if not os.path.exists(game_file):
            continue
        with open(game_file) as f:
            if json.load(f).get("solvable") is not True:
                continue
        games.append(game_file)
    games.sort()
    _OFFICIAL_CACHE[key] = tuple(games)
    return games


# ==================================================================================================
# Engine: one live textworld env per game, shared by every episode and snapshot of that game
# ==================================================================================================
@dataclass(frozen=True)
class NativeState:
    """One game state as the engine holds it. Never mutated: installing it copies the mutable parts."""
    state_id: int  # fast-downward's state id in the engine's state registry
    facts: Any  # PddlState._facts: signature -> set of propositions
    vars_by_name: Any
    vars_by_type: Any
    var_counts: Any
    operators: Any  # PddlState._operators of the state's applicable actions
    tw_state: Any  # PddlEnv.state (a textworld GameState: feedback, admissible commands, won, ...)
    prev_state: Any
    moves: int
    last_action: Any


class Engine:
    """A loaded game: textworld's PddlEnv (with its own copy of libdownward) and its initial state."""

    request_infos = dict(won=True, admissible_commands=True, extras=["gamefile"])

    def __init__(self, gamefile: str):
        self.gamefile = gamefile
        self.env = textworld.start(gamefile, textworld.EnvInfos(**self.request_infos),
                                   wrappers=[AlfredDemangler(), AlfredInfos])
        self.pddl = self.env.unwrapped
        self.lib = self.pddl.downward_lib
        self.env.reset()  # a fresh engine: nothing stored yet, so reset() frees nothing
        self.initial = self.capture()
        self._plans: dict[int, list[str]] = {}
        templates = {a.template for a in self.pddl._logic.actions.values()}
        self.move_grammar = "move {o} to {r}" in templates  # alfworld >= 0.4; older games: put {o} in/on {r}
        with open(os.path.join(os.path.dirname(gamefile), "traj_data.json")) as f:
            traj = json.load(f)
        self.task_type = traj["task_type"]
        intro = self.initial.tw_state.feedback
        self.task = next((line.strip() for line in intro.splitlines() if line.startswith("Your task is to:")), "")

    def capture(self) -> NativeState:
        ps = self.pddl._pddl_state
        return NativeState(self.lib.get_state_id(), ps._facts, ps._vars_by_name, ps._vars_by_type, ps._var_counts,
                           ps._operators, self.pddl.state, self.pddl.prev_state, self.pddl._moves,
                           self.pddl._last_action)

    def install(self, native: NativeState) -> None:
        """Make the engine hold `native`: planner state id plus fresh copies of the Python facts."""
        ps = self.pddl._pddl_state
        self.lib.set_state_id(native.state_id)
        ps._facts = defaultdict(set, {k: set(v) for k, v in native.facts.items()})
        ps._vars_by_name = dict(native.vars_by_name)
        ps._vars_by_type = defaultdict(set, {k: set(v) for k, v in native.vars_by_type.items()})
        ps._var_counts = Counter(native.var_counts)
        ps._operators = native.operators
        self.pddl.state = native.tw_state
        self.pddl.prev_state = native.prev_state
        self.pddl._moves = native.moves
        self.pddl._last_action = native.last_action

    def step(self, native: NativeState, command: str) -> NativeState:
        self.install(native)
        self.env.step(command)
        return self.capture()

    def plan(self, native: NativeState) -> list[str]:
        """The planner's commands from `native` to the goal ([] when won or unsolvable); cached per state."""
        if native.state_id not in self._plans:
            self.lib.set_state_id(native.state_id)  # replanning reads only the planner's state
            self._plans[native.state_id] = list(self.pddl._pddl_state.replan(self.pddl._entity_infos))
        return self._plans[native.state_id]

    def human_readable_facts(self, native: NativeState) -> list:
        return [self.pddl._get_human_readable_fact(f) for f in native.tw_state["_facts"]]

    def __del__(self):
        # Nothing references this engine any more: free its planner states and hand its library copy to
        # the next engine. (Unloading it is not safe: the copies share fast-downward's plugin registry
        # through GNU-unique symbols, and the process would crash at exit.)
        lib, self.lib = self.lib, None
        if lib is not None and not sys.is_finalizing():
            try:
                lib.cleanup()
                _FREE_LIBS.append(lib)
            except Exception:  # pragma: no cover - best effort at garbage collection
                pass


# textworld loads a private copy of libdownward for every PddlEnv and never unloads it; reuse the copies
# of engines that are gone (loading another game into a library is what textworld's own gym env does).
_FREE_LIBS: list = []


def _load_lib():
    return _FREE_LIBS.pop() if _FREE_LIBS else _ORIGINALS["load_lib"]()


_load_lib.original = _ORIGINALS["load_lib"]
fast_downward.load_lib = _load_lib

ENGINE_CACHE_SIZE = 16  # recently used engines kept loaded even when no env holds them (~7 MB each)
_LIVE_ENGINES: "weakref.WeakValueDictionary[str, Engine]" = weakref.WeakValueDictionary()
_RECENT_ENGINES: "OrderedDict[str, Engine]" = OrderedDict()


def get_engine(gamefile: str) -> Engine:
    gamefile = os.path.abspath(gamefile)
    engine = _LIVE_ENGINES.get(gamefile)
    if engine is None:
        engine = Engine(gamefile)
        _LIVE_ENGINES[gamefile] = engine
    _RECENT_ENGINES[gamefile] = engine
    _RECENT_ENGINES.move_to_end(gamefile)
    while len(_RECENT_ENGINES) > ENGINE_CACHE_SIZE:
        _RECENT_ENGINES.popitem(last=False)
    return engine


def drop_engine(gamefile: str) -> None:
    gamefile = os.path.abspath(gamefile)
    _RECENT_ENGINES.pop(gamefile, None)
    _LIVE_ENGINES.pop(gamefile, None)


# ==================================================================================================
# Handcoded expert: alfworld's HandCodedTWAgent with the move-grammar fix
# ==================================================================================================
class _MoveGrammarFix:
    """0.4.2's state tracking recognises a put by `"put" in last_action`; under the `move X to Y` grammar it
    never pops the inventory. Present the move to it in the put form it expects."""

    def update_state_tracking(self, game_state, last_action):
        if last_action.startswith("move "):
            last_action = "put " + last_action[len("move "):]
        return super().update_state_tracking(game_state, last_action)


_FIXED_POLICIES: dict = {}


class FixedHandCodedTWAgent(HandCodedTWAgent):
    def get_task_policy(self, task_param):
        base = super().get_task_policy(task_param)
        if base not in _FIXED_POLICIES:
            _FIXED_POLICIES[base] = type(base.__name__, (_MoveGrammarFix, base), {})
        return _FIXED_POLICIES[base]


_PUT_RE = re.compile(r"^put (.+) in/on (.+)$")


def _to_move_grammar(command: str) -> str:
    match = _PUT_RE.match(command)
    return f"move {match.group(1)} to {match.group(2)}" if match else command


class HandcodedExpert:
    """Feeds alfworld's handcoded agent the way `AlfredExpert` does (every step), with a private rng."""

    def __init__(self, engine: Engine, seed: int):
        self.agent = FixedHandCodedTWAgent(max_steps=200)
        self.agent.reset(engine.gamefile)
        self.rng = random.Random(seed)
        self.next_action = "look"  # AlfredExpert's plan before the first step
        self.agent.observe(engine.initial.tw_state.feedback)

    def observe_step(self, engine: Engine, native: NativeState, command: str) -> None:
        state = native.tw_state
        admissible = state["admissible_commands"]
        if engine.move_grammar:
            canonical, back = admissible, None
        else:
            canonical = [_to_move_grammar(c) for c in admissible]
            back = dict(zip(canonical, admissible))
            command = _to_move_grammar(command)
        game_state = {"feedback": state.feedback, "admissible_commands": canonical, "won": state["won"],
                      "facts": engine.human_readable_facts(native)}
        saved = _handcoded_module.random
        _handcoded_module.random = self.rng  # the agent draws from the module's `random`: make it ours
        try:
            action = self.agent.act(game_state, 0, state["won"], command.strip())
        except (HandCodedAgentTimeout, HandCodedAgentFailed):  # AlfredExpert would raise; we look around
            action = "look"
        finally:
            _handcoded_module.random = saved
        if back is not None:
            action = back.get(action, action)
        self.next_action = action if action in admissible else "look"


# ==================================================================================================
# The env
# ==================================================================================================
@dataclass
class AlfWorldState:
    engine: Engine
    native: NativeState
    task_id: int | None
    gamefile: str
    steps: int = 0
    won: bool = False
    expert: HandcodedExpert | None = None  # materialized on the first handcoded expert_action()
    expert_owned: bool = False  # False: shared with a snapshot, copy before advancing
    pending: list = field(default_factory=list)  # (native, command) steps the expert has not seen yet
    plan: tuple | None = None  # the planner's plan from this state, while the episode follows it


class AlfWorldEnv(TextEnv):
    """ALFWorld text env over generated households or official game files (see the module docstring)."""

    def __init__(self, split: str = "train", data_dir: str | None = None, task_types=None,
                 max_steps: int = DEFAULT_MAX_STEPS, expert: str = "planner", seed: int = 0,
                 num_games: int | None = None, cache_dir: str | None = None):
        super().__init__(split=split, data_dir=data_dir, task_types=task_types, max_steps=max_steps, expert=expert,
                         seed=seed, num_games=num_games, cache_dir=cache_dir)
        self.split = canonical_split(split)
        self.task_types = canonical_task_types(task_types)
        if not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive int; got {max_steps!r}")
        if expert not in EXPERTS:
            raise ValueError(f"expert must be one of {', '.join(EXPERTS)}; got {expert!r}")
        self.max_steps = max_steps
        self.expert = expert
        self.seed = seed
        self.data_dir = data_dir if data_dir is not None else official_data_from_environment()
        if self.data_dir is not None:
            self.games_root = official_split_root(self.data_dir, self.split)
            self._games = collect_game_files(self.games_root, self.task_types)
            self._indices = None
        else:
            if num_games is not None and (not isinstance(num_games, int) or num_games < 0):
                raise ValueError(f"num_games must be a non-negative int; got {num_games!r}")
            self.num_games = DEFAULT_NUM_GAMES[self.split] if num_games is None else num_games
            self.games_root = generated_root(cache_dir, seed)
            self._indices = [i for i in range(self.num_games)
                             if GENERATED_ORDER[i % len(GENERATED_ORDER)] in self.task_types]
            self._games = None

    # ---- tasks ----------------------------------------------------------------------------------
    @property
    def num_tasks(self) -> int:
        return len(self._games) if self._games is not None else len(self._indices)

    def game_file(self, task_id: int) -> str:
        """Path of task `task_id`'s game file (generated games are written and checked on first use)."""
        if not isinstance(task_id, int) or not 0 <= task_id < self.num_tasks:
            raise ValueError(f"task_id must be an int in [0, {self.num_tasks}); got {task_id!r}")
        if self._games is not None:
            return self._games[task_id]
        return ensure_generated_game(self.games_root, self.seed, self.split, self._indices[task_id])

    def generate(self, progress: bool = False) -> list[str]:
        """Write (and planner-check) every game of this split now; returns their paths."""
        ids = range(self.num_tasks)
        if progress:
            from tqdm import tqdm
            ids = tqdm(ids, desc=f"alfworld {self.split} games")
        return [self.game_file(i) for i in ids]

    # ---- episodes -------------------------------------------------------------------------------
    def _reset(self, seed, options):
        if "gamefile" in options:
            task_id, gamefile = options.get("task_id"), str(options["gamefile"])
        else:
            if self.num_tasks == 0:
                raise ValueError(f"split {self.split!r} has no games (data_dir={self.data_dir!r})")
            task_id = options.get("task_id")
            if task_id is None:
                task_id = int(self.np_random.integers(self.num_tasks))
            gamefile = self.game_file(task_id)
        engine = get_engine(gamefile)
        self.state = AlfWorldState(engine=engine, native=engine.initial, task_id=task_id, gamefile=gamefile)
        return engine.initial.tw_state.feedback, self._info(invalid=False)

    def _info(self, invalid: bool) -> dict:
        s = self.state
        return {"admissible_actions": list(s.native.tw_state["admissible_commands"]), "won": s.won,
                "invalid": invalid, "task": s.engine.task, "task_type": s.engine.task_type, "task_id": s.task_id,
                "gamefile": s.gamefile, "steps": s.steps}

    def _step(self, action: str):
        s = self.state
        command = action.strip()
        invalid = command not in s.native.tw_state["admissible_commands"]
        native = s.engine.step(s.native, action)
        s.native = native
        s.steps += 1
        # the rest of an optimal plan stays optimal once its first command is taken: no replanning
        s.plan = s.plan[1:] if s.plan and command == s.plan[0] else None
        if self.expert == "handcoded":
            s.pending.append((native, action))
        won = bool(native.tw_state["won"])
        reward = 1.0 if won and not s.won else 0.0
        s.won = s.won or won
        terminated = s.won
        truncated = not terminated and s.steps >= self.max_steps
        return native.tw_state.feedback, reward, terminated, truncated, self._info(invalid)

    # ---- expert ---------------------------------------------------------------------------------
    def expert_plan(self) -> list[str]:
        """The planner's commands from the current state to the goal ([] once won)."""
        if self.state is None:
            raise RuntimeError("call reset() before expert_plan()")
        s = self.state
        if s.plan is None:  # fast-downward, once per state and engine; kept while the episode follows it
            s.plan = tuple(s.engine.plan(s.native))
        return list(s.plan)

    def expert_action(self) -> str:
        if self.state is None:
            raise RuntimeError("call reset() before expert_action()")
        if self.expert == "planner":
            plan = self.expert_plan()
            return plan[0] if plan else "look"
        return self._handcoded_action()

    def _handcoded_action(self) -> str:
        s = self.state
        if s.expert is None:  # replay the episode so far into a new agent
            # seeded by the game, not by where its file lies (a cache path differs between machines)
            seed = _stable_int("handcoded", self.seed, os.path.relpath(s.gamefile, self.games_root))
            s.expert, s.expert_owned = HandcodedExpert(s.engine, seed), True
        if s.pending:
            if not s.expert_owned:
                s.expert, s.expert_owned = copy.deepcopy(s.expert), True
            for native, command in s.pending:
                s.expert.observe_step(s.engine, native, command)
            s.pending = []
        return s.expert.next_action

    # ---- snapshots ------------------------------------------------------------------------------
    def snapshot(self) -> "AlfWorldSnapshot":
        if self.state is None:
            raise RuntimeError("call reset() before snapshot()")
        return AlfWorldSnapshot(self)

    # ---- vocabulary -----------------------------------------------------------------------------
    def vocabulary(self) -> list[str]:
        if self._games is not None:
            return official_vocabulary(tuple(self._games))
        return generated_vocabulary(self.task_types)


class AlfWorldSnapshot:
    """Native snapshot: a reference to the env's frozen engine state; `restore()` builds a new env on it."""

    def __init__(self, env: AlfWorldEnv):
        s = env.state
        s.expert_owned = False  # the handcoded agent (if any) is now shared: whoever advances it copies it
        self._env = env
        self._state = AlfWorldState(engine=s.engine, native=s.native, task_id=s.task_id, gamefile=s.gamefile,
                                    steps=s.steps, won=s.won, expert=s.expert, pending=list(s.pending), plan=s.plan)
        self._reset_args = env.reset_args
        self._actions = tuple(env.actions_taken)
        rng = env._np_random
        self._rng_state = None if rng is None else (type(rng.bit_generator), rng.bit_generator.state)

    def restore(self) -> AlfWorldEnv:
        env = copy.copy(self._env)
        s = self._state
        env.state = AlfWorldState(engine=s.engine, native=s.native, task_id=s.task_id, gamefile=s.gamefile,
                                  steps=s.steps, won=s.won, expert=s.expert, pending=list(s.pending), plan=s.plan)
        env.reset_args = self._reset_args
        env.actions_taken = list(self._actions)
        if self._rng_state is None:
            env._np_random = None
        else:
            import numpy as np
            bit_generator_type, state = self._rng_state
            bit_generator = bit_generator_type()
            bit_generator.state = state
            env._np_random = np.random.Generator(bit_generator)
        return env


# ==================================================================================================
# Vocabulary
# ==================================================================================================
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
            for name, _ in re.findall(r"^\s*(\S+) - (object|receptacle)\s*$", game["pddl_problem"], re.M):
                if "_bar_" in name:
                    base = name.split("_bar_", 1)[0].lower()
                    words.add(base + "basin" if "basin" in name.lower() else base)
        _OFFICIAL_VOCAB[game_paths] = sorted(words)
    return list(_OFFICIAL_VOCAB[game_paths])


# ==================================================================================================
# Command line: write a split and check its experts
# ==================================================================================================
def run_expert(env: AlfWorldEnv, task_id: int) -> tuple[bool, int]:
    """Play task `task_id` with the env's expert; (won, steps)."""
    env.reset(options={"task_id": task_id})
    terminated = truncated = False
    steps = 0
    while not (terminated or truncated):
        _, _, terminated, truncated, _ = env.step(env.expert_action())
        steps += 1
    return terminated, steps


if __name__ == "__main__":  # pragma: no cover - a convenience, tested through its functions
    import argparse

    parser = argparse.ArgumentParser(description="Generate ALFWorld games and check the expert on them.")
    parser.add_argument("--split", default="train", choices=SPLITS)
    parser.add_argument("--num-games", type=int, default=None, help="games to generate (default: ALFWorld's size)")
    parser.add_argument("--data-dir", default=None, help="official ALFWorld data instead of generated games")
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--expert", default="planner", choices=EXPERTS)
    cli = parser.parse_args()
    cli_env = AlfWorldEnv(split=cli.split, data_dir=cli.data_dir, num_games=cli.num_games, cache_dir=cli.cache_dir,
                          seed=cli.seed, expert=cli.expert)
    results = Counter()
    for i in range(cli_env.num_tasks):
        won, _ = run_expert(cli_env, i)
        results[(cli_env.state.engine.task_type, won)] += 1
    for task_type in TASK_TYPES.values():
        wins, total = results[(task_type, True)], results[(task_type, True)] + results[(task_type, False)]
        if total:
            print(f"{task_type:32s} {wins}/{total}")
