"""``python -m engine bench baraff --quick`` runs end to end and writes the pinned CSV columns."""
import csv
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_bench_baraff_quick_writes_csv_markdown_and_plots(tmp_path):
    run = subprocess.run([sys.executable, "-m", "engine", "bench", "baraff", "--quick", "--out", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = list(csv.DictReader(open(tmp_path / "baraff.csv")))
    assert {"suite", "scene", "method", "n", "dofs", "seconds_per_step", "iterations"} <= set(rows[0])
    assert {r["method"] for r in rows} == {"sparse", "dense", "naive"}
    assert {r["scene"] for r in rows} == {"arm_2d", "tree_2d", "chain_3d", "tree_3d"}
    md = (tmp_path / "baraff.md").read_text()
    assert "Tables 1–2" in md and "Sparse against naive" in md
    assert list(tmp_path.glob("baraff_*.png"))
