"""Are the ALFWorld warm start's demonstrations the same in every process? Collects them (policy.py's
`collect_demonstrations` with the ALFWorld warm-start defaults) in two fresh processes under different
PYTHONHASHSEEDs and prints, for each, the number of (prompt, action) pairs and a hash of all of them.

    python bench/alfworld_demo_determinism.py --episodes 400
"""

import argparse
import hashlib
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def collect(episodes: int) -> None:
    sys.path.insert(0, ROOT)
    import policy
    from envs import make_env
    config = policy.WarmStartConfig(env="alfworld", **{**policy.WARM_START_DEFAULTS["alfworld"], "episodes": episodes})
    pairs = policy.collect_demonstrations(make_env("alfworld", split="train"), config)
    print(len(pairs), hashlib.sha256(repr(pairs).encode()).hexdigest()[:12])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=400, help="demonstration episodes (the warm start's 400)")
    parser.add_argument("--hash-seeds", type=int, nargs=2, default=[0, 1])
    parser.add_argument("--collect", action="store_true", help=argparse.SUPPRESS)  # the child process
    cli = parser.parse_args()
    if cli.collect:
        return collect(cli.episodes)
    results = []
    for hash_seed in cli.hash_seeds:
        out = subprocess.run([sys.executable, __file__, "--collect", "--episodes", str(cli.episodes)], check=True,
                             capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": str(hash_seed)})
        results.append(out.stdout.strip().splitlines()[-1])
        print(f"PYTHONHASHSEED={hash_seed}: {results[-1]}  (examples, sha256)")
    print("identical" if results[0] == results[1] else "DIFFERENT")


if __name__ == "__main__":
    main()
