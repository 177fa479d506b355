"""The scene's drives (engine/scene_drives.py): prescribed joints against analytic and fine-step references,
motors against stable PD, breakable joints against statics and a tree rebuilt without changing any pose,
velocity decay's D against the drag it models and finite differences, Blender's force fields against their
formulas; solvers without these stages refuse them by name."""
import copy
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.integrate import solve_ivp

import engine
from engine.breaking import joint_reactions, scene_with_free_joint
from engine.control import JointTrajectory
from engine.errors import ModelError, SceneFileError, SimulatorOptionError
from engine.forces.evaluator import ForceEvaluator
from engine.forces.fields import field_force, make_field


SOLVERS = ("pcg", "direct", "dense", "explicit")


# ------------------------------------------------------------------ trajectories
def test_a_joint_trajectory_meets_its_samples_and_moves_smoothly_between_them():
    """Cubic: every sample exactly, a velocity continuous across samples; linear: the geodesic; held outside."""
    rng = np.random.default_rng(0)
    quats = rng.normal(size=(6, 4))
    quats /= np.linalg.norm(quats, axis=1, keepdims=True)
    for k in range(1, 6):
        quats[k] *= np.sign(quats[k] @ quats[k - 1])
    samples = np.column_stack([rng.normal(size=(6, 3)) * 0.1, quats * 0 + quats])
    for jtype, s in (("revolute", rng.normal(size=(6, 1))), ("spherical", quats), ("free", samples)):
        cubic = JointTrajectory(jtype, s, 1.0, 0.5)
        linear = JointTrajectory(jtype, s, 1.0, 0.5, "linear")
        for k in range(6):
            np.testing.assert_allclose(engine.joints.difference(cubic.joint_type, cubic(1.0 + 0.5 * k), s[k]), 0,
                                       atol=1e-9)
        for k in range(1, 5):  # velocity continuous at sample k (one-sided limits agree)
            t = 1.0 + 0.5 * k
            np.testing.assert_allclose(cubic.velocity(t - 1e-7), cubic.velocity(t + 1e-7), atol=1e-5)
        step = engine.joints.difference(linear.joint_type, s[2], s[3])
        np.testing.assert_allclose(engine.joints.difference(linear.joint_type, s[2], linear(2.25)), 0.5 * step, atol=1e-9)
        np.testing.assert_allclose(cubic(-5.0), s[0])
        np.testing.assert_allclose(cubic(99.0), s[-1])


def test_a_joint_trajectory_refuses_bad_samples_by_name():
    with pytest.raises(ModelError, match="samples must be"):
        JointTrajectory("spherical", np.zeros((3, 3)))
    with pytest.raises(ModelError, match="unit length"):
        JointTrajectory("spherical", np.ones((3, 4)))
    with pytest.raises(ModelError, match="dt > 0"):
        JointTrajectory("revolute", [[0.0], [1.0]], 0.0, 0.0)


# ------------------------------------------------------------------ prescribed joints
def _cart_pendulum(L=1.0, m=1.0, Ic=0.004):
    b = engine.ModelBuilder()
    b.add_body("cart", joint="free", mass=1.0)
    b.add_body("bob", parent="cart", joint="revolute", axis=(1, 0, 0), com=(0, 0, -L), mass=m, inertia=np.eye(3) * Ic)
    return b.finalize()


def _cart_scene(model, A=0.3, w=2 * math.pi, fps=24):
    sc = engine.Scene(model)
    ts = np.arange(0, 3.01, 1 / fps)
    sc.prescribe("cart_joint", JointTrajectory("free", [[0, A * math.sin(w * t), 0, 1, 0, 0, 0] for t in ts], 0.0, 1 / fps))
    sc.qd0[4] = A * w  # the bob starts moving with the cart
    return sc


def _cart_exact(T, A=0.3, w=2 * math.pi, L=1.0, m=1.0, Ic=0.004):
    """θ(T) of a pendulum hung from a point moving as y = A sin(ω t): (m L² + I) θ̈ + m L cos θ ÿ + m g L sin θ = 0."""
    def f(t, s):
        return [s[1], -m * L * (9.81 * math.sin(s[0]) - A * w * w * math.sin(w * t) * math.cos(s[0])) / (m * L * L + Ic)]
    return solve_ivp(f, (0, T), [0.0, 0.0], rtol=1e-10, atol=1e-12).y[0, -1]


def test_a_pendulum_on_a_prescribed_cart_swings_as_the_analytic_one():
    """The cart's free joint follows its trajectory exactly at every step; the bob's angle after 2 s matches the
    analytic equation (explicit at 1/960 s to 1e-3 rad; the RedMax steps within their own damping, 2e-2 rad, and
    agree with each other)."""
    model = _cart_pendulum()
    exact = _cart_exact(2.0)
    angles = {}
    for solver in SOLVERS:
        sc = _cart_scene(model)
        sim = engine.Simulator(sc, solver, dt=1 / 960)
        for k in range(1920):
            sim.step()
            if k % 240 == 239:  # on the trajectory at every step's end
                target = sc.prescribed[0].motion(sim.state.t)
                np.testing.assert_allclose(sim.state.q[:7], target, atol=1e-12)
        angles[solver] = sim.state.q[7]
    assert abs(angles["explicit"] - exact) < 1e-3
    for solver in ("pcg", "direct", "dense"):
        assert abs(angles[solver] - exact) < 2e-2
        assert angles[solver] == pytest.approx(angles["pcg"], abs=1e-8)


def test_a_prescribed_crank_drives_a_four_bar_and_the_closure_and_a_limit_hold():
    """A four-bar's crank turned by a prescribed angle: the loop closure stays closed (post-stabilization keeps
    the prescribed joint on its trajectory), and a joint limit elsewhere is respected."""
    scene = engine.scenes.four_bar()
    model = scene.model
    crank = model.joint_names[0]
    q0 = float(scene.q0[model.q_slice(crank)][0])
    scene.prescribe(crank, lambda t: np.array([q0 + 0.8 * math.sin(2.0 * t)]))
    for solver in ("pcg", "direct", "dense"):
        sim = engine.Simulator(scene, solver, dt=1 / 240)
        for _ in range(240):
            sim.step()
            assert sim.stats.constraint_error < 1e-8
        assert sim.state.q[model.q_slice(crank)][0] == pytest.approx(q0 + 0.8 * math.sin(2.0 * sim.state.t), abs=1e-10)


def test_a_prescribed_joint_is_released_at_until_with_its_last_velocity():
    b = engine.ModelBuilder(gravity=(0, 0, 0))
    b.add_body("slider", joint="prismatic", axis=(1, 0, 0), mass=1.0)
    sc = engine.Scene(b.finalize())
    sc.prescribe("slider_joint", lambda t: np.array([2.0 * t]), until=0.5)
    sim = engine.Simulator(sc, "pcg", dt=0.01)
    sim.step(100)
    assert sim.state.qd[0] == pytest.approx(2.0) and sim.state.q[0] == pytest.approx(2.0)


def test_prescribe_refuses_bad_input_by_name():
    sc = engine.Scene(_cart_pendulum())
    with pytest.raises(ModelError, match="prescribed joint 'nope': no joint"):
        sc.prescribe("nope", lambda t: np.zeros(1))
    with pytest.raises(ModelError, match="prescribed joint .bob_joint.: motion"):
        sc.prescribe("bob_joint", lambda t: np.zeros(3))
    with pytest.raises(ModelError, match="callable"):
        sc.prescribe("bob_joint", [0.0])


# ------------------------------------------------------------------ motors
def _wheel(gravity=(0.0, 0.0, 0.0)):
    b = engine.ModelBuilder(gravity=gravity)
    b.add_body("wheel", joint="revolute", axis=(0, 0, 1), mass=6.0, com=(0.3, 0, 0), inertia=np.eye(3))
    return b.finalize()


@pytest.mark.parametrize("solver", SOLVERS)
def test_an_unbounded_motor_is_stable_pd_in_the_limit_of_infinite_damping(solver):
    """A motor without a force bound holds its target velocity exactly, like stable PD with K_p = 0 and
    K_d → ∞ toward that velocity (engine.spd, the implicit velocity q̇ + h q̈ converging to it); a bounded one
    accelerates at max_force / inertia, as SPD whose torque is clamped there."""
    model = _wheel(gravity=(0.0, -9.81, 0.0))  # gravity loads the off-centre wheel
    sc = engine.Scene(model)
    sc.add_motor("world", "wheel", (0, 0, 1), target_velocity=2.0)
    sim = engine.Simulator(sc, solver, dt=1 / 30)
    sim.step(30)
    h = 1 / 30
    q, qd = sim.state.q, sim.state.qd
    assert qd[0] == pytest.approx(2.0, abs=1e-9)
    for kd in (1e3, 1e5, 1e7):
        qdd, _ = engine.spd(model, q, np.zeros(1), q, 0.0, kd, h, qd_target=np.array([2.0]), method="dense")
        spd_velocity = h * qdd[0]
    assert spd_velocity == pytest.approx(2.0, abs=1e-4)
    weak = engine.Scene(_wheel())
    weak.add_motor("world", "wheel", (0, 0, 1), target_velocity=5.0, max_force=0.5)
    sim = engine.Simulator(weak, solver, dt=1 / 60)
    sim.step(60)
    inertia = 1.0 + 6.0 * 0.3 ** 2
    # (the RedMax step's metric carries the joints' geometric stiffness of the spinning offset mass: 1.5e-4)
    assert sim.state.qd[0] == pytest.approx(0.5 / inertia * 1.0, rel=1e-6 if solver == "explicit" else 1e-3)


def test_a_linear_motor_pushes_along_its_axis_between_two_bodies():
    b = engine.ModelBuilder(gravity=(0, 0, 0))
    b.add_body("a", joint="prismatic", axis=(1, 0, 0), mass=1.0)
    b.add_body("b", joint="prismatic", axis=(1, 0, 0), mass=3.0)
    sc = engine.Scene(b.finalize())
    sc.add_motor("a", "b", (1, 0, 0), target_velocity=0.4, kind="linear")
    sim = engine.Simulator(sc, "pcg", dt=0.01)
    sim.step(10)
    assert sim.state.qd[1] - sim.state.qd[0] == pytest.approx(0.4)
    assert 1.0 * sim.state.qd[0] + 3.0 * sim.state.qd[1] == pytest.approx(0.0, abs=1e-12)  # momentum kept


# ------------------------------------------------------------------ breaking
def _chain(n=3, gravity=(0, 0, -9.81)):
    b = engine.ModelBuilder(gravity=gravity)
    for i in range(n):
        b.add_body(f"l{i}", parent=f"l{i - 1}" if i else -1, joint="revolute", axis=(1, 0, 0),
                   joint_origin=(0, 0, -1.0) if i else (0, 0, 0), com=(0, 0, -0.5), mass=1.0 + i)
    return b.finalize()


def test_the_reaction_of_a_hanging_chain_at_rest_is_the_weight_below_each_joint():
    model = _chain()
    q, qd = np.zeros(3), np.zeros(3)
    react = joint_reactions(model, q, qd, qd, 0.01, np.zeros((3, 6)))
    for i, below in enumerate((6.0, 5.0, 3.0)):
        np.testing.assert_allclose(react[i, 3:], [0, 0, below * 9.81], atol=1e-9)
        np.testing.assert_allclose(react[i, :3], 0, atol=1e-9)


def test_freeing_a_joint_keeps_every_pose_and_velocity():
    rng = np.random.default_rng(3)
    model = _chain(4)
    sc = engine.Scene(model)
    sc.add_joint_spring("l3_joint", 5.0, 0.5)
    q, qd = rng.normal(size=4) * 0.5, rng.normal(size=4)
    new, q2, qd2 = scene_with_free_joint(sc, "l2_joint", q, qd)
    assert new.model.joint_type[2] == engine.joints.FREE and new.model.nv == 3 + 6
    R, p = engine.link_poses(model, q)
    R2, p2 = engine.link_poses(new.model, q2)
    np.testing.assert_allclose(R2, R, atol=1e-12)
    np.testing.assert_allclose(p2, p, atol=1e-12)
    np.testing.assert_allclose(engine.link_velocities(new.model, q2, qd2), engine.link_velocities(model, q, qd),
                               atol=1e-12)
    assert new.joint_stiffness[new.model.v_slice("l3_joint")] == pytest.approx([5.0])


@pytest.mark.parametrize("solver", ("pcg", "explicit"))
def test_a_joint_breaks_at_the_step_its_reaction_impulse_passes_the_threshold_and_the_child_falls(solver):
    model = _chain(2)
    sc = engine.Scene(model)
    sc.add_point_force("l1", (0, 0, -1.5), (0, 0, 0))
    sc.add_controller(lambda scene, t: scene.set_point_force(0, (0, 0, -40.0 * t)))
    sc.set_breakable("l1_joint", threshold=60.0 / 240, interval=1 / 240)  # 60 N
    sim = engine.Simulator(sc, solver, dt=1 / 240)
    for _ in range(480):
        sim.step()
        if sim.broken:
            break
    t, name = sim.broken[0]
    assert name == "l1_joint"
    assert abs(t - (60.0 - 2 * 9.81) / 40.0) < 2 / 240  # weight 2 kg · g plus the growing pull
    v0 = sim.state.qd[sim.model.v_slice("l1_joint")][3:].copy()
    sim.step(24)
    dv = sim.state.qd[sim.model.v_slice("l1_joint")][3:] - v0
    assert dv[2] < -0.1 * 9.81  # it falls: nothing holds it


def test_set_breakable_refuses_what_it_cannot_break_by_name():
    sc = engine.Scene(_chain(2))
    with pytest.raises(ModelError, match="breakable 'nope': no joint or loop closure"):
        sc.set_breakable("nope", 1.0, 0.01)
    with pytest.raises(ModelError, match="threshold"):
        sc.set_breakable("l0_joint", -1.0, 0.01)


# ------------------------------------------------------------------ velocity decay
def test_velocity_decay_is_the_drag_at_the_centre_of_mass_and_its_d_matches_finite_differences():
    """D φ of ``Scene.set_velocity_decay`` is the wrench of −c_v m v_com at the centre of mass and −c_ω I ω
    (link frame, at the link origin), and −∂f/∂φ of the evaluator's body wrenches by central differences."""
    rng = np.random.default_rng(5)
    b = engine.ModelBuilder()
    b.add_body("a", joint="free", mass=2.0, com=(0.3, -0.2, 0.1), inertia=[[0.3, 0.05, 0], [0.05, 0.2, 0], [0, 0, 0.4]])
    model = b.finalize()
    sc = engine.Scene(model)
    sc.set_velocity_decay("a", linear=0.7, angular=1.3)
    fe = ForceEvaluator(sc.finalize())
    D = fe.body_damping_blocks[0]
    phi = rng.normal(size=6)
    w, v = phi[:3], phi[3:]
    com = model.body_com[0]
    R = model.body_rotation[0]
    I = R @ np.diag(model.body_principal_inertia[0]) @ R.T
    f = -0.7 * 2.0 * (v + np.cross(w, com))
    n = np.cross(com, f) - 1.3 * I @ w
    np.testing.assert_allclose(-D @ phi, np.concatenate([n, f]), atol=1e-12)
    q = model.neutral_q()
    ws = model.make_workspace()
    control = sc.control(0.0)

    def wrench(qd):
        fe.evaluate(q, qd, control, ws)
        return fe.body_wrenches(ws)[0]

    eps = 1e-6
    fd = np.column_stack([-(wrench(phi + eps * e) - wrench(phi - eps * e)) / (2 * eps) for e in np.eye(6)])
    np.testing.assert_allclose(fd, D, atol=1e-7)


@pytest.mark.parametrize("solver", SOLVERS)
def test_a_free_body_decays_at_its_rates(solver):
    b = engine.ModelBuilder(gravity=(0, 0, 0))
    b.add_body("a", joint="free", mass=1.0)
    sc = engine.Scene(b.finalize())
    sc.qd0[:] = [0, 0, 0, 3.0, 0, 0]
    sc.set_velocity_decay("a", linear=-math.log(0.5))
    sim = engine.Simulator(sc, solver, dt=1 / 600)
    sim.step(600)
    assert sim.state.qd[3] == pytest.approx(1.5, rel=2e-3)  # Blender: v₀ (1 − 0.5)^t


# ------------------------------------------------------------------ force fields
def _field(kind, shape="point", **kw):
    params = {k: kw.pop(k) for k in list(kw) if k in engine.forces.fields.PARAMETERS}
    return make_field("f", kind, shape, [0.0], kw.pop("origin", (0, 0, 0)), kw.pop("axis", (0, 0, 1)), params,
                      [0], [[0, 0, 0]], [[0, 0, 0]], frame_rate=24.0, **kw)


def test_force_fields_push_as_blenders_formulas():
    x, v = np.array([3.0, 4.0, 2.0]), np.array([0.5, -1.0, 0.0])
    np.testing.assert_allclose(field_force(_field("wind", "plane", strength=48.0, flow=0.5), 0, x, v),
                               [0, 0, 2.0] - 0.5 * v)
    r = x / np.linalg.norm(x)
    np.testing.assert_allclose(field_force(_field("force", strength=24.0), 0, x, v), r)
    np.testing.assert_allclose(field_force(_field("force", strength=24.0, gravitation=True), 0, x, v), r / 29.0)
    np.testing.assert_allclose(field_force(_field("harmonic", strength=24.0, damping=0.5), 0, x, v),
                               -x - 2 * 0.5 * math.sqrt(24.0) * v)
    # vortex (plane): s² f² n × (n × x) + s f n × x − r v, all over r
    s, n = 2.0, np.array([0, 0, 1.0])
    expected = (s * s * np.cross(n, np.cross(n, x)) + s * np.cross(n, x) - 24.0 * v) / 24.0
    np.testing.assert_allclose(field_force(_field("vortex", "plane", strength=s), 0, x, v), expected)
    speed = np.linalg.norm(v) * 24.0
    np.testing.assert_allclose(field_force(_field("drag", strength=0.1, damping=0.2), 0, x, v),
                               -speed * (0.1 * speed + 0.2) * v / np.linalg.norm(v) / 24.0)
    turb = field_force(_field("turbulence", strength=24.0, size=1.0), 0, x + 0.37, v)  # (0 on the noise's lattice)
    assert np.all(np.abs(turb) <= 1.0) and np.any(turb != 0)


def test_field_falloff_and_direction_follow_blender():
    x, v = np.array([0.0, 0.0, 3.0]), np.zeros(3)
    far = _field("force", strength=24.0, power=2.0)
    assert field_force(far, 0, x, v)[2] == pytest.approx(1.0 / (1 + 3.0) ** 2)
    capped = _field("force", strength=24.0, use_max_distance=True, max_distance=2.0)
    assert not np.any(field_force(capped, 0, x, v))
    near = _field("force", strength=24.0, power=2.0, use_min_distance=True, min_distance=5.0)
    assert field_force(near, 0, x, v)[2] == pytest.approx(1.0)
    below = _field("wind", "plane", strength=24.0, z_direction="positive")
    assert not np.any(field_force(below, 0, -x, v)) and field_force(below, 0, x, v)[2] == pytest.approx(1.0)


def test_a_field_uses_the_sample_of_the_frame_its_step_ends_in():
    ff = make_field("f", "wind", "plane", [0.0, 1.0, 2.0], (0, 0, 0), (0, 0, 1), {"strength": [0.0, 10.0, 20.0]},
                    [0], [[0, 0, 0]], [[0, 0, 0]])
    assert [ff.sample_index(t) for t in (0.0, 0.5, 0.999, 1.0, 1.5, 5.0)] == [1, 1, 1, 2, 2, 2]


# ------------------------------------------------------------------ refusals
@pytest.mark.parametrize("solver", ("baraff", "hard-constraints"))
def test_solvers_without_these_stages_refuse_them_by_name(solver):
    sc = engine.Scene(_chain(2))
    sc.add_motor("l0", "l1", (1, 0, 0), target_velocity=1.0)
    with pytest.raises(SimulatorOptionError, match=rf"the '{solver}' solver does not simulate 1 motors"):
        engine.Simulator(sc, solver, dt=0.01, enforce_limits=False)


def test_a_scene_file_keeps_the_velocity_decay_and_refuses_what_it_cannot_hold(tmp_path):
    sc = engine.Scene(_chain(2))
    sc.set_velocity_decay("l1", 0.2, 0.3)
    loaded = engine.load_scene(engine.save_scene(sc, tmp_path / "decay.json"))
    np.testing.assert_array_equal(loaded.velocity_decay, sc.velocity_decay)
    sc.prescribe("l0_joint", lambda t: np.array([0.1 * t]))
    with pytest.raises(SceneFileError, match="cannot hold its prescribed joints"):
        engine.save_scene(sc, tmp_path / "prescribed.json")


def test_a_breakable_loop_closure_is_dropped_when_its_row_impulse_passes_the_threshold():
    """A pendulum held up by a point closure to the world at its tip (a loop); a growing pull on the bob: the
    closure breaks (its rows' impulses, the RedMax solve's multipliers) and the pendulum swings down."""
    b = engine.ModelBuilder()
    b.add_body("arm", joint="revolute", axis=(1, 0, 0), com=(0, 0.5, 0), mass=1.0)
    sc = engine.Scene(b.finalize())
    sc.add_loop_closure("arm", "world", (0, 1.0, 0), kind="point", name="prop")
    sc.add_point_force("arm", (0, 1.0, 0), (0, 0, 0))
    sc.add_controller(lambda scene, t: scene.set_point_force(0, (0, 0, -20.0 * t)))
    sc.set_breakable("prop", threshold=30.0 / 240, interval=1 / 240)  # 30 N
    sim = engine.Simulator(sc, "pcg", dt=1 / 240)
    for _ in range(480):
        sim.step()
        if sim.broken:
            break
    assert [name for _, name in sim.broken] == ["prop"] and not sim.scene.loop_closures
    # the prop carries half the weight and all the pull: 0.5 · 9.81 + 20 t = 30 N
    assert abs(sim.broken[0][0] - (30.0 - 0.5 * 9.81) / 20.0) < 3 / 240
    sim.step(60)
    assert sim.state.q[0] < -0.2  # it swings down


API_JUNK = [None, True, "x", [], [1, 2], {}, float("nan"), -1, 1e308, (0, 0, 0), (1, 0, 0, 0), [[1, 2], [3]]]
DRIVE_CALLS = {  # method: (positional arguments, keyword arguments) of a valid call on _chain(2)'s scene
    "prescribe": (("l0_joint", lambda t: np.array([0.1 * t])), {"until": 1.0}),
    "add_motor": (("l0", "l1", (1, 0, 0)), {"target_velocity": 1.0, "max_force": 2.0, "kind": "angular"}),
    "set_breakable": (("l1_joint", 1.0, 0.01), {}),
    "set_velocity_decay": (("l1", 0.1, 0.2), {}),
    "add_force_field": (("wind", "wind"), {"bodies": ["l1"], "shape": "plane", "strength": 24.0,
                                           "origin": (0, 0, 1), "axis": (0, 1, 0)}),
}


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(DRIVE_CALLS)), st.data())
def test_drive_methods_fail_only_with_model_errors_naming_the_element(method, data):
    """Junk in any argument of a drive method: a ModelError, never another exception."""
    args, kwargs = DRIVE_CALLS[method]
    args, kwargs = list(args), dict(kwargs)
    slots = [("arg", k) for k in range(len(args))] + [("kw", k) for k in kwargs]
    kind, key = data.draw(st.sampled_from(slots), label="slot")
    junk = copy.deepcopy(data.draw(st.sampled_from(API_JUNK), label="junk"))
    if kind == "arg":
        args[key] = junk
    else:
        kwargs[key] = junk
    sc = engine.Scene(_chain(2))
    try:
        getattr(sc, method)(*args, **kwargs)
    except ModelError as e:
        assert "'" in str(e) or ": " in str(e), str(e)  # (the element named, or "<element>: what is wrong")
