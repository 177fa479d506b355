"""The benchmark CLI runs end to end (it is run, never timed, in tests)."""
import csv
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PINNED = ["suite", "scene", "method", "n", "dofs", "seconds_per_step", "iterations"]


def _run(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "engine", *args], env=env, capture_output=True, text=True, cwd=ROOT)


def test_bench_algorithms_quick_writes_csv_markdown_and_plots(tmp_path):
    res = _run("bench", "algorithms", "--quick", "--out", str(tmp_path))
    assert res.returncode == 0, res.stderr[-3000:]
    with open(tmp_path / "algorithms.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0].keys())[:7] == PINNED
    methods = {r["method"] for r in rows}
    assert {"aba", "rnea", "crba", "crba+cholesky_solve", "ltdl_solve", "minv", "crba+cholesky_inverse"} <= methods
    assert all(float(r["seconds_per_step"]) > 0 for r in rows)
    assert "log-log slopes" in (tmp_path / "algorithms.md").read_text()
    assert (tmp_path / "algorithms_chain.png").stat().st_size > 1000


def test_cli_help_and_unknown_suite():
    assert "bench" in _run("--help").stdout
    res = _run("bench", "nosuch")
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0 and "unknown benchmark suite 'nosuch'" in res.stderr
