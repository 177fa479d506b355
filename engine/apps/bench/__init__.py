"""Benchmark suites for ``python -m engine bench SUITE`` (speed is measured here, never in tests).

A suite is a function ``run_<module>(quick: bool) -> report.SuiteResult`` in a module of
this package; register the module in ``SUITES`` and ``run_suite`` runs it with BLAS on one thread (the engine's
kernels use one) and writes its CSV, markdown and one log-log plot per scene.
"""
from __future__ import annotations

import importlib
from pathlib import Path

# suite name: its module (its function is ``run_<module>``), imported when the suite runs, so that listing the
# suites (``python -m engine bench --help``, the add-on's menu) imports no suite
SUITES = {"algorithms": "algorithms", "redmax": "redmax", "spd": "spd", "baraff": "baraff", "minv": "minv",
          "hard-constraints": "hard_constraints", "chains": "chains", "peers": "peers", "direct": "direct",
          "learn": "learn", "liveliness": "liveliness", "contact": "contact"}


def suite_function(name: str):
    """The function ``run(quick, **options) -> report.SuiteResult`` of suite ``name`` (KeyError when unknown)."""
    module = SUITES[name]
    return getattr(importlib.import_module(f"{__name__}.{module}"), f"run_{module}")


def run_suite(name: str, out_dir="bench_out", quick: bool = False, **options) -> dict:
    """Run suite ``name``; write DIR/NAME.csv, DIR/NAME.md and DIR/NAME_<scene>.png.

    Returns {"csv": path, "markdown": path, "plots": [paths], "text": markdown}.
    Raises KeyError for an unknown suite, OutputPathError (before anything runs) for an unwritable folder.
    """
    from ...output_paths import output_folder
    from . import report

    run = suite_function(name)
    output_folder(out_dir, "bench output folder")
    with report.single_threaded_blas() as limited:
        result = run(quick=quick, **{k: v for k, v in options.items() if v is not None})
    blas = f"BLAS on one thread ({', '.join(limited)})." if limited else "BLAS threads not limited (no OpenBLAS found)."
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    csv_path = report.write_csv(result.rows, out / f"{name}.csv")
    # a suite may limit the per-scene log-log plots and slope fits to its size sweeps (``loglog_scenes``)
    loglog = getattr(result, "loglog_scenes", None)
    fitted = [r for r in result.rows if loglog is None or r.scene in loglog]
    plots = [report.plot_loglog(rows, out / f"{name}_{scene}.png", title=f"{name}: {scene}", min_fit=result.min_fit)
             for (scene,), rows in report.group_rows(fitted, ("scene",)).items()]
    for fname, draw in result.figures.items():
        draw(out / fname)
        plots.append(out / fname)
    images = "\n".join(f"![{p.stem}]({p.name})" for p in plots)
    slopes = report.slopes(fitted, min_n=result.min_fit)
    title = f"bench {name}" + (" (--quick: few sizes, slopes indicative only)" if quick else "")
    md_path = out / f"{name}.md"
    text = report.write_markdown(result.rows, md_path, title, slopes, result.extra_text + "\n" + images,
                                 min_fit=result.min_fit, setup=blas)
    return {"csv": csv_path, "markdown": md_path, "plots": plots, "text": text}
