"""``python -m engine bench spd --quick`` runs end to end and writes its files (it is run here, never timed)."""
import csv
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PINNED = ["suite", "scene", "method", "n", "dofs", "seconds_per_step", "iterations"]


@pytest.mark.slow
def test_bench_spd_quick_writes_tables_plots_and_checks(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               OMP_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-m", "engine", "bench", "spd", "--quick", "--out", str(tmp_path)],
                         env=env, capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    with open(tmp_path / "spd.csv", newline="") as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames[:7] == PINNED
        rows = list(reader)
    assert all(r["suite"] == "spd" and float(r["seconds_per_step"]) > 0 for r in rows)
    by_scene = {}
    for r in rows:
        by_scene.setdefault(r["scene"], set()).add(r["method"])
    for scene in ("humanoid_walk", "humanoid_run", "dog_trot", "dog_canter", "snake36_slither", "snake72_slither",
                  "snake195_slither"):
        assert by_scene[scene] == {"maba", "maba-standalone", "dense", "sparse", "pcg", "passive"}, scene
    assert by_scene["snake_scaling"] == {"maba", "dense", "sparse", "pcg"}
    assert by_scene["tracking_humanoid_run"] == by_scene["tracking_dog_canter"] == {"maba", "dense", "pd",
                                                                                   "maba-velocity"}
    table2 = [r for r in rows if r["scene"] == "dog_canter"]
    # a ratio of two timings: finite and positive; not bounded by 1 here (a --quick run under load can time the SPD
    # work alone slower than the whole step), and speed is not asserted in tests
    assert all(0 <= float(r["spd_share"]) < math.inf for r in table2 if r["method"] in ("maba", "dense", "sparse", "pcg"))
    pd_runs = [r for r in rows if r["scene"].startswith("tracking_") and r["method"] == "pd"]
    assert pd_runs and all(r["diverged"] == "True" for r in pd_runs)
    assert {int(r["n"]) for r in rows if r["scene"] == "tracking_dog_canter"} == {300, 120, 60, 30}
    md = (tmp_path / "spd.md").read_text()
    for section in ("Table 2 beside the paper", "Table 3 beside the paper", "Tracking error against Δt",
                    "SPD time against dofs", "Checks against the issue's targets", "slope"):
        assert section in md, section
    for png in ("spd_snake_scaling.png", "spd_tracking_humanoid_run.png", "spd_tracking_dog_canter.png",
                "spd_table2.png"):
        assert (tmp_path / png).exists(), png
    assert not (tmp_path / "spd_humanoid_walk.png").exists()  # no one-point log-log plots
    assert str(tmp_path / "spd.csv") in res.stdout
