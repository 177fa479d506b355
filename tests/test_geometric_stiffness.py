"""The joints' geometric stiffness in the RedMax step (issue #22, engine/solvers/stages/geometric_stiffness.py).

Finite differences of the generalized gravity force check the exact term; the projected term
the solvers use is checked against its documented form (Σ J_ωᵀ Π(sym M_l) J_ω, symmetric PSD,
equal to the exact one for a chain hanging at rest); then the chains of the issue, on a smaller
scale than its acceptance numbers (those come from ``python -m engine bench chains``).
"""
import numpy as np
import pytest

from engine import Simulator
from engine.algorithms.kinematics import joint_pass, velocity_pass, world_pass
from engine.algorithms.rnea import rnea
from engine.apps.bench.chains import swing, tip_track
from engine.errors import SimulationError
from engine.model import ModelBuilder
from engine.scene import Scene
from engine.scenes import chain, hanging_chain, rope
from engine.solvers.stages.loop_closures import constraint_jacobian
from engine.solvers.stages.geometric_stiffness import (exact_joint_stiffness, parse_geometric_stiffness, psd_part,
                                                tension_blocks)
from engine.model import State
from engine.solvers.steppers.redmax import RedMaxStepper
from engine.solvers.linalg.reduced_operators import fill_jacobian


def _kinematics(model, q, qd=None):
    joint_pass(model.tree, q, model.data)
    world_pass(model.tree, model.data)
    velocity_pass(model.tree, q, np.zeros(model.nv) if qd is None else qd, model.data)


def _branched():
    """A revolute tree with branches, offsets and mixed axes (not a chain)."""
    b = ModelBuilder()
    b.add_body("a", joint="revolute", axis=(1, 0, 0), com=(0.05, 0, -0.2), mass=1.0, inertia=(0.02, 0.03, 0.01))
    b.add_body("b", parent="a", joint="revolute", axis=(0, 1, 0), joint_origin=(0, 0.1, -0.4), com=(0, 0, -0.15),
               mass=0.7, inertia=(0.01, 0.01, 0.002))
    b.add_body("c", parent="a", joint="revolute", axis=(0, 0.6, 0.8), joint_origin=(0.1, 0, -0.4),
               com=(0.02, 0.01, -0.1), mass=0.4, inertia=(0.004, 0.005, 0.001))
    b.add_body("d", parent="b", joint="revolute", axis=(1, 0, 0), joint_origin=(0, 0, -0.3), com=(0, 0.03, -0.1),
               mass=0.3, inertia=(0.002, 0.002, 0.001))
    return b.finalize()


@pytest.mark.parametrize("make", [lambda: hanging_chain(6).model, _branched])
def test_exact_term_is_the_derivative_of_the_generalized_gravity_force(make):
    model = make()
    rng = np.random.default_rng(3)
    for _ in range(3):
        q = rng.uniform(-1.2, 1.2, model.nv)

        def tau(q):  # −(generalized force) = gravity term of the inverse dynamics
            return rnea(model, q, np.zeros(model.nv), np.zeros(model.nv))

        eps = 1e-6
        K_fd = np.column_stack([(tau(q + eps * e) - tau(q - eps * e)) / (2 * eps) for e in np.eye(model.nv)])
        _kinematics(model, q)
        K = exact_joint_stiffness(model)
        assert np.abs(K - K_fd).max() < 1e-6 * np.abs(K_fd).max()
        assert np.allclose(K, K.T)


def _M_tilde(scene, q, mode, h=0.05, solver="dense"):
    st = RedMaxStepper(scene, h, solver, geometric_stiffness=mode)
    st.evaluate(q, np.zeros(scene.model.nv), scene.control(0.0))
    st._prepare_solver(st.reduced_forces(q)[1])
    return st.assemble_dense(), st


def _projected_from_blocks(model):
    """Σ_l J_ω,lᵀ Π(sym M_l) J_ω,l from the documented blocks and the dense Jacobian."""
    J = np.zeros((6 * model.n_bodies, model.nv))
    fill_jacobian(model.tree, model.data, J)
    P = tension_blocks(model)
    return sum(J[6 * l:6 * l + 3].T @ P[l] @ J[6 * l:6 * l + 3] for l in range(model.n_bodies))


def test_projected_term_equals_the_exact_one_for_a_chain_hanging_at_rest():
    for scene in (hanging_chain(7), chain(5)):
        q = np.zeros(scene.model.nv)
        h = 0.05
        on, _ = _M_tilde(scene, q, "joints", h)
        off, _ = _M_tilde(scene, q, False, h)
        _kinematics(scene.model, q)
        K = exact_joint_stiffness(scene.model)
        assert np.abs(K).max() > 1.0
        assert np.abs((on - off) / h**2 - K).max() < 1e-9 * np.abs(K).max()


@pytest.mark.parametrize("make", [lambda: hanging_chain(6), lambda: Scene(_branched())])
def test_projected_term_is_symmetric_psd_and_is_the_documented_sum(make):
    scene = make()
    model = scene.model
    rng = np.random.default_rng(7)
    h = 0.05
    for _ in range(3):
        q = rng.uniform(-2.0, 2.0, model.nv)  # bent, partly upright: some segments compressed
        on, st = _M_tilde(scene, q, "joints", h)
        off, _ = _M_tilde(scene, q, False, h)
        Kp = (on - off) / h**2
        _kinematics(model, q)
        assert np.abs(Kp - _projected_from_blocks(model)).max() < 1e-9 * max(1.0, np.abs(Kp).max())
        assert np.allclose(Kp, Kp.T, atol=1e-9)
        assert np.linalg.eigvalsh(Kp).min() > -1e-9 * np.abs(Kp).max()
        np.linalg.cholesky(on)  # M̃ stays SPD


def test_tension_part_drops_compression():
    """An upright straight chain (gravity reversed) is all compression: the projected term is zero."""
    model = hanging_chain(5).model.with_gravity((0.0, 0.0, 9.81))
    _kinematics(model, np.zeros(model.nv))
    assert np.abs(tension_blocks(model)).max() < 1e-12
    assert np.linalg.eigvalsh(exact_joint_stiffness(model)).max() < 0  # the exact one is negative definite


def test_psd_part_matches_an_eigendecomposition():
    rng = np.random.default_rng(0)
    out, v = np.empty((3, 3)), np.empty(3)
    for k in range(100):
        A = rng.normal(size=(3, 3))
        M = A + A.T if k % 3 else np.diag(rng.normal(size=3))
        if k % 5 == 0:  # a nearly taut segment: eigenvalues (t, t, ~0)
            d = rng.normal(size=3)
            T = np.outer(d, 2 * d + 1e-4 * rng.normal(size=3))
            M = np.trace(T) * np.eye(3) - 0.5 * (T + T.T)
        w, V = np.linalg.eigh(M)
        psd_part(M, v, out)
        assert np.abs(out - (V * np.maximum(w, 0)) @ V.T).max() < 1e-12 * max(1.0, np.abs(M).max())


def test_solvers_agree_with_the_term():
    scene = hanging_chain(10)
    scene.add_spring(2, (0, 0, -0.3), 7, (0, 0, -0.8), 200.0)  # couples two bodies: PCG iterates
    rng = np.random.default_rng(2)
    q, qd = rng.uniform(-0.5, 0.5, 10), rng.uniform(-1, 1, 10)
    out = {s: RedMaxStepper(scene, 1 / 30, s, tol=1e-13, geometric_stiffness="joints").step(State(q, qd, 0.0),
                                                                                       scene.control(0.0)).qd
           for s in ("pcg", "direct", "dense")}
    assert np.abs(out["pcg"] - out["dense"]).max() < 1e-8
    assert np.abs(out["direct"] - out["dense"]).max() < 1e-10
    off = RedMaxStepper(scene, 1 / 30, "dense").step(State(q, qd, 0.0), scene.control(0.0)).qd
    assert np.abs(off - out["dense"]).max() > 1e-4  # the term is really there


def test_option_values():
    assert parse_geometric_stiffness(True) == parse_geometric_stiffness("joints") == (True, False)
    assert parse_geometric_stiffness(False) == (False, False)
    assert parse_geometric_stiffness("all") == (True, True)
    assert parse_geometric_stiffness("springs") == (False, True)
    with pytest.raises(ValueError, match="geometric_stiffness"):
        Simulator(hanging_chain(3), "pcg", geometric_stiffness="tension")
    assert Simulator(hanging_chain(3), "pcg")._stepper.joint_stiffness  # on by default


# ------------------------------------------------------------------ the chains, CI scale
@pytest.fixture(scope="module")
def reference_swing():
    t, tip, _ = tip_track(hanging_chain(64), 960.0, "pcg")
    return swing(t, tip)


@pytest.mark.parametrize("solver", ["pcg", "direct"])
def test_64_link_chain_at_30_hz_swings_like_the_fine_reference(solver, reference_swing):
    """Acceptance 1 at 64 links (256 and 512 links: ``bench chains``): stable for 10 s at 1/30 s
    (it diverges without the term — and without the energy guard, which alone would keep it bounded),
    period within 5 % and amplitude at least half of 1/960 s."""
    with pytest.raises(SimulationError):
        Simulator(hanging_chain(64), solver, dt=1 / 30, geometric_stiffness=False, energy_guard=False).step(300)
    period, amplitude, axis = reference_swing
    t, tip, _ = tip_track(hanging_chain(64), 30.0, solver)
    p, a, _ = swing(t, tip, axis)
    assert abs(p / period - 1) < 0.05
    assert a >= 0.5 * amplitude


@pytest.mark.parametrize("solver", ["pcg", "direct"])
def test_64_link_chain_with_a_stiff_side_spring_is_stable_at_30_hz(solver):
    """Acceptance 2."""
    def make():
        sc = hanging_chain(64)
        z = sc.world_point(31, np.array([0.0, 0.0, -0.1]))
        sc.add_spring(31, z, -1, z + np.array([1.0, 0.0, 0.0]), 1e5)
        return sc

    with pytest.raises(SimulationError):
        Simulator(make(), solver, dt=1 / 30, geometric_stiffness=False, energy_guard=False).step(300)
    sim = Simulator(make(), solver, dt=1 / 30)
    sim.step(300)
    assert np.abs(sim.state.qd).max() < 10


def test_conservative_chain_energy_does_not_grow():
    """Acceptance 4 at 64 links: no damping, 1/30 s, 10 s."""
    t, _, e = tip_track(hanging_chain(64, damping=0.0), 30.0, "pcg", energy=True)
    assert np.max(e - e[0]) <= 1e-9 * abs(e[0])
    assert e[-1] <= e[0]  # it does not pump (BDF2 with the energy budget holds it; implicit Euler dissipates)


@pytest.mark.parametrize("end", ["weight", "pinned"])
def test_ropes_are_stable_at_30_hz(end):
    sc = rope(48, 4.8, 24.0, end=end)
    sim = Simulator(sc, "pcg", dt=1 / 30)
    sim.step(150)
    assert np.isfinite(sim.state.q).all()
    if end == "pinned":
        assert sim.stats.constraint_error < 1e-8
    with pytest.raises(SimulationError):
        Simulator(rope(48, 4.8, 24.0, end=end), "pcg", dt=1 / 30, geometric_stiffness=False, energy_guard=False).step(150)


def test_recorded_closure_forces_reproduce_the_constraint_impulse():
    """record_closures recovers μ from Gᵀμ (the step's residual) and spreads rows_k μ_k / h on the bodies."""
    sc = rope(12, 1.2, 6.0, end="pinned")
    st = RedMaxStepper(sc, 1 / 30, "pcg", geometric_stiffness="joints")
    st.step(State(sc.q0, sc.qd0, 0.0), sc.control(0.0))
    bodies, rows = st._closure_rows
    Y, Sinv = st._projection
    model = sc.model
    G = np.empty((len(rows), model.nv))
    _kinematics(model, sc.q0)  # the step's kinematics, where its rows, Y and Sinv were built
    constraint_jacobian(model.tree, model.data, bodies, rows, np.zeros((model.n_bodies, 6)), G)
    mu = np.random.default_rng(0).normal(size=len(rows))
    gs = st._joint_gs
    gs.record_closures(model, bodies, rows, Y, Sinv, G.T @ mu, 0.5)
    w = np.zeros((model.n_bodies, 6))
    assert (bodies[:, 0] == 11).all() and (bodies[:, 1] == -1).all()  # the rope's end, and the world
    for k in range(len(rows)):
        w[11] += rows[k, :6] * mu[k] / 0.5
    assert np.abs(gs.closure_wrench - w).max() < 1e-9 * np.abs(w).max()


def test_rope_rejects_bad_input():
    with pytest.raises(ValueError, match="end"):
        rope(8, end="loose")
    with pytest.raises(ValueError, match="span"):
        rope(8, 1.0, end="pinned", span=2.0)
