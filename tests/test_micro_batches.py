"""The loss at scale: the taken tokens' log-probs by a chunked selective log-softmax (no full-vocabulary float32 tensor
kept) equal the full log-softmax's, values and gradients, in every script; and --micro-batch-size accumulates
gradients so that one update equals the whole minibatch's."""

import importlib
import os

import pytest
import torch

from policy import build_tiny_model, build_word_tokenizer

SCRIPTS = ["grpo_baseline", "bpo", "treepo", "branchopd"]
WORDS = [f"w{i}" for i in range(80)]


def reference_logprobs(model, decisions, pad_token_id, temperature):
    """The full log-softmax over the vocabulary, as the scripts computed it before (four (B, A, V) float32 tensors)."""
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
    if any(d.allowed for d in decisions):
        allowed = torch.ones_like(logits, dtype=torch.bool)
        for row, d in enumerate(decisions):
            for t, ids in enumerate(d.allowed or []):
                allowed[row, width - len(d.action_ids) + t] = False
                allowed[row, width - len(d.action_ids) + t, ids] = True
        logits = logits.masked_fill(~allowed, float("-inf"))
    logprobs_all = torch.log_softmax(logits, dim=-1)
    logprobs = logprobs_all.gather(-1, input_ids[:, total - width:, None]).squeeze(-1)
    return logprobs, -(logprobs_all.exp() * logprobs_all.nan_to_num(neginf=0.0)).sum(-1)


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("constrained", [False, True])
def test_selective_log_softmax_equals_the_full_one(script, constrained, monkeypatch):
    module = importlib.import_module(script)
    torch.manual_seed(0)
    tokenizer = build_word_tokenizer(WORDS)
    span = 4 if constrained else 12  # action width 6: pieces of a row, or 2 rows per chunk
    monkeypatch.setattr(module, "LOSS_CHUNK_BYTES", 4 * len(tokenizer) * span)
    model = build_tiny_model(tokenizer)
    generator = torch.Generator().manual_seed(1)
    decisions = []
    for n, m in ((5, 3), (9, 1), (4, 6), (7, 2), (3, 5)):
        prompt = torch.randint(4, len(tokenizer), (n,), generator=generator).tolist()
        action = torch.randint(4, len(tokenizer), (m,), generator=generator).tolist()
        allowed = [sorted({token, 4, 9}) for token in action] if constrained else None
        decisions.append(module.Decision(prompt, action, [0.0] * m, allowed=allowed))
    logprobs, entropy, mask = module.action_logprobs(model, decisions, tokenizer.pad_token_id, 0.7)
    (logprobs * mask).sum().backward()
    chunked = {name: p.grad.clone() for name, p in model.named_parameters()}
    model.zero_grad()
    expected, expected_entropy = reference_logprobs(model, decisions, tokenizer.pad_token_id, 0.7)
    (expected * mask).sum().backward()
    assert torch.allclose(logprobs[mask], expected[mask], atol=1e-5)
    assert torch.allclose(entropy[mask], expected_entropy[mask], atol=1e-5) and not entropy.requires_grad
    for name, p in model.named_parameters():
        assert torch.allclose(chunked[name], p.grad, atol=1e-5), name


# the two-rank test's settings (a warm start with some groups of unequal returns; the session shares its cache)
SMALL = ["--env", "webshop", "--sft-steps", "150", "--sft-episodes", "150", "--tasks-per-step", "4",
         "--eval-tasks", "1", "--eval-every", "0", "--minibatch-size", "8", "--tree-log-every", "0", "--total-steps", "1"]
PER_SCRIPT = {"grpo_baseline": ["--num-generations", "4"], "bpo": ["--branch-factor", "3"],
              "treepo": ["--num-generations", "8", "--first-step-divergence", "4", "--max-sampling-rounds", "4"],
              "branchopd": ["--num-forks", "2"]}


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS)
def test_micro_batches_accumulate_to_the_minibatch_update(script, tmp_path, cache_dir):
    module = importlib.import_module(script)
    weights = {}
    for name, extra in (("whole", []), ("micro", ["--micro-batch-size", "3"])):
        args = module.parse_args(SMALL + PER_SCRIPT[script] + extra + ["--cache-dir", cache_dir, "--runs-dir",
                                                                       str(tmp_path / name)])
        run_dir = module.main(args)
        checkpoint = torch.load(os.path.join(run_dir, "checkpoint.pt"), weights_only=False)
        weights[name] = checkpoint["model"]
        assert checkpoint["rows"][-1]["trained_decisions"] > 3  # more than one micro-batch
    from safetensors.torch import load_file
    import json
    with open(os.path.join(run_dir, "policy.json")) as f:
        initial = load_file(os.path.join(json.load(f)["model_dir"], "model.safetensors"))
    moved = max((weights["whole"][k] - initial[k]).abs().max().item() for k in initial)
    difference = max((weights["whole"][k] - weights["micro"][k]).abs().max().item() for k in initial)
    assert moved > 1e-6 and difference < 1e-2 * moved, (moved, difference)  # AdamW's first step: near sign(grad)
