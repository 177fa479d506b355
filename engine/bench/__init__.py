"""Benchmark suites for ``python -m engine bench SUITE`` (speed is measured here, never in tests)."""
from __future__ import annotations

from pathlib import Path

from . import algorithms, report

SUITES = {"algorithms": algorithms.run}


def run_suite(name: str, out_dir, quick: bool = False) -> dict:
    """Run a suite; write DIR/SUITE.csv, DIR/SUITE.md and DIR/*.png; return the paths."""
    if name not in SUITES:
        raise KeyError(name)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows, md, plots = SUITES[name](quick=quick)
    csv_path, md_path = out / f"{name}.csv", out / f"{name}.md"
    report.write_csv(rows, csv_path)
    pngs = []
    for fname, (prow, title, sl) in plots.items():
        report.plot_loglog(prow, out / fname, title, sl)
        pngs.append(out / fname)
    md += "\n" + "\n".join(f"![{p.stem}]({p.name})" for p in pngs) + "\n"
    md_path.write_text(md)
    return {"csv": csv_path, "markdown": md_path, "plots": pngs, "text": md}
