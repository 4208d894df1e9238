"""The memory plan against measured peak resident memory, for the update at exactly the plan's shape, on the CPU.

    python bench/memory_check.py          # writes bench/results/memory_check.txt (about 3 minutes)

The plan (`run_tools.memory_plan`) is a worst case for the flags: every decision of a minibatch trained, each `S` tokens
long with `A` reply tokens. A real step rarely reaches it (a group whose returns are equal trains nothing; replies
stop early), so a run's peak sits below its plan (bench/real_model_steps.py prints both). Here each case runs, in a
fresh process, what the plan describes: the process as the scripts measure it before the model, the model, AdamW,
then one forward and backward pass of the scripts' loss (`grpo_baseline.action_logprobs`, the chunked selective
log-softmax) over `R` decisions of exactly `S` tokens and an AdamW step; its peak resident memory (`ru_maxrss`) is
set beside the plan's update-phase total for the same R, S and A. The sampling phase (the HF sampler's KV cache)
is planned separately and never overlaps the update; it is not measured here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# (model, decisions R, tokens per decision S, reply tokens A)
CASES = [("tiny", 32, 96, 24), ("tiny", 128, 128, 64),
         ("smollm2", 4, 576, 64), ("smollm2", 16, 160, 64), ("smollm2", 8, 640, 128)]


def measure(model_name: str, rows: int, sequence: int, reply: int) -> dict:
    """In this process (a fresh one): one update at the plan's shape; the plan and the measured peak, in GiB."""
    import torch

    import grpo_baseline
    from policy import load_policy
    from run_tools import memory_plan, peak_resident_bytes, plan_total, resident_bytes
    torch.manual_seed(0)
    process = resident_bytes()
    model, tokenizer, _, _ = load_policy(model_name, "math", {}, os.path.join(ROOT, "cache"))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)
    vocab = model.config.vocab_size
    decisions = [SimpleNamespace(prompt_ids=torch.randint(vocab, (sequence - reply,)).tolist(),
                                 action_ids=torch.randint(vocab, (reply,)).tolist(), allowed=None) for _ in range(rows)]
    model.train()
    logprobs, _, mask = grpo_baseline.action_logprobs(model, decisions, tokenizer.pad_token_id, 1.0)
    (-(logprobs * mask).sum() / mask.sum()).backward()
    optimizer.step()
    args = SimpleNamespace(max_model_len=sequence, max_new_tokens=reply, micro_batch_size=rows, minibatch_size=rows,
                           bf16=False, gradient_checkpointing=False, fsdp=False, backend="hf", beta=0.0,
                           tasks_per_step=0, num_generations=1, eval_tasks=0)
    parameters = sum(p.numel() for p in model.parameters())
    plan = memory_plan(model.config, parameters, args, 1, None, sequence, rows=rows, process_bytes=process,
                       loss_chunk_bytes=grpo_baseline.LOSS_CHUNK_BYTES, on_gpu=False)
    return {"plan": plan_total(plan), "peak": peak_resident_bytes() / 2 ** 30, "parameters": parameters,
            "parts": {name: round(size, 3) for name, size in plan if size}}


def main() -> None:
    if len(sys.argv) == 5:  # a case, in its own process
        print(json.dumps(measure(sys.argv[1], *map(int, sys.argv[2:]))))
        return
    from policy import SMOLLM2_DIR, cpu_model
    if not os.path.exists(os.path.join(SMOLLM2_DIR, "source.json")):
        raise SystemExit("python policy.py --get-smollm2 models/smollm2-135m-instruct first")
    lines = [f"# python bench/memory_check.py   (CPU: {cpu_model()}, {os.cpu_count()} cores; one case at a time, "
             f"each in a fresh process)",
             "# the plan's update phase (process before the model, weights, gradients, AdamW, activations, logits) "
             "against the peak resident memory of one update at that shape",
             f"{'model':<9} {'R':>4} {'S':>5} {'A':>4} {'plan GiB':>9} {'peak GiB':>9} {'plan/peak':>10}   plan parts"]
    print("\n".join(lines), flush=True)
    for case in CASES:
        out = subprocess.run([sys.executable, __file__, *map(str, case)], cwd=ROOT, capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"{case} failed:\n{out.stderr[-3000:]}")
        r = json.loads(out.stdout.strip().splitlines()[-1])
        line = (f"{case[0]:<9} {case[1]:>4} {case[2]:>5} {case[3]:>4} {r['plan']:>9.2f} {r['peak']:>9.2f} "
                f"{r['plan'] / r['peak']:>9.2f}x   {r['parts']}")
        lines.append(line)
        print(line, flush=True)
    with open(os.path.join(ROOT, "bench", "results", "memory_check.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
