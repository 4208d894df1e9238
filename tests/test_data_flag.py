"""`--data`: each env reads its benchmark's real data in the real format (WebShop's data files, GSM8K-style JSONL,
the official ALFWorld games), for the train and held-out splits and the warm start alike; a missing or malformed
dataset is refused with a message naming the flag and the file."""

import csv
import json
import os
import shutil

import pytest

import grpo_baseline
from envs import dataset_kwargs, make_env
from tests.alfworld_helpers import REAL_SAMPLE, needs_real
from tests.webshop_helpers import write_fixture

GSM8K = {"train": [{"question": f"Tom has {a} apples and buys {b} more. How many apples does he have?",
                    "answer": f"{a} + {b} = <<{a}+{b}={a + b}>>{a + b}\n#### {a + b}"} for a in range(2, 8)
                   for b in range(1, 4)],
         "test": [{"question": "Ann has 9 pens and gives away 4. How many pens are left?",
                   "answer": "9 - 4 = <<9-4=5>>5\n#### 5"},
                  {"question": "A box holds 6 eggs. How many eggs are in 2 boxes?",
                   "answer": "6 * 2 = <<6*2=12>>12\n#### 12"}]}


def write_gsm8k(directory):
    """GSM8K's layout: train.jsonl and test.jsonl, one {"question", "answer"} per line, answers end `#### N`."""
    os.makedirs(directory, exist_ok=True)
    for split, records in GSM8K.items():
        with open(os.path.join(directory, f"{split}.jsonl"), "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in records)
    return str(directory)


def test_webshop_reads_its_data_files(tmp_path):
    kwargs = dataset_kwargs("webshop", write_fixture(tmp_path), ("train",))
    assert kwargs == {"data_dir": str(tmp_path)}
    env = make_env("webshop", split="train", **kwargs)
    _, info = env.reset(options={"task_id": 0})
    assert info["task"] in {g["instruction_text"] for g in env.world.all_goals}
    assert any(word in info["task"].lower() for word in ("shampoo", "running shoes"))  # the fixture's products


def test_math_reads_gsm8k_style_jsonl_per_split(tmp_path):
    kwargs = dataset_kwargs("math", write_gsm8k(tmp_path / "gsm8k"), ("train", "test"))
    test = make_env("math", split="test", **kwargs)
    assert test.num_tasks == 2 and test.reset(options={"task_id": 1})[0] == GSM8K["test"][1]["question"]
    train = make_env("math", split="train", **kwargs)
    assert train.num_tasks == len(GSM8K["train"])
    train.reset(options={"task_id": 0})
    assert train.step(train.expert_action())[1] == 1.0
    single = tmp_path / "gsm8k" / "train.jsonl"  # one file serves every split (said on stderr)
    assert make_env("math", split="test", **dataset_kwargs("math", str(single), ("test",))).num_tasks == 18


@needs_real
def test_alfworld_reads_the_official_games():
    kwargs = dataset_kwargs("alfworld", str(REAL_SAMPLE), ("train", "eval", "eval_ood"))
    env = make_env("alfworld", split="eval", **kwargs)
    assert env.num_tasks == 6
    _, info = env.reset(options={"task_id": 0})
    assert info["task"] and info["admissible_actions"]


@pytest.mark.parametrize("env_name", ["webshop", "math", "alfworld", "swe"])
def test_a_missing_dataset_is_refused_naming_the_flag_and_the_path(env_name, tmp_path):
    with pytest.raises(SystemExit, match=f"--data {tmp_path}/nowhere: no such file or directory.*--env {env_name}"):
        dataset_kwargs(env_name, str(tmp_path / "nowhere"))
    assert dataset_kwargs(env_name, None) == {}


def test_malformed_datasets_are_refused_naming_the_flag_and_the_file(tmp_path):
    (tmp_path / "webshop").mkdir()
    (tmp_path / "webshop" / "items_shuffle_1000.json").write_text("[]")
    with pytest.raises(SystemExit, match="--data .*webshop: cannot be read .*items_ins_v2_1000.json"):
        dataset_kwargs("webshop", str(tmp_path / "webshop"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(GSM8K["test"][0]) + "\n{not json\n")
    with pytest.raises(SystemExit, match=f"--data {bad}: cannot be read .*line 2: not valid JSON"):
        dataset_kwargs("math", str(bad))
    write_gsm8k(tmp_path / "no_eval")
    with pytest.raises(SystemExit, match="eval.jsonl"):  # a directory lacks a split's file
        dataset_kwargs("math", str(tmp_path / "no_eval"), ("train", "eval"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit, match="--data .*empty: no train tasks in it; --data for --env alfworld"):
        dataset_kwargs("alfworld", str(tmp_path / "empty"))


@needs_real
def test_a_broken_alfworld_game_is_refused(tmp_path):
    shutil.copytree(REAL_SAMPLE, tmp_path / "games")
    game = next((tmp_path / "games").glob("*/*/game.tw-pddl"))
    game.write_text("{truncated")
    with pytest.raises(SystemExit, match="--data .*games: cannot be read"):
        dataset_kwargs("alfworld", str(tmp_path / "games"))


def test_a_run_trains_and_evaluates_on_the_data_and_keys_its_warm_start_by_it(tmp_path, cache_dir):
    """A short GRPO run with `--data` on a GSM8K-style directory: the warm start is cloned from the file's worked
    solutions (its key names the data), rollouts play its training problems and evaluation its test problems."""
    data = write_gsm8k(tmp_path / "gsm8k")
    args = grpo_baseline.parse_args(["--env", "math", "--data", data, "--total-steps", "1", "--tasks-per-step", "2",
                                     "--num-generations", "2", "--eval-tasks", "2", "--sft-steps", "20",
                                     "--sft-episodes", "20", "--cache-dir", cache_dir, "--runs-dir", str(tmp_path)])
    run_dir = grpo_baseline.main(args)
    with open(os.path.join(run_dir, "config.json")) as f:
        config = json.load(f)
    assert config["data"] == data
    with open(os.path.join(run_dir, "policy.json")) as f:
        model_dir = json.load(f)["model_dir"]
    with open(os.path.join(model_dir, "warm_start.json")) as f:
        assert json.load(f)["env_kwargs"] == {"data_path": data}
    with open(os.path.join(run_dir, "transcripts.jsonl")) as f:
        tasks = {json.loads(line)["task"] for line in f}
    assert tasks <= {r["question"] for r in GSM8K["test"]} and tasks
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        assert [r for r in csv.DictReader(f) if r.get("train_success")]


def test_a_run_with_a_missing_dataset_writes_nothing(tmp_path):
    args = grpo_baseline.parse_args(["--env", "math", "--data", str(tmp_path / "nowhere.jsonl"), "--runs-dir",
                                     str(tmp_path / "runs")])
    with pytest.raises(SystemExit, match="--data .*nowhere.jsonl: no such file or directory"):
        grpo_baseline.main(args)
    assert not (tmp_path / "runs").exists() or not os.listdir(tmp_path / "runs")
