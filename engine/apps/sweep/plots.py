"""Plots of a sweep's dataset: stability maps (dt × stiffness, one panel per solver) and time vs size."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path


def plot_sweep(rows, out) -> list:
    """Draw every plot the rows support into ``out``; returns the paths written.

    ``stability_<label>.png``: per solver, each cell at (dt, stiffness factor), stable ● / unstable ✕ /
    failed ■ (grids with more than one dt or stiffness). ``time_vs_size_<label>.png``: CPU seconds per
    step against dofs, one line per solver and dt (grids with more than one size)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_label = defaultdict(list)
    for r in rows:
        by_label[str(r["label"])].append(r)
    paths = []
    for label, rs in sorted(by_label.items()):
        ok = [r for r in rs if r["dt"] not in ("", None)]
        if len({r["dt"] for r in ok}) > 1 or len({r["stiffness"] for r in ok}) > 1:
            paths.append(_stability_map(plt, label, ok, Path(out) / f"stability_{_safe(label)}.png"))
        timed = [r for r in ok if r["stable"] is True and r["dofs"] not in ("", None)]
        if len({r["dofs"] for r in timed}) > 1:
            paths.append(_time_vs_size(plt, label, timed, Path(out) / f"time_vs_size_{_safe(label)}.png"))
    return paths


def _safe(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in label)


def _stability_map(plt, label, rows, path):
    solvers = sorted({str(r["solver"]) for r in rows})
    fig, axes = plt.subplots(1, len(solvers), figsize=(3.6 * len(solvers), 3.4), squeeze=False, sharey=True)
    for ax, solver in zip(axes[0], solvers):
        for r in (r for r in rows if r["solver"] == solver):
            style = (("o", "tab:green") if r["stable"] is True else ("s", "0.5") if r["status"] == "failed"
                     else ("x", "tab:red"))
            ax.scatter(float(r["dt"]), float(r["stiffness"]), marker=style[0], color=style[1], s=40)
        _log_ticks(ax, sorted({float(r["dt"]) for r in rows}), sorted({float(r["stiffness"]) for r in rows}))
        ax.set_title(solver)
        ax.set_xlabel("dt (ms)")
    axes[0][0].set_ylabel("stiffness factor")
    fig.suptitle(f"{label}: stable ● unstable ✕ failed ■")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _log_ticks(ax, xs, ys):
    """Log axes ticked at the grid's own values (dt in ms, stiffness factors), no minor labels."""
    from matplotlib.ticker import NullFormatter, NullLocator

    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(xs, [f"{1e3 * x:.3g}" for x in xs])
    ax.set_yticks(ys, [f"{y:g}" for y in ys])
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_minor_locator(NullLocator())
        axis.set_minor_formatter(NullFormatter())


def _time_vs_size(plt, label, rows, path):
    lines = defaultdict(list)
    for r in rows:
        lines[(str(r["solver"]), float(r["dt"]), float(r["stiffness"]))].append((float(r["dofs"]), float(r["seconds_per_step"])))
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for (solver, dt, k), pts in sorted(lines.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-",
                label=f"{solver}, dt={1e3 * dt:.3g} ms" + (f", k×{k:g}" if k != 1 else ""))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("dofs")
    ax.set_ylabel("CPU s per step")
    ax.set_title(f"{label}: time vs size (stable cells)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
