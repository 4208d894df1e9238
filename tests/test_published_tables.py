"""Every published table is recomputed from the data committed beside it: `bench/compare.py --from-data` on each
bench/results/data/compare_*.json.gz must give the committed comparison table byte for byte (figures are not
compared), and `bench/published.py check` each results file's summarize_runs / compare_runs outputs from its
saved runs (data/NAME.runs.json.gz). A comparison table without its data is one made before the data was kept,
named in WITHOUT_DATA until its rerun lands, so no new table can be published without its data."""

import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")
DATA = sorted(glob.glob(os.path.join(RESULTS, "data", "compare_*.json.gz")))
RUN_DATA = sorted(glob.glob(os.path.join(RESULTS, "data", "*.runs.json.gz")))
# tables whose runs were not kept (docs/evidence.md): each leaves this list when its rerun commits its data
WITHOUT_DATA = {"compare_alfworld.md", "compare_alfworld_grpo_bpo.md", "compare_math.md", "compare_swe_grpo_bpo.md",
                "compare_webshop.md", "compare_webshop_grpo_bpo_bpo-lam0_bpo-lam0.5_bpo-fresh.md",
                "compare_webshop_sft1_grpo_bpo.md", "compare_webshop_sft2_grpo_bpo.md"}


def test_every_comparison_table_has_its_data_or_is_named_as_made_before_data_was_kept():
    tables = {os.path.basename(p) for p in glob.glob(os.path.join(RESULTS, "compare_*.md"))}
    with_data = {os.path.basename(p).replace(".json.gz", ".md") for p in DATA}
    assert tables - with_data == WITHOUT_DATA, "a table without data, or a rerun that should leave WITHOUT_DATA"
    assert not with_data - tables, "data without its table"


@pytest.mark.skipif(not DATA, reason="no comparison's data is committed yet (every table is in WITHOUT_DATA)")
def test_every_table_is_what_its_data_gives(tmp_path):
    out = subprocess.run([sys.executable, "bench/compare.py", "--from-data", *DATA, "--out-dir", str(tmp_path),
                          "--no-figure"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    for path in DATA:
        name = os.path.basename(path).replace(".json.gz", ".md")
        with open(os.path.join(RESULTS, name)) as committed:
            assert (tmp_path / name).read_text() == committed.read_text(), f"{name} differs from what its data gives"


@pytest.mark.skipif(not RUN_DATA, reason="no results file's runs are saved yet")
def test_every_results_file_with_saved_runs_is_what_they_give():
    out = subprocess.run([sys.executable, "bench/published.py", "check"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]


def test_a_results_file_is_recomputed_from_its_saved_runs_and_a_changed_number_is_caught(tmp_path, monkeypatch):
    """bench/published.py on hand-written runs (tests/test_summarize_runs.py's): `save` keeps the runs a results
    file's summarize_runs and compare_runs lines name; with the runs gone, `check` recomputes the file from that data
    alone, fails on one changed digit, and `regenerate` puts the data's numbers back; a timing line is left alone."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import published
    from tests.test_summarize_runs import write_run

    runs = tmp_path / "runs" / "x"
    runs.mkdir(parents=True)
    for seed in (1, 2, 3):
        write_run(runs / f"a{seed}", seed, set(range(5)) | {10 + seed}, set())
        write_run(runs / f"b{seed}", seed, set(range(5)) | {10 + seed, 15, 16, 17} | ({18} if seed == 2 else set()),
                  set())
    monkeypatch.setattr(published, "ROOT", str(tmp_path))  # the runs' paths are relative to the project root
    monkeypatch.setattr(published, "RESULTS", str(tmp_path / "results"))
    (tmp_path / "bench").symlink_to(os.path.join(ROOT, "bench"))
    commands = ["python bench/summarize_runs.py runs/x/a*", 'python bench/compare_runs.py "runs/x/a*" "runs/x/b*"']
    text = "# header: how it was run\n$ python bench/alfworld_step.py   (a timing: not recomputed)\n12.3 s\n\n"
    for command in commands:
        out = subprocess.run(command.replace("python", sys.executable, 1), shell=True, cwd=tmp_path,
                             capture_output=True, text=True, check=True).stdout
        text += f"$ {command}   (a note)\n{out}\n"
    (tmp_path / "results").mkdir()
    results_file = str(tmp_path / "results" / "x.txt")
    with open(results_file, "w") as f:
        f.write(text)
    published.save(results_file)
    for run in runs.iterdir():  # the data alone from here on
        for name in run.iterdir():
            name.unlink()
        run.rmdir()
    assert published.recompute(results_file) == (text, text)
    changed = text.replace("B - A +0.167 [", "B - A +0.168 [")
    assert changed != text
    with open(results_file, "w") as f:
        f.write(changed)
    before, again = published.recompute(results_file)
    assert before == changed and again == text and "12.3 s" in again
