"""The tree record (trees.jsonl, docs/trees.md): how episodes become nodes, and its pictures (PNG, HTML in a
real headless browser)."""

import os
import shutil
import subprocess
import sys

import matplotlib.image
import numpy as np
import pytest

import bpo
import treepo
from tests.tree_checks import branch_points, check_trees

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import show_tree  # noqa: E402


class IdTokenizer:
    """Decodes token ids to their numbers: enough to see which tokens a node holds."""

    def decode(self, ids, skip_special_tokens=True):
        return " ".join(map(str, ids))


def decision(ids, advantages):
    return bpo.Decision(prompt_ids=[0], action_ids=list(ids), logprobs=[0.0] * len(ids), advantages=list(advantages))


def test_forks_cut_the_main_trajectory_and_share_its_prefix():
    # main: 3 turns; continuation A forks at turn 1 (turn level), B inside turn 0 after 2 tokens (token level)
    decisions = [decision([10, 11, 12], [1, 1, 4]), decision([13, 14], [2, 2]), decision([15, 16, 17, 18], [0] * 4),
                 decision([20], [-1]), decision([21, 22], [-1, -1]), decision([30, 31], [5, 5])]
    main = bpo.Episode(0, tree=0, task="t", reward=1.0, won=True, decisions=[0, 1, 2])
    a = bpo.Episode(0, tree=0, branch_point=1, task="t", reward=0.0, decisions=[3, 4])
    b = bpo.Episode(0, tree=0, branch_point=2, task="t", reward=0.5, decisions=[5])
    forks = {id(a): (1, 0), id(b): (0, 2)}
    pieces = bpo.fork_pieces(decisions, [main, a, b], lambda e: forks.get(id(e)))
    assert pieces[0] == [((0, 0, 0), 0, 0, 2), ((0, 0, 2), 0, 2, 3), ((0, 1, 0), 1, 0, 2), ((0, 2, 0), 2, 0, 4)]
    assert pieces[1] == pieces[0][:2] + [((1, 1, 0), 3, 0, 1), ((1, 2, 0), 4, 0, 2)]
    assert pieces[2] == pieces[0][:1] + [((2, 0, 0), 5, 0, 2)]

    kinds, marks, extras = ["backbone", "sibling", "sibling"], {(0, 0, 2): {"entropy": 0.7}}, {0: {"snapshot_s": 0.1}}
    [record] = bpo.tree_records(3, [main, a, b], decisions, pieces, IdTokenizer(), 2, kinds, marks, extras)
    nodes = record["nodes"]
    assert (record["step"], record["task"], record["snapshot_s"]) == (3, "t", 0.1)
    assert [n["text"] for n in nodes] == ["t", "10 11", "12", "13 14", "15 16 17 18", "20", "21 22", "30 31"]
    assert [n["parent"] for n in nodes] == [None, 0, 1, 2, 3, 2, 5, 1]
    assert [n["kind"] for n in nodes[1:]] == ["backbone"] * 4 + ["sibling"] * 3
    assert [n["id"] for n in branch_points(record)] == [1, 2]
    assert nodes[2]["entropy"] == 0.7 and "entropy" not in nodes[1]
    assert [n["return"] for n in nodes] == [0.5, 0.5, 0.5, 1.0, 1.0, 0.0, 0.0, 0.5]
    assert [n["advantage"] for n in nodes] == [None, 1.0, 4.0, 2.0, 0.0, -1.0, -1.0, 5.0]
    assert [(n["id"], n["leaves"]) for n in nodes if "leaves" in n] == [
        (4, [{"return": 1.0, "won": True}]), (6, [{"return": 0.0, "won": False}]), (7, [{"return": 0.5, "won": False}])]


def test_segments_shared_by_cousins_average_their_advantages():
    decisions = [decision([1, 2, 3, 4], [1] * 4), decision([1, 2, 5], [3] * 3)]
    leaves = [treepo.Episode(0, 0, task="t", reward=1.0, decisions=[0], node_ids=[7, 8], stop="eos"),
              treepo.Episode(0, 0, task="t", reward=0.0, decisions=[1], node_ids=[7, 9], stop="length")]
    pieces = treepo.segment_pieces(decisions, leaves, 2)
    assert pieces == [[((0, 7), 0, 0, 2), ((0, 8), 0, 2, 4)], [((0, 7), 1, 0, 2), ((0, 9), 1, 2, 3)]]
    [record] = treepo.tree_records(1, leaves, decisions, pieces, IdTokenizer(), 1, ["segment"] * 2,
                                   {(0, 8): {"stop": "eos"}, (0, 9): {"stop": "length"}}, {})
    shared, first, second = record["nodes"][1:]
    assert (shared["text"], shared["advantage"], shared["return"]) == ("1 2", 2.0, 0.5)
    assert (first["stop"], first["advantage"], second["stop"], second["text"]) == ("eos", 1.0, "length", "5")


def test_only_the_first_trees_are_logged():
    decisions = [decision([1], [0]), decision([2], [0]), decision([3], [0])]
    episodes = [bpo.Episode(t, tree=t, decisions=[t]) for t in range(3)]
    pieces = bpo.fork_pieces(decisions, episodes, lambda e: None)
    records = bpo.tree_records(1, episodes, decisions, pieces, IdTokenizer(), 2, ["episode"] * 3, {}, {})
    assert [r["tree"] for r in records] == [0, 1]


def chromium() -> str | None:
    return next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(name)), None)


@pytest.mark.slow
def test_show_tree_draws_a_bpo_run_and_its_page_renders_in_a_browser(tmp_path, cache_dir):
    run_dir = bpo.main(bpo.Args(env="webshop", total_steps=1, sft_steps=20, sft_episodes=40, tasks_per_step=2,
                                eval_tasks=2, minibatch_size=16, cache_dir=cache_dir, runs_dir=str(tmp_path)))
    [record, _] = check_trees(run_dir, {"backbone", "sibling"})
    png, page = show_tree.main([run_dir, "--step", "1", "--task", str(record["task_id"]), "--html"])
    image = matplotlib.image.imread(png)
    assert image.shape[0] > 200 and image.shape[1] > 400 and np.std(image[..., :3]) > 0.05  # not a blank canvas
    with pytest.raises(SystemExit, match="no tree logged at step 5"):
        show_tree.main([run_dir, "--step", "5"])

    browser = chromium()
    if browser is None:
        if os.environ.get("TREE_RL_REQUIRE_BROWSER") == "1":
            pytest.fail("TREE_RL_REQUIRE_BROWSER=1 but no chromium on PATH (apt-get install chromium)")
        pytest.skip("no headless browser (apt-get install chromium)")
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
    dom = subprocess.run(flags + ["--dump-dom", f"file://{page}"], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    # the page builds its nodes with JavaScript: they are in the DOM only if the browser ran it
    assert dom.count("data-node=") == len(record["nodes"])
    assert dom.count('class="node') == len(record["nodes"])
    shot = tmp_path / "page.png"
    subprocess.run(flags + [f"--screenshot={shot}", "--window-size=1000,700", f"file://{page}"],
                   capture_output=True, timeout=120, check=True)
    pixels = matplotlib.image.imread(str(shot))
    assert pixels.shape[:2] == (700, 1000) and np.std(pixels[..., :3]) > 0.02


def test_trees_from_different_sampling_rounds_keep_their_own_nodes():
    """Dynamic sampling grows trees in rounds, and node ids restart with each round: same ids, other trees."""
    decisions = [decision([1, 2], [1, 1]), decision([3, 4], [2, 2])]
    leaves = [treepo.Episode(5, 0, task="a", decisions=[0], node_ids=[0, 1], stop="eos"),
              treepo.Episode(6, 1, task="b", decisions=[1], node_ids=[0, 1], stop="boxed")]
    pieces = treepo.segment_pieces(decisions, leaves, 1)
    marks = {(e.tree, e.node_ids[-1]): {"stop": e.stop} for e in leaves}
    records = treepo.tree_records(1, leaves, decisions, pieces, IdTokenizer(), 2, ["segment"] * 2, marks, {})
    assert [[(n["text"], n.get("stop")) for n in r["nodes"][1:]] for r in records] == [
        [("1", None), ("2", "eos")], [("3", None), ("4", "boxed")]]
