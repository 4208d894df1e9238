"""Every published comparison table is recomputed from the data committed beside it: `bench/compare.py
--from-data` on each bench/results/data/compare_*.json.gz must give the committed table byte for byte (figures are
not compared). A table without its data is one made before the data was kept, named in WITHOUT_DATA until its rerun
lands, so no new table can be published without its data."""

import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")
DATA = sorted(glob.glob(os.path.join(RESULTS, "data", "compare_*.json.gz")))
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
