"""ALFWorld's task types and this package's split names (with ALFWorld's names as aliases)."""

from __future__ import annotations

TASK_TYPES = {1: "pick_and_place_simple",  # ALFWorld's numbering (config `env.task_types`)
              2: "look_at_obj_in_light",
              3: "pick_clean_then_place_in_recep",
              4: "pick_heat_then_place_in_recep",
              5: "pick_cool_then_place_in_recep",
              6: "pick_two_obj_and_place"}

SPLITS = ("train", "eval", "eval_ood", "test")
_SPLIT_ALIASES = {"eval_in_distribution": "eval", "valid_seen": "eval", "eval_out_of_distribution": "eval_ood",
                  "valid_unseen": "eval_ood", "test": "eval_ood"}


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
