"""``bench hard-constraints``: seed 003's claims, measured.

* ``hub`` (Appendix B): a free hub body with n scalar ball-joint rows to small
  satellites (``engine.solvers.linalg.graph_split.hub_system``). Seconds per step to
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

from ...errors import SimulationError
from ...scenes.linkages import strandbeest
from ...scenes.simple import tumbling_top
from ...simulator import Simulator
from ...solvers.linalg.graph_split import bandwidth, factor_and_solve, hub_system
from ...solvers.steppers.hard_constraints import INTEGRATORS
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
    step_rows, step_text = step_size_rows(quick)
    rows += step_rows
    text += "\n" + step_text
    result = SuiteResult(rows, text, 64)
    result.loglog_scenes = loglog
    return result


# ------------------------------------------------- Appendix A: largest stable step
def step_size_rows(quick: bool):
    """Largest stable step of velocity-Verlet and symplectic Euler on the Strandbeest and on the tumbling
    top, where the two differ (bench rows, text)."""
    seconds = 1.0 if quick else 5.0
    rounds = 2 if quick else 7
    out, body = [], []
    for integrator in INTEGRATORS:
        h = largest_stable_step(strandbeest, integrator, seconds, lo=0.01, rounds=rounds)
        out.append(Row("hard-constraints", "strandbeest", integrator, 12, 0, h, 0,
                       extra={"stable_dt": h, "seconds": seconds}))
        body.append([integrator, f"{h * 1e3:.3g} ms"])
    ratio = out[0].seconds_per_step / max(out[1].seconds_per_step, 1e-12)
    top_seconds, top_lo, top_rounds = 5.0, (2.5e-3 if quick else 2.5e-4), (1 if quick else rounds)
    top_body = []
    for integrator in INTEGRATORS:
        h = largest_stable_step(tumbling_top, integrator, top_seconds, lo=top_lo, hi=0.2, rounds=top_rounds,
                                stable=keeps_energy)
        out.append(Row("hard-constraints", "tumbling_top", integrator, 1, 0, h, 0,
                       extra={"stable_dt": h, "seconds": top_seconds}))
        top_body.append([integrator, f"{h * 1e3:.3g} ms" + (" (the bracket's top)" if h >= 0.2 else "")])
    h_verlet, h_symplectic = out[2].seconds_per_step, out[3].seconds_per_step
    top_ratio = (f"{h_verlet / h_symplectic:.0f}×" if h_symplectic > 0 else
                 f"> {h_verlet / top_lo:.0f}× (symplectic Euler fails even at {top_lo * 1e3:g} ms)")
    text = ("## Appendix A: largest stable step on the Strandbeest (12 legs, crank 2 rad/s)\n\n"
            f"Stable: {seconds:g} s of walking in which every step's joint correction converges (≤ 30 "
            "iterations to 1e-9), the chassis stays within 5 cm of its starting height and moves forward; "
            f"bisection over dt in log scale ({rounds} rounds between 10 ms and 0.2 s). The `seconds_per_step` "
            "column holds that step (s).\n\n"
            + markdown_table(["integrator", "largest stable dt"], body)
            + f"\n\nvelocity-Verlet / symplectic Euler: **{ratio:.2f}×** (the seed: up to 6×). The two differ "
            "only in the gyroscopic terms of the rotation update (σ* in steps 1–3), which vanish for bodies "
            "turning about a principal axis, as every bar of this planar linkage does; see "
            "docs/hard_constraints.md.\n\n"
            "## Appendix A: largest stable step on the tumbling top (where the gyroscopic terms matter)\n\n"
            f"`engine.scenes.tumbling_top()`: a free brick spinning at 10 rad/s about its intermediate axis, no "
            f"gravity. Stable: {top_seconds:g} s with the energy within 1 % of its start at every step; "
            f"bisection over dt in log scale ({top_rounds} rounds between {top_lo * 1e3:g} ms and 0.2 s).\n\n"
            + markdown_table(["integrator", "largest stable dt"], top_body)
            + f"\n\nvelocity-Verlet / symplectic Euler: **{top_ratio}**. Symplectic Euler's explicit "
            "−h I⁻¹(ω × Iω) feeds energy into a tumbling body; Appendix A's σ*, solved by Newton's method at "
            "the step's end, does not.\n")
    return out, text


def _run(make_scene, integrator: str, dt: float, seconds: float, step_ok):
    """The simulator after ``seconds`` of steps, or None when a step fails or ``step_ok(sim)`` is false."""
    sim = Simulator(make_scene(), "hard-constraints", dt=dt, integrator=integrator)
    step_ok = step_ok(sim)  # bound to the start state
    try:
        for _ in range(int(np.ceil(seconds / dt))):
            sim.step()
            if not step_ok(sim):
                return None
    except SimulationError:
        return None
    return sim


def keeps_energy(make_scene, integrator: str, dt: float, seconds: float, tol: float = 0.01) -> bool:
    """Runs ``seconds`` with the total energy within ``tol`` (relative) of its start at every step."""
    def within(start):
        e0 = start.energy()
        return lambda sim: abs(sim.energy() - e0) <= tol * abs(e0)

    return _run(make_scene, integrator, dt, seconds, within) is not None


def is_stable(make_scene, integrator: str, dt: float, seconds: float) -> bool:
    """Runs ``seconds`` with every correction converging, the base within 5 cm of its starting
    height and moving forward (the scene's first body must be on a free joint)."""
    def level(start):
        z0 = start.state.q[2]
        return lambda sim: abs(sim.state.q[2] - z0) <= 0.05

    sim = _run(make_scene, integrator, dt, seconds, level)
    return sim is not None and bool(sim.state.q[0] > 0.0 and np.abs(sim.state.qd).max() < 1e3)


def largest_stable_step(make_scene, integrator: str, seconds: float, lo: float = 1e-3, hi: float = 0.2,
                        rounds: int = 7, stable=None) -> float:
    """Bisection (in log dt) for the largest dt that runs ``seconds`` stably (``stable``, by default
    ``is_stable``: a walking mechanism; ``keeps_energy`` for a conservative scene)."""
    stable = is_stable if stable is None else stable
    if not stable(make_scene, integrator, lo, seconds):
        return 0.0
    if stable(make_scene, integrator, hi, seconds):
        return hi
    for _ in range(rounds):
        mid = float(np.sqrt(lo * hi))
        if stable(make_scene, integrator, mid, seconds):
            lo = mid
        else:
            hi = mid
    return lo
