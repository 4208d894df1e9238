"""What a researcher's first real-model run meets before any GPU: the stop tokens both samplers share (a chat
template's end of turn is not always EOS), --max-model-len honoured by both samplers, chat-profile defaults a
protocol reply long, BranchOPD refusing a chat student without a teacher at once, and resume mapping the checkpoint
to each rank's device with the CUDA generator state saved."""

import importlib
import json
import os

import pytest
import torch

import policy
from policy import build_tiny_model, build_word_tokenizer, stop_token_ids

SCRIPTS = ["grpo_baseline", "bpo", "treepo", "branchopd"]
WORDS = [f"w{i}" for i in range(60)]
GEMMA = ("{% for m in messages %}<start_of_turn>{{ m['role'] }}\n{{ m['content'] }}<end_of_turn>\n{% endfor %}"
         "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")
PHI = ("{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>\n{% endfor %}"
       "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")


def chat_tokenizer(template: str, specials: list[str]):
    """A word-level tokenizer whose EOS is `<eos>` and whose chat template ends a turn with another special token."""
    tokenizer = build_word_tokenizer(WORDS)
    tokenizer.add_special_tokens({"additional_special_tokens": specials})
    tokenizer.chat_template = template
    return tokenizer


def end_of_turn_model(tokenizer, end_of_turn: int):
    """A real Llama whose every next token is `end_of_turn`: its layers write nothing to the residual stream, every
    embedding's first coordinate is 1, and the untied LM head reads only that coordinate, for `end_of_turn`."""
    torch.manual_seed(0)
    model = build_tiny_model(tokenizer)
    model.config.tie_word_embeddings = False
    model.lm_head = torch.nn.Linear(model.config.hidden_size, model.config.vocab_size, bias=False)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        model.model.embed_tokens.weight[:, 0] = 1.0
        model.lm_head.weight.zero_()
        model.lm_head.weight[end_of_turn, 0] = 50.0
    return model.eval()


def test_stop_tokens_come_from_eos_the_generation_config_and_the_chat_template(tmp_path):
    gemma = chat_tokenizer(GEMMA, ["<start_of_turn>", "<end_of_turn>"])
    end_of_turn = gemma.convert_tokens_to_ids("<end_of_turn>")
    assert stop_token_ids(gemma) == (gemma.eos_token_id, end_of_turn)  # the template's end of turn is not EOS
    phi = chat_tokenizer(PHI, ["<|user|>", "<|assistant|>", "<|end|>"])
    assert stop_token_ids(phi) == (phi.eos_token_id, phi.convert_tokens_to_ids("<|end|>"))
    chatml = build_word_tokenizer(WORDS)
    chatml.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    chatml.eos_token, chatml.chat_template = "<|im_end|>", policy.CHATML_TEMPLATE
    assert stop_token_ids(chatml) == (chatml.eos_token_id,)  # ChatML's end of turn is its EOS
    # a model directory's generation_config.json may list more (an int or a list), as vLLM reads it
    tokenizer = build_word_tokenizer(WORDS)
    tokenizer.save_pretrained(tmp_path)
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": [tokenizer.eos_token_id, 7]}))
    from transformers import AutoTokenizer
    assert stop_token_ids(AutoTokenizer.from_pretrained(tmp_path)) == (tokenizer.eos_token_id, 7)
    assert stop_token_ids(build_word_tokenizer(WORDS)) == (tokenizer.eos_token_id,)  # the tiny model: EOS alone


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_hf_sampler_stops_at_a_templates_end_of_turn(script):
    module = importlib.import_module(script)
    tokenizer = chat_tokenizer(GEMMA, ["<start_of_turn>", "<end_of_turn>"])
    end_of_turn = tokenizer.convert_tokens_to_ids("<end_of_turn>")
    model = end_of_turn_model(tokenizer, end_of_turn)
    text = tokenizer.apply_chat_template([{"role": "user", "content": "w1 w2"}], add_generation_prompt=True,
                                         tokenize=False)
    prompt = tokenizer(text, add_special_tokens=False)["input_ids"]
    ((ids, logprobs),) = module.HFSampler(model, tokenizer, max_new_tokens=6).generate([prompt], 1.0)
    assert ids == [end_of_turn] and len(logprobs) == 1  # not six turns' ends


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_hf_sampler_honours_max_model_len(script):
    module = importlib.import_module(script)
    torch.manual_seed(0)
    tokenizer = build_word_tokenizer(WORDS)
    model = build_tiny_model(tokenizer).eval()
    prompt = [tokenizer.bos_token_id] + [tokenizer.convert_tokens_to_ids(w) for w in WORDS[:20]]
    sampler = module.HFSampler(model, tokenizer, max_new_tokens=12, max_model_len=len(prompt) + 3)
    for _ in range(5):  # a random model rarely samples EOS: the reply stops where prompt + reply reaches the limit
        (ids, logprobs), = sampler.generate([prompt], 1.0)
        assert 1 <= len(ids) == len(logprobs) <= 3
    with pytest.raises(SystemExit, match="a prompt of 21 tokens leaves no room for a reply within --max-model-len 21"):
        module.HFSampler(model, tokenizer, max_new_tokens=12, max_model_len=len(prompt)).generate([prompt], 1.0)
    assert module.HFSampler(model, tokenizer, 12).max_model_len == model.config.max_position_embeddings


@pytest.mark.parametrize("script", SCRIPTS)
def test_chat_defaults_leave_room_for_a_protocol_reply(script, tmp_path):
    module = importlib.import_module(script)
    torch.manual_seed(0)
    chat_dir = policy.build_tiny_chat_model(str(tmp_path / "chat"), ["webshop", "math"])
    from transformers import AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(chat_dir)
    reply = ("<think>" + " ".join(["the red shoes are under fifty dollars so i click the first result"] * 8) +
             "</think><action>click[B0P51F5OIU]</action>")
    extra = {"teacher": chat_dir} if script == "branchopd" else {}
    for env in ("webshop", "math"):
        args = module.apply_env_defaults(module.Args(env=env, model=chat_dir, prompt_profile="chat", **extra))
        assert args.max_new_tokens >= len(tokenizer(reply)["input_ids"]) + 100, env  # a reasoned reply and more
        assert args.learning_rate == 1e-6
        tiny = module.apply_env_defaults(module.Args(env=env))
        assert tiny.max_new_tokens < args.max_new_tokens and tiny.learning_rate > args.learning_rate
    given = module.apply_env_defaults(module.Args(env="webshop", model=chat_dir, prompt_profile="chat",
                                                  max_new_tokens=64, learning_rate=3e-6, **extra))
    assert (given.max_new_tokens, given.learning_rate) == (64, 3e-6)  # a flag given still wins
    if script == "treepo":  # a chat model's math answer spans 8 segments of 128 tokens
        args = module.apply_env_defaults(module.Args(env="math", model=chat_dir, prompt_profile="chat"))
        assert args.segment_length * args.max_depth >= args.max_new_tokens


def test_branchopd_refuses_a_chat_student_without_a_teacher_at_once(tmp_path):
    branchopd = importlib.import_module("branchopd")
    chat_dir = policy.build_tiny_chat_model(str(tmp_path / "chat"), ["webshop"])  # a model the checks accept
    with pytest.raises(SystemExit, match="--model DIR needs --teacher DIR"):
        branchopd.apply_env_defaults(branchopd.Args(env="webshop", model=chat_dir, prompt_profile="chat"))


@pytest.mark.parametrize("script", SCRIPTS)
def test_resume_maps_the_checkpoint_to_the_cpu_and_keeps_the_cuda_generator(script):
    """The resume block loads with map_location (else every rank's tensors land on the device that saved them,
    cuda:0), and the checkpoint block saves each rank's CUDA generator state next to the CPU ones, restored when
    present (read from the scripts' source: the two blocks only run on a GPU's behalf)."""
    source = open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), f"{script}.py")).read()
    assert 'torch.load(checkpoint_path, map_location="cpu", weights_only=False)' in source
    assert '"cuda_rng": torch.cuda.get_rng_state() if torch.cuda.is_available() else None' in source
    assert 'torch.cuda.set_rng_state(rngs["cuda_rng"])' in source


def test_treepo_segments_honour_max_model_len():
    treepo = importlib.import_module("treepo")
    torch.manual_seed(0)
    tokenizer = build_word_tokenizer(WORDS)
    model = build_tiny_model(tokenizer).eval()
    prompt = [tokenizer.bos_token_id] + [tokenizer.convert_tokens_to_ids(w) for w in WORDS[:20]]
    sampler = treepo.SegmentSampler(treepo.HFSampler(model, tokenizer, max_new_tokens=12,
                                                           max_model_len=len(prompt) + 5))
    first = sampler.segments([prompt, prompt], 1.0, 3)
    assert all(len(ids) == 3 for ids, _ in first if ids[-1] != tokenizer.eos_token_id)
    second = sampler.segments([i for i in range(2) if sampler.rows[i] >= 0], 1.0, 3)
    assert all(len(ids) <= 2 for ids, _ in second) and all(row == -1 for row in sampler.rows)  # 21 + 5 reached
    path = treepo.Path(0, [1, 2], action_ids=first[0][0] + second[0][0])
    args = treepo.Args(env="math", max_new_tokens=64, max_depth=9, segment_length=3)
    assert treepo.math_stop(path, second[0][0], tokenizer, args, room=5) in ("length", "eos")
