"""``scripts/blender_bench.py`` runs a suite inside Blender's Python (the bpy wheel) via
``redmax.run_benchmark`` and writes the same CSV as ``python -m engine bench``."""
import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("bpy")

ROOT = Path(__file__).resolve().parents[1]
PINNED = ["suite", "scene", "method", "n", "dofs", "seconds_per_step", "iterations"]


def _run(tmp_path, *args):
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(tmp_path / "user")}
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "blender_bench.py"), *args], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_blender_bench_writes_the_suite_csv_markdown_and_plots(tmp_path):
    run = _run(tmp_path, "redmax", "--quick", "--sim-time", "0.05", "--out", str(tmp_path / "out"))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    rows = list(csv.DictReader(open(tmp_path / "out" / "redmax.csv")))
    assert rows and all(c in rows[0] for c in PINNED)
    assert {r["method"] for r in rows} >= {"pcg", "direct"}
    md = (tmp_path / "out" / "redmax.md").read_text()
    assert "Run inside Blender" in md
    assert list((tmp_path / "out").glob("redmax_*.png"))


def test_blender_bench_rejects_an_unknown_suite(tmp_path):
    run = _run(tmp_path, "nope")
    assert run.returncode == 2 and "unknown suite 'nope'" in run.stderr
