"""engine sweep on dask.distributed: grids expand, an interrupted sweep resumes losing and redoing nothing,
a failing cell is recorded with its message."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("dask.distributed")

from engine.apps.sweep import SpecError, expand_grid, load_spec, read_rows, run_sweep  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SPEC = """
[sweep]
fps = 30
frames = {frames}

[[grid]]
label = "chain"
scene = "hanging_chain"
params = {{ n = [6, 12], damping = [0.05, 0.2] }}
solver = ["explicit", "pcg", "direct"]
substeps = [2, 4]

[[grid]]
label = "broken"
scene = "tree"
params = {{ levels = 0 }}
solver = "pcg"
"""
CELLS = 2 * 2 * 3 * 2 + 1


def test_grid_expands_to_the_product_of_its_axes(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.format(frames=10))
    cells = load_spec(spec)["cells"]
    assert len(cells) == CELLS and len({c["cell"] for c in cells}) == CELLS
    assert {c["params"]["n"] for c in cells if c["label"] == "chain"} == {6, 12}
    with pytest.raises(SpecError, match="unknown key.*stiffnes"):
        expand_grid({"scene": "tree", "solver": "pcg", "stiffnes": [1, 2]})
    with pytest.raises(SpecError, match="substeps or dt"):
        expand_grid({"scene": "tree", "solver": "pcg", "substeps": 1, "dt": 0.01})


def _files(out):
    return {p.name: p.read_bytes() for p in (out / "cells").glob("*.csv")}


@pytest.mark.slow
def test_killed_sweep_resumes_without_recomputing_or_losing_cells(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.format(frames=600))
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "engine", "sweep", str(spec), "--out", str(out), "--workers", "2",
                             "--no-plots"], cwd=ROOT, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            if (out / "cells").is_dir() and len(list((out / "cells").glob("*.csv"))) >= 4:
                break
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the sweep, its scheduler and its worker processes
        proc.wait()
    before = _files(out)
    assert 4 <= len(before) < CELLS, f"kill the sweep midway: {len(before)} of {CELLS} cells were done"

    from dask.distributed import LocalCluster

    # the rest on an existing cluster (the --scheduler path), 2 workers
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        res = run_sweep(load_spec(spec), out, scheduler=cluster.scheduler_address, progress=False, plots=False)
    assert res["skipped"] == len(before) and res["done"] == CELLS - len(before)
    after = _files(out)
    assert len(after) == CELLS
    for name, content in before.items():
        assert after[name] == content  # finished cells were neither redone nor rewritten
    rows = read_rows(out)
    assert len({r["cell"] for r in rows}) == CELLS
    assert len({r["run"] for r in rows}) == 2  # two runs: the killed one and the resume
    broken = [r for r in rows if r["label"] == "broken"]
    assert len(broken) == 1 and broken[0]["status"] == "failed"
    assert "levels must be ≥ 1" in broken[0]["error"]
    chain = [r for r in rows if r["label"] == "chain"]
    assert all(r["status"] == "ok" and r["frames_done"] == 600 or not r["stable"] for r in chain)
    assert sum(r["stable"] is True for r in chain) >= 12  # (explicit at 2 substeps may not hold; the rest do)


def test_cells_with_dt_and_stiffness_run_in_process_and_plot(tmp_path):
    """run_cell without Dask: a dt axis (whole steps per frame) and a stiffness factor; the plots draw."""
    from engine.apps.sweep import run_cell, write_row
    from engine.apps.sweep.plots import plot_sweep

    cells = expand_grid({"scene": "tree", "params": {"levels": 2}, "solver": ["explicit", "pcg"], "dt": [1 / 60, 1 / 240],
                         "stiffness": [1.0, 50.0], "frames": 20, "fps": 30})
    rows = [run_cell(c, "t") for c in cells]
    for c, r in zip(cells, rows):
        assert r["status"] == "ok", r["error"]
        assert r["substeps"] == round(1 / (30 * c["dt"])) and r["frames_done"] <= 20
        write_row(tmp_path, r)
    assert all(r["stable"] for r in rows if r["solver"] == "pcg")  # the implicit step takes these in its stride
    got = read_rows(tmp_path)
    assert len(got) == len(cells) and {r["cell"] for r in got} == {c["cell"] for c in cells}
    paths = plot_sweep(got, tmp_path)
    assert [p.name for p in paths] == ["stability_tree.png"] and paths[0].stat().st_size > 0
