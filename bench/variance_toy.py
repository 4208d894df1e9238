"""Monte Carlo of BPO's worked variance example (paper section 3.5) against the closed form.

A rollout first reaches one of several prefix kinds (values v_i with probabilities p_i; nu^2 is the
variance of the prefix value) and then earns R = v + eps with Var(eps) = sigma^2. With K returns and
the leave-one-out baseline:
  - GRPO: the K rollouts draw their prefixes independently:  Var(A) = K/(K-1) (sigma^2 + nu^2)
  - BPO:  the K siblings share the prefix of their branch point: Var(A) = K/(K-1) sigma^2
so branching removes K/(K-1) nu^2 (law of total variance).

    python bench/variance_toy.py            # the paper's example: values 0.8 / 0.2, sigma^2 = 0.05, K = 4
"""

from __future__ import annotations

import argparse

import numpy as np


def leave_one_out(returns: np.ndarray) -> np.ndarray:
    """(groups, K) -> A_k = R_k - mean of the other K-1 returns (BPO Eq. 4, RLOO)."""
    k = returns.shape[1]
    return returns - (returns.sum(axis=1, keepdims=True) - returns) / (k - 1)


def simulate(values, probs, sigma2: float, k: int, groups: int, seed: int) -> tuple[float, float]:
    """Monte Carlo Var(A_GRPO), Var(A_BPO) over `groups` groups of K returns."""
    rng = np.random.default_rng(seed)
    values, probs = np.asarray(values, float), np.asarray(probs, float)
    noise = rng.normal(0.0, np.sqrt(sigma2), size=(groups, k))
    independent_prefixes = values[rng.choice(len(values), size=(groups, k), p=probs)]
    shared_prefix = values[rng.choice(len(values), size=(groups, 1), p=probs)]
    return float(leave_one_out(independent_prefixes + noise).var()), float(leave_one_out(shared_prefix + noise).var())


def closed_form(values, probs, sigma2: float, k: int) -> tuple[float, float, float]:
    values, probs = np.asarray(values, float), np.asarray(probs, float)
    nu2 = float(probs @ values ** 2 - (probs @ values) ** 2)
    return k / (k - 1) * (sigma2 + nu2), k / (k - 1) * sigma2, nu2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=400_000, help="Monte Carlo groups per setting")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    settings = [  # (values, probabilities, sigma^2, K); the first is the paper's example
        ((0.8, 0.2), (0.5, 0.5), 0.05, 4),
        ((0.8, 0.2), (0.5, 0.5), 0.05, 2),
        ((0.9, 0.5, 0.1), (0.2, 0.3, 0.5), 0.02, 4),
        ((1.0, 0.0), (0.3, 0.7), 0.10, 8),
    ]
    print(f"{'values':>16} {'probs':>16} {'sigma2':>6} {'K':>2} | {'Var GRPO':>9} {'(closed)':>9} | "
          f"{'Var BPO':>8} {'(closed)':>9} | {'reduction':>9} {'K/(K-1)nu2':>10}")
    for values, probs, sigma2, k in settings:
        grpo, bpo = simulate(values, probs, sigma2, k, args.groups, args.seed)
        grpo_closed, bpo_closed, nu2 = closed_form(values, probs, sigma2, k)
        print(f"{str(values):>16} {str(probs):>16} {sigma2:6.2f} {k:2d} | {grpo:9.4f} {grpo_closed:9.4f} | "
              f"{bpo:8.4f} {bpo_closed:9.4f} | {grpo - bpo:9.4f} {k / (k - 1) * nu2:10.4f}")


if __name__ == "__main__":
    main()
