"""``python -m engine bench compare BEFORE AFTER``: two benchmark runs side by side.

BEFORE and AFTER are output folders of ``python -m engine bench SUITE --out DIR``
(or single CSV files); either side may be several runs joined by commas (``b1,b2 a1,a2``: interleave
the runs of both trees, and each row keeps the fastest run's time). Rows are matched by (suite, scene, method, n); for each
the table gives the iterations of both runs (they must be identical when a
change only moves code) and the time ratio after / before (noise on a shared
machine is ±20 % and more for sub-millisecond steps). Suite-specific result
columns that differ (e.g. ``stable_dt``) are listed too; timing-derived ones
(``us_per_body``, ``fps``, ``*_seconds``, ``*_share``) are not results.

Some suites report the *mean* iterations over the steps they timed, and how
many steps that is depends on the timing (``repeats``); such a row is marked
"other steps" when its iterations differ and its repeats differ too.
"""
from __future__ import annotations

import csv
import math
from pathlib import Path

from .report import COMMON_COLUMNS, PINNED_COLUMNS, markdown_table

KEY = ("suite", "scene", "method", "n")
# columns that are timings or run lengths by nature: they may differ between runs
TIMED = {"seconds_per_step", "repeats", "compile_seconds", "notes", "us_per_body", "fps"}


def _timed(column: str) -> bool:
    return column in TIMED or column.endswith("_seconds") or "share" in column


def read_rows(path) -> dict:
    """{(suite, scene, method, n): row dict} of every CSV in ``path`` (a folder or one file)."""
    path = Path(path)
    files = sorted(path.glob("*.csv")) if path.is_dir() else [path]
    if not files:
        raise FileNotFoundError(f"no benchmark CSV in {path}")
    out = {}
    for f in files:
        with open(f, newline="") as fh:
            for row in csv.DictReader(fh):
                out[tuple(row[k] for k in KEY)] = row
    return out


def read_fastest(paths) -> dict:
    """``read_rows`` of each comma-separated run in ``paths``; each row from the run whose step was fastest
    (the machines are shared: the minimum of interleaved runs is the least disturbed)."""
    out = {}
    for path in str(paths).split(","):
        for key, row in read_rows(path).items():
            t, best = _number(row.get("seconds_per_step")), out.get(key)
            if best is None or (t is not None and t < (_number(best.get("seconds_per_step")) or math.inf)):
                out[key] = row
    return out


def _number(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def _same(a, b) -> bool:
    x, y = _number(a), _number(b)
    if x is None or y is None:
        return a == b
    return x == y or (math.isnan(x) and math.isnan(y))


def compare(before, after) -> dict:
    """{"rows": [[key…, its before, its after, same, s before, s after, ratio, other differences]],
    "missing": keys in only one run, "iterations_identical": bool, "ratios": [after / before]}."""
    a, b = read_fastest(before), read_fastest(after)
    body, ratios, identical, other_steps = [], [], True, 0
    for key in sorted(set(a) & set(b), key=lambda k: (k[0], k[1], k[2], _number(k[3]) or 0)):
        ra, rb = a[key], b[key]
        same = _same(ra["iterations"], rb["iterations"])
        resampled = not same and not _same(ra.get("repeats"), rb.get("repeats"))  # means over other timed steps
        other_steps += resampled
        identical &= same or resampled
        ta, tb = _number(ra["seconds_per_step"]), _number(rb["seconds_per_step"])
        ratio = tb / ta if ta and tb is not None else math.nan
        if not math.isnan(ratio):
            ratios.append(ratio)
        others = [c for c in ra if not _timed(c) and c not in PINNED_COLUMNS and c not in COMMON_COLUMNS
                  and c in rb and not _same(ra[c], rb[c])]
        identical &= not others
        verdict = "yes" if same else (f"other steps ({ra['repeats']} → {rb['repeats']})" if resampled else "**NO**")
        body.append([*key, ra["iterations"], rb["iterations"], verdict,
                     f"{ta:.4g}" if ta is not None else ra["seconds_per_step"],
                     f"{tb:.4g}" if tb is not None else rb["seconds_per_step"], f"{ratio:.2f}",
                     ", ".join(f"{c}: {ra[c]} → {rb[c]}" for c in others)])
    missing = sorted(set(a) ^ set(b))
    return {"rows": body, "missing": missing, "iterations_identical": identical, "ratios": ratios,
            "other_steps": other_steps}


def compare_text(before, after) -> str:
    """Markdown: the side-by-side table, the median and range of the time ratios, unmatched rows."""
    res = compare(before, after)
    table = markdown_table(["suite", "scene", "method", "n", "iterations before", "after", "identical",
                            "s/step before", "after", "after / before", "other columns that differ"], res["rows"])
    r = sorted(res["ratios"])
    steps = (f" (apart from {res['other_steps']} rows whose mean iterations are over a different number of "
             "timed steps)" if res["other_steps"] else "")
    summary = (f"{len(res['rows'])} rows matched; iterations and result columns identical: "
               f"{'yes' if res['iterations_identical'] else 'NO'}{steps}; time ratio after / before: median "
               f"{r[len(r) // 2]:.2f}, range {r[0]:.2f}–{r[-1]:.2f}" if r else "no timed rows matched")
    per_suite = {}
    for row in res["rows"]:
        if row[9] != "nan":
            per_suite.setdefault(row[0], []).append(float(row[9]))
    suites = "\n".join(f"- {name}: median ratio {sorted(v)[len(v) // 2]:.2f} over {len(v)} rows"
                        for name, v in per_suite.items())
    missing = "".join(f"\n- only in one run: {' / '.join(k)}" for k in res["missing"])
    return (f"# bench compare\n\nbefore: `{before}`  \nafter: `{after}`\n\n{summary}\n\n{suites}\n\n{table}\n"
            f"{missing}\n")
