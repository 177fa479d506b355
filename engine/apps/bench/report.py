"""Shared benchmark plumbing: timing, rows, CSV, markdown, log-log plots, progress.

Every suite produces :class:`Row` records with the pinned CSV columns
``suite,scene,method,n,dofs,seconds_per_step,iterations`` followed by the
common extra columns ``repeats,compile_seconds,notes`` and any suite-specific
ones (``Row.extra``). Timings are medians of several batches measured with
``time.perf_counter`` (the machines are shared and noisy). Slopes are
least-squares fits of log(time) against log(size) over the larger sizes only.
"""
from __future__ import annotations

import csv
import math
import os
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..common import Progress, single_threaded_blas  # noqa: F401  (the suites' names)

PINNED_COLUMNS = ("suite", "scene", "method", "n", "dofs", "seconds_per_step", "iterations")
COMMON_COLUMNS = ("repeats", "compile_seconds", "notes")


@dataclass
class Row:
    """One measurement: ``method`` on a ``scene`` of ``n`` bodies and ``dofs`` degrees of freedom.

    seconds_per_step: median seconds per call. iterations: solver iterations
    per step (0 for direct methods). repeats: calls timed in total.
    compile_seconds: first-call (JIT or cache load) seconds, nan if not measured.
    extra: suite-specific columns, written after the common ones.
    """

    suite: str
    scene: str
    method: str
    n: int
    dofs: int
    seconds_per_step: float
    iterations: float = 0
    repeats: int = 0
    compile_seconds: float = math.nan
    notes: str = ""
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        d = {k: getattr(self, k) for k in PINNED_COLUMNS + COMMON_COLUMNS}
        d.update(self.extra)
        return d


@dataclass
class SuiteResult:
    """What a suite returns: its rows, markdown to append after the generic tables,
    and the smallest size used for slope fits."""

    rows: list
    extra_text: str = ""
    min_fit: int = 64
    figures: dict = field(default_factory=dict)  # file name → draw(path): extra plots of the suite


# --------------------------------------------------------------------- timing
class Timing(NamedTuple):
    seconds: float  # median seconds per call over the batches
    calls: int      # calls timed in total (all batches)


def time_call(fn, *, min_time: float = 0.05, batches: int = 5, max_repeats: int = 1_000_000) -> Timing:
    """Median seconds per call of ``fn()``.

    One untimed call first (warm-up), then the number of calls per batch is
    doubled until a batch lasts ≥ ``min_time`` seconds (at most ``max_repeats``
    calls); then ``batches`` batches of that many calls are timed with
    ``time.perf_counter`` and the median per-call time is returned.
    """
    fn()
    calls = 1
    while calls < max_repeats and _batch_seconds(fn, calls) < min_time:
        calls = min(2 * calls, max_repeats)
    samples = [_batch_seconds(fn, calls) / calls for _ in range(batches)]
    return Timing(float(np.median(samples)), calls * batches)


def _batch_seconds(fn, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return time.perf_counter() - t0


def timed_first_call(fn) -> float:
    """Seconds of one call of ``fn()`` (use on first calls: JIT compile or cache load)."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


# --------------------------------------------------------------------- slopes
def fit_slope(ns, ts, *, min_n: float = 64) -> float:
    """Least-squares slope of log(t) against log(n) over the points with n ≥ min_n.

    nan when fewer than two such points (or non-positive times) remain.
    """
    pts = [(n, t) for n, t in zip(ns, ts) if n >= min_n and t > 0]
    if len(pts) < 2:
        return math.nan
    ln, lt = np.log(np.array(pts, dtype=float)).T
    return float(np.polyfit(ln, lt, 1)[0])


def group_rows(rows, keys=("scene", "method")) -> dict:
    """{tuple of the key values: [rows]} in first-seen order."""
    out: dict = {}
    for r in rows:
        out.setdefault(tuple(getattr(r, k) for k in keys), []).append(r)
    return out


def slopes(rows, *, min_n: float = 64, x: str = "dofs", y: str = "seconds_per_step",
           group=("scene", "method")) -> dict:
    """{group key: fitted log-log slope of y against x over x ≥ min_n}."""
    return {key: fit_slope([getattr(r, x) for r in rs], [getattr(r, y) for r in rs], min_n=min_n)
            for key, rs in group_rows(rows, group).items()}


# --------------------------------------------------------------------- CSV
def write_csv(rows, path) -> Path:
    """Pinned columns, then the common ones, then every extra column seen (in order)."""
    columns = list(PINNED_COLUMNS + COMMON_COLUMNS)
    for r in rows:
        columns += [k for k in r.extra if k not in columns]
    path = Path(path)
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        for r in rows:
            writer.writerow(r.as_dict())
    return path


# --------------------------------------------------------------------- markdown
def markdown_table(header, body) -> str:
    lines = ["| " + " | ".join(str(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in body]
    return "\n".join(lines)


def format_seconds(s: float) -> str:
    """3 significant digits with a unit: '1.23 ms'; '—' for nan."""
    if not math.isfinite(s):
        return "—"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def results_table(rows) -> str:
    """Seconds per step: one line per (scene, n), one column per method."""
    methods = list(dict.fromkeys(r.method for r in rows))
    body = []
    for (scene, n), rs in group_rows(rows, ("scene", "n")).items():
        by_method = {r.method: r for r in rs}
        cells = [format_seconds(by_method[m].seconds_per_step) if m in by_method else "—" for m in methods]
        body.append([scene, n, rs[0].dofs, *cells])
    return markdown_table(["scene", "n", "dofs", *methods], body)


def slopes_table(slope_by_key: dict, keys=("scene", "method")) -> str:
    return markdown_table([*keys, "slope"], [[*key, f"{s:.2f}"] for key, s in slope_by_key.items()])


def machine_summary() -> str:
    """One line: cores, load, Python, numpy and numba versions (results depend on all of them)."""
    load = f", load average {os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else ""
    try:
        import numba
        numba_version = numba.__version__
    except ImportError:
        numba_version = "absent"
    return (f"{platform.machine()} {platform.system()}, {os.cpu_count()} cores{load}; "
            f"Python {platform.python_version()}, numpy {np.__version__}, numba {numba_version}")


def write_markdown(rows, path, title: str, slope_by_key: dict, extra_text: str = "", *, min_fit=64,
                   setup: str = "") -> str:
    """Write (and return) a markdown report: machine (and ``setup``, e.g. BLAS threads),
    one results table per scene, the fitted slopes, then ``extra_text``."""
    parts = [f"# {title}", "", f"Machine: {machine_summary()}.{' ' + setup if setup else ''}", "",
             "Median seconds per call (`seconds_per_step`).", ""]
    for (scene,), rs in group_rows(rows, ("scene",)).items():
        timed = [r for r in rs if r.seconds_per_step != 0.0]  # result-only rows (no timing) live in extra_text
        if timed:
            parts += [f"## {scene}", "", results_table(timed), ""]
    if any(np.isfinite(v) for v in slope_by_key.values()):  # a suite that fits no slope prints no table
        parts += [f"## log-log slopes (least squares on dofs ≥ {min_fit})", "", slopes_table(slope_by_key), ""]
    if extra_text:
        parts += [extra_text.rstrip(), ""]
    text = "\n".join(parts)
    Path(path).write_text(text)
    return text


# --------------------------------------------------------------------- plots
def plot_loglog(rows, path, *, x: str = "dofs", y: str = "seconds_per_step", group=("scene", "method"),
                title: str = "", min_fit: float = 64) -> Path:
    """Log-log plot of y against x, one marker line per group, with the least-squares
    line fitted on x ≥ min_fit drawn dashed and its slope in the legend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5.5))
    slope_by_key = slopes(rows, min_n=min_fit, x=x, y=y, group=group)
    for key, rs in group_rows(rows, group).items():
        xs = np.array([getattr(r, x) for r in rs], dtype=float)
        ys = np.array([getattr(r, y) for r in rs], dtype=float)
        slope = slope_by_key[key]
        (line,) = ax.loglog(xs, ys, "o-", markersize=3, label=f"{'/'.join(map(str, key))} (slope {slope:.2f})")
        fit = xs >= min_fit
        if math.isfinite(slope):
            intercept = np.mean(np.log(ys[fit]) - slope * np.log(xs[fit]))
            ax.loglog(xs[fit], np.exp(intercept) * xs[fit] ** slope, "--", color=line.get_color(), linewidth=0.8)
    ax.set_xlabel(x)
    ax.set_ylabel(y.replace("_", " "))
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)
