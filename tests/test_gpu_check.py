"""bench/gpu_check.py's CPU mode (--smoke): the checks a lent GPU runs, on the CPU: the HF sampler's log-probs against
the learner's, TreePO's tree segments, two steps of every script with a chat model in the Llama and Qwen2 layouts
(--bf16, --gradient-checkpointing; the Qwen2 tokenizer without a pad token), and a resume."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow
def test_gpu_check_smoke_passes_every_check(tmp_path):
    result = subprocess.run([sys.executable, "bench/gpu_check.py", "--smoke"], cwd=ROOT, capture_output=True,
                            text=True, timeout=900, env={**os.environ, "OMP_NUM_THREADS": "1", "TMPDIR": str(tmp_path)})
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    lines = [line for line in result.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    assert len(lines) == 8 and all(line.startswith("PASS") for line in lines), output[-4000:]
    for script in ("grpo_baseline", "bpo", "treepo", "branchopd"):
        assert any(script in line for line in lines)
    assert "8 of 8 checks passed" in result.stdout
