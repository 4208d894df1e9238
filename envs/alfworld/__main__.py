"""`python -m envs.alfworld`: generate a split's games (or take official ones) and check the expert on them."""

import argparse
from collections import Counter

from envs.alfworld.env import EXPERTS, AlfWorldEnv, run_expert
from envs.alfworld.tasks import SPLITS, TASK_TYPES

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
