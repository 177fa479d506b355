"""``python -m engine bench hard-constraints --quick`` runs end to end and writes the pinned CSV columns."""
import csv
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_bench_hard_constraints_quick(tmp_path):
    run = subprocess.run([sys.executable, "-m", "engine", "bench", "hard-constraints", "--quick", "--out", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = list(csv.DictReader(open(tmp_path / "hard-constraints.csv")))
    assert {"suite", "scene", "method", "n", "dofs", "seconds_per_step", "iterations"} <= set(rows[0])
    hub = [r for r in rows if r["scene"] == "hub"]
    assert {r["method"] for r in hub} == {"split", "unsplit"}
    assert all(int(r["bandwidth"]) <= int(r["bound"]) for r in hub if r["method"] == "split")
    steps = {r["method"]: float(r["stable_dt"]) for r in rows if r["scene"] == "strandbeest"}
    assert set(steps) == {"verlet", "symplectic"} and min(steps.values()) >= 0.01
    top = {r["method"]: float(r["stable_dt"]) for r in rows if r["scene"] == "tumbling_top"}
    assert set(top) == {"verlet", "symplectic"} and top["verlet"] > top["symplectic"]
    md = (tmp_path / "hard-constraints.md").read_text()
    assert "Appendix B" in md and "Appendix A" in md
    assert (tmp_path / "hard-constraints_hub.png").exists()
