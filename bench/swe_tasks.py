"""The code-repair tasks: counts per split and bug kind, the expert's and the demonstrator's success, and
what of the expert's episodes the tiny policy's word-level tokenizer maps to `<unk>`.

    python bench/swe_tasks.py --backend docker --splits test_unseen_bugs test_unseen_packages

The expert must solve every task (100%); the demonstrator (the warm start's, with its systematic mistakes
at policy.WARM_START_DEFAULTS["swe"]) is what the SFT policy imitates.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from envs import make_env  # noqa: E402
from envs.swe.tasks import SPLITS, load_tasks  # noqa: E402
from policy import WARM_START_DEFAULTS, build_word_tokenizer, tokenizer_words  # noqa: E402


def play(env, task_id: int, choose, texts: list | None = None) -> tuple[float, int]:
    """(reward, commands) of one episode; `texts` collects its (observation or action, is_action) pairs."""
    obs, _ = env.reset(options={"task_id": task_id})
    for _ in range(env.max_steps):
        action = choose()
        if texts is not None:
            texts += [(obs, False), (action, True)]
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return reward, info["steps"]
    return 0.0, env.max_steps


def unknown_words(tokenizer, text: str) -> list[str]:
    return [word for word in text.split()
            if tokenizer.unk_token_id in tokenizer(word, add_special_tokens=False)["input_ids"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--splits", nargs="+", default=["test_unseen_bugs", "test_unseen_packages"])
    parser.add_argument("--seed", type=int, default=0)
    cli = parser.parse_args()
    tasks = load_tasks()
    kinds = sorted({t["kind"] for t in tasks})
    print(f"{'kind':18} " + " ".join(f"{s:>21}" for s in SPLITS))
    counts = Counter((t["kind"], t["split"]) for t in tasks)
    for kind in kinds + ["total"]:
        cells = [sum(v for (k, s), v in counts.items() if s == split and kind in (k, "total")) for split in SPLITS]
        print(f"{kind:18} " + " ".join(f"{c:>21}" for c in cells))
    mistake_prob = WARM_START_DEFAULTS["swe"]["mistake_prob"]
    for split in cli.splits:
        env = make_env("swe", split=split, backend=cli.backend)
        rng, start, texts = random.Random(cli.seed), time.time(), []
        expert = [play(env, t, env.expert_action, texts) for t in range(env.num_tasks)]
        demo = [play(env, t, lambda: env.demo_action(rng, mistake_prob)) for t in range(env.num_tasks)]
        env.close()
        print(f"\n{split} ({env.num_tasks} tasks, {env.backend} backend): expert success "
              f"{sum(r for r, _ in expert) / len(expert):.3f} in {sum(s for _, s in expert) / len(expert):.2f} "
              f"commands; demonstrator (mistake_prob {mistake_prob}) {sum(r for r, _ in demo) / len(demo):.3f} in "
              f"{sum(s for _, s in demo) / len(demo):.2f} commands; {time.time() - start:.0f} s")
        tokenizer = build_word_tokenizer(tokenizer_words(env, "swe"))  # the tiny policy's (policy.build_warm_start)
        unknown = Counter(w for text, is_action in texts if not is_action for w in unknown_words(tokenizer, text))
        words = sum(len(text.split()) for text, is_action in texts if not is_action)
        actions = [(text, unknown_words(tokenizer, text)) for text, is_action in texts if is_action]
        held = [text for text, unknown_in_command in actions if unknown_in_command]
        print(f"tiny tokenizer: {sum(unknown.values())} of {words} words of the expert's observations hold <unk>"
              + (f" ({len(unknown)} distinct; most frequent: {', '.join(w for w, _ in unknown.most_common(10))})"
                 if unknown else "") + f"; {len(held)} of {len(actions)} expert commands hold <unk>"
              + (f" ({'; '.join(held)})" if held else ""))


if __name__ == "__main__":
    main()
