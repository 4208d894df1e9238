"""Draw one rollout tree from a run's trees.jsonl (written by every algorithm script, schema in docs/trees.md).

Nodes are coloured by advantage (green above 0, red below, grey where the algorithm gave none); a branch
point (a node with several children) has a thick black edge; a node the algorithm scored carries its score
(H: entropy, D: teacher disagreement, s: fork score), also printed as text; each leaf shows its return (and *
if it won).
`--html` also writes a self-contained page with the same tree, collapsible, with every field on hover.

    python bench/show_tree.py runs/webshop__bpo__1__1796131815 --step 1 --task 17 --html
"""

from __future__ import annotations

import argparse
import html
import json
import os
import sys


def load_records(path: str) -> list[dict]:
    file = os.path.join(path, "trees.jsonl") if os.path.isdir(path) else path
    if not os.path.exists(file):
        raise SystemExit(f"{file} not found: run an algorithm script with --tree-log-every N (default 10) first")
    with open(file) as f:
        return [json.loads(line) for line in f if line.strip()]


def pick(records: list[dict], step: int | None, task: int | None) -> dict:
    """The record of `step` (default: the last logged step) and task id `task` (default: the step's first tree);
    a resumed run may have logged a step twice: the last one wins."""
    if not records:
        raise SystemExit("trees.jsonl has no trees")
    steps = sorted({r["step"] for r in records})
    step = steps[-1] if step is None else step
    at_step = [r for r in records if r["step"] == step]
    if not at_step:
        raise SystemExit(f"no tree logged at step {step}; logged steps: {', '.join(map(str, steps))}")
    if task is None:
        return [r for r in at_step if r["tree"] == min(x["tree"] for x in at_step)][-1]
    matching = [r for r in at_step if r["task_id"] == task]
    if not matching:
        raise SystemExit(f"task {task} was not logged at step {step}; logged tasks: "
                         f"{', '.join(str(r['task_id']) for r in at_step)}")
    return matching[-1]


def children_of(nodes: list[dict]) -> dict[int, list[int]]:
    children: dict[int, list[int]] = {n["id"]: [] for n in nodes}
    for n in nodes:
        if n["parent"] is not None:
            children[n["parent"]].append(n["id"])
    return children


def layout(nodes: list[dict]) -> dict[int, tuple[float, float]]:
    """x = depth; y: leaves one row apart in depth-first order, a parent at the mean of its children."""
    children, positions, next_row = children_of(nodes), {}, [0]

    def place(node_id: int) -> float:
        kids = children[node_id]
        if not kids:
            y = float(next_row[0])
            next_row[0] += 1
        else:
            y = sum(place(k) for k in kids) / len(kids)
        positions[node_id] = (nodes[node_id]["depth"], y)  # ids are list positions
        return y

    place(0)
    return positions


def score_label(node: dict) -> str:
    """H entropy, D disagreement, s score; values below 0.01 in two significant digits (WebShop's verbs are
    near-certain: their entropy is about 1e-4)."""
    parts = []
    for key, name in (("entropy", "H"), ("disagreement", "D"), ("score", "s")):
        if node.get(key) is not None:
            value = node[key]
            parts.append(f"{name} {value:.2g}" if 0 < abs(value) < 0.01 else f"{name} {value:.2f}")
    return " ".join(parts)


def leaf_label(node: dict) -> str:
    returns = " ".join(f"R {leaf['return']:.2f}{'*' if leaf['won'] else ''}" for leaf in node.get("leaves", []))
    return f"{returns} ({node['stop']})" if node.get("stop") else returns


def short(text: str, width: int = 22) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


def advantage_scale(nodes: list[dict]) -> float:
    values = [abs(n["advantage"]) for n in nodes if n.get("advantage") is not None]
    return max(values + [1e-6])


def draw_png(record: dict, title: str, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    nodes = record["nodes"]
    positions, children = layout(nodes), children_of(nodes)
    rows = max(y for _, y in positions.values()) + 1
    depth = max(x for x, _ in positions.values()) + 1
    fig, ax = plt.subplots(figsize=(3.0 + 2.1 * depth, 1.2 + 0.62 * rows))
    cmap, scale = plt.get_cmap("RdYlGn"), advantage_scale(nodes)
    for n in nodes:
        if n["parent"] is not None:
            (x0, y0), (x1, y1) = positions[n["parent"]], positions[n["id"]]
            ax.plot([x0 + 0.42, x1 - 0.42], [y0, y1], color="0.55", lw=1.0,
                    ls="--" if n["kind"] in ("sibling", "fork") else "-", zorder=1)
    for n in nodes:
        x, y = positions[n["id"]]
        colour = "0.85" if n.get("advantage") is None else cmap(0.5 + 0.5 * n["advantage"] / scale)
        branch = len(children[n["id"]]) > 1
        text = short(n["text"]) if n["kind"] != "root" else "task"
        ax.text(x, y, text, ha="center", va="center", fontsize=7, zorder=3,
                bbox=dict(boxstyle="round,pad=0.3", fc=colour, ec="black" if branch else "0.4",
                          lw=2.2 if branch else 0.6))
        label = score_label(n)
        if label:
            ax.text(x, y + 0.34, label, ha="center", va="top", fontsize=6, color="navy", zorder=3)
        if n.get("leaves"):
            ax.text(x + 0.45, y, leaf_label(n), ha="left", va="center", fontsize=7, zorder=3)
    ax.set_xlim(-0.6, depth - 0.2 + 0.5)
    ax.set_ylim(rows - 0.4, -0.8)
    ax.set_xlabel("depth (turns; math: segments or the pieces between forks)")
    ax.set_yticks([])
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    mappable = plt.cm.ScalarMappable(cmap=cmap, norm=matplotlib.colors.Normalize(-scale, scale))
    fig.colorbar(mappable, ax=ax, fraction=0.025, pad=0.01, label="advantage (mean over the node's tokens)")
    handles = [Line2D([], [], color="0.55", ls="-", label="main path / segment"),
               Line2D([], [], color="0.55", ls="--", label="sibling / fork continuation"),
               Line2D([], [], marker="s", color="w", markeredgecolor="black", markeredgewidth=2, markersize=9,
                      label="branch point"),
               Line2D([], [], marker="s", color="w", markerfacecolor="0.85", markersize=9, label="no advantage"),
               Line2D([], [], color="none", label="R: leaf return (* won); H entropy, D disagreement, s score")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.0, -0.06), ncol=3, fontsize=7, frameon=False)
    ax.set_title(title, fontsize=9, loc="left")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


HTML_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font: 13px sans-serif; margin: 1.5em; }}
ul {{ list-style: none; padding-left: 1.4em; border-left: 1px dotted #999; margin: 0; }}
summary {{ cursor: pointer; margin: 2px 0; }}
.node {{ display: inline-block; padding: 1px 6px; border-radius: 4px; border: 1px solid #666; }}
.branch {{ border: 2px solid black; }}
.fork, .sibling {{ border-style: dashed; }}
.meta {{ color: #335; font-size: 11px; margin-left: 6px; }}
</style></head><body>
<h3>{title}</h3>
<p>Colour: advantage (green &gt; 0, red &lt; 0, grey: none). Thick border: branch point. Dashed: a sibling or
fork continuation. Hover a node for every field; click to fold it.</p>
<div id="tree"></div>
<script>
const record = {data};
const byParent = {{}};
for (const n of record.nodes) {{ (byParent[n.parent] = byParent[n.parent] || []).push(n); }}
const scale = Math.max(1e-6, ...record.nodes.filter(n => n.advantage !== null).map(n => Math.abs(n.advantage)));
function colour(a) {{
  if (a === null) return "#ddd";
  const t = Math.max(-1, Math.min(1, a / scale));
  const end = t >= 0 ? [110, 200, 110] : [235, 110, 100];  // green above 0, red below, pale at 0
  const mix = [245, 245, 230].map((v, i) => Math.round(v + Math.abs(t) * (end[i] - v)));
  return `rgb(${{mix.join(",")}})`;
}}
function render(n) {{
  const kids = byParent[n.id] || [];
  const li = document.createElement("li");
  const label = document.createElement("span");
  label.className = "node " + n.kind + (kids.length > 1 ? " branch" : "");
  label.style.background = colour(n.advantage);
  label.textContent = n.kind === "root" ? "task: " + n.text : n.text;
  label.title = Object.entries(n).map(([k, v]) => k + ": " + JSON.stringify(v)).join("\\n");
  label.dataset.node = n.id;
  const meta = document.createElement("span");
  meta.className = "meta";
  const parts = [];
  if (n.advantage !== null) parts.push("A " + n.advantage.toFixed(3));
  for (const [k, s] of [["entropy", "H"], ["disagreement", "D"], ["score", "s"]])
    if (n[k] !== undefined && n[k] !== null) parts.push(s + " " + n[k].toFixed(2));
  for (const leaf of n.leaves || []) parts.push("R " + leaf.return.toFixed(2) + (leaf.won ? "*" : ""));
  meta.textContent = parts.join(" | ");
  if (kids.length) {{
    const details = document.createElement("details");
    details.open = true;
    const summary = document.createElement("summary");
    summary.append(label, meta);
    const ul = document.createElement("ul");
    for (const k of kids) ul.appendChild(render(k));
    details.append(summary, ul);
    li.appendChild(details);
  }} else {{
    li.append(label, meta);
  }}
  return li;
}}
const treeRoot = document.createElement("ul");
treeRoot.appendChild(render(record.nodes[0]));
document.getElementById("tree").appendChild(treeRoot);
</script></body></html>
"""


def write_html(record: dict, title: str, path: str) -> None:
    data = json.dumps(record).replace("</", "<\\/")  # no early </script>
    with open(path, "w") as f:
        f.write(HTML_PAGE.format(title=html.escape(title), data=data))


def main(argv: list[str] | None = None) -> list[str]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", help="a run directory (or a trees.jsonl file)")
    parser.add_argument("--step", type=int, default=None, help="logged step (default: the last one)")
    parser.add_argument("--task", type=int, default=None, help="task id (default: the step's first tree)")
    parser.add_argument("--out", default=None, help="PNG path (default: RUN_DIR/tree_step{S}_task{T}.png)")
    parser.add_argument("--html", action="store_true", help="also write the collapsible HTML page next to it")
    cli = parser.parse_args(argv)
    record = pick(load_records(cli.run_dir), cli.step, cli.task)
    run_dir = cli.run_dir if os.path.isdir(cli.run_dir) else os.path.dirname(cli.run_dir)
    name = os.path.basename(os.path.normpath(run_dir))
    leaves = sum(len(n.get("leaves", [])) for n in record["nodes"])
    title = (f"{name}: step {record['step']}, task {record['task_id']} ({leaves} leaves, "
             f"{len(record['nodes']) - 1} nodes): {short(record['task'], 90)}")
    png = cli.out or os.path.join(run_dir, f"tree_step{record['step']}_task{record['task_id']}.png")
    draw_png(record, title, png)
    written = [png]
    if cli.html:
        written.append(os.path.splitext(png)[0] + ".html")
        write_html(record, title, written[-1])
    for path in written:
        print(path)
    print_scores(record)
    return written


def print_scores(record: dict) -> None:
    """The scored nodes as text, in depth-first order: depth, kind, children, scores and the node's text."""
    children = children_of(record["nodes"])
    for n in record["nodes"][1:]:
        label = score_label(n)
        if label:
            print(f"depth {n['depth']:2d} {n['kind']:8} children {len(children[n['id']])}  {label:28} "
                  f"{short(n['text'], 40)}")


if __name__ == "__main__":
    main(sys.argv[1:])
