"""Baraff's maximal-coordinate solver (seed 002): sparse = dense = naive, maximal = reduced, drift, errors."""
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import engine
from engine.errors import ModelError
from engine.scenes.planar import binary_tree_2d, closed_chain_2d, four_bar_2d, serial_arm_2d
from engine.maximal import state as M
from engine.solvers.steppers import baraff as B
from engine.maximal.rows import joint_constraints
from trees import BRANCHINGS, random_trees, rel_err

TOL = 1e-9


def _solve_all(system, qmax, v):
    out = {}
    for method in B.METHODS:
        solver = B.BaraffSolver(system, method, alpha=3.0, beta=4.0)
        solver.evaluate(qmax, v)
        J = solver._dense_rows()
        acc, lam, mu = solver.solve()
        out[method] = (acc, np.concatenate([lam, mu]))
    Minv = np.zeros((J.shape[1], J.shape[1]))
    d = system.body_dim
    for i in range(system.n_bodies):
        Minv[d * i:d * i + d, d * i:d * i + d] = np.linalg.inv(system.inertia[i])
    return out, J, J @ Minv @ J.T


def _assert_methods_agree(system, qmax, v):
    """1e-9 relative where the multipliers are unique (no redundant rows) and J M⁻¹ Jᵀ is not so
    ill-conditioned (cond ≥ 1e6) that the naive method's normal equations lose those digits."""
    out, J, A = _solve_all(system, qmax, v)
    assume(np.linalg.matrix_rank(J) == J.shape[0])
    assume(np.linalg.cond(A) < 1e6)
    acc, lam = out["dense"]
    for method in ("sparse", "naive"):
        assert rel_err(out[method][0], acc) < TOL, method
        assert rel_err(out[method][1], lam) < TOL, method


def _path(model, i):
    out = []
    while i >= 0:
        out.append(i)
        i = int(model.body_parent[i])
    return out


def _dofs_between(model, a, b):
    """Joint dofs on the tree path between bodies a and b (a = −1: the world)."""
    pa, pb = set(_path(model, a)) if a >= 0 else set(), set(_path(model, b))
    return int(sum(model.joint_nv[i] for i in pa ^ pb))


@st.composite
def trees_with_closures(draw):
    """A random 3D tree (every joint type) tied to the world by a fixed-point or joint-like closure,
    sometimes with a second closure between two of its bodies."""
    n = draw(st.integers(2, 9))
    floating = draw(st.booleans())
    seed = draw(st.integers(0, 2**31 - 1))
    model = engine.random_tree(n, branching=draw(st.sampled_from(BRANCHINGS)), seed=seed, floating_base=floating)
    rng = np.random.default_rng(seed)
    q, qd = engine.random_configuration(model, rng)
    scene = engine.Scene(model, q0=q, qd0=qd)
    R, p = engine.link_poses(model, q)
    kind = draw(st.sampled_from(["point", "hinge", "universal"]))
    rows = {"point": 3, "universal": 4, "hinge": 5}[kind]
    # closures with fewer rows than the tree's dofs between their ends (else they are redundant)
    ends = [b for b in range(n) if _dofs_between(model, -1, b) >= rows]
    assume(ends)
    b = draw(st.sampled_from(ends))
    scene.add_loop_closure(-1, b, p[b] + rng.normal(size=3) * 0.3, kind=kind, axis=rng.normal(size=3), name="fixed")
    pairs = [(a, c) for a in range(n) for c in range(a + 1, n) if _dofs_between(model, a, c) >= 3]
    if pairs and draw(st.booleans()):
        a, c = draw(st.sampled_from(pairs))
        scene.add_loop_closure(a, c, p[c] + rng.normal(size=3) * 0.3, kind="point", name="loop")
    return scene


@settings(max_examples=100, deadline=None)
@given(trees_with_closures())
def test_sparse_dense_naive_agree_on_3d_trees_with_auxiliary_constraints(scene):
    system = B.MaximalSystem.from_scene(scene)
    qmax, phi = B.maximal_state(scene.model, scene.q0, scene.qd0)
    _assert_methods_agree(system, qmax, phi)


@st.composite
def planar_trees(draw):
    """Random trees of seed bars in the plane (hinges about z at random points), with a pin closure."""
    n = draw(st.integers(2, 12))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    b = engine.ModelBuilder(gravity=(0, -9.81, 0))
    for i in range(n):
        parent = int(rng.integers(-1, i)) if i else -1
        origin = (rng.normal(), rng.normal(), 0.0) if parent >= 0 else (0.0, 0.0, 0.0)
        b.add_body(f"b{i}", parent=parent, joint="revolute", axis=(0, 0, 1), joint_origin=origin,
                   com=(0.0, 2.0, 0.0), mass=1.0 + rng.random(), inertia=(2.1, 0.1, 2.2))  # Ixx + Iyy ≥ Izz (a physical rod)
    model = b.finalize()
    q = rng.normal(size=model.nv)
    qd = rng.normal(size=model.nv)
    scene = engine.Scene(model, q0=q, qd0=qd)
    a, c = rng.choice(np.arange(-1, n), size=2, replace=False)
    if c < 0:
        a, c = c, a
    R, p = engine.link_poses(model, q)
    scene.add_loop_closure(int(a), int(c), p[c] + np.array([0.3, 1.0, 0.0]), kind="hinge", axis=(0, 0, 1))
    return scene


@settings(max_examples=100, deadline=None)
@given(planar_trees())
def test_sparse_dense_naive_agree_on_2d_trees_with_auxiliary_constraints(scene):
    assert B.planar_problem(scene) == ""
    system = B.planar_system(scene)
    assert system.body_dim == 3
    qmax, v = B.planar_state(scene.model, scene.q0, scene.qd0)
    _assert_methods_agree(system, qmax, v)


@settings(max_examples=60, deadline=None)
@given(random_trees())
def test_maximal_accelerations_equal_aba(tree):
    """The joint accelerations implied by Baraff's body accelerations are ABA's (via a central difference)."""
    model, rng = tree
    q, qd = engine.random_configuration(model, rng)
    system = B.MaximalSystem.from_scene(engine.Scene(model))
    qmax, phi = B.maximal_state(model, q, qd)
    solver = B.BaraffSolver(system, "sparse")
    solver.evaluate(qmax, phi)
    acc, _, _ = solver.solve()
    free = M.FreeBodies(model.n_bodies)

    def qd_after(h):
        qm = qmax.copy()
        B.integrate_kernel(free.joint_type, free.q_start, free.v_start, qm, (phi + 0.5 * h * acc).reshape(-1), h, qm)
        R, p = np.empty((model.n_bodies, 3, 3)), np.empty((model.n_bodies, 3))
        M.poses_from_q(qm, R, p)
        return B.reduced_state(model, R, p, phi + h * acc)[1]

    h = 1e-5
    qdd = engine.aba(model, q, qd, np.zeros(model.nv))
    assert rel_err((qd_after(h) - qd_after(-h)) / (2 * h), qdd) < 1e-6


def _rk4_reduced(scene, dt, steps):
    model = scene.model
    q, qd = scene.q0.copy(), scene.qd0.copy()
    acc = lambda q, qd, t: engine.aba(model, q, qd, np.zeros(model.nv))  # noqa: E731
    for _ in range(steps):
        q, qd = engine.rk4_step(model, q, qd, dt, acc)
    return q, qd


@pytest.mark.parametrize("make", [lambda: engine.scenes.chain(3), lambda: serial_arm_2d(3), lambda: binary_tree_2d(3)],
                         ids=["chain3_3d", "arm3_2d", "tree7_2d"])
def test_maximal_and_reduced_trajectories_agree_over_one_second(make):
    scene = make()
    dt, steps = 1e-3, 1000
    q_ref, qd_ref = _rk4_reduced(scene, dt, steps)
    sim = engine.Simulator(scene, "baraff", dt=dt, integrator="rk4", alpha=10.0, beta=10.0)  # Baumgarte + projection
    sim.step(steps)
    model = scene.model
    dq = np.concatenate([engine.joints.difference(int(model.joint_type[j]), q_ref[model.q_slice(n)],
                                                  sim.state.q[model.q_slice(n)]) for j, n in enumerate(model.joint_names)])
    assert np.abs(dq).max() / max(1.0, np.abs(q_ref).max()) < 1e-5
    assert rel_err(sim.state.qd, qd_ref) < 1e-5


@pytest.mark.parametrize("make", [four_bar_2d, lambda: closed_chain_2d(6), lambda: closed_chain_2d(5, floating=False),
                                  engine.scenes.four_bar],
                         ids=["four_bar_2d", "closed_chain_floating", "closed_chain_fixed", "four_bar_3d"])
def test_constraint_drift_stays_below_a_micrometre_over_five_seconds(make):
    sim = engine.Simulator(make(), "baraff", dt=0.01)
    drift = 0.0
    for _ in range(500):
        sim.step()
        drift = max(drift, sim.stats.constraint_error)
    assert drift < 1e-6
    assert np.all(np.isfinite(sim.state.q))


def test_baumgarte_feedback_holds_the_loop_without_projection():
    """Stabilization is configurable: with the projection off, Baumgarte feedback keeps the drift
    well below the unstabilized run (forward Euler, as the seed: 0.0136 against 0.106 after 2 s)."""
    drifts = {}
    for rates in ((0.0, 0.0), (10.0, 10.0)):
        sim = engine.Simulator(four_bar_2d(), "baraff", dt=0.01, integrator="euler", post_stabilize=False,
                               alpha=rates[0], beta=rates[1])
        sim.step(200)
        drifts[rates] = sim.stats.constraint_error
    assert drifts[(10.0, 10.0)] < 0.2 * drifts[(0.0, 0.0)], drifts


def test_auxiliary_root_pin_equals_primary_root_pin():
    """Pinning the arm's root by a fixed-point auxiliary constraint (the seed's set-up) moves it exactly
    as the primary (tree) hinge does."""
    a = engine.Simulator(serial_arm_2d(5), "baraff", dt=0.01)
    b = engine.Simulator(serial_arm_2d(5, root="auxiliary"), "baraff", dt=0.01)
    a.step(100)
    b.step(100)
    Ra, pa = engine.link_poses(a.model, a.state.q)
    Rb, pb = engine.link_poses(b.model, b.state.q)
    assert np.abs(pa - pb).max() < 1e-8 and np.abs(Ra - Rb).max() < 1e-8


# ------------------------------------------------------------------ bad input
def _system(bodies, names=None):
    I6 = np.diag([1.0, 1.0, 1.0, 2.0, 2.0, 2.0])
    pairs = np.array(bodies)
    m = len(pairs)
    cons = joint_constraints(np.full(m, engine.joints.SPHERICAL), np.tile([0, 0, 1.0], (m, 1)), pairs,
                             np.tile(np.eye(3), (m, 1, 1)), np.zeros((m, 3)), np.tile(np.eye(3), (m, 1, 1)),
                             np.zeros((m, 3)))
    empty = joint_constraints(np.zeros(0), np.zeros((0, 3)), np.zeros((0, 2)), np.zeros((0, 3, 3)), np.zeros((0, 3)),
                              np.zeros((0, 3, 3)), np.zeros((0, 3)))
    n_bodies = 3
    return B.MaximalSystem(np.tile(I6, (n_bodies, 1, 1)), np.zeros(3), cons, empty, ["a", "b", "c"],
                           names or [f"j{k}" for k in range(m)], [])


def test_a_constraint_to_a_missing_body_is_named():
    with pytest.raises(ModelError, match=r"constraint 'elbow': references body 7"):
        _system([(0, 1), (1, 7)], ["shoulder", "elbow"])


def test_redundant_primary_constraints_forming_a_loop_say_make_it_auxiliary():
    with pytest.raises(ModelError, match=r"'ring'.*closes a loop.*auxiliary constraint"):
        _system([(0, 1), (1, 2), (2, 0)], ["ab", "bc", "ring"])
    with pytest.raises(ModelError, match=r"'pin2'.*through the world.*auxiliary"):
        _system([(-1, 0), (0, 1), (-1, 1)], ["pin1", "ab", "pin2"])


def test_singular_inertia_and_other_forces_are_refused_clearly():
    empty = joint_constraints(np.zeros(0), np.zeros((0, 3)), np.zeros((0, 2)), np.zeros((0, 3, 3)), np.zeros((0, 3)),
                              np.zeros((0, 3, 3)), np.zeros((0, 3)))
    with pytest.raises(ModelError, match="body 'rod': its mass matrix is singular"):
        B.MaximalSystem(np.diag([0.1, 0.1, 0.0, 1, 1, 1.0])[None], np.zeros(3), empty, empty, ["rod"], [], [])
    bridge = engine.scenes.bridge(7)
    with pytest.raises(ValueError, match="gravity, joints and loop closures only.*springs/cables"):
        engine.Simulator(bridge, "baraff")
    with pytest.raises(ModelError, match="not planar: gravity has a z component"):
        B.planar_system(engine.scenes.chain(2))
    with pytest.raises(ValueError, match="unknown Baraff method 'lu'"):
        engine.Simulator(four_bar_2d(), "baraff", method="lu")


def test_serial_arm_matches_the_seed_geometry():
    """Seed bars: 1 × 5, unit mass, joints 2 from the centre; the arm's joints sit 4 apart."""
    scene = serial_arm_2d(3)
    m = scene.model
    assert np.allclose(m.body_mass, 1.0)
    R, p = engine.link_poses(m, scene.q0)
    assert np.allclose(np.linalg.norm(np.diff(p, axis=0), axis=1), 4.0)
    system = B.planar_system(scene)
    assert np.allclose(system.inertia[:, 2, 2], (1 + 25) / 12)
    assert math.isclose(float(np.linalg.norm(system.primary.points[1, 1])), 2.0)
