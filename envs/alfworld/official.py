"""Official ALFWorld game files, selected the way `alfworld.agents.environment.AlfredTWEnv` does."""

from __future__ import annotations

import json
import os
from pathlib import Path

from envs.alfworld.tasks import canonical_split, canonical_task_types

_OFFICIAL_SPLIT_DIRS = {"train": "train", "eval": "valid_seen", "eval_ood": "valid_unseen"}


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
