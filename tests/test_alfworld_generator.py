"""The household generator: ALFWorld-format game files, determinism, held-out layouts and pairs, split sizes."""

import json
from pathlib import Path

import pytest
from tests.alfworld_helpers import cache_dir_fixture, gen_fixture  # noqa: F401  (fixtures)

from envs import alfworld as alf
from envs.alfworld import (DEFAULT_NUM_GAMES, GENERATED_ORDER, HELD_OUT_LAYOUTS, ROOM_SCENE_BASE, TASK_TYPES,
                           AlfWorldEnv, collect_game_files, game_spec)


def test_generated_game_files_are_alfworld_games(gen, cache_dir):
    path = Path(gen.game_file(0))
    assert path.name == "game.tw-pddl" and path.parent.name.startswith("trial_")
    task_type, obj, mrecep, parent, scene = path.parent.parent.name.split("-")
    assert task_type == GENERATED_ORDER[0] and mrecep == "None" and scene.isdigit()
    game = json.loads(path.read_text())
    assert set(game) == {"pddl_domain", "grammar", "pddl_problem", "solvable"} and game["solvable"] is True
    assert "UNKNOWN GOAL" not in game["grammar"] and "(:domain alfred)" in game["pddl_problem"]
    traj = json.loads((path.parent / "traj_data.json").read_text())
    assert traj["task_type"] == task_type
    assert traj["pddl_params"]["object_target"] == obj and traj["pddl_params"]["parent_target"] == parent
    # the generated tree is walkable by the official loader
    found = collect_game_files(Path(cache_dir) / "gen1-seed0" / "train")
    assert str(path) in found


def test_generation_is_deterministic(tmp_path):
    paths = []
    for name in ("a", "b"):
        env = AlfWorldEnv(split="eval", cache_dir=str(tmp_path / name), num_games=2)
        paths.append(Path(env.game_file(1)))
    assert paths[0].relative_to(tmp_path / "a") == paths[1].relative_to(tmp_path / "b")
    for file in ("game.tw-pddl", "traj_data.json"):
        assert (paths[0].parent / file).read_bytes() == (paths[1].parent / file).read_bytes()
    assert game_spec(0, "train", 7).dirname == game_spec(0, "train", 7).dirname
    assert game_spec(0, "train", 7).dirname != game_spec(1, "train", 7).dirname


def test_splits_hold_out_layouts_and_pairs():
    def specs(split, n):
        return [game_spec(0, split, i) for i in range(n)]

    def held_out_layout(scene):
        base = max(b for b in ROOM_SCENE_BASE.values() if scene > b)
        return scene - base <= HELD_OUT_LAYOUTS

    train, seen, ood = specs("train", 240), specs("eval", 60), specs("eval_ood", 60)
    pair = lambda s: (s.task_type, s.object_target, s.parent_target or s.toggle_target)  # noqa: E731
    assert not any(held_out_layout(s.layout.scene) for s in train + seen)
    assert all(held_out_layout(s.layout.scene) for s in ood)
    assert not {pair(s) for s in ood} & {pair(s) for s in train + seen}
    for group in (train, seen, ood):
        assert {s.task_type for s in group} == set(TASK_TYPES.values())
        for s in group:
            assert s.layout.room in alf.TASK_ROOMS[s.task_type]
    # "test" is ALFWorld's out-of-distribution split under the project's name
    assert game_spec(0, "test", 3).dirname == game_spec(0, "eval_ood", 3).dirname


def test_split_sizes_and_task_type_filter(tmp_path):
    for split, size in DEFAULT_NUM_GAMES.items():
        assert AlfWorldEnv(split=split, cache_dir=str(tmp_path)).num_tasks == size  # nothing generated yet
    assert AlfWorldEnv(split="test", cache_dir=str(tmp_path)).num_tasks == DEFAULT_NUM_GAMES["eval_ood"]
    assert AlfWorldEnv(split="eval_out_of_distribution", cache_dir=str(tmp_path)).split == "eval_ood"
    env = AlfWorldEnv(cache_dir=str(tmp_path), num_games=60, task_types=[6, "look_at_obj_in_light"])
    assert env.num_tasks == 20
    with pytest.raises(ValueError):
        AlfWorldEnv(split="valid", cache_dir=str(tmp_path))
    with pytest.raises(ValueError):
        AlfWorldEnv(cache_dir=str(tmp_path), task_types=["pick_and_place_with_movable_recep"])
