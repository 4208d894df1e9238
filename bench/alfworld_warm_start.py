"""How well the ALFWorld warm start imitates its expert, and where it fails.

On the first `--tasks` tasks of a held-out split:
1. teacher forcing: the planner expert plays, and at each of its states the policy's greedy command is
   compared with the expert's: exact match and admissible, per command verb;
2. free running: the policy plays greedily, with the prompt settings it was trained on. Reported: success,
   the share of inadmissible commands, and the episodes that end in a loop, which repeat one inadmissible
   command (each answered "Nothing happens.") until the step limit.

    python bench/alfworld_warm_start.py --split eval --tasks 20
"""

from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from envs import make_env  # noqa: E402
from policy import encode_prompt, format_prompt, load_policy  # noqa: E402


def greedy_command(model, tokenizer, prompt: dict, info: dict, obs: str, history: list, max_new_tokens: int) -> str:
    admissible = info.get("admissible_actions") if prompt["include_admissible"] else None
    ids = encode_prompt(tokenizer, "alfworld", format_prompt(info["task"], obs, history, prompt["history_window"],
                                                             admissible))
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), max_new_tokens=max_new_tokens, do_sample=False,
                             eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    return tokenizer.decode(out[0, len(ids):], skip_special_tokens=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="tiny", help="`tiny` (the cached default warm start) or a model dir")
    parser.add_argument("--split", default="eval")
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--max-new-tokens", type=int, default=12, help="as the RL scripts' ALFWorld default")
    parser.add_argument("--cache-dir", default="cache")
    cli = parser.parse_args()
    model, tokenizer, model_dir, prompt = load_policy(cli.model, "alfworld", {}, cli.cache_dir)
    env = make_env("alfworld", split=cli.split)
    tasks = range(min(cli.tasks, env.num_tasks))
    print(f"model {model_dir} (prompt settings {prompt}), {len(tasks)} {cli.split} tasks")

    per_verb: dict[str, list[int]] = {}  # verb -> [exact, admissible, states]
    for task_id in tasks:
        obs, info = env.reset(options={"task_id": task_id})
        history, done = [], False
        while not done:
            expert = env.expert_action()
            command = greedy_command(model, tokenizer, prompt, info, obs, history, cli.max_new_tokens)
            counts = per_verb.setdefault(expert.split()[0], [0, 0, 0])
            counts[0] += command == expert
            counts[1] += command in info["admissible_actions"]
            counts[2] += 1
            history.append((obs, expert))
            obs, _, terminated, truncated, info = env.step(expert)
            done = terminated or truncated
    total = [sum(c[i] for c in per_verb.values()) for i in range(3)]
    print("\n1. teacher forcing: the policy's greedy command at the expert's states")
    print(f"{'expert verb':12} {'states':>7} {'exact':>7} {'admissible':>11}")
    for verb, (exact, admissible, states) in sorted(per_verb.items(), key=lambda kv: -kv[1][2]):
        print(f"{verb:12} {states:7d} {exact / states:7.3f} {admissible / states:11.3f}")
    print(f"{'all':12} {total[2]:7d} {total[0] / total[2]:7.3f} {total[1] / total[2]:11.3f}")

    won = invalid = steps = loops = 0
    for task_id in tasks:
        obs, info = env.reset(options={"task_id": task_id})
        history, done, commands = [], False, []
        while not done:
            command = greedy_command(model, tokenizer, prompt, info, obs, history, cli.max_new_tokens)
            history.append((obs, command))
            obs, _, terminated, truncated, info = env.step(command)
            commands.append((command, info["invalid"]))
            invalid, steps, done = invalid + info["invalid"], steps + 1, terminated or truncated
        won += info["won"]
        tail = commands[-10:]
        loops += (not info["won"] and len(tail) == 10 and all(bad for _, bad in tail)
                  and len({c for c, _ in tail}) == 1)
    print("\n2. free running, greedy")
    print(f"success {won / len(tasks):.3f} ({won}/{len(tasks)}); inadmissible commands {invalid / steps:.3f} "
          f"({invalid}/{steps}); episodes ending in a loop of one inadmissible command {loops}/{len(tasks)}")


if __name__ == "__main__":
    main()
