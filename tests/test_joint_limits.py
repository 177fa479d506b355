"""Joint limits as unilateral constraints (engine.solvers.stages.joint_limits): a hinge stops at its
bound without overshoot or energy gain in every solver that has the stage, through the builder
and through URDF; spherical and universal bounds hold; limits hold with loop closures (the
umbrella's rib stops) and with ground contact; solvers without the stage refuse limited scenes."""
from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.errors import ModelError
from engine.urdf import load_urdf_string

LIMIT = 0.3
SOLVERS = ("explicit", "pcg", "direct", "dense")
URDF = """<robot name="door">
  <link name="frame"/>
  <link name="leaf">
    <inertial><origin xyz="0.5 0 0"/><mass value="1"/>
      <inertia ixx="0.001" iyy="0.085" izz="0.085" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="hinge" type="revolute">
    <parent link="frame"/><child link="leaf"/><axis xyz="0 1 0"/>
    <limit lower="-0.3" upper="0.3" effort="10" velocity="5"/>
  </joint>
</robot>"""


def hinge_model():
    """A horizontal 1 m link on a hinge about y: gravity turns it towards +q (its tip goes down)."""
    b = engine.ModelBuilder()
    b.add_body("leaf", joint="revolute", axis=(0, 1, 0), com=(0.5, 0, 0), mass=1.0, inertia=(0.001, 0.085, 0.085),
               limits=(-LIMIT, LIMIT), joint_name="hinge")
    return b.finalize()


def fall(model, solver, steps=180, qd0=0.0, **options):
    scene = engine.Scene(model, name="hinge", qd0=np.array([qd0]))
    sim = engine.Simulator(scene, solver, dt=1 / 60, **options)
    q, energy = [], [sim.energy()]
    for _ in range(steps):
        sim.step()
        q.append(sim.state.q[0])
        energy.append(sim.energy())
    return sim, np.array(q), np.array(energy)


@pytest.mark.parametrize("source", ["builder", "urdf"])
@pytest.mark.parametrize("solver", SOLVERS)
def test_falling_hinge_stops_at_its_limit(solver, source):
    model = hinge_model() if source == "builder" else load_urdf_string(URDF)
    sim, q, energy = fall(model, solver)
    assert q.max() <= LIMIT + 2e-3                 # never beyond by more than 2 mrad
    assert q[-1] == pytest.approx(LIMIT, abs=2e-3)  # comes to rest at it
    assert abs(sim.state.qd[0]) < 1e-9
    assert np.all(np.diff(energy) <= 1e-9)          # no energy gained, at impact or ever
    assert energy[-1] < energy[0]                   # the stop is inelastic (restitution 0)
    assert sim.limits.last_impulses.size == 1 and sim.limits.last_impulses[0] > 0  # held against gravity


@pytest.mark.parametrize("solver", ["explicit", "pcg"])
def test_lower_bound_stops_a_fast_swing(solver):
    model = hinge_model()
    _, q, energy = fall(model, solver, steps=60, qd0=-20.0)  # 20 rad/s: 0.33 rad per step
    assert q.min() >= -LIMIT - 2e-3
    assert np.all(np.diff(energy) <= 1e-9)


def test_restitution_bounces_and_keeps_energy_bounded():
    model = hinge_model()
    sim, q, energy = fall(model, "pcg", steps=120, limit_options={"restitution": 0.5})
    assert q.max() <= LIMIT + 2e-3
    assert np.any(np.diff(q) < -1e-3)    # it bounced back
    assert energy.max() <= energy[0] + 1e-12  # never above where it started (the default step holds the energy
    #                                           until the stop: equal to E(0) there, to round-off)
    assert q[-1] == pytest.approx(LIMIT, abs=2e-3) and abs(sim.state.qd[0]) < 1e-9  # and settles


def test_enforce_limits_false_lets_the_hinge_pass():
    sim, q, _ = fall(hinge_model(), "pcg", steps=60, enforce_limits=False)
    assert sim.limits is None and q.max() > 1.0


@pytest.mark.parametrize("solver", ["baraff", "hard-constraints"])
def test_solvers_without_limits_refuse_limited_scenes(solver):
    scene = engine.Scene(hinge_model(), name="door")
    with pytest.raises(ValueError, match=rf"'{solver}' solver does not enforce joint limits.*'door'.*'hinge'"):
        engine.Simulator(scene, solver, dt=1 / 60)
    engine.Simulator(scene, solver, dt=1 / 60, enforce_limits=False)  # explicitly ignored: runs


def test_bad_limit_options_are_refused():
    scene = engine.Scene(hinge_model())
    with pytest.raises(ValueError, match="'enforce_limits' must be True or False"):
        engine.Simulator(scene, "pcg", enforce_limits="yes")
    with pytest.raises(ValueError, match="restitution must be in"):
        engine.Simulator(scene, "pcg", limit_options={"restitution": 2.0})
    b = engine.ModelBuilder()
    with pytest.raises(ModelError, match="joint 'float': a free joint takes no limits"):
        b.add_body("ball", joint="free", limits=(-1, 1), joint_name="float")


@pytest.mark.parametrize("joint, bounds", [
    ("spherical", ((-0.2, -0.25, -0.3), (0.2, 0.25, 0.3))),
    ("universal", ((-0.2, -0.25), (0.2, 0.25))),
])
@pytest.mark.parametrize("solver", ["explicit", "pcg"])
def test_swing_and_twist_bounds_hold(joint, bounds, solver):
    """A tilted pendulum spinning about its rod on a ball/universal joint: every rotation-vector
    (or angle) component stays inside its bounds."""
    b = engine.ModelBuilder()
    b.add_body("bob", joint=joint, com=(0.3, 0.1, -0.4), mass=1.0, inertia=(0.02, 0.03, 0.01), limits=bounds,
               joint_name="shoulder")
    model = b.finalize()
    qd0 = np.array([2.0, -3.0, 4.0])[:model.nv]
    sim = engine.Simulator(engine.Scene(model, name=joint, qd0=qd0), solver, dt=1 / 60)
    worst = 0.0
    for _ in range(240):
        sim.step()
        worst = max(worst, sim.limits.violation(sim.state.q))
    assert worst < 2e-3
    x, _ = sim.limits.coordinates(sim.state.q)
    assert np.any(np.isclose(x, sim.limits.lower, atol=2e-3) | np.isclose(x, sim.limits.upper, atol=2e-3))


def test_umbrella_ribs_stop_at_their_opening_limit_while_the_closures_hold():
    for solver in ("pcg", "direct", "dense"):
        scene = engine.scenes.umbrella(2, rib_limit=0.9)
        sim = engine.Simulator(scene, solver, dt=1 / 60, tol=1e-11)
        worst, angles = 0.0, []
        for _ in range(240):
            sim.step()
            worst = max(worst, sim.limits.violation(sim.state.q))
            angles.append(engine.scenes.rib_angle(scene, sim.state.q))
            assert sim.stats.constraint_error < 1e-6  # the usual closure tolerance (test_scenes)
        assert worst < 2e-3
        assert angles[-1] == pytest.approx(0.9, abs=2e-3)  # stopped at the stop (1.2 rad without it)
    with pytest.raises(ValueError, match="rib_limit must be between"):
        engine.scenes.umbrella(2, rib_limit=2.0)


def limited_chain_on_ground(n=4):
    """A floating chain of capsules whose hinges may only bend down (0 ≤ q ≤ 0.4), dropped bent:
    lying flat, the ground pushes every hinge onto its lower bound."""
    b = engine.ModelBuilder()

    def capsule():
        return {"type": "capsule", "radius": 0.03, "length": 0.2, "axis": (1, 0, 0), "center": (0.1, 0, 0)}

    b.add_body("l0", joint="free", com=(0.1, 0, 0), mass=0.5, inertia=(1e-4, 2e-3, 2e-3), shape=capsule())
    for i in range(1, n):
        b.add_body(f"l{i}", parent=f"l{i - 1}", joint="revolute", axis=(0, 1, 0), joint_origin=(0.2, 0, 0),
                   com=(0.1, 0, 0), mass=0.5, inertia=(1e-4, 2e-3, 2e-3), limits=(0.0, 0.4), shape=capsule(),
                   joint_name=f"j{i}")
    model = b.finalize()
    q0 = model.neutral_q()
    q0[2] = 0.4
    q0[7:] = 0.2
    scene = engine.Scene(model, name="limited_chain", q0=q0)
    scene.set_ground(friction=0.8)
    return scene


@pytest.mark.parametrize("solver", SOLVERS)
def test_limited_chain_resting_on_the_ground_stays_within_its_limits(solver):
    sim = engine.Simulator(limited_chain_on_ground(), solver, dt=1 / 60)
    worst = 0.0
    for _ in range(150):
        sim.step()
        worst = max(worst, sim.limits.violation(sim.state.q))
    assert worst < 2e-3
    assert len(sim.contact.last.contacts) > 0 and np.abs(sim.state.qd).max() < 1e-6  # at rest on the ground


def test_ball_joint_limit_rows_are_the_rotation_vector_rates():
    """Finite differences: φ(q ⊕ εω) − φ(q) = ε · rows · ω for random poses (angles up to ~3 rad)."""
    from engine.integrators import integrate
    from engine.solvers.stages.joint_limits import JointLimits

    b = engine.ModelBuilder()
    b.add_body("bob", joint="spherical", com=(0, 0, -0.5), limits=((-1, -1, -1), (1, 1, 1)))
    model = b.finalize()
    limits = JointLimits(engine.Scene(model), 1 / 60)
    rng = np.random.default_rng(3)
    for _ in range(20):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        omega = rng.normal(size=3)
        x, (coef, idx) = limits.coordinates(q)
        rate = (coef * omega[idx]).sum(axis=1)
        eps = 1e-6
        xp, _ = limits.coordinates(integrate(model, q, omega, eps))
        xm, _ = limits.coordinates(integrate(model, q, omega, -eps))
        np.testing.assert_allclose((xp - xm) / (2 * eps), rate, rtol=1e-6, atol=1e-6)
        R = engine.link_poses(model, q)[0][0]
        theta = np.linalg.norm(x)
        assert np.arccos(np.clip((np.trace(R) - 1) / 2, -1, 1)) == pytest.approx(theta, abs=1e-9)  # |φ| is the angle


EULER_ORDERS = engine.joints.LIMIT_ANGLES[1:]


def _ball(limit_angles, bounds=((-1, -1, -1), (1, 1, 1)), **kw):
    b = engine.ModelBuilder()
    b.add_body("bob", joint="spherical", com=(0.3, 0.1, -0.4), mass=1.0, inertia=(0.02, 0.03, 0.01), limits=bounds,
               joint_name="shoulder", limit_angles=limit_angles, **kw)
    return b.finalize()


def _random_quaternions(rng, n):
    """Unit quaternions: half of them small turns (up to ~25°, where limits live), half anywhere."""
    q = rng.normal(size=(n, 4))
    q[: n // 2, 1:] *= 0.2
    return q / np.linalg.norm(q, axis=1, keepdims=True)


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_ball_joint_euler_limit_rows_are_the_euler_rates(order):
    """Finite differences: x(q ⊕ εω) − x(q ⊕ −εω) = 2ε · rows · ω for the Euler angles of each order, ω the
    joint's velocity (child coordinates), at random poses away from the gimbal."""
    from engine.integrators import integrate
    from engine.solvers.stages.joint_limits import JointLimits

    model = _ball(order)
    limits = JointLimits(engine.Scene(model), 1 / 60)
    rng = np.random.default_rng(7)
    checked = 0
    for q in _random_quaternions(rng, 60):
        omega = rng.normal(size=3)
        x, (coef, idx) = limits.coordinates(q)
        if abs(abs(x["XYZ".index(order[1])]) - np.pi / 2) < 0.05:  # near the gimbal: the rows are held bounded
            continue
        rate = (coef * omega[idx]).sum(axis=1)
        eps = 1e-6
        xp, _ = limits.coordinates(integrate(model, q, omega, eps))
        xm, _ = limits.coordinates(integrate(model, q, omega, -eps))
        if np.abs(xp - xm).max() > 1.0:  # the two decompositions swap places between ±ε (a jump, not a rate)
            continue
        np.testing.assert_allclose((xp - xm) / (2 * eps), rate, rtol=1e-6, atol=1e-6)
        checked += 1
    assert checked >= 50


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_ball_joint_euler_coordinates_are_blenders_to_euler(order):
    """x is mathutils' Matrix.to_euler(order) of the joint's rotation (Blender's Limit Rotation reads these),
    to float32 round-off, for random rotations."""
    pytest.importorskip("bpy")
    from mathutils import Quaternion

    from engine.solvers.stages.joint_limits import JointLimits

    limits = JointLimits(engine.Scene(_ball(order)), 1 / 60)
    for q in _random_quaternions(np.random.default_rng(11), 200):
        x, _ = limits.coordinates(q)
        blender = np.array(Quaternion(q).to_matrix().to_euler(order))
        np.testing.assert_allclose(x, blender, atol=2e-6)


def _euler_violation(q, order, bound):
    from engine.solvers.stages.joint_limits import euler_angles

    R, e = np.empty((3, 3)), np.empty(3)
    engine.joints.quat_to_matrix(q, 0, R)
    euler_angles(R, engine.joints.LIMIT_ANGLES.index(order), e)
    return max(0.0, float(np.abs(e).max()) - bound)


def euler_pendulum(solver, limit_angles, steps=240):
    """(worst Euler XYZ violation (rad), most bounds reached at once) of a tilted spinning pendulum on a ball
    joint bounded to ±15° on ``limit_angles`` coordinates."""
    bound = np.radians(15.0)
    model = _ball(limit_angles, ((-bound,) * 3, (bound,) * 3))
    sim = engine.Simulator(engine.Scene(model, name="ball", qd0=np.array([1.0, -1.5, 2.0])), solver, dt=1 / 60)
    worst, most_on_bounds = 0.0, 0
    for _ in range(steps):
        sim.step()
        worst = max(worst, _euler_violation(sim.state.q, "XYZ", bound))
        x, _ = sim.limits.coordinates(sim.state.q)
        most_on_bounds = max(most_on_bounds, int(np.sum(np.abs(x) > bound - 2e-3)))
    return worst, most_on_bounds


@pytest.mark.parametrize("solver", ["explicit", "pcg"])
def test_ball_joint_held_by_euler_bounds_stays_within_them(solver):
    """A tilted spinning pendulum on a ball joint with ±15° Euler XYZ bounds: gravity and the spin turn two
    and three axes at once; its Euler angles stay within the bounds (0.3 mrad: the solve is repeated with the
    bounds' curvature over the step), at times on two at once. With the same bounds on the rotation vector,
    the Euler angles pass them (by ~2°)."""
    worst, most_on_bounds = euler_pendulum(solver, "XYZ")
    assert worst < 3e-4
    assert most_on_bounds >= 2  # two axes at a bound at once
    assert euler_pendulum(solver, "rotation_vector")[0] > 5e-3


def test_limit_angles_are_checked_at_the_door_and_kept():
    """Unknown orders and Euler angles on a non-spherical joint are refused by joint name; the order survives
    with_gravity and a scene file round trip; the default is the rotation vector."""
    from engine.scene_file import scene_from_dict, scene_to_dict

    b = engine.ModelBuilder()
    with pytest.raises(ModelError, match="joint 'shoulder': limit_angles must be one of rotation_vector, XYZ"):
        b.add_body("bob", joint="spherical", joint_name="shoulder", limit_angles="xyz")
    with pytest.raises(ModelError, match="joint 'hinge': limit_angles 'ZYX' .*needs a spherical joint, not a revolute"):
        b.add_body("leaf", joint="revolute", joint_name="hinge", limit_angles="ZYX")
    model = _ball("YZX")
    assert model.joint_limit_order.tolist() == [engine.joints.LIMIT_ANGLES.index("YZX")]
    assert model.with_gravity((0, 0, 0)).joint_limit_order.tolist() == model.joint_limit_order.tolist()
    data = scene_to_dict(engine.Scene(model))
    assert data["bodies"][0]["limit_angles"] == "YZX"
    assert scene_from_dict(data).model.joint_limit_order.tolist() == model.joint_limit_order.tolist()
    assert "limit_angles" not in scene_to_dict(engine.Scene(_ball("rotation_vector")))["bodies"][0]
    assert hinge_model().joint_limit_order.tolist() == [0]


def report() -> str:
    """The numbers behind docs/limits.md (``python tests/test_joint_limits.py``)."""
    lines = []
    for source in ("builder", "urdf"):
        for solver in SOLVERS:
            model = hinge_model() if source == "builder" else load_urdf_string(URDF)
            sim, q, energy = fall(model, solver)
            lines.append(f"hinge ±0.3 ({source}, {solver}): overshoot {max(q.max() - LIMIT, 0):.2e} rad, final q "
                         f"{q[-1]:.6f}, final |qd| {abs(sim.state.qd[0]):.1e}, largest one-step energy change "
                         f"{np.diff(energy).max():+.2e} J, energy {energy[0]:.4f} → {energy[-1]:.4f} J")
    for solver in ("pcg", "direct", "dense"):
        scene = engine.scenes.umbrella(2, rib_limit=0.9)
        sim = engine.Simulator(scene, solver, dt=1 / 60, tol=1e-11)
        worst = closure = 0.0
        for _ in range(240):
            sim.step()
            worst = max(worst, sim.limits.violation(sim.state.q))
            closure = max(closure, sim.stats.constraint_error)
        lines.append(f"umbrella rib_limit 0.9 ({solver}): final rib angle {engine.scenes.rib_angle(scene, sim.state.q):.5f} "
                     f"rad, worst limit violation {worst:.1e}, worst closure error {closure:.1e} m")
    for solver in SOLVERS:
        sim = engine.Simulator(limited_chain_on_ground(), solver, dt=1 / 60)
        worst = 0.0
        for _ in range(150):
            sim.step()
            worst = max(worst, sim.limits.violation(sim.state.q))
        lines.append(f"limited chain on the ground ({solver}): worst violation {worst:.1e} rad, "
                     f"{len(sim.contact.last.contacts)} contacts, final max |qd| {np.abs(sim.state.qd).max():.1e}")
    for solver in ("explicit", "pcg"):
        lines.append(f"spinning pendulum, ±15° Euler XYZ bounds ({solver}): worst Euler violation "
                     f"{euler_pendulum(solver, 'XYZ')[0]:.1e} rad (bounds on the rotation vector: "
                     f"{euler_pendulum(solver, 'rotation_vector')[0]:.1e} rad)")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report())
