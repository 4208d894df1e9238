"""Checks of a run's trees.jsonl (docs/trees.md) shared by the end-to-end tests of the four scripts."""

import json
import os

import numpy as np
import pytest


def check_trees(run_dir: str, kinds: set[str]) -> list[dict]:
    """Every record is a well-formed tree: node ids are list positions, node 0 the root, every child one deeper
    than its parent, every node some action tokens, every childless node a leaf, returns the mean over the
    leaves below; its kinds are among `kinds`. Returns the records."""
    with open(os.path.join(run_dir, "trees.jsonl")) as f:
        records = [json.loads(line) for line in f]
    assert records and all(r["step"] == 1 for r in records)  # default --tree-log-every 10: the first step only
    for record in records:
        nodes = record["nodes"]
        assert [n["id"] for n in nodes] == list(range(len(nodes)))
        assert nodes[0]["kind"] == "root" and nodes[0]["parent"] is None and nodes[0]["advantage"] is None
        children = {n["id"]: [] for n in nodes}
        for n in nodes[1:]:
            assert n["depth"] == nodes[n["parent"]]["depth"] + 1 and n["tokens"] >= 1, n
            assert n["kind"] in kinds, n["kind"]
            assert n["advantage"] is not None and np.isfinite(n["advantage"])
            children[n["parent"]].append(n["id"])

        def leaf_returns(node_id):
            own = [leaf["return"] for leaf in nodes[node_id].get("leaves", [])]
            return own + [r for child in children[node_id] for r in leaf_returns(child)]

        for n in nodes:
            assert children[n["id"]] or n.get("leaves"), n  # a childless node is where an episode ended
            assert n["return"] == pytest.approx(float(np.mean(leaf_returns(n["id"]))), abs=1e-9)
    return records


def branch_points(record: dict) -> list[dict]:
    """The nodes with more than one child."""
    counts: dict[int, int] = {}
    for n in record["nodes"][1:]:
        counts[n["parent"]] = counts.get(n["parent"], 0) + 1
    return [record["nodes"][i] for i, c in counts.items() if c > 1]
