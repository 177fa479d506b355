"""RedMax step: operators vs Alg. 1, solvers agree, preconditioner exactness, loop closures, stability."""
import numpy as np
import pytest
from hypothesis import given, settings

import engine
from engine.algorithms.kinematics import joint_pass
from engine.errors import ModelError, SimulationError
from engine.solvers.linalg.reduced_operators import (
    fill_jacobian, fill_jacobian_dot, jacobian_dot_product, jacobian_product, jacobian_transpose_product,
)
from engine.solvers.steppers.redmax import RedMaxStepper
from trees import random_trees, rel_err


def _filled_jacobian(model, q):
    joint_pass(model.tree, q, model.data)
    J = np.zeros((6 * model.n_bodies, model.nv))
    fill_jacobian(model.tree, model.data, J)
    return J


@settings(max_examples=100)
@given(random_trees())
def test_jacobian_products_equal_filled_jacobian(tree):
    model, rng = tree
    q, qd = engine.random_configuration(model, rng)
    J = _filled_jacobian(model, q)
    x = rng.normal(size=model.nv)
    w = rng.normal(size=(model.n_bodies, 6))
    y = np.empty((model.n_bodies, 6))
    jacobian_product(model.tree, model.data, x, y)
    assert np.abs(y.ravel() - J @ x).max() < 1e-12 * max(1.0, np.abs(J @ x).max())
    out = np.empty(model.nv)
    jacobian_transpose_product(model.tree, model.data, w.copy(), out)
    assert np.abs(out - J.T @ w.ravel()).max() < 1e-12 * max(1.0, np.abs(out).max())
    # J̇ x by central differences of J along q(t) = q ⊕ t q̇
    h = 1e-6
    Jp = _filled_jacobian(model, engine.integrate(model, q, qd, h))
    Jm = _filled_jacobian(model, engine.integrate(model, q, qd, -h))
    joint_pass(model.tree, q, model.data)
    z = np.empty((model.n_bodies, 6))
    jacobian_dot_product(model.tree, model.data, q, qd, x, y, z)
    fd = (Jp - Jm) @ x / (2 * h)
    assert np.abs(z.ravel() - fd).max() < 1e-6 * max(1.0, np.abs(fd).max())
    Jdot = np.zeros_like(J)
    fill_jacobian(model.tree, model.data, J)
    fill_jacobian_dot(model.tree, model.data, q, qd, J, Jdot)  # Alg. 1, line 7
    assert np.abs(z.ravel() - Jdot @ x).max() < 1e-12 * max(1.0, np.abs(Jdot @ x).max())


def _random_scene(model, rng, n_springs=3, closures=False, q0=None):
    sc = engine.Scene(model, q0=q0)
    R, p = engine.link_poses(model, sc.q0)
    for _ in range(n_springs):
        a, b = rng.choice(np.arange(-1, model.n_bodies), 2, replace=False)
        pa = p[a] + rng.normal(size=3) * 0.2 if a >= 0 else rng.normal(size=3)
        pb = p[b] + rng.normal(size=3) * 0.2 if b >= 0 else rng.normal(size=3)
        kind = rng.integers(0, 3)
        k, c = float(rng.uniform(10, 1e3)), float(rng.uniform(0, 5))
        if kind == 0:
            sc.add_spring(int(a), pa, int(b), pb, k, damping=c, rest_length=0.5 * np.linalg.norm(pb - pa))
        elif kind == 1:
            sc.add_cable(int(a), pa, int(b), pb, k, damping=c, rest_length=0.8 * np.linalg.norm(pb - pa))
        else:
            sc.add_damper(int(a), pa, int(b), pb, c + 0.1)
    sc.set_body_damping(0.05)
    moving = [j for j in range(model.n_bodies) if model.joint_nv[j] in (1, 2)]
    if moving:
        sc.add_joint_spring(model.joint_names[moving[0]], 5.0, 0.2)
    if closures and model.n_bodies >= 2:
        b = model.n_bodies - 1
        sc.add_loop_closure(b, -1, p[b], kind="point")
    return sc


@settings(max_examples=60)
@given(random_trees(max_bodies=8))
def test_pcg_direct_dense_give_the_same_next_velocities(tree):
    model, rng = tree
    q, qd = engine.random_configuration(model, rng, scale=0.3)
    sc = _random_scene(model, rng, closures=bool(rng.integers(0, 2)), q0=q)  # closures hold at q
    out = {}
    for solver, method in (("pcg", "projected"), ("pcg", "dual"), ("direct", "dual"), ("dense", "dual")):
        st = RedMaxStepper(sc, 0.01, solver, tol=1e-13, max_iter=1000, closure_method=method)
        st.qd_guess = np.zeros(model.nv)
        out[solver, method] = st.step(engine.State(q, qd, 0.0), sc.control(0.0)).qd
    dense = out["dense", "dual"]
    # every solver solves exactly to the same reachable closure target (stages/closure_solve.py), so they agree to
    # round-off, also on ill-conditioned loops where the target is regularized (was up to 2e-6 before that)
    assert rel_err(out["pcg", "projected"], dense) < 1e-10  # one projected CG run
    assert rel_err(out["pcg", "dual"], dense) < 1e-10  # the thesis's l + 1 solves (Eq. 3.2)
    assert rel_err(out["direct", "dual"], dense) < 1e-10


@settings(max_examples=60)
@given(random_trees(max_bodies=8))
def test_preconditioner_is_exact_without_couplings(tree):
    """No springs between two bodies: P = M̃, PCG converges in one iteration to the ABA-style solve."""
    model, rng = tree
    sc = engine.Scene(model)
    R, p = engine.link_poses(model, sc.q0)
    sc.add_cable(0, p[0] + 0.1, -1, p[0] + np.array([0, 0, 2.0]), 1e5, damping=3.0, rest_length=1.0)
    sc.set_body_damping(0.3)
    q, qd = engine.random_configuration(model, rng, scale=0.3)
    st = RedMaxStepper(sc, 1 / 30, "pcg", tol=1e-12)
    qd1 = st.step(engine.State(q, qd, 0.0), sc.control(0.0)).qd
    assert st.stats.iterations == 1
    dense = RedMaxStepper(sc, 1 / 30, "dense").step(engine.State(q, qd, 0.0), sc.control(0.0)).qd
    assert rel_err(qd1, dense) < 1e-9


def test_springs_to_a_fixed_body_keep_the_preconditioner_exact():
    """Rigid towers: cables from moving bodies to a body welded to the world → 1 PCG iteration."""
    b = engine.ModelBuilder()
    b.add_body("tower", joint="fixed", joint_origin=(0, 0, 2.0), mass=100.0)
    for i in range(6):
        b.add_body(f"deck{i}", parent=-1 if i == 0 else f"deck{i - 1}", joint="revolute", axis=(0, 1, 0),
                   joint_origin=(0.0 if i == 0 else 1.0, 0, 0), com=(0.5, 0, 0), mass=10.0, inertia=(1, 1, 1))
    model = b.finalize()
    sc = engine.Scene(model)
    R, p = engine.link_poses(model, sc.q0)
    for i in range(1, 7):
        sc.add_cable("tower", p[0], i, p[i] + R[i] @ np.array([0.5, 0, 0]), 1e6, damping=100.0)
    sim = engine.Simulator(sc, "pcg", dt=1 / 60, tol=1e-12)
    sim.step(30)
    assert sim.stats.iterations == [1] * 30


def test_closed_chain_constraint_drift_stays_below_a_micrometre():
    model = _hanging_chain(8, link=0.25)
    sc = engine.Scene(model, q0=np.tile([0.6, -0.3], 4))
    R, p = engine.link_poses(model, sc.q0)
    end = p[7] + R[7] @ np.array([0, 0, -0.25])
    sc.add_loop_closure(7, -1, end, kind="point", name="closing_pin")
    sim = engine.Simulator(sc, "pcg", dt=1 / 240)
    worst = 0.0
    for _ in range(5 * 240):
        sim.step()
        worst = max(worst, sim.stats.constraint_error)
    assert worst < 1e-6
    assert np.abs(sim.state.q - sc.q0).max() > 0.05  # it moved


def test_joint_spring_force_and_stiffness():
    model = engine.random_tree(3, branching="chain", joint_types=("revolute", "universal"), seed=4)
    sc = engine.Scene(model)
    for j in model.joint_names:
        sc.add_joint_spring(j, 7.0, 0.3, rest=0.1)
    st = RedMaxStepper(sc, 0.01, "dense")
    q = np.full(model.nq, 0.4)
    f, r = st.reduced_forces(q)
    assert np.allclose(f, -7.0 * (q - 0.1))
    eps = 1e-6
    Kfd = np.array([-(st.reduced_forces(q + eps * e)[0] - st.reduced_forces(q - eps * e)[0]) / (2 * eps)
                    for e in np.eye(model.nq)]).T
    assert np.allclose(Kfd, 7.0 * np.eye(model.nv), atol=1e-6)
    assert np.allclose(r, 0.01 * 0.3 + 0.01**2 * 7.0)


def test_without_forces_the_step_is_symplectic_euler_with_aba():
    model = engine.random_tree(6, seed=5)
    sc = engine.Scene(model)
    q, qd = engine.random_configuration(model, np.random.default_rng(5), scale=0.5)
    qd1 = RedMaxStepper(sc, 1e-3, "pcg").step(engine.State(q, qd, 0.0), sc.control(0.0)).qd
    assert rel_err(qd1, qd + 1e-3 * engine.aba(model, q, qd, np.zeros(model.nv))) < 1e-9


def _four_bar():
    b = engine.ModelBuilder()
    L = [1.0, 0.6, 1.0]
    b.add_body("crank", joint="revolute", axis=(0, 1, 0), com=(0, 0, -0.5), mass=1.0, inertia=(0.09, 0.09, 0.01))
    b.add_body("coupler", parent="crank", joint="revolute", axis=(0, 1, 0), joint_origin=(0, 0, -1.0),
               joint_rotation=(np.cos(-np.pi / 4), 0, np.sin(-np.pi / 4), 0), com=(0, 0, -0.3), mass=0.6,
               inertia=(0.02, 0.02, 0.005))
    model = b.finalize()
    sc = engine.Scene(model, q0=np.array([0.3, 0.0]))
    R, p = engine.link_poses(model, sc.q0)
    tip = p[1] + R[1] @ np.array([0, 0, -L[1]])
    sc.add_loop_closure(1, -1, tip, kind="point", name="ground_pin")
    return sc


def test_four_bar_constraint_drift_stays_below_a_micrometre():
    sc = _four_bar()
    sim = engine.Simulator(sc, "pcg", dt=1 / 240)
    worst = 0.0
    for _ in range(5 * 240):
        sim.step()
        worst = max(worst, sim.stats.constraint_error)
    assert worst < 1e-6


def _hanging_chain(n=50, link=0.2):
    b = engine.ModelBuilder()
    for i in range(n):
        b.add_body(f"l{i}", parent=i - 1, joint="revolute", axis=(1, 0, 0), joint_origin=(0, 0, -link if i else 0.0),
                   com=(0, 0, -link / 2), mass=0.5, inertia=(0.002, 0.002, 0.0005))
    return b.finalize()


def test_stiff_cables_stable_implicitly_while_explicit_diverges():
    """A 50-body chain hung by k = 1e7 N/m cables at dt = 1/30 s (light joint damping, 0.5 N·m·s/rad).

    The linearly implicit step treats gravity and Coriolis terms explicitly, so an
    undamped 50-link chain at 1/30 s is marginal even without cables; the cables'
    stiffness itself is what the explicit step cannot take (it fails at step 1).
    """
    model = _hanging_chain()
    sc = engine.Scene(model, q0=np.full(model.nv, 0.02))
    for j in model.joint_names:
        sc.add_joint_spring(j, 0.0, 0.5)
    R, p = engine.link_poses(model, sc.q0)
    for i in range(4, 50, 5):
        tip = p[i] + R[i] @ np.array([0, 0, -0.2])
        sc.add_cable(i, tip, -1, tip + np.array([0.0, 2.0, 2.0]), 1e7, rest_length=2.0 * np.sqrt(2) - 0.01)
    sim = engine.Simulator(sc, "pcg", dt=1 / 30)
    sim.step(150)
    assert np.all(np.isfinite(sim.state.qd)) and np.abs(sim.state.qd).max() < 50
    assert np.isfinite(sim.energy())
    explicit = engine.Simulator(sc, "explicit", dt=1 / 30)
    with pytest.raises(SimulationError, match="diverged at step"):
        explicit.step(150)


def test_taut_cable_transfers_energy_between_pendulums():
    """Two pendulums side by side, joined by a taut cable along their swing direction."""
    b = engine.ModelBuilder()
    for k, y in enumerate((0.0, 1.0)):
        b.add_body(f"p{k}", joint="revolute", axis=(1, 0, 0), joint_origin=(0, y, 0), com=(0, 0, -1.0),
                   mass=1.0, inertia=(0.01, 0.01, 0.01))
    model = b.finalize()
    sc = engine.Scene(model, qd0=np.array([-1.0, 0.0]))  # p0 swings away from p1: the cable pulls
    sc.add_cable(0, (0.0, 0.0, -0.5), 1, (0.0, 1.0, -0.5), 200.0, rest_length=0.99, name="link")
    sim = engine.Simulator(sc, "pcg", dt=1e-3)
    ke = []
    for _ in range(2000):
        sim.step()
        ke.append(0.5 * 1.01 * sim.state.qd ** 2)
    ke = np.array(ke)
    E0 = 0.5 * 1.01 * 1.0
    assert ke[:, 1].max() > 0.2 * E0  # p1 received a good share of p0's kinetic energy
    assert ke[:, 0].min() < 0.5 * E0  # and p0 gave it up


def test_bad_scene_input_names_the_element():
    model = engine.random_tree(3, seed=0)
    sc = engine.Scene(model)
    with pytest.raises(ModelError, match="cable 'stay3': no body named 'deck9'"):
        sc.add_cable("deck9", (0, 0, 0), -1, (0, 0, 1), 1e4, name="stay3")
    with pytest.raises(ModelError, match="spring 's': stiffness must be ≥ 0"):
        sc.add_spring(0, (0, 0, 0), 1, (1, 0, 0), -5.0, name="s")
    with pytest.raises(ModelError, match="cable 'c': rest length must be ≥ 0"):
        sc.add_cable(0, (0, 0, 0), 1, (1, 0, 0), 5.0, rest_length=-1.0, name="c")
    with pytest.raises(ModelError, match="loop closure 'lc': constrains body 'b1' to itself"):
        sc.add_loop_closure(1, "b1", (0, 0, 0), name="lc")
    with pytest.raises(ValueError, match="unknown solver 'magic'"):
        engine.Simulator(sc, "magic")


def test_parallel_constraint_solves_match_sequential(monkeypatch):
    monkeypatch.setattr(engine.solvers.stages.closure_solve, "PARALLEL_MIN_DOFS", 1)  # force threads on this small chain
    model = _hanging_chain(10, link=0.25)
    q0 = np.tile([0.5, -0.2], 5)
    out = []
    for threads in (1, 2):
        sc = engine.Scene(model, q0=q0)
        R, p = engine.link_poses(model, q0)
        sc.add_loop_closure(9, -1, p[9] + R[9] @ np.array([0, 0, -0.25]), kind="point", name="end")
        sc.add_loop_closure(4, -1, p[4] + R[4] @ np.array([0, 0, -0.25]), kind="point", name="middle")
        sc.add_spring(2, p[2], 7, p[7], 50.0, name="cross")
        sim = engine.Simulator(sc, "pcg", dt=1 / 240, threads=threads, tol=1e-12)
        sim.step(50)
        out.append(sim.state.qd.copy())
    assert rel_err(out[1], out[0]) < 1e-10


def test_moving_load_travels_along_the_chain():
    model = _hanging_chain(4, link=0.5)
    sc = engine.Scene(model)
    R, p = engine.link_poses(model, sc.q0)
    path = [(i, p[i], p[i] + R[i] @ np.array([0, 0, -0.5])) for i in range(4)]
    load = sc.add_moving_load((0.0, 100.0, 0.0), path, 1.0, 3.0, name="car")
    assert load.at(0.5)[0] == -1 and load.at(3.5)[0] == -1
    assert load.at(1.1)[0] == 0 and load.at(2.9)[0] == 3
    body, x = load.at(2.0)  # halfway: the start of body 2
    assert body in (1, 2) and np.allclose(sc.world_point(body, x), p[2], atol=1e-9)
    sim = engine.Simulator(sc, "pcg", dt=1 / 120)
    sim.step(int(2.0 * 120))
    assert sim.state.q[0] > 0.05  # pushed sideways (+y) while it passed


def _free_box(kind, axis=(1.0, 0.0, 0.0), axis_b=None):
    b = engine.ModelBuilder()
    b.add_body("box", joint="free", mass=2.0, inertia=(0.05, 0.08, 0.11))
    model = b.finalize()
    q0 = model.neutral_q()
    q0[:3] = (0.0, 0.3, -0.4)
    sc = engine.Scene(model, q0=q0, qd0=np.array([0.4, -0.3, 0.2, 0.1, 0.0, 0.0]))
    sc.add_loop_closure("box", -1, (0.0, 0.0, 0.0), kind=kind, axis=axis, axis_b=axis_b, name=f"{kind}_pin")
    return sc


@pytest.mark.parametrize("kind", ["point", "hinge", "universal", "fixed"])
def test_loop_closure_kinds_hold_their_constraints(kind):
    sc = _free_box(kind, axis_b=(0.0, 1.0, 0.0))
    sim = engine.Simulator(sc, "pcg", dt=1 / 240)
    worst = 0.0
    for _ in range(480):
        sim.step()
        worst = max(worst, sim.stats.constraint_error)
    assert worst < 1e-6
    R, p = engine.link_poses(sc.model, sim.state.q)
    omega_world = R[0] @ sim.state.qd[:3]
    if kind == "fixed":
        assert np.abs(sim.state.qd).max() < 1e-6
    elif kind == "hinge":  # rotates only about world x, and it does swing
        assert np.abs(omega_world[1:]).max() < 1e-6 and abs(omega_world[0]) > 0.1
    elif kind == "universal":  # no relative rotation about n_a × n_b (the box is body a, the world body b)
        lc = sc.loop_closures[0]
        n_a, n_b = R[0] @ lc.axis_a, lc.axis_b
        assert abs(n_a @ n_b) < 1e-6
        # velocities satisfy the rows at the step's start pose, so O(h) off at the end pose
        assert abs(omega_world @ np.cross(n_a, n_b)) < 0.01 * np.linalg.norm(omega_world)


def _rope_with_everything(couple: bool):
    """8-link stiff rope with a joint spring and a point force; couple: a spring between two links too."""
    sc = engine.scenes.rope(8, side_spring=1e5)
    sc.add_joint_spring(sc.model.joint_names[2], 40.0, damping=0.5, rest=0.3)
    sc.add_point_force(sc.model.body_names[5], (0.0, 0.1, 0.0), (2.0, 0.0, -1.0), frame="link")
    if couple:
        sc.add_spring(sc.model.body_names[1], (0.0, 0.0, 0.0), sc.model.body_names[6], (0.0, 0.0, 0.0), 3000.0,
                      damping=2.0, rest_length=0.5, frame="link")
    return sc


@pytest.mark.parametrize("couple", [False, True])
def test_one_call_step_equals_the_step_run_stage_by_stage(couple):
    """``redmax_step.pcg_step`` (assembly, solve and q ⊕ h q̇ in one kernel call; without couplings the
    exact P⁻¹ solve) against the same step run as separate stages (evaluate, PCG, integrate), and
    against the dense solver."""
    sc = _rope_with_everything(couple)
    one, staged = (RedMaxStepper(sc, 0.01, "pcg", tol=1e-13, geometric_stiffness="joints") for _ in range(2))
    staged._one_call = False
    assert one._one_call and one._exact_preconditioner == (not couple)
    s1 = s2 = engine.State(sc.q0.copy(), sc.qd0.copy(), 0.0)
    for k in range(20):
        control = sc.control(s1.t)
        s1, s2 = one.step(s1, control), staged.step(s2, control)
        assert rel_err(s1.qd, s2.qd) < 1e-10 and rel_err(s1.q, s2.q) < 1e-12, k
        assert one.stats.iterations == staged.stats.iterations
    dense = RedMaxStepper(sc, 0.01, "dense", geometric_stiffness="joints")
    qd_dense = dense.step(s2, sc.control(s2.t)).qd
    assert rel_err(one.step(s2, sc.control(s2.t)).qd, qd_dense) < 1e-9
