"""ALFWorld (Shridhar et al., ICLR 2021) on its real engine: alfworld 0.4.2 / textworld's PDDL backend.

    env = AlfWorldEnv(split="train")                 # generated households (default)
    env = AlfWorldEnv(split="eval_ood", data_dir="~/alfworld/json_2.1.1")   # official game files
    obs, info = env.reset(options={"task_id": 0})   # info["admissible_actions"], info["task"]
    sibling = env.snapshot().restore()               # microseconds, independent, restorable many times

Games, splits, official data, episodes, native snapshots, experts and speed-ups: docs/envs.md. Modules:
`patches` (every change this package makes to textworld / fast-downward), `tasks` (task types, splits),
`generator` (generated households), `official` (official game files), `engine` (loaded games and their
native states), `experts` (the handcoded expert), `vocabulary`, `env` (AlfWorldEnv);
`python -m envs.alfworld` writes a split and checks its expert.
"""

try:  # everything the package imports from the engine, so a missing piece says how to install it
    import alfworld  # noqa: F401
    import alfworld.agents.environment.alfred_tw_env  # noqa: F401
    import alfworld.agents.expert.handcoded_expert  # noqa: F401
    import alfworld.gen.constants  # noqa: F401
    import alfworld.gen.goal_library  # noqa: F401
    import fast_downward  # noqa: F401
    import textworld  # noqa: F401
    import textworld.envs.pddl.textgen  # noqa: F401
    import textworld.logic  # noqa: F401
except ImportError as _error:  # pragma: no cover - exercised by a test that hides the package
    raise ImportError(
        "the ALFWorld env needs the alfworld engine: pip install alfworld==0.4.2 (it brings textworld[pddl] "
        f"and builds fast-downward from source, which needs g++ and cmake); import failed with: {_error}"
    ) from _error

from envs.alfworld.patches import grammar_speedups, memoize_grammar  # noqa: E402  (patches first)
from envs.alfworld.patches import _FREE_LIBS  # noqa: E402, F401  (the engines' free library copies, for tests)
from envs.alfworld.engine import Engine, NativeState, drop_engine, get_engine  # noqa: E402
from envs.alfworld.env import AlfWorldEnv, AlfWorldSnapshot, AlfWorldState, run_expert  # noqa: E402
from envs.alfworld.experts import FixedHandCodedTWAgent, HandCodedTWAgent, HandcodedExpert  # noqa: E402
from envs.alfworld.generator import (DEFAULT_NUM_GAMES, GENERATED_ORDER, HELD_OUT_LAYOUTS,  # noqa: E402
                                     ROOM_SCENE_BASE, TASK_ROOMS, ensure_generated_game, game_spec, generated_root)
from envs.alfworld.official import collect_game_files, official_split_root  # noqa: E402
from envs.alfworld.tasks import SPLITS, TASK_TYPES, canonical_split, canonical_task_types  # noqa: E402
from envs.alfworld.vocabulary import generated_vocabulary, official_vocabulary  # noqa: E402

__all__ = ["AlfWorldEnv", "AlfWorldState", "AlfWorldSnapshot", "run_expert", "Engine", "NativeState", "get_engine",
           "drop_engine", "memoize_grammar", "grammar_speedups", "HandcodedExpert", "FixedHandCodedTWAgent",
           "HandCodedTWAgent", "TASK_TYPES", "SPLITS", "canonical_split", "canonical_task_types", "GENERATED_ORDER",
           "DEFAULT_NUM_GAMES", "HELD_OUT_LAYOUTS", "ROOM_SCENE_BASE", "TASK_ROOMS", "game_spec", "generated_root",
           "ensure_generated_game", "collect_game_files", "official_split_root", "generated_vocabulary",
           "official_vocabulary"]
