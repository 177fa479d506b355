"""The benchmark CLI runs end to end and writes its files (it is run here, never timed)."""
import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PINNED = ["suite", "scene", "method", "n", "dofs", "seconds_per_step", "iterations"]
METHODS = {"aba", "aba_kernel", "rnea", "crba", "crba+cholesky_solve", "ltdl_solve", "minv", "crba+cholesky_inverse"}


def run_cli(*args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "engine", *args], env=env, capture_output=True, text=True, cwd=ROOT)


@pytest.mark.slow
def test_bench_algorithms_quick_writes_csv_markdown_and_plots(tmp_path):
    res = run_cli("bench", "algorithms", "--quick", "--out", str(tmp_path))
    assert res.returncode == 0, res.stderr[-3000:]
    with open(tmp_path / "algorithms.csv", newline="") as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames[:7] == PINNED
        rows = list(reader)
    assert METHODS <= {r["method"] for r in rows}
    for scene in ("chain", "binary"):
        for method in METHODS:
            assert [r for r in rows if (r["scene"], r["method"]) == (scene, method)], (scene, method)
    assert all(float(r["seconds_per_step"]) > 0 and r["suite"] == "algorithms" for r in rows)
    md = (tmp_path / "algorithms.md").read_text()
    assert "slope" in md and "compile" in md
    assert list(tmp_path.glob("algorithms_*.png"))
    assert str(tmp_path / "algorithms.csv") in res.stdout


def test_cli_help_lists_bench():
    res = run_cli("--help")
    assert res.returncode == 0 and "bench" in res.stdout


def test_unknown_suite_is_a_one_line_error():
    res = run_cli("bench", "nosuch")
    assert res.returncode != 0
    assert "Traceback" not in res.stderr
    assert res.stderr.strip().count("\n") == 0 and "nosuch" in res.stderr


def quick_rows(suite, tmp_path):
    """Run ``bench SUITE --quick`` into tmp_path; its CSV rows (pinned columns checked)."""
    res = run_cli("bench", suite, "--quick", "--out", str(tmp_path))
    assert res.returncode == 0, res.stderr[-3000:]
    with open(tmp_path / f"{suite}.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0].keys())[:7] == PINNED
    return rows


@pytest.mark.slow
def test_bench_redmax_quick_runs_every_scene_and_solver(tmp_path):
    rows = quick_rows("redmax", tmp_path)
    scenes = {r["scene"] for r in rows}
    assert {"bridge_rigid", "bridge_flexible", "umbrella", "tree", "tree_square"} <= scenes
    assert {r["method"] for r in rows} == {"pcg", "pcg-dual", "direct", "dense"}
    assert not any(r["method"] == "pcg-dual" for r in rows if r["scene"].startswith("tree"))  # no closures
    assert all(float(r["iterations"]) == 1.0 for r in rows if r["scene"] == "bridge_rigid" and r["method"] == "pcg")
    text = (tmp_path / "redmax.md").read_text()
    assert "Side by side with the thesis" in text
    assert (tmp_path / "redmax_iterations.png").exists() and (tmp_path / "redmax_sparsity_umbrella.png").exists()


@pytest.mark.slow
def test_bench_direct_quick_times_every_installed_factorization_side_by_side(tmp_path):
    from engine.solvers.linalg.direct import available_backends

    rows = quick_rows("direct", tmp_path)
    steps = [r for r in rows if r["method"].startswith("step_")]  # whole steps, PCG against direct
    assert {(r["scene"], r["method"]) for r in steps} >= {("tree_step", "step_pcg"), ("tree_step", "step_direct")}
    rows = [r for r in rows if r not in steps]
    expected = {"direct", "splu", *available_backends()} | ({"pardiso_spsolve"} if "pardiso" in available_backends()
                                                             else set())
    for scene in ("bridge_rigid", "bridge_flexible_car", "umbrella", "tree", "tree_square"):
        assert {r["method"] for r in rows if r["scene"] == scene} == expected, scene
    assert all("backward error" in r["notes"] for r in rows)
    assert "direct / best" in (tmp_path / "direct.md").read_text()
