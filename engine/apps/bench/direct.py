"""``bench direct``: the ``direct`` solver's factorization against every symmetric factorization installed,
side by side on the thesis scenes' system matrices.

For each scene and size, the RedMax step's M̃ (Eq. 2.14; CSC on its structural
pattern) is taken after ``WARM_STEPS`` steps of the ``direct`` solver (cables
taut, car on the deck). Each contender then does what one step of a simulation
costs it: numeric factorization + one solve, with its analysis (ordering,
symbolic factorization) done beforehand where it has one:

* ``direct``: ``engine.solvers.linalg.direct.DirectSolver`` as the stepper builds it
  (``backends="auto"``: the fastest installed backend, chosen by timing on the
  first matrix; its choice is in the ``notes`` column);
* ``pardiso``: MKL PARDISO, SPD, phase 11 once, 22 + 33 per call (``pypardiso``);
* ``cholmod``: CHOLMOD supernodal, ``analyze`` once (``scikit-sparse``);
* ``ldl``: the engine's numba LDLᵀ, leaf-to-root, elimination tree once;
* ``lapack``: dense LAPACK Cholesky (n ≤ ``direct.LAPACK_MAX_N``);
* ``splu``: SciPy's SuperLU, ordering and symbolic analysis redone every call
  (the pure-SciPy baseline without analysis reuse);
* ``pardiso_spsolve``: what ``direct`` did before: ``pypardiso.spsolve`` on a
  CSR rebuilt from triplets, unsymmetric PARDISO with the analysis every call.

Before timing, every contender's solution is checked: backward error
‖A x − b‖∞ / (‖A‖∞ ‖x‖∞ + ‖b‖∞) ≤ ``TOLERANCE``; the largest difference to
the LAPACK solution (relative to ‖x‖∞) is reported too (it grows with M̃'s
condition number, ~10⁹ on the stiff bridges). Timing: the contenders are
interleaved in rounds (``interleaved_rounds``: one short block of each, in a
shuffled order; CHOLMOD's OpenMP on one thread); a row's time is its minimum per call over the rounds. BLAS and MKL run
on one thread. The ratio that issue #21 line 4 asks for, ``direct`` over the
best contender with analysis reuse (pardiso, cholmod, ldl, lapack: the one with
the least minimum), is the median over rounds of the ratio within each round:
the two ran moments apart, so a shared machine's slow phases cancel, which
they do not between two independent minima.
"""
from __future__ import annotations

import contextlib
import ctypes
import math

import numpy as np
import scipy.sparse
import scipy.sparse.linalg

from ... import scenes
from ...scenes.bridge import NORMAL_CAR
from ...simulator import Simulator
from ...solvers.linalg import direct as direct_module
from ...solvers.linalg.direct import DirectSolver, available_backends, make_backend
from .peers import _block_seconds
from .report import Progress, Row, SuiteResult, format_seconds, markdown_table

SUITE = "direct"
DT = 1 / 60
WARM_STEPS = 6
TOLERANCE = 1e-12
TARGET = 1.2  # issue #21 line 4: direct ≤ 1.2 × the best symmetric factorization with analysis reuse
REUSED = ("pardiso", "cholmod", "ldl", "lapack")  # contenders whose analysis is done once
INSTALL = {"pardiso": "pip install -e '.[direct]' (pypardiso + MKL)",
           "cholmod": "apt-get install libsuitesparse-dev; pip install 'scikit-sparse<0.5' (SuiteSparse 5)"}

STEP_CASES = (("bridge_rigid", 1023), ("bridge_flexible_car", 511), ("umbrella", 48), ("tree", 10))
STEP_QUICK = (("bridge_rigid", 15), ("tree", 3))

CASES = {  # scene: (scene of size n, sizes, --quick sizes)
    "bridge_rigid": (lambda n: scenes.bridge(n, 0, car_mass=NORMAL_CAR), (127, 511, 1023, 2047), (15,)),
    "bridge_flexible_car": (lambda n: scenes.bridge(n, n, car_mass=NORMAL_CAR), (63, 255, 511), (7,)),
    "umbrella": (lambda n: scenes.umbrella(n), (8, 24, 48), (2,)),
    "tree": (lambda n: scenes.tree(n, "siblings"), (6, 8, 10), (3,)),
    "tree_square": (lambda n: scenes.tree(n, "square"), (6, 8), (3,)),
}


def system_matrix(scene, steps: int = WARM_STEPS):
    """M̃ of ``scene`` (CSC, full symmetric pattern) at the ``direct`` solver's last step after ``steps`` steps,
    and the stepper's leaf-to-root ordering."""
    sim = Simulator(scene, "direct", dt=DT, direct_backends=("ldl",))
    sim.step(steps)
    stepper = sim._stepper
    A = stepper._direct_matrix
    return scipy.sparse.csc_matrix((A.data.copy(), A.indices.copy(), A.indptr.copy()), shape=A.shape), stepper._perm


def contenders(A, perm) -> tuple[dict, dict]:
    """({name: call doing factor + one solve, returning x}, {name: note}) for every contender installed."""
    n = A.shape[0]
    b = np.random.default_rng(7).standard_normal(n)
    values = A.data
    calls, notes = {}, {}

    solver = DirectSolver("auto", perm=perm)
    solver.factor(A)
    notes["direct"] = solver.describe()
    calls["direct"] = lambda: (solver.factor(A), solver.solve(b))[1]

    installed = available_backends(REUSED)
    for name in REUSED:
        if name not in installed:
            notes[name] = f"not installed ({INSTALL[name]})"
            continue
        if name == "lapack" and n > direct_module.LAPACK_MAX_N:
            continue
        f = make_backend(name, A, perm)
        calls[name] = (lambda f: lambda: (f.factor(values), f.solve(b))[1])(f)
    calls["splu"] = lambda: scipy.sparse.linalg.splu(
        A, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options={"SymmetricMode": True}).solve(b)
    if "pardiso" in installed:
        import pypardiso

        rows, cols = A.indices, np.repeat(np.arange(n), np.diff(A.indptr))

        def spsolve_before():  # the old hook: a CSR from triplets, then spsolve (unsymmetric, analysis each call)
            return np.asarray(pypardiso.spsolve(scipy.sparse.csr_matrix((values, (rows, cols)), shape=(n, n)), b))
        calls["pardiso_spsolve"] = spsolve_before
        notes["pardiso_spsolve"] = "before: unsymmetric PARDISO, analysis every call"
    notes["splu"] = "SuperLU, analysis every call"
    return calls, notes, b


def check(A, b, solutions: dict) -> dict:
    """{name: (backward error, difference to the reference relative to ‖x‖∞)}; raises above TOLERANCE."""
    ref = solutions.get("lapack", solutions["direct"])
    norm_A = abs(A).sum(axis=1).max()
    out = {}
    for name, x in solutions.items():
        x = np.asarray(x).reshape(-1)
        backward = float(np.abs(A @ x - b).max() / (norm_A * np.abs(x).max() + np.abs(b).max()))
        if not backward <= TOLERANCE:
            raise RuntimeError(f"bench direct: {name}: backward error {backward:.1e} > {TOLERANCE}")
        out[name] = (backward, float(np.abs(x - ref).max() / np.abs(ref).max()))
    return out


def interleaved_rounds(calls: dict, *, min_time: float, rounds: int) -> tuple[dict, dict]:
    """({name: per-call seconds in each round (rounds,)}, {name: calls per block}): each contender's block
    long enough to last about min_time (from its fastest of three single calls), then ``rounds`` rounds each timing one block of every contender, in
    a shuffled order (a library's idle threads can slow whatever runs right after it)."""
    block = {}
    for name, fn in calls.items():
        fn()  # warm-up
        one = min(_block_seconds(fn, 1) for _ in range(3))
        block[name] = max(1, min(1_000_000, math.ceil(min_time / max(one, 1e-9))))
    samples = {name: np.empty(rounds) for name in calls}
    names = list(calls)
    order = np.random.default_rng(0)
    for r in range(rounds):  # a new order each round: no contender always runs after the same one
        for name in order.permutation(names):
            samples[name][r] = _block_seconds(calls[name], block[name]) / block[name]
    return samples, block


@contextlib.contextmanager
def single_threaded_openmp():
    """Every loaded GNU OpenMP runtime (CHOLMOD's, here) on one thread inside the block: its idle threads
    otherwise spin for a while after each parallel region and slow whichever contender runs next (measured
    here: the engine's LDLᵀ run right after CHOLMOD took 10× its time in most rounds)."""
    with open("/proc/self/maps") as fh:
        paths = sorted({line.split()[-1] for line in fh if "libgomp" in line and "/" in line})
    libs = [ctypes.CDLL(p) for p in paths]
    previous = [lib.omp_get_max_threads() for lib in libs]
    for lib in libs:
        lib.omp_set_num_threads(1)
    try:
        yield
    finally:
        for lib, n in zip(libs, previous):
            lib.omp_set_num_threads(n)


def run_direct(quick: bool = False, **_ignored) -> SuiteResult:
    # many short rounds: on a shared machine the minimum over short blocks is the least disturbed
    timing = dict(min_time=3e-4, rounds=7) if quick else dict(min_time=3e-4, rounds=25)
    cases = [(scene, n) for scene, (_, full, small) in CASES.items() for n in (small if quick else full)]
    rows = []
    available_backends()  # loads the optional libraries (and their OpenMP) before the thread limits below
    with direct_module.mkl_threads(1), single_threaded_openmp():
        for scene_name, n in Progress(cases, f"bench {SUITE}"):
            A, perm = system_matrix(CASES[scene_name][0](n))
            calls, notes, b = contenders(A, perm)
            errors = check(A, b, {name: fn() for name, fn in calls.items()})
            samples, block = interleaved_rounds(calls, **timing)
            paired = _paired_ratios(samples, notes["direct"])
            for method, t in samples.items():
                backward, diff = errors[method]
                note = "; ".join(x for x in (notes.get(method, ""), f"backward error {backward:.0e}",
                                             f"vs LAPACK {diff:.0e}") if x)
                extra = {"nnz": A.nnz, **(paired if method == "direct" else {})}
                rows.append(Row(SUITE, scene_name, method, n, A.shape[0], float(t.min()), 0,
                                repeats=block[method] * len(t), notes=note, extra=extra))
            missing = [f"{k}: {v}" for k, v in notes.items() if k not in calls]
            if missing:
                rows[-1].notes += "; " + "; ".join(missing)
        rows += _step_rows(quick, timing)
    factorizations = [r for r in rows if not r.method.startswith("step_")]
    result = SuiteResult(rows, _ratios_text(factorizations) + _step_text(rows), min_fit=100)
    result.loglog_scenes = set(CASES)  # no log-log plots or slopes of the two-point step comparisons
    return result


def _step_rows(quick: bool, timing: dict) -> list:
    """Whole RedMax steps, PCG against ``direct``, interleaved in one process (``scene_step`` rows)."""
    rows = []
    for scene_name, n in Progress(STEP_QUICK if quick else STEP_CASES, f"bench {SUITE}: steps"):
        sims = {m: Simulator(CASES[scene_name][0](n), m, dt=DT) for m in ("pcg", "direct")}  # a scene each
        dofs = sims["pcg"].state.qd.shape[0]
        for sim in sims.values():
            sim.step(WARM_STEPS)  # compilation, the direct solver's choice, cables taut
        samples, block = interleaved_rounds({f"step_{m}": sim.step for m, sim in sims.items()},
                                            **{**timing, "rounds": min(timing["rounds"], 15)})
        ratio = float(np.median(samples["step_direct"] / samples["step_pcg"]))
        for method, t in samples.items():
            note = sims["direct"]._stepper.direct_solver.describe() if method == "step_direct" else ""
            rows.append(Row(SUITE, f"{scene_name}_step", method, n, dofs, float(t.min()), 0,
                            repeats=block[method] * len(t), notes=note, extra={"direct_over_pcg": ratio}))
    return rows


def _step_text(rows) -> str:
    by = {}
    for r in rows:
        if r.method.startswith("step_"):
            by.setdefault((r.scene, r.n, r.dofs), {})[r.method] = r
    body = [[scene.removesuffix("_step"), n, dofs, format_seconds(g["step_pcg"].seconds_per_step),
             format_seconds(g["step_direct"].seconds_per_step), g["step_direct"].notes.split(" ")[0],
             f"{g['step_direct'].extra['direct_over_pcg']:.2f}"] for (scene, n, dofs), g in by.items()]
    return ("\n## Whole steps: PCG against `direct`, interleaved (minimum per step; ratio: median of within-round "
            "ratios)\n\n" + markdown_table(["scene", "n", "dofs", "PCG step", "direct step", "direct used",
                                              "direct / PCG"], body) + "\n")


def _paired_ratios(samples: dict, direct_note: str) -> dict:
    """direct / best and direct / its own backend: medians over rounds of the within-round ratios."""
    reused = {m: samples[m].min() for m in REUSED if m in samples}
    best = min(reused, key=reused.get)
    chosen = direct_note.split(" ")[0]
    same = samples.get(chosen)
    return {"best_with_reuse": best, "direct_over_best": float(np.median(samples["direct"] / samples[best])),
            "direct_over_same": float(np.median(samples["direct"] / same)) if same is not None else math.nan}


def _ratios_text(rows) -> str:
    by_case = {}
    for r in rows:
        by_case.setdefault((r.scene, r.n, r.dofs), {})[r.method] = r
    body, worst, noise = [], 0.0, 0.0
    for (scene, n, dofs), g in by_case.items():
        d = g["direct"].extra
        best, ratio, same = d["best_with_reuse"], d["direct_over_best"], d["direct_over_same"]
        worst = max(worst, ratio)
        chosen = g["direct"].notes.split(" ")[0]
        noise = max(noise, abs(math.log(same))) if math.isfinite(same) else noise
        cell = lambda m: format_seconds(g[m].seconds_per_step) if m in g else "—"  # noqa: E731
        body.append([scene, n, dofs, g["direct"].extra["nnz"], chosen, cell("direct"), *[cell(m) for m in REUSED],
                     cell("splu"), cell("pardiso_spsolve"), best, f"{ratio:.2f}", f"{same:.2f}"])
    missing = sorted({m for g in by_case.values() for m in REUSED if m not in g and m != "lapack"})
    return ("## `direct` against each factorization (factor + one solve, minimum per call over interleaved rounds)\n\n"
            + markdown_table(["scene", "n", "dofs", "nnz(M̃)", "direct chose", "direct", *REUSED, "splu (no reuse)",
                              "pardiso_spsolve (before)", "best with reuse", "direct / best",
                              "direct / same backend"], body)
            + "\n\nRatios: medians over the rounds of the ratio within a round (see the module docstring). "
            + f"Worst `direct` / best: **{worst:.2f}** (target ≤ {TARGET}). The last column times the "
            "backend `direct` chose against its own separate instance: the same code, so its spread (here up to "
            f"×{math.exp(noise):.2f}) is the measurement noise of this machine at the time of the run. "
            + (f"Not installed here: {', '.join(missing)} ({'; '.join(INSTALL[m] for m in missing)}).\n"
               if missing else "All backends installed.\n"))
