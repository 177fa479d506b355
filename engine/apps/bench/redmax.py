"""``bench redmax``: the thesis's Section 4 — PCG vs sparse direct vs dense on bridge, umbrella, tree.

For each scene family and size, each solver simulates ``sim_time`` seconds of
scene time at dt = 1/60 s (after one warm-up step that absorbs compilation).
Methods: ``pcg`` (ours: loop closures by one projected CG run), ``pcg-dual``
(the thesis's Eq. 3.2: l + 1 PCG solves per step; scenes with closures only),
``direct`` (``engine.solvers.linalg.direct.DirectSolver``: the fastest symmetric
factorization installed, analysis once; its choice is in ``notes``) and ``dense``;
``seconds_per_step`` is the wall time per step and ``iterations`` the mean PCG
iterations per step (the most any linear solve of the step needed). BLAS and
MKL (PARDISO) run on one thread. A run
that would exceed ``RUN_BUDGET`` seconds of wall time stops early and says so
in ``notes`` (its per-step time is still an average over many steps). The
dense solver runs only up to ``DENSE_MAX_DOFS``. Slopes are fitted on the
larger sizes (dofs ≥ ``MIN_FIT``), as the thesis drops the first points.

Families (``engine.scenes``): rigid-tower bridge with a normal car; flexible
bridge (deck and each tower a third of the links) without, with a normal and
with a 500× heavy car; umbrella; tree (siblings and square variants).
"""
from __future__ import annotations

import time

import numpy as np

from ... import scenes
from ...scenes.bridge import NORMAL_CAR
from ...errors import SimulationError
from ...simulator import Simulator
from ...solvers.linalg.direct import mkl_threads
from ...solvers.steppers.redmax import RedMaxStepper
from .report import Progress, Row, SuiteResult, group_rows, markdown_table, plot_loglog, slopes

SUITE = "redmax"
DT = 1 / 60
RUN_BUDGET = 20.0  # s of wall time per (size, solver) run
DENSE_MAX_DOFS = 700
MIN_FIT = 100

FAMILIES = {  # family: (scene of size n, full sizes, --quick sizes)
    "bridge_rigid": (lambda n: scenes.bridge(n, 0, car_mass=NORMAL_CAR), (15, 31, 63, 127, 255, 511, 1023, 2047), (7, 15)),
    "bridge_flexible": (lambda n: scenes.bridge(n, n), (9, 15, 31, 63, 127, 255, 511), (7, 9)),
    "bridge_flexible_car": (lambda n: scenes.bridge(n, n, car_mass=NORMAL_CAR), (9, 15, 31, 63, 127, 255, 511), (7,)),
    "bridge_flexible_heavy_car": (lambda n: scenes.bridge(n, n, car_mass=500 * NORMAL_CAR),
                                  (9, 15, 31, 63, 127, 255, 511), (7,)),
    "umbrella": (lambda n: scenes.umbrella(n), (2, 3, 4, 6, 8, 12, 16, 24, 32, 48), (2, 3)),
    "tree": (lambda n: scenes.tree(n, "siblings"), (3, 4, 5, 6, 7, 8, 9, 10), (3, 4)),
    "tree_square": (lambda n: scenes.tree(n, "square"), (3, 4, 5, 6, 7, 8, 9, 10), (3,)),
}
THESIS = {  # seed-results.md: PCG slope, direct slope, PCG faster above (DOFs)
    "bridge_rigid": ("0.94 (1 iteration)", "2.74", "60"),
    "bridge_flexible": ("1.00", "2.39", "—"),
    "bridge_flexible_car": ("1.21 (heavy car)", "2.47", "270 (normal car)"),
    "bridge_flexible_heavy_car": ("1.21", "2.47", "306"),
    "umbrella": ("1.38", "2.35", "350"),
    "tree": ("worse than direct", "sub-quadratic", "never"),
    "tree_square": ("close to direct's slope", "—", "never"),
}


METHODS = {"pcg": ("pcg", {}), "pcg-dual": ("pcg", {"closure_method": "dual"}), "direct": ("direct", {}),
           "dense": ("dense", {})}


def _simulate(scene, method, sim_time):
    """(seconds per step, mean iterations, steps timed, note, final state) for one run."""
    solver, options = METHODS[method]
    sim = Simulator(scene, solver, dt=DT, **options)
    sim.step()  # warm-up: compilation, first factorization
    target = max(1, int(round(sim_time / DT)) - 1)
    t0 = time.perf_counter()
    steps, note = 0, ""
    while steps < target:
        sim.step()
        steps += 1
        if time.perf_counter() - t0 > RUN_BUDGET and steps >= 5:
            note = f"stopped after {steps + 1} of {target + 1} steps (time budget)"
            break
    seconds = (time.perf_counter() - t0) / steps
    if method == "direct":  # which factorization the run used
        note = "; ".join(x for x in (sim._stepper.direct_solver.describe(), note) if x)
    its = float(np.mean(sim.stats.iterations[1:])) if solver == "pcg" else 0.0
    if not np.isfinite(sim.state.q).all():  # the Simulator raises first; this guards the report
        raise RuntimeError(f"{scene.name}: {method} produced a non-finite state")
    return seconds, its, steps, note, sim.state


def run_redmax(quick: bool = False, sim_time: float | None = None) -> SuiteResult:
    with mkl_threads(1):
        return _run_redmax(quick, sim_time)


def _run_redmax(quick: bool, sim_time: float | None) -> SuiteResult:
    sim_time = sim_time if sim_time is not None else (0.2 if quick else 5.0)
    cases = [(fam, n) for fam, (_, full, small) in FAMILIES.items() for n in (small if quick else full)]
    rows, patterns, diverged = [], {}, []
    for fam, n in Progress(cases, f"bench {SUITE}"):
        scene = FAMILIES[fam][0](n)
        dofs = scene.model.nv
        for method in METHODS:
            if (method == "dense" and dofs > DENSE_MAX_DOFS) or (method == "pcg-dual" and not scene.loop_closures):
                continue
            try:
                seconds, its, steps, note, state = _simulate(scene, method, sim_time)
            except SimulationError as err:  # reported, not fitted
                diverged.append(f"{fam} n={n} ({dofs} dofs), {method}: {err}")
                continue
            rows.append(Row(SUITE, fam, method, n, dofs, seconds, its, repeats=steps, notes=note,
                            extra={"bodies": scene.model.n_bodies, "sim_time": sim_time}))
            if method == "pcg":  # the largest size that ran, at its final state, for the sparsity figure
                patterns[fam] = (scene, state)
    sl = slopes(rows, min_n=MIN_FIT)
    it_rows = [r for r in rows if r.method in ("pcg", "pcg-dual")]
    figures = {"redmax_iterations.png": lambda path: plot_loglog(
        it_rows, path, y="iterations", group=("scene", "method"), title="PCG iterations per step", min_fit=MIN_FIT)}
    for fam, (scene, state) in patterns.items():
        figures[f"redmax_sparsity_{fam}.png"] = (lambda s, st, f: lambda path: _spy(s, st, path, f))(scene, state, fam)
    text = "\n".join([_crossover_text(rows), _thesis_text(sl), _iterations_text(it_rows)]
                     + (["## Runs that diverged (left out of the tables and fits)\n", *[f"- {d}" for d in diverged], ""]
                        if diverged else []))
    return SuiteResult(rows, text, MIN_FIT, figures)


def _spy(scene, state, path, title):
    """Sparsity pattern of M̃ (thesis Figs. 5, 16, 21, 24) at the end of the run
    (cables taut by then; at rest an umbrella's canopy is slack and couples nothing)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    st = RedMaxStepper(scene, DT, "dense")
    st.step(state, scene.control(state.t))
    M = st.assemble_dense()
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.spy(np.abs(M) > 1e-12 * np.abs(M).max(), markersize=max(0.5, 60 / M.shape[0]))
    ax.set_title(f"{title}: M̃ pattern ({M.shape[0]} dofs)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _crossover_text(rows) -> str:
    body = []
    for (fam,), rs in group_rows(rows, ("scene",)).items():
        by_n = group_rows(rs, ("n",))
        faster = [min(r.dofs for r in g) for (_,), g in sorted(by_n.items())
                  if {r.method: r for r in g}.get("pcg") and {r.method: r for r in g}.get("direct")
                  and {r.method: r for r in g}["pcg"].seconds_per_step < {r.method: r for r in g}["direct"].seconds_per_step]
        sizes = sorted(by_n)
        all_faster_from = None
        for (n,) in sizes:
            g = {r.method: r for r in by_n[(n,)]}
            if "pcg" not in g or "direct" not in g:
                continue
            ok = g["pcg"].seconds_per_step < g["direct"].seconds_per_step
            if ok and all_faster_from is None:
                all_faster_from = g["pcg"].dofs
            elif not ok:
                all_faster_from = None
        body.append([fam, ", ".join(str(d) for d in faster) or "none",
                     str(all_faster_from) if all_faster_from else "—"])
    return ("## PCG vs sparse direct\n\n"
            + markdown_table(["scene", "dofs where PCG is faster", "PCG faster at every size from (dofs)"], body) + "\n")


def _thesis_text(sl) -> str:
    body = []
    for fam, (pcg, direct, cross) in THESIS.items():
        ours = [f"{sl[(fam, m)]:.2f}" if (fam, m) in sl else "—" for m in ("pcg", "pcg-dual", "direct")]
        body.append([fam, ours[0], ours[1], pcg, ours[2], direct, cross])
    return ("## Side by side with the thesis (seed 000, Sec. 4; its numbers from shared/reference/seed-results.md)\n\n"
            + markdown_table(["scene", "our PCG slope", "our PCG, thesis closures", "thesis PCG", "our direct slope",
                              "thesis direct",
                              "thesis: PCG faster above (dofs)"], body) + "\n")


def _iterations_text(it_rows) -> str:
    body = [[r.scene, r.method, r.n, r.dofs, f"{r.iterations:.2f}"] for r in it_rows]
    return ("## PCG iterations per step\n\n"
            + markdown_table(["scene", "method", "n", "dofs", "mean iterations"], body) + "\n")
