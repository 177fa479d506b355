"""``python -m engine bench chains --quick`` runs end to end: the term keeps the 64-link chain stable."""
import csv
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_bench_chains_quick(tmp_path):
    run = subprocess.run([sys.executable, "-m", "engine", "bench", "chains", "--quick", "--out", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = list(csv.DictReader(open(tmp_path / "chains.csv")))
    outcome = {(r["scene"], r["method"], r["n"]): r["outcome"] for r in rows if r.get("outcome")}
    assert outcome[("hanging_chain_1/30", "pcg-on", "64")] == "stable"
    assert outcome[("hanging_chain_1/30", "pcg-off", "64")].startswith("diverges")
    assert outcome[("rope_pinned_1/30", "direct-on", "64")] == "stable"
    md = (tmp_path / "chains.md").read_text()
    for section in ("Stability", "Swing of the tip", "Energy", "Cost per step", "Thesis scenes", "Springs' own"):
        assert section in md
