"""Shared benchmark plumbing: timing, rows, CSV, markdown, log-log plots, progress.

Rows carry the pinned CSV columns ``suite,scene,method,n,dofs,seconds_per_step,iterations``
plus free extra columns. Timings are medians of several batches (the
machines are shared and noisy); slopes are least-squares fits of
log(time) against log(dofs) over the larger sizes only, as the thesis does.
"""
from __future__ import annotations

import csv
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

PINNED_COLUMNS = ("suite", "scene", "method", "n", "dofs", "seconds_per_step", "iterations")


@dataclass
class Row:
    suite: str
    scene: str
    method: str
    n: int
    dofs: int
    seconds_per_step: float
    iterations: float = 0.0
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        d = {k: getattr(self, k) for k in PINNED_COLUMNS}
        d.update(self.extra)
        return d


def time_call(fn, *, min_time: float = 0.02, batches: int = 5, max_calls: int = 100000) -> float:
    """Median seconds per call of fn() over ``batches`` batches of ≥ min_time each."""
    fn()
    calls = 1
    while True:  # size a batch
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time or calls >= max_calls:
            break
        calls = min(max_calls, max(calls * 2, int(calls * min_time / max(dt, 1e-9)) + 1))
    samples = [dt / calls]
    for _ in range(batches - 1):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - t0) / calls)
    return float(np.median(samples))


def fit_slope(xs, ys, min_x: float = 0.0) -> float:
    """Least-squares slope of log(y) vs log(x) over points with x ≥ min_x (nan if < 2 points)."""
    pts = [(x, y) for x, y in zip(xs, ys) if x >= min_x and y > 0]
    if len(pts) < 2:
        return float("nan")
    lx, ly = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(lx, ly, 1)[0])


def groups(rows, keys=("scene", "method")):
    out: dict = {}
    for r in rows:
        out.setdefault(tuple(getattr(r, k) for k in keys), []).append(r)
    return out


def slopes(rows, min_dofs: float, x: str = "dofs") -> dict:
    """{(scene, method): slope of seconds_per_step vs x} fitted over x ≥ min_dofs."""
    return {key: fit_slope([getattr(r, x) for r in rs], [r.seconds_per_step for r in rs], min_dofs)
            for key, rs in groups(rows).items()}


def write_csv(rows, path: Path) -> None:
    extras = []
    for r in rows:
        extras += [k for k in r.extra if k not in extras]
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(PINNED_COLUMNS) + extras)
        w.writeheader()
        for r in rows:
            w.writerow(r.as_dict())


def markdown_table(header, body) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in body]
    return "\n".join(lines)


def fmt_seconds(s: float) -> str:
    if not math.isfinite(s):
        return "—"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def results_table(rows) -> str:
    """Sizes down, methods across: seconds per step."""
    methods = list(dict.fromkeys(r.method for r in rows))
    body = []
    for (scene, n), rs in groups(rows, ("scene", "n")).items():
        by = {r.method: r for r in rs}
        body.append([scene, n, rs[0].dofs] + [fmt_seconds(by[m].seconds_per_step) if m in by else "—" for m in methods])
    return markdown_table(["scene", "n", "dofs"] + methods, body)


def plot_loglog(rows, path: Path, title: str, slope_table: dict, y: str = "seconds_per_step",
                ylabel: str = "seconds per call") -> None:
    """Log-log plot of y vs dofs, one line per (scene, method), fitted slope in the legend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5))
    for key, rs in groups(rows).items():
        xs = [r.dofs for r in rs]
        ys = [getattr(r, y) if y != "seconds_per_step" else r.seconds_per_step for r in rs]
        s = slope_table.get(key, float("nan"))
        ax.loglog(xs, ys, "o-", label=f"{'/'.join(key)}  (slope {s:.2f})", markersize=3)
    ax.set_xlabel("degrees of freedom")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


class Progress:
    """Minimal terminal progress bar on stderr: ``for x in Progress(items, 'label')``."""

    def __init__(self, items, label: str = ""):
        self.items = list(items)
        self.label = label

    def __iter__(self):
        total = len(self.items)
        for i, item in enumerate(self.items):
            self._draw(i, total, item)
            yield item
        self._draw(total, total, "done")
        sys.stderr.write("\n")

    def _draw(self, i, total, item):
        width = 30
        filled = int(width * i / max(total, 1))
        sys.stderr.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {i}/{total} {str(item)[:40]:<40}")
        sys.stderr.flush()
