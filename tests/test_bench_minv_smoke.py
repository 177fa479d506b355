"""``python -m engine bench minv --quick`` runs end to end and writes the pinned CSV columns."""
import csv
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_bench_minv_quick_writes_csv_markdown_and_plots(tmp_path):
    run = subprocess.run([sys.executable, "-m", "engine", "bench", "minv", "--quick", "--out", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = list(csv.DictReader(open(tmp_path / "minv.csv")))
    assert {"suite", "scene", "method", "n", "dofs", "seconds_per_step", "iterations"} <= set(rows[0])
    assert {r["scene"] for r in rows} == {"chain", "branched", "centipede"}
    assert {r["method"] for r in rows if r["scene"] == "centipede"} == {"minv", "minv_2threads", "cholesky", "impulse"}
    assert all(float(r["seconds_per_step"]) > 0 for r in rows)
    md = (tmp_path / "minv.md").read_text()
    assert "Fig. 4" in md and "2 threads: speed-up" in md
    assert {p.name for p in tmp_path.glob("minv_*.png")} == {"minv_chain.png", "minv_branched.png", "minv_centipede.png"}


def test_centipede_paths_script_times_and_walks(capsys):
    sys.path.insert(0, str(ROOT / "scripts" / "studies"))
    try:
        import centipede_contact_paths as script
    finally:
        sys.path.pop(0)
    assert script.main(["--segments", "3", "--rounds", "1", "--steps", "1"]) == 0
    assert script.main(["--walk", "--segments", "3", "--seconds", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "cholesky / minv " in out and "3 segments, 0.05 s, minv path: forward" in out
