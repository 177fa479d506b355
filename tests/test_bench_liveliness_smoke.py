"""``python -m engine bench liveliness --quick`` runs end to end and its acceptance measures hold: the default
step keeps the pendulum's swing and the spring's bounce where the step before lost them."""
import csv
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PINNED = ["suite", "scene", "method", "n", "dofs", "seconds_per_step", "iterations"]


def test_bench_liveliness_quick(tmp_path):
    run = subprocess.run([sys.executable, "-m", "engine", "bench", "liveliness", "--quick", "--out", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = list(csv.DictReader(open(tmp_path / "liveliness.csv")))
    assert list(rows[0].keys())[:7] == PINNED
    got = {(r["scene"], r["method"]): r for r in rows}
    assert {m for _, m in got} == {"euler", "bdf2"}
    assert float(got["pendulum_24x1", "bdf2"]["check_value"]) >= 57.0  # largest angle in the last 2 s (°)
    assert float(got["pendulum_24x2", "bdf2"]["check_value"]) >= 58.5
    assert float(got["pendulum_24x1", "euler"]["check_value"]) < 15.0
    assert abs(float(got["pendulum_24x1", "bdf2"]["period_ratio"]) - 1) < 0.01
    assert float(got["spring_24x2", "bdf2"]["check_value"]) >= 0.9  # sixth cycle / first
    assert abs(float(got["damped_spring_24x2", "bdf2"]["check_value"]) - 1) < 0.05  # decay rate / analytic
    assert all(r["stable"] == "True" for r in rows)
    assert float(got["spring_24x2", "bdf2"]["energy_kept"]) > 0.99 > 0.1 > float(got["spring_24x2", "euler"]["energy_kept"])
    md = (tmp_path / "liveliness.md").read_text()
    assert "Energy kept and swing period" in md and (tmp_path / "liveliness_energy.png").exists()
