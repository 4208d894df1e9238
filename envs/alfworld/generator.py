"""The household generator: ALFRED-style layouts, game specs and the game files written from them (see
docs/envs.md, ALFWorld: games)."""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import alfworld
import alfworld.gen.constants as alfred_constants
import alfworld.gen.goal_library as alfred_goals

from envs.alfworld.engine import drop_engine, get_engine
from envs.alfworld.tasks import canonical_split

# Order in which generated games cycle through the task types (game i has type GENERATED_ORDER[i % 6]).
GENERATED_ORDER = ("pick_and_place_simple", "pick_clean_then_place_in_recep", "pick_heat_then_place_in_recep",
                   "pick_cool_then_place_in_recep", "look_at_obj_in_light", "pick_two_obj_and_place")

DEFAULT_NUM_GAMES = {"train": 3553, "eval": 140, "eval_ood": 134}  # ALFWorld's split sizes

WHEEL_DATA = Path(alfworld.__file__).resolve().parent / "data"  # the domain and grammar shipped with alfworld
DOMAIN_FILE = WHEEL_DATA / "alfred.pddl"
GRAMMAR_FILE = WHEEL_DATA / "alfred.twl2"
GENERATOR_VERSION = "gen1"


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tree-rl" / "alfworld"


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
