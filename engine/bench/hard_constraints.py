"""``bench hard-constraints``: seed 003's claims, measured.

* ``hub`` (Appendix B): a free hub body with n scalar ball-joint rows to small
  satellites (``engine.solvers.graph_split.hub_system``). Seconds per step to
  factor and solve its constraint system J M⁻¹ Jᵀ λ = b with the sparse LDLᵀ
  (symbolic analysis included, as a changing contact set needs it), ``unsplit``
  (the hub's rows form a dense block: cubic) against ``split`` by the appendix's
  heuristic (banded: linear). ``n`` is the hub's scalar constraint rows; ``dofs``
  the rows of the system (with the welds' when split); the bandwidth is recorded.
* ``strandbeest`` (Appendix A): the largest stable time step of the restructured
  velocity-Verlet integration against symplectic Euler (``step_size_rows``).
"""
from __future__ import annotations

import numpy as np

from ..solvers.graph_split import bandwidth, factor_and_solve, hub_system
from .report import Progress, Row, SuiteResult, markdown_table, time_call

SUITE = "hard-constraints"
JOINTS, JOINTS_QUICK = (8, 16, 32, 64, 128, 256, 512, 1024, 2048), (8, 32, 128)
UNSPLIT_MAX = 512  # joints: the dense block is 3n × 3n


def _hub_rows(quick: bool) -> list:
    rows = []
    sizes = JOINTS_QUICK if quick else JOINTS
    for joints in Progress(sizes, f"bench {SUITE}: hub"):
        for method in ("unsplit", "split"):
            if method == "unsplit" and joints > UNSPLIT_MAX:
                continue
            system = hub_system(joints, split=method == "split")
            A = system.A
            b = np.random.default_rng(0).normal(size=A.shape[0])
            t = time_call(lambda: factor_and_solve(A, b), min_time=0.02 if quick else 0.1, batches=3 if quick else 5)
            rows.append(Row(SUITE, "hub", method, 3 * joints, A.shape[0], t.seconds, 0, repeats=t.calls,
                            extra={"parts": system.n_parts, "bandwidth": bandwidth(A),
                                   "bound": 11 + 2 * max(system.part_rows)}))
    return rows


def _hub_text(rows) -> str:
    body = []
    by = {(r.method, r.n): r for r in rows if r.scene == "hub"}
    for n in sorted({r.n for r in rows if r.scene == "hub"}):
        s, u = by[("split", n)], by.get(("unsplit", n))
        body.append([n, s.extra["parts"], s.extra["bandwidth"], s.extra["bound"],
                     u.extra["bandwidth"] if u else "—", f"{s.seconds_per_step * 1e3:.3g}",
                     f"{u.seconds_per_step * 1e3:.3g}" if u else "—",
                     f"{u.seconds_per_step / s.seconds_per_step:.1f}" if u else "—"])
    return ("## Appendix B: a body with n constraint rows, split or not\n\n" + markdown_table(
        ["n rows", "parts", "β split", "11 + 2 z_max", "β unsplit", "split (ms)", "unsplit (ms)", "unsplit / split"],
        body) + "\n")


def run_hard_constraints(quick: bool = False, **_ignored) -> SuiteResult:
    rows = _hub_rows(quick)
    text = _hub_text(rows)
    loglog = ["hub"]
    try:
        from ..solvers.hard_constraints import step_size_rows
    except ImportError:  # the integrator comparison needs the solver module
        step_size_rows = None
    if step_size_rows is not None:
        step_rows, step_text = step_size_rows(quick)
        rows += step_rows
        text += "\n" + step_text
    result = SuiteResult(rows, text, 64)
    result.loglog_scenes = loglog
    return result
