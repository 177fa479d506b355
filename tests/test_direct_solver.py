"""engine.solvers.linalg.direct.DirectSolver: every backend against dense solves and against PCG, analysis reuse
and re-analysis on a new pattern, the path without the optional libraries, indefinite matrices."""
import numpy as np
import pytest
import scipy.sparse
from hypothesis import given, settings

import engine
from engine import scenes
from engine.scenes.bridge import NORMAL_CAR
from engine.solvers.linalg.direct import BACKENDS, DirectSolver, available_backends
from engine.solvers.steppers.redmax import RedMaxStepper
from trees import random_trees, rel_err

INSTALLED = available_backends()
# every backend, skipped (not silently dropped) when its library is not installed here
BACKEND_PARAMS = [pytest.param(b, marks=pytest.mark.skipif(b not in INSTALLED, reason=f"{b} not installed"))
                  for b in BACKENDS] + ["auto"]


def _spd(n, density, seed, shift=1.0):
    """A random sparse SPD matrix (CSC, full symmetric pattern, sorted indices) and its dense copy."""
    rng = np.random.default_rng(seed)
    B = scipy.sparse.random(n, n, density=density, random_state=rng, format="csc")
    A = (B @ B.T + shift * scipy.sparse.eye(n)).tocsc()
    A.sort_indices()
    return A, A.toarray()


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_backend_solves_like_a_dense_solve(backend):
    A, D = _spd(60, 0.05, seed=3)
    s = DirectSolver(backend)
    s.factor(A)
    b = np.random.default_rng(4).standard_normal((60, 3))
    assert rel_err(s.solve(b), np.linalg.solve(D, b)) < 1e-10  # several right-hand sides at once
    assert rel_err(s.solve(b[:, 0]), np.linalg.solve(D, b[:, 0])) < 1e-10
    assert s.backend in INSTALLED and s.analyses >= 1


def _thesis_scenes():
    return {"bridge_rigid": scenes.bridge(7, 0, car_mass=NORMAL_CAR), "bridge_flexible": scenes.bridge(7, 3),
            "umbrella": scenes.umbrella(2), "tree": scenes.tree(3, "siblings"), "tree_square": scenes.tree(3, "square")}


def _next_velocities(scene, solver, steps=3, **options):
    """q̇ after ``steps`` steps (the first ones settle cables and contacts identically for every solver)."""
    st = RedMaxStepper(scene, 1 / 60, solver, geometric_stiffness="joints", **options)
    state = engine.State(scene.q0.copy(), scene.qd0.copy(), 0.0)
    for _ in range(steps):
        state = st.step(state, scene.control(state.t))
    return state.qd, st


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_direct_pcg_and_dense_agree_on_thesis_scenes(backend):
    for name, scene in _thesis_scenes().items():
        dense, _ = _next_velocities(scene, "dense", closure_method="dual")
        direct, st = _next_velocities(scene, "direct", closure_method="dual", direct_backends=backend)
        pcg, _ = _next_velocities(scene, "pcg", tol=1e-14, max_iter=2000, closure_method="dual")
        assert rel_err(direct, dense) < 1e-10, (name, st.direct_solver.describe())
        assert rel_err(pcg, dense) < 1e-10, name
        timed = backend == "auto" and not st.direct_solver.reused_choice
        assert st.direct_solver.analyses == (len(st.direct_solver.tuning) if timed else 1), name


@settings(max_examples=25, deadline=None)
@given(random_trees(max_bodies=12))
def test_direct_backends_agree_with_dense_on_random_trees(tree):
    model, rng = tree
    q, qd = engine.random_configuration(model, rng, scale=0.3)
    sc = engine.Scene(model, q0=q, qd0=qd)
    for _ in range(3):  # springs between random bodies: coupling blocks beyond the tree pattern
        a, b = (int(x) for x in rng.integers(-1, model.n_bodies, 2))
        if a != b and max(a, b) >= 0:
            sc.add_spring(a, rng.uniform(-0.5, 0.5, 3), b, rng.uniform(-0.5, 0.5, 3), float(rng.uniform(10, 1e3)),
                          damping=0.5, frame="link")
    sc.set_body_damping(0.05)
    dense, _ = _next_velocities(sc, "dense", steps=1)
    for backend in INSTALLED:
        direct, st = _next_velocities(sc, "direct", steps=1, direct_backends=backend)
        assert rel_err(direct, dense) < 1e-10, backend


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_analysis_reused_and_redone_only_when_the_pattern_changes(backend):
    A1, D1 = _spd(50, 0.04, seed=1)
    A2, D2 = _spd(50, 0.08, seed=2)  # another pattern
    assert A1.nnz != A2.nnz
    b = np.arange(50.0)
    s = DirectSolver(backend)
    s.factor(A1)
    first = s.analyses
    A1b = A1.copy()  # same pattern, new arrays and new values
    A1b.data *= 2.0
    for A, D in ((A1, D1), (A1b, 2.0 * D1)):
        s.factor(A)
        assert rel_err(s.solve(b), np.linalg.solve(D, b)) < 1e-10
    assert s.analyses == first  # numeric factorizations only
    chosen = s.backend
    s.factor(A2)
    assert s.analyses == first + 1 and s.backend == chosen  # one analysis, by the backend chosen first
    assert rel_err(s.solve(b), np.linalg.solve(D2, b)) < 1e-10
    s.factor(A1)
    assert s.analyses == first + 2
    assert rel_err(s.solve(b), np.linalg.solve(D1, b)) < 1e-10


def test_a_pattern_is_tuned_once_per_process_so_solvers_of_one_scene_step_alike(monkeypatch):
    """The backends agree only to round-off: two Simulators of one scene whose timings picked different backends
    (a loaded machine, another thread: tests/test_threads.py failed so) stepped to different bits. A pattern's
    choice is now made once per process, the later solvers take it untimed."""
    from engine.solvers.linalg import direct

    A, D = _spd(60, 0.05, seed=9)
    b = np.arange(60.0)
    first = DirectSolver(("ldl", "lapack"))
    first.factor(A)
    other = "lapack" if first.backend == "ldl" else "ldl"
    monkeypatch.setattr(DirectSolver, "_fastest", lambda self, names, A: direct.make_backend(other, A))
    again = DirectSolver(("ldl", "lapack"))
    again.factor(A)
    assert again.backend == first.backend and again.reused_choice and again.analyses == 1
    assert np.array_equal(again.solve(b), first.solve(b))
    assert "chosen earlier in this process" in again.describe()
    fresh = DirectSolver(("lapack", "ldl"))  # other candidates: a choice of their own
    fresh.factor(A)
    assert fresh.backend == other and not fresh.reused_choice


def test_without_the_optional_libraries_direct_uses_the_engines_own_factorizations():
    """backends limited to what needs only numpy/scipy/numba: the path of an install without pypardiso."""
    scene = scenes.bridge(9, 0, car_mass=NORMAL_CAR)
    reference, _ = _next_velocities(scene, "dense", closure_method="dual")
    for backends in (("ldl", "lapack"), ("ldl",), ("lapack",)):
        qd, st = _next_velocities(scene, "direct", closure_method="dual", direct_backends=backends)
        assert st.direct_solver.backend in backends
        assert rel_err(qd, reference) < 1e-10, backends
    sim = engine.Simulator(scene, "direct", dt=1 / 60, direct_backends=("ldl", "lapack"))
    sim.step(2)
    assert np.isfinite(sim.state.q).all()


def test_cholesky_backends_hand_an_indefinite_matrix_to_the_ldl():
    A, D = _spd(40, 0.05, seed=5)
    A = A - 3.0 * scipy.sparse.eye(40, format="csc")  # symmetric, indefinite, nonsingular
    A.sort_indices()
    D = A.toarray()
    assert np.linalg.eigvalsh(D).min() < 0 < np.abs(np.linalg.eigvalsh(D)).min()
    b = np.ones(40)
    for backend in INSTALLED:
        s = DirectSolver(backend)
        s.factor(A)
        assert rel_err(s.solve(b), np.linalg.solve(D, b)) < 1e-9, backend
        # PARDISO (mtype 2) and LAPACK are strict Cholesky; CHOLMOD's simplicial mode is an LDLᵀ that may succeed
        assert s.fallbacks == {"ldl": 0, "cholmod": s.fallbacks}.get(backend, 1), backend
    s = DirectSolver(("ldl", "lapack"))  # an indefinite first matrix: the Cholesky backend is not a candidate
    s.factor(A)
    assert s.backend == "ldl" and list(s.tuning) == ["ldl"]


def test_bad_input_is_refused_with_a_clear_error():
    A, D = _spd(10, 0.2, seed=6)
    with pytest.raises(ValueError, match="CSC"):
        DirectSolver("ldl").factor(D)
    with pytest.raises(ValueError, match="CSC"):
        DirectSolver("ldl").factor(A.tocsr())
    with pytest.raises(ValueError, match="unknown direct-solver backend 'umfpack'"):
        DirectSolver(("ldl", "umfpack"))
    order = np.concatenate([np.arange(A.indptr[j], A.indptr[j + 1])[::-1] for j in range(10)])  # rows descending
    unsorted = scipy.sparse.csc_matrix((A.data[order], A.indices[order], A.indptr), shape=A.shape)
    with pytest.raises(ValueError, match="sorted"):
        DirectSolver("ldl").factor(unsorted)
    with pytest.raises(RuntimeError, match="before factor"):
        DirectSolver("ldl").solve(np.ones(10))
