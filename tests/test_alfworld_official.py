"""Official game files: walked like AlfredTWEnv, old (pre-0.4) grammar (runs where the real sample is)."""

import json
import re
import shutil

from tests.alfworld_helpers import REAL_SAMPLE, needs_real
from tests.alfworld_helpers import real_fixture  # noqa: F401  (fixtures)

from envs.alfworld import TASK_TYPES, AlfWorldEnv, collect_game_files, official_split_root


@needs_real
def test_official_loader_walks_like_alfredtwenv(tmp_path):
    root = tmp_path / "json_2.1.1"
    games = sorted(REAL_SAMPLE.glob("*/*/game.tw-pddl"))
    for split in ("train", "valid_seen", "valid_unseen"):
        for game in games:
            shutil.copytree(game.parent, root / split / game.parent.parent.name / game.parent.name)
    # skipped: movable and Sliced tasks, unsolvable games, games without a game file
    shutil.copytree(games[0].parent, root / "train" / "pick_and_place_with_movable_recep-X-Y-Z-1" / "trial_1")
    shutil.copytree(games[1].parent, root / "train" / "pick_heat_then_place_in_recep-AppleSliced-None-Z-1" / "t")
    unsolvable = root / "train" / "pick_and_place_simple-Book-None-Bed-2" / "trial_2"
    shutil.copytree(games[1].parent, unsolvable)
    game = json.loads((unsolvable / "game.tw-pddl").read_text())
    (unsolvable / "game.tw-pddl").write_text(json.dumps(dict(game, solvable=False)))
    missing = root / "train" / "pick_and_place_simple-Book-None-Bed-3" / "trial_3"
    shutil.copytree(games[1].parent, missing)
    (missing / "game.tw-pddl").unlink()
    assert official_split_root(tmp_path, "eval_ood") == root / "valid_unseen"
    assert official_split_root(root, "eval") == root / "valid_seen"
    assert len(collect_game_files(root / "train")) == 6
    env = AlfWorldEnv(split="test", data_dir=str(tmp_path), task_types=[2, 6])
    assert env.num_tasks == 2 and all("valid_unseen" in g for g in env._games)
    assert {env.reset(options={"task_id": i})[1]["task_type"] for i in range(2)} == {TASK_TYPES[2], TASK_TYPES[6]}


@needs_real
def test_real_games_old_grammar(real):
    assert real.num_tasks == 6
    _, info = real.reset(options={"task_id": next(i for i in range(6) if "pick_and_place" in real.game_file(i))})
    plan = real.expert_plan()
    assert any(re.fullmatch(r"put [a-z]+ \d+ in/on [a-z]+ \d+", a) for a in plan)  # pre-0.4 grammar
    assert not real.state.engine.move_grammar
    for action in plan:
        assert action in info["admissible_actions"]
        obs, reward, terminated, _, info = real.step(action)
    assert terminated and reward == 1.0 and "in/on the" in obs
