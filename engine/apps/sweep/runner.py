"""Parameter sweeps on Dask: ``python -m engine sweep SPEC.toml [--scheduler ADDRESS]``.

A spec (TOML) lists one or more grids; each grid's list-valued keys are axes and its cells are their
Cartesian product::

    [sweep]
    out = "sweep_out/example"   # the dataset folder (relative to the working directory)
    fps = 30                    # defaults for every grid
    frames = 250

    [[grid]]
    label = "chain"             # names the grid in the dataset and its plots
    scene = "hanging_chain"     # an engine scene (or scene_file = "x.json", or urdf = "x.urdf")
    params = { n = [16, 32, 64] }   # scene parameters; n is the scene's size
    solver = ["explicit", "pcg", "direct"]
    substeps = [1, 2, 4]        # steps per frame; or dt = [0.01, 0.005] (seconds)
    stiffness = [1.0, 10.0]     # multiplies every spring (joint springs, springs, cables)
    options = { tol = 1e-8 }    # Simulator options (not an axis)

Each cell simulates ``frames`` frames (the first frame is the start state), judged by the advisor's
test (``engine.apps.advise.judge``: divergence, energy growth, loop-closure error, PCG convergence) and
timed in process CPU seconds, with OpenBLAS on one thread as in ``engine bench``. Cells are independent tasks on a ``dask.distributed`` cluster: a
``LocalCluster`` by default, or the scheduler at ``--scheduler`` (workers need this package
installed). Each finished cell is written at once, as its own small CSV file in ``OUT/cells/``
(written to a temporary name, then renamed, so a file is whole or absent; a temporary file a killed run
left behind is removed by the next run); a re-run skips the cells already there, so an interrupted sweep
resumes and loses nothing. A cell that raises is recorded with its error; ``--retry-failed`` runs such cells
again. Bounds: ``MAX_CELLS`` cells a sweep, ``MAX_FRAMES`` frames and ``MAX_SUBSTEPS`` substeps a cell,
``MAX_WORKERS`` workers; a ``--scheduler`` that does not answer within ``SCHEDULER_TIMEOUT`` s is an error. At the end ``OUT/results.csv`` gathers every cell, and plots are drawn
(``engine.apps.sweep.plots``).
"""
from __future__ import annotations

import csv
import hashlib
import io
import itertools
import json
import math
import os
import platform
import time
import tomllib
import traceback
import uuid
from pathlib import Path

AXES = ("scene", "scene_file", "urdf", "solver", "substeps", "dt", "stiffness", "fps", "frames")
COLUMNS = ("cell", "label", "scene", "params", "solver", "substeps", "dt", "stiffness", "fps", "frames", "dofs",
           "status", "stable", "verdict", "detail", "frames_done", "steps", "cpu_seconds", "wall_seconds",
           "first_step_seconds", "seconds_per_step", "seconds_per_frame", "bake_cpu_seconds", "mean_iterations",
           "max_iterations", "energy_rise", "relative_energy_rise", "constraint_error", "error", "worker", "run",
           "finished_at")


class SpecError(ValueError):
    """A sweep spec that cannot be read; the message names the file and the key."""


# bounds of what a spec may ask (docs/advise.md, "Sweeps"): a sweep of more cells, a cell of more frames or
# substeps, would run for days; the limits say so at load instead
MAX_CELLS = 100_000
MAX_FRAMES = 100_000   # frames per cell (≥ 2: the first frame is the start state, a cell of one simulates nothing)
MAX_SUBSTEPS = 10_000  # steps per frame
MAX_WORKERS = 256      # LocalCluster worker processes
SCHEDULER_TIMEOUT = 10.0  # s to reach a --scheduler before giving up
STALE_TMP_SECONDS = 60.0  # a cell's temporary file older than this was left by a killed run
# axis: (what each value must be, test)
_AXIS_RULES = {
    "scene": ("a scene name (string)", lambda v: isinstance(v, str) and v != ""),
    "scene_file": ("a file path (string)", lambda v: isinstance(v, str) and v != ""),
    "urdf": ("a file path (string)", lambda v: isinstance(v, str) and v != ""),
    "solver": ("a solver name (string)", lambda v: isinstance(v, str) and v != ""),
    "substeps": (f"a whole number 1 … {MAX_SUBSTEPS}", lambda v: _whole(v) and 1 <= v <= MAX_SUBSTEPS),
    "dt": ("a number of seconds in (0, 1]", lambda v: _real(v) and 0 < v <= 1),
    "stiffness": ("a finite number ≥ 0", lambda v: _real(v) and v >= 0),
    "fps": ("a number of frames per second in (0, 10000]", lambda v: _real(v) and 0 < v <= 10_000),
    "frames": (f"a whole number 2 … {MAX_FRAMES} (the first frame is the start state)",
               lambda v: _whole(v) and 2 <= v <= MAX_FRAMES),
}


def _whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _real(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) != float("inf")


# ------------------------------------------------------------------ spec → cells
def load_spec(path) -> dict:
    """The parsed TOML spec with ``cells`` (list of cell dicts) and ``out`` (folder or None)."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise SpecError(f"cannot read sweep spec '{p}': {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"sweep spec '{p}': not valid TOML ({e})") from None
    head = data.get("sweep", {})
    if not isinstance(head, dict):
        raise SpecError(f"sweep spec '{p}': 'sweep' must be a [sweep] table, got {head!r}")
    if not isinstance(head.get("out", ""), str):
        raise SpecError(f"sweep spec '{p}': [sweep] out must be a folder path (string), got {head['out']!r}")
    grids = data.get("grid")
    if not isinstance(grids, list) or not grids:
        raise SpecError(f"sweep spec '{p}': needs at least one [[grid]] table")
    for g, grid in enumerate(grids):
        if not isinstance(grid, dict):
            raise SpecError(f"sweep spec '{p}': 'grid' must be [[grid]] tables, got {grid!r} as grid {g + 1}")
    cells = []
    for g, grid in enumerate(grids):
        cells += expand_grid({**{k: v for k, v in head.items() if k != "out"}, **grid}, f"{p.name}: grid {g + 1}",
                             limit=MAX_CELLS - len(cells))
    ids = [c["cell"] for c in cells]
    if len(set(ids)) != len(ids):
        raise SpecError(f"sweep spec '{p}': the grids repeat a cell (the same settings twice)")
    return {"out": head.get("out"), "cells": cells, "path": str(p)}


def expand_grid(grid: dict, where: str = "grid", *, limit: int = MAX_CELLS) -> list:
    """Cells of one grid: the Cartesian product of its list-valued axes and scene parameters (at most
    ``limit``; SpecError naming the grid and the key for a value of the wrong kind)."""
    if not isinstance(grid, dict):
        raise SpecError(f"{where}: must be a table, got {grid!r}")
    known = set(AXES) | {"label", "params", "options"}
    unknown = sorted(set(grid) - known)
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    if sum(k in grid for k in ("scene", "scene_file", "urdf")) != 1:
        raise SpecError(f"{where}: give exactly one of scene, scene_file, urdf")
    if "substeps" in grid and "dt" in grid:
        raise SpecError(f"{where}: give substeps or dt, not both")
    if "solver" not in grid:
        raise SpecError(f"{where}: needs solver (one name or a list)")
    params = grid.get("params", {})
    options = grid.get("options", {})
    if not isinstance(params, dict) or not isinstance(options, dict):
        raise SpecError(f"{where}: params and options must be tables")
    axes = {k: grid[k] for k in AXES if k in grid}
    axes.setdefault("fps", 30)
    axes.setdefault("frames", 250)
    axes.setdefault("stiffness", 1.0)
    if "dt" not in axes:
        axes.setdefault("substeps", 1)
    axes.update({f"param:{k}": v for k, v in params.items()})
    names = list(axes)
    values = [v if isinstance(v, list) else [v] for v in axes.values()]
    for n, v in zip(names, values):
        if not v:
            raise SpecError(f"{where}: axis {n} is an empty list")
        what, ok = _AXIS_RULES.get(n, ("a number, string or boolean", lambda x: isinstance(x, (int, float, str))))
        for x in v:
            if not ok(x):
                raise SpecError(f"{where}: {n.replace('param:', 'params.')} must be {what} (or a list of them), "
                                f"got {x!r}")
    if "label" in grid and not isinstance(grid["label"], str):
        raise SpecError(f"{where}: label must be a string, got {grid['label']!r}")
    count = math.prod(len(v) for v in values)
    if count > limit:
        raise SpecError(f"{where}: expands to {count:,} cells; a sweep runs at most {MAX_CELLS:,} "
                        f"(axes: {', '.join(f'{n} ×{len(v)}' for n, v in zip(names, values) if len(v) > 1)})")
    label = grid.get("label") or str(grid.get("scene") or grid.get("scene_file") or grid.get("urdf"))
    cells = []
    for combo in itertools.product(*values):
        cell = {"label": label, "params": {}, "options": options}
        for n, v in zip(names, combo):
            if n.startswith("param:"):
                cell["params"][n[6:]] = v
            else:
                cell[n] = v
        cell["cell"] = cell_id(cell)
        cells.append(cell)
    return cells


def cell_id(cell: dict) -> str:
    """A stable short id of a cell's settings (the file name of its result)."""
    keyed = {k: v for k, v in cell.items() if k != "cell"}
    return hashlib.sha1(json.dumps(keyed, sort_keys=True, default=str).encode()).hexdigest()[:16]


# --------------------------------------------------------------------- one cell
def run_cell(cell: dict, run: str = "") -> dict:
    """Simulate one cell; returns its result row (never raises: an error is recorded in the row)."""
    from ..advise import Trial, build_scene
    from ..common import single_threaded_blas

    row = {k: "" for k in COLUMNS}
    row.update(cell=cell["cell"], label=cell["label"], scene=cell.get("scene") or cell.get("scene_file") or cell.get("urdf"),
               params=json.dumps(cell["params"], sort_keys=True), solver=cell["solver"], stiffness=cell["stiffness"],
               fps=cell["fps"], frames=cell["frames"], worker=f"{platform.node()}:{os.getpid()}", run=run)
    try:
        scene = build_scene(cell.get("scene"), cell["params"], scene_file=cell.get("scene_file"), urdf=cell.get("urdf"),
                            stiffness=float(cell["stiffness"]))
        fps, frames = float(cell["fps"]), int(cell["frames"])
        if frames < 2:  # (load_spec refuses it; a cell made by hand too)
            raise SpecError(f"frames must be at least 2 (the first frame is the start state), got {frames}")
        if "dt" in cell:  # a frame is then the whole number of steps nearest 1/fps
            dt = float(cell["dt"])
            substeps = max(1, round(1.0 / (fps * dt)))
        else:
            substeps = int(cell["substeps"])
            dt = 1.0 / (fps * substeps)
        row.update(substeps=substeps, dt=dt, dofs=scene.model.nv)
        trial = Trial(scene, cell["solver"], substeps, fps, dt=dt, options=cell.get("options"))
        with single_threaded_blas():  # timed as the benchmarks are: LAPACK on one thread, like the kernels
            r = trial.advance(frames - 1)
        row.update(status="ok", stable=r.stable, verdict=r.verdict, detail=r.detail, frames_done=r.frames + 1,
                   steps=r.steps, cpu_seconds=r.cpu_seconds, wall_seconds=r.wall_seconds,
                   first_step_seconds=r.first_step_seconds, seconds_per_step=r.seconds_per_step,
                   seconds_per_frame=r.seconds_per_frame,
                   bake_cpu_seconds=r.seconds_per_frame * (frames - 1) if r.stable else "",
                   mean_iterations=r.mean_iterations, max_iterations=r.max_iterations, energy_rise=r.energy_rise,
                   relative_energy_rise=r.relative_energy_rise, constraint_error=r.constraint_error)
    except Exception as err:  # noqa: BLE001 — a failing cell is a result of the sweep, recorded with its message
        row.update(status="failed", stable=False, verdict="error", error=f"{type(err).__name__}: {err}",
                   detail=traceback.format_exc(limit=3)[-400:])
    row["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    return row


# ------------------------------------------------------------------- dataset
def cell_path(out, cell: str) -> Path:
    return Path(out) / "cells" / f"{cell}.csv"


def write_row(out, row: dict) -> Path:
    """Write one cell's row as ``OUT/cells/<cell>.csv``, whole or not at all (temp file + rename)."""
    path = cell_path(out, row["cell"])
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS)
    w.writeheader()
    w.writerow({k: row.get(k, "") for k in COLUMNS})
    tmp = path.with_suffix(f".{uuid.uuid4().hex[:8]}.tmp")
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(buf.getvalue())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def read_rows(out) -> list:
    """Every finished cell's row in ``OUT/cells`` (numbers as floats where they parse)."""
    rows = []
    for path in sorted((Path(out) / "cells").glob("*.csv")):
        with open(path, encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f):
                rows.append({k: _number(v) for k, v in row.items()})
    return rows


def _number(v):
    if v in ("True", "False"):
        return v == "True"
    try:
        return float(v) if v not in ("", None) else v
    except ValueError:
        return v


def write_results(out, rows) -> Path:
    path = Path(out) / "results.csv"
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for row in sorted(rows, key=lambda r: (str(r["label"]), str(r["solver"]), str(r["params"]), float(r["dt"] or 0))):
            w.writerow({k: row.get(k, "") for k in COLUMNS})
    return path


# ------------------------------------------------------------------------ run
def check_workers(workers) -> int:
    """The LocalCluster's worker count, 1 … MAX_WORKERS (0 or a negative count waited forever for workers)."""
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
        raise SpecError(f"--workers must be a whole number 1 … {MAX_WORKERS}, got {workers!r}")
    return workers


def remove_stale_temporaries(out) -> list:
    """Delete the cell files a killed run left half-written (``*.tmp`` in OUT/cells older than
    STALE_TMP_SECONDS: a live write renames its file within milliseconds). Returns the paths removed."""
    removed = []
    for tmp in (Path(out) / "cells").glob("*.tmp"):
        try:
            if time.time() - tmp.stat().st_mtime > STALE_TMP_SECONDS:
                tmp.unlink()
                removed.append(tmp)
        except OSError:  # gone meanwhile, or not ours to remove: the next run tries again
            pass
    return removed


def failed_cells(out) -> set:
    """The ids of the cells in OUT/cells whose recorded status is ``failed`` (the file name is the id)."""
    failed = set()
    for path in (Path(out) / "cells").glob("*.csv"):
        with open(path, encoding="utf-8", newline="") as f:
            if any(row.get("status") == "failed" for row in csv.DictReader(f)):
                failed.add(path.stem)
    return failed


def connect(scheduler: str, timeout: float = SCHEDULER_TIMEOUT):
    """A dask Client of the scheduler at ``scheduler``, or SpecError within ``timeout`` seconds."""
    from dask.distributed import Client

    try:
        return Client(scheduler, timeout=timeout)
    except (OSError, TimeoutError, ValueError, TypeError) as err:
        raise SpecError(f"--scheduler {scheduler!r}: cannot reach it within {timeout:g} s "
                        f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else 'no answer'})") from None


def run_sweep(spec: dict, out, *, scheduler: str | None = None, workers: int = 2, progress=True, plots=True,
              retry_failed: bool = False) -> dict:
    """Run the spec's unfinished cells on Dask (also those recorded as failed when ``retry_failed``); returns
    {"done", "skipped", "failed", "retried", "results", "plots"}."""
    from dask.distributed import Client, LocalCluster, as_completed

    from ...output_paths import output_folder
    from ..common import Progress

    check_workers(workers)
    out = output_folder(out, "--out")
    output_folder(out / "cells", "--out")
    remove_stale_temporaries(out)
    retry = failed_cells(out) & {c["cell"] for c in spec["cells"]} if retry_failed else set()
    todo = [c for c in spec["cells"] if c["cell"] in retry or not cell_path(out, c["cell"]).exists()]
    skipped = len(spec["cells"]) - len(todo)
    run = time.strftime("%Y%m%dT%H%M%S") + f"-{os.getpid()}"
    failed = 0
    if todo:
        cluster = None
        if scheduler:
            client = connect(scheduler)
        else:
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0")
            client = Client(cluster)
        try:
            futures = [client.submit(run_cell, c, run, key=f"redmax-cell-{c['cell']}-{run}", pure=False) for c in todo]
            by_key = {f.key: c for f, c in zip(futures, todo)}
            bar = Progress(total=len(todo), label=f"sweep ({skipped} done before)") if progress else None
            for fut in as_completed(futures):
                cell = by_key[fut.key]
                try:
                    row = fut.result()
                except Exception as err:  # noqa: BLE001 — e.g. a worker lost: recorded, the sweep goes on
                    row = {**{k: "" for k in COLUMNS}, "cell": cell["cell"], "label": cell["label"],
                           "solver": cell["solver"], "status": "failed", "stable": False, "verdict": "error",
                           "error": f"{type(err).__name__}: {err}", "run": run}
                write_row(out, row)
                failed += row["status"] == "failed"
                if bar is not None:
                    bar.update(f"{row['label']} {row['solver']} {row['verdict']}")
            if bar is not None:
                bar.__exit__(None, None, None)
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    rows = read_rows(out)
    results = write_results(out, rows)
    figures = []
    if plots:
        from .plots import plot_sweep

        figures = plot_sweep(rows, out)
    return {"done": len(todo), "skipped": skipped, "failed": failed, "retried": len(retry), "results": results,
            "plots": figures, "rows": rows}


def add_sweep_parser(sub) -> None:
    p = sub.add_parser("sweep", help="run a grid of simulations (TOML spec) on Dask; resumable",
                       description="Cells of the spec's grids run as independent Dask tasks; each finished cell is "
                                   "written at once to OUT/cells/, a re-run skips them. Needs the [sweep] extra.")
    p.add_argument("spec", help="the sweep spec (TOML)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="an existing Dask scheduler (default: a LocalCluster)")
    p.add_argument("--workers", type=int, default=2, help=f"LocalCluster worker processes, 1 … {MAX_WORKERS} (default 2)")
    p.add_argument("--retry-failed", action="store_true",
                   help="run again the cells recorded as failed (e.g. once their cause is fixed)")
    p.add_argument("--out", metavar="DIR", help="dataset folder (default: the spec's [sweep] out, or sweep_out/NAME)")
    p.add_argument("--no-plots", action="store_true", help="skip the plots")
    p.set_defaults(func=_sweep)


def _sweep(args) -> int:
    import sys

    try:
        spec = load_spec(args.spec)
    except SpecError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        print("error: engine sweep needs dask.distributed: pip install -e '.[sweep]'", file=sys.stderr)
        return 2
    from ...errors import OutputPathError
    from ...output_paths import output_folder

    out = args.out or spec["out"] or f"sweep_out/{Path(args.spec).stem}"
    try:
        check_workers(args.workers)
        output_folder(out, "--out")
        res = run_sweep(spec, out, scheduler=args.scheduler, workers=args.workers, plots=not args.no_plots,
                        retry_failed=args.retry_failed)
    except (SpecError, OutputPathError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    rows = res["rows"]
    stable = sum(1 for r in rows if r["stable"] is True)
    retried = f" ({res['retried']} of them failed before)" if res["retried"] else ""
    print(f"{len(rows)} cells in {out}: {res['done']} run now{retried}, {res['skipped']} already done; {stable} stable, "
          f"{sum(1 for r in rows if r['status'] == 'failed')} failed")
    failures: dict = {}
    for r in rows:
        if r["status"] == "failed":
            key = (r["label"], r["solver"], r["params"], r["error"])
            failures[key] = failures.get(key, 0) + 1
    for (label, solver, params, error), count in failures.items():
        print(f"  failed: {label} {solver} {params}" + (f" ({count} cells)" if count > 1 else "") + f": {error}")
    for path in [res["results"], *res["plots"]]:
        print(f"wrote {path}")
    return 0
