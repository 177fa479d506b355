"""``python -m engine bench contact --quick`` runs end to end: the pile beside Blender's Rigid Body (the bpy wheel),
the pinned CSV columns, penetrations and floor gaps measured on both, the report's table, slopes and plot."""
import csv
import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("bpy") is None, reason="Bullet runs in Blender's Python module")
def test_bench_contact_quick(tmp_path):
    run = subprocess.run([sys.executable, "-m", "engine", "bench", "contact", "--quick", "--repeats", "2", "--out",
                          str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = list(csv.DictReader(open(tmp_path / "contact.csv")))
    assert {"suite", "scene", "method", "n", "dofs", "seconds_per_step", "iterations"} <= set(rows[0])
    methods = ("engine", "engine_200_sweeps", "bullet")
    assert {(r["method"], int(r["n"])) for r in rows} == {(m, n) for m in methods for n in (8, 27)}
    for r in rows:
        assert int(r["dofs"]) == 6 * int(r["n"]) and float(r["seconds_per_step"]) > 0
        assert 0.0 <= float(r["deepest_mm"]) < 100.0 and math.isfinite(float(r["floor_gap_mm"]))
    # the engine and Bullet take turns twice (the fastest of each reported); the 200-sweep row runs once
    assert all(int(r["runs"]) == (1 if r["method"] == "engine_200_sweeps" else 2) for r in rows), rows
    assert all(float(r["bake_seconds"]) <= float(r["bake_seconds_max"]) for r in rows)
    engine_rows = [r for r in rows if r["method"].startswith("engine")]
    assert all(float(r["deepest_mm"]) < 5.0 and abs(float(r["floor_gap_mm"])) < 5.0 for r in engine_rows), engine_rows
    md = (tmp_path / "contact.md").read_text()
    assert "× Bullet" in md and "× Bullet run by run" in md and "log-log slope" in md and "Blender 5" in md and "not measured" not in md
    assert (tmp_path / "contact_pile.png").exists()
