"""Peak memory of the loss's log-probs at a large vocabulary, before and after the chunked selective log-softmax.

`full`: the scripts' earlier `action_logprobs`, a float32 log-softmax over the whole (B, A, V) logits, its exp for
the entropy and the gathered log-probs, all kept for the backward pass. `chunked`: today's (`grpo_baseline.
action_logprobs`): the taken tokens' log-probs as logit - logsumexp, a few rows at a time and recomputed in the
backward pass, the entropy without gradient. Each variant runs a forward and backward pass of a one-layer Llama with
the given vocabulary in a fresh process on the CPU, and reports its peak resident memory above what the process held
before the loss (`ru_maxrss`); the ratio is printed side by side from one run of this script.

    python bench/loss_memory.py                                  # V = 152064 (Qwen2.5), 8 rows x 256 action tokens
    python bench/loss_memory.py --vocab 32000 --rows 16
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def full_log_softmax(model, decisions, pad_token_id: int, temperature: float):
    """The earlier loss: four full-vocabulary float32 tensors of the batch."""
    import torch
    lengths = [len(d.prompt_ids) + len(d.action_ids) for d in decisions]
    total, width = max(lengths), max(len(d.action_ids) for d in decisions)
    input_ids = torch.full((len(decisions), total), pad_token_id)
    attention_mask = torch.zeros((len(decisions), total), dtype=torch.long)
    for row, (d, n) in enumerate(zip(decisions, lengths)):
        input_ids[row, total - n:] = torch.tensor(d.prompt_ids + d.action_ids)
        attention_mask[row, total - n:] = 1
    position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    logits = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                   logits_to_keep=width + 1).logits[:, :-1].float() / temperature
    logprobs_all = torch.log_softmax(logits, dim=-1)
    logprobs = logprobs_all.gather(-1, input_ids[:, total - width:, None]).squeeze(-1)
    entropy = -(logprobs_all.exp() * logprobs_all.nan_to_num(neginf=0.0)).sum(-1)
    return logprobs, entropy


def child(variant: str, vocab: int, rows: int, action_tokens: int) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    import grpo_baseline
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=vocab, hidden_size=64, intermediate_size=256, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=2, tie_word_embeddings=True))
    generator = torch.Generator().manual_seed(1)
    decisions = [grpo_baseline.Decision(torch.randint(3, vocab, (64,), generator=generator).tolist(),
                                        torch.randint(3, vocab, (action_tokens,), generator=generator).tolist(),
                                        [0.0] * action_tokens) for _ in range(rows)]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if variant == "full":
        logprobs, _ = full_log_softmax(model, decisions, 0, 1.0)
    else:
        logprobs, _, _ = grpo_baseline.action_logprobs(model, decisions, 0, 1.0)
    logprobs.sum().backward()
    print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 2**10)  # MiB (ru_maxrss is in KiB)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", type=int, default=152064)
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--action-tokens", type=int, default=256)
    parser.add_argument("--variant", choices=["full", "chunked"], help=argparse.SUPPRESS)  # the child process
    cli = parser.parse_args()
    if cli.variant:
        child(cli.variant, cli.vocab, cli.rows, cli.action_tokens)
        return
    one_tensor = cli.rows * cli.action_tokens * cli.vocab * 4 / 2**20
    print(f"vocabulary {cli.vocab}, {cli.rows} rows x {cli.action_tokens} action tokens: one (B, A, V) float32 tensor "
          f"is {one_tensor:.0f} MiB; torch {__import__('torch').__version__}, {os.cpu_count()} CPUs")
    peaks = {}
    for variant in ("full", "chunked"):
        result = subprocess.run([sys.executable, __file__, "--variant", variant, "--vocab", str(cli.vocab), "--rows",
                                 str(cli.rows), "--action-tokens", str(cli.action_tokens)], capture_output=True,
                                text=True, check=True, cwd=ROOT)
        peaks[variant] = float(result.stdout.strip().splitlines()[-1])
        print(f"  {variant:<8} peak above the model: {peaks[variant]:8.0f} MiB ({peaks[variant] / one_tensor:.1f} "
              f"such tensors)")
    print(f"  full / chunked: {peaks['full'] / peaks['chunked']:.2f}x")


if __name__ == "__main__":
    main()
