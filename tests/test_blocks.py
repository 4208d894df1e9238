"""The four algorithm scripts are one skeleton (grpo_baseline.py) plus each algorithm's own code, and `diff
grpo_baseline.py SCRIPT` shows only the algorithm.

A script is read as regions. A region starts at a marker line, `# TRY NOT TO MODIFY: name` (shared) or
`# ALGO LOGIC: name` (the algorithm's own), and runs to the next marker or section banner (`# ---`); an indented
marker's region also ends where the code dedents below it. Two more regions: the module docstring (everything
before `from __future__`) and the flags (from `@dataclass class Args` to the next marker: the script's flags,
defaults and presets). Lines in no region (imports, banners, `def main`) are shared too.

(a) every script has the skeleton's shared blocks in the skeleton's order, and main() the same sequence of markers;
(b) every shared block is line for line the skeleton's;
(c) every line of the diff against the skeleton lies in the docstring, the flags or an `# ALGO LOGIC:` region;
(d) the shared code is what runs: no name a shared block binds (a function, a class, a variable of its scope) is
    bound again outside shared code, unless REBOUND names it, and the algorithm's code writes no flag (`args.X = `);
(e) every flag the script shares with the skeleton resolves to the skeleton's value (its field default, the env's
    and the chat profile's defaults, --preset quick), unless INTENDED names it. --preset paper is each paper's own.
Blank lines are layout: they close a block without belonging to it, and a blank line of the diff is no code.
"""

import ast
import difflib
import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKELETON = "grpo_baseline.py"
SCRIPTS = ["bpo.py", "treepo.py", "branchopd.py"]
MARKER = re.compile(r"^(\s*)# (TRY NOT TO MODIFY|ALGO LOGIC):(.*)$")


def regions(lines: list[str]) -> list[tuple[str, str, int]]:
    """Per line: (kind, marker text, marker indent); kind is docstring, flags, shared (a TRY NOT TO MODIFY
    region), algo or unmarked."""
    labels, current = [], ("docstring", "", -1)
    for i, line in enumerate(lines):
        marker = MARKER.match(line)
        indent = len(line) - len(line.lstrip())
        if line.startswith("from __future__"):
            current = ("unmarked", "", -1)
        elif line.startswith("class Args") and i and lines[i - 1].startswith("@dataclass"):
            labels[-1] = current = ("flags", "", -1)
        elif line.startswith("# ---"):
            current = ("unmarked", "", -1)
        elif marker:
            current = ("shared" if marker.group(2) == "TRY NOT TO MODIFY" else "algo", line.strip(), indent)
        elif line.strip() and current[2] > 0 and indent < current[2]:
            current = ("unmarked", "", -1)  # the code dedents below an indented region's marker
        labels.append(current)
    return labels


def shared_blocks(lines: list[str]) -> list[tuple[str, list[str]]]:
    labels = regions(lines)
    blocks: list[tuple[str, list[str]]] = []
    for line, (kind, header, _) in zip(lines, labels):
        if kind == "shared" and MARKER.match(line):
            blocks.append((header, []))
        if kind == "shared":
            blocks[-1][1].append(line)
    for _, body in blocks:  # the blank lines that close a block are layout, not code
        while body and not body[-1].strip():
            body.pop()
    return blocks


def main_markers(lines: list[str]) -> list[str]:
    start = next(i for i, line in enumerate(lines) if line.startswith("def main("))
    end = next(i for i in range(start + 1, len(lines)) if lines[i] and not lines[i][0].isspace())
    return [("shared: " + MARKER.match(line).group(3).strip()) if "TRY NOT TO MODIFY" in line else "algo"
            for line in lines[start:end] if MARKER.match(line)]


def outside_algorithm(skeleton: list[str], script: list[str]) -> list[str]:
    """The diff's lines (either side) that lie in no docstring, flags or ALGO LOGIC region."""
    left, right = regions(skeleton), regions(script)
    allowed = ("docstring", "flags", "algo")
    bad = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, skeleton, script, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        bad += [f"- {i + 1}: {skeleton[i]}" for i in range(i1, i2) if left[i][0] not in allowed and skeleton[i].strip()]
        bad += [f"+ {j + 1}: {script[j]}" for j in range(j1, j2) if right[j][0] not in allowed and script[j].strip()]
    return bad


def read(name: str) -> list[str]:
    return (ROOT / name).read_text().splitlines()


# (d) Names an algorithm binds again on purpose, each with its reason.
REBOUND = {
    "treepo.py": {("main", "sampler"): "the segment sampler wraps the shared sampler (shared prefixes across rounds)",
                  ("<module>", "SUMMED_METRICS"): "TreePO's token counts added to the metrics summed over ranks"},
    "branchopd.py": {("<module>", "SUMMED_METRICS"): "the repair loss and teacher tokens added to the summed metrics"},
}
# (e) Each script's intended differences from the skeleton's shared flag values (matched-compute comparisons rest
# on the rest being equal).
INTENDED = {
    "treepo.py": {"advantage": "its own flag of the same name: tree (subgroup) or flat advantage",
                  "num_generations": "the tree width w, the paper's 16 leaves per task",
                  "epsilon_high": "DAPO's clip-higher 0.28, as TreePO trains"},
    "branchopd.py": {"num_generations": "multi-rollout OPD's n = 7 (--mode multi_rollout)"},
}


def bindings(tree: ast.Module) -> list[tuple[str, str, int]]:
    """(scope, name, line) of every def, class, assignment, with-target and import; a function's scope is its name
    (nested: outer.inner). Loop and comprehension variables are left out: every loop binds its own before use."""
    found = []

    def names(target):
        if isinstance(target, ast.Name):
            yield target.id, target.lineno
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                yield from names(element)
        elif isinstance(target, ast.Starred):
            yield from names(target.value)

    def visit(node, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.append((scope, child.name, child.lineno))
                visit(child, child.name if scope == "<module>" else f"{scope}.{child.name}")
                continue
            if isinstance(child, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda)):
                continue  # a scope of its own
            targets = child.targets if isinstance(child, ast.Assign) else \
                [child.target] if isinstance(child, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) else \
                [child.optional_vars] if isinstance(child, ast.withitem) and child.optional_vars else []
            found.extend((scope, name, line) for target in targets for name, line in names(target))
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.extend((scope, (a.asname or a.name).split(".")[0], child.lineno) for a in child.names)
            visit(child, scope)
    visit(tree, "<module>")
    return found


def rebinding(script_name: str, script: list[str]) -> list[str]:
    """(d): names bound in shared code and again in the algorithm's, flags written by the algorithm's code."""
    labels, tree = regions(script), ast.parse("\n".join(script))
    algorithm = lambda line: labels[line - 1][0] in ("docstring", "flags", "algo")
    found = bindings(tree)
    shared = {(scope, name) for scope, name, line in found if not algorithm(line)}
    allowed = REBOUND.get(script_name, {})
    problems = [f"{line}: `{name}` ({scope}) is bound in a shared block and again here"
                for scope, name, line in found if algorithm(line) and (scope, name) in shared
                and (scope, name) not in allowed]
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        problems += [f"{t.lineno}: the algorithm's code writes the flag args.{t.attr}" for target in targets
                     for t in ast.walk(target) if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                     and t.value.id == "args" and algorithm(t.lineno)]
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setattr" and algorithm(node.lineno):
            problems.append(f"{node.lineno}: the algorithm's code calls setattr")
    return problems


def load(path: Path, name: str):
    """A script as a module (its top level only defines: flags, functions, main)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look the module up
    spec.loader.exec_module(module)
    return module


def resolved_flags(module, env: str, profile: str, preset: str) -> dict:
    """Every flag's value before the command line: the field default, the preset, then the env's and the chat
    profile's defaults where the field is None (as apply_env_defaults resolves them)."""
    values = {name: (f.default_factory() if callable(f.default_factory) else f.default)
              for name, f in module.Args.__dataclass_fields__.items()}
    values.update(module.PRESETS[preset])
    chat = module.CHAT_DEFAULTS[env] if profile == "chat" else {}
    for name, value in {**module.ENV_DEFAULTS[env], **chat}.items():
        if values[name] is None:
            values[name] = value
    return values


def shared_flag_differences(skeleton, module, script_name: str) -> list[str]:
    """(e): the shared flags whose resolved values differ from the skeleton's and that INTENDED does not name."""
    problems = set()
    allowed = set(INTENDED.get(script_name, {})) | {"exp_name"}  # exp_name: the script's own file name
    for env in skeleton.ENV_DEFAULTS:
        for profile in ("tiny", "chat"):
            for preset in ("none", "quick"):
                ours, theirs = (resolved_flags(m, env, profile, preset) for m in (skeleton, module))
                problems |= {f"--{name.replace('_', '-')}: {ours[name]!r} in {SKELETON}, {theirs[name]!r} here"
                             f" ({env}, {profile} profile, preset {preset})"
                             for name in ours if name in theirs and name not in allowed and ours[name] != theirs[name]}
    return sorted(problems)


def check(skeleton: list[str], script: list[str]) -> list[str]:
    """Everything (a), (b) and (c) find wrong with `script`, as readable lines (empty: it passes)."""
    problems = []
    ours, theirs = shared_blocks(skeleton), shared_blocks(script)
    if [h for h, _ in ours] != [h for h, _ in theirs]:
        problems.append("(a) shared blocks differ: " + "\n".join(difflib.unified_diff(
            [h for h, _ in ours], [h for h, _ in theirs], lineterm="", n=0)))
    if main_markers(skeleton) != main_markers(script):
        problems.append("(a) main()'s markers differ: " + "\n".join(difflib.unified_diff(
            main_markers(skeleton), main_markers(script), lineterm="", n=0)))
    theirs_by_header = dict(theirs)
    for header, body in ours:
        if header in theirs_by_header and theirs_by_header[header] != body:
            problems.append(f"(b) `{header}` differs:\n" + "\n".join(difflib.unified_diff(
                body, theirs_by_header[header], lineterm="", n=0)))
    bad = outside_algorithm(skeleton, script)
    if bad:
        problems.append(f"(c) {len(bad)} diff lines outside the docstring, flags and ALGO LOGIC:\n" + "\n".join(bad))
    return problems


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_script_is_the_skeleton_plus_its_algorithm(script):
    problems = check(read(SKELETON), read(script))
    assert not problems, f"{script}:\n" + "\n\n".join(problems)


@pytest.mark.parametrize("script", [SKELETON, *SCRIPTS])
def test_the_shared_code_is_what_runs(script):
    """(d) and (e): no shared name rebound, no flag written by the algorithm, the shared flags' values equal."""
    problems = rebinding(script, read(script))
    problems += shared_flag_differences(load(ROOT / SKELETON, "skeleton"), load(ROOT / script, "script"), script)
    assert not problems, f"{script}:\n" + "\n".join(problems)


def test_the_check_catches_a_shadowed_loss_a_written_flag_and_a_changed_default(tmp_path):
    """Three modified copies of bpo.py that (a)-(c) let through: a second `def policy_loss` in its last ALGO LOGIC
    region (Python runs the later one), `args.max_grad_norm = 1e9` in main's ALGO LOGIC, a shared flag's default
    changed (`clip_eps = 0.5`); and the learning rate times 10 by rebinding the shared optimizer."""
    script = read("bpo.py")
    last_algo = max(i for i, line in enumerate(script) if line.startswith("# ALGO LOGIC"))
    shadowed = script[:last_algo + 1] + ["def policy_loss(*args, **kwargs):", "    return 0.0", ""] + \
        script[last_algo + 1:]
    main_algo = next(i for i, line in enumerate(script) if line.startswith("        # ALGO LOGIC: 2. advantages"))
    written = script[:main_algo + 1] + ["        args.max_grad_norm = 1e9"] + script[main_algo + 1:]
    faster = script[:main_algo + 1] + ["        optimizer = torch.optim.AdamW(model.parameters(), lr=10 * args.lr)"] \
        + script[main_algo + 1:]
    assert not check(read(SKELETON), shadowed) and not check(read(SKELETON), written)  # (a)-(c) let them through
    assert any("`policy_loss` (<module>) is bound in a shared block" in p for p in rebinding("bpo.py", shadowed))
    assert any("writes the flag args.max_grad_norm" in p for p in rebinding("bpo.py", written))
    assert any("`optimizer` (main) is bound in a shared block" in p for p in rebinding("bpo.py", faster))
    changed = [line.replace("    clip_eps: float = 0.2", "    clip_eps: float = 0.5") for line in script]
    assert changed != script and not check(read(SKELETON), changed)
    (tmp_path / "bpo_changed.py").write_text("\n".join(changed) + "\n")
    problems = shared_flag_differences(load(ROOT / SKELETON, "skeleton"), load(tmp_path / "bpo_changed.py",
                                                                                  "bpo_changed"), "bpo.py")
    assert any(p.startswith("--clip-eps: 0.2 in grpo_baseline.py, 0.5 here") for p in problems), problems


def test_the_check_catches_an_edited_shared_block_and_a_stray_line():
    skeleton = read(SKELETON)
    assert not check(skeleton, skeleton)
    shared = next(i for i, line in enumerate(skeleton) if "# TRY NOT TO MODIFY: seeding" in line)
    edited = skeleton[:shared + 1] + ["    random.seed(0)"] + skeleton[shared + 1:]
    problems = check(skeleton, edited)
    assert any(p.startswith("(b) `# TRY NOT TO MODIFY: seeding") for p in problems)
    assert any(p.startswith("(c) 1 diff lines") and "random.seed(0)" in p for p in problems)
    algo = next(i for i, line in enumerate(skeleton) if "# ALGO LOGIC: 2. advantages" in line)
    assert not check(skeleton, skeleton[:algo + 1] + ["        pass"] + skeleton[algo + 1:])  # the algorithm's own
    renamed = [line.replace("# TRY NOT TO MODIFY: seeding", "# ALGO LOGIC: seeding") for line in skeleton]
    assert any(p.startswith("(a)") for p in check(skeleton, renamed))
