"""Collisions behave physically at the add-on's default step (24 fps × 2 substeps: h = 1/48 s), engine-level:
resting boxes, a box dropped on a box, a stack of ten for ten seconds, ramps with and without friction,
bounces, a chain on stairs, no tunnelling, loop closures kept, and the hard-constraints solver on the
same detection. Penetration is read off a detection of the state after every step (the depth of every
contact), so a frame is never deeper than what is asserted."""
from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.algorithms.kinematics import link_poses
from engine.contact.handler import contact_stage
from engine.geometry import box_inertia
from engine.joints import matrix_to_quat
from engine.scene import Scene
from engine.scenes.collisions import box_stack, chain_on_stairs, crate_on_bridge

H = 1 / 48
FLOOR = {"type": "mesh", "vertices": [(-5, -5, 0), (5, -5, 0), (5, 5, 0), (-5, 5, 0)], "triangles": [(0, 1, 2), (0, 2, 3)]}
PENETRATION = 2e-3


def run(sim, steps):
    """Step; returns the deepest contact seen (m) after every step, by a detector of its
    own: the states the simulation passes through (BDF2 detects from a start extrapolated a third of a step
    ahead, a configuration the bodies never take)."""
    probe = contact_stage(sim.scene, sim.dt)
    deepest = 0.0
    for _ in range(steps):
        sim.step()
        c = probe.detect(sim.state.q)
        if len(c):
            deepest = max(deepest, float(c.depth.max()))
    return deepest


def boxes(n, size=0.5, mu=0.5, e=None):
    b = engine.ModelBuilder()
    shape = {"type": "box", "size": (size,) * 3, "friction": mu, **({} if e is None else {"restitution": e})}
    for i in range(n):
        b.add_body(f"box{i}", joint="free", mass=1.0, inertia=box_inertia(1.0, (size,) * 3), shape=shape)
    return b.finalize()


@pytest.mark.parametrize("floor, solver", [("plane", "pcg"), ("mesh", "pcg"), ("mesh", "explicit")])
def test_a_dropped_box_rests_on_the_floor(floor, solver):
    model = boxes(1)
    q = model.neutral_q()
    q[:3] = (0.3, -0.2, 1.0)
    q[3:7] = matrix_to_quat(np.array([[[np.cos(0.3), -np.sin(0.3), 0], [np.sin(0.3), np.cos(0.3), 0], [0, 0, 1]]]))[0]
    scene = Scene(model, q0=q)
    scene.set_ground() if floor == "plane" else scene.add_static_collider("floor", FLOOR)
    sim = engine.Simulator(scene, solver, dt=H)
    assert run(sim, 96) <= PENETRATION
    assert sim.state.q[2] == pytest.approx(0.25, abs=PENETRATION) and np.abs(sim.state.qd).max() < 1e-6


def test_a_box_dropped_on_a_box_lands_on_it_never_inside():
    model = boxes(2)
    q = model.neutral_q()
    q[:3] = (0.0, 0.0, 0.25)
    q[7:10] = (0.15, 0.1, 1.5)
    scene = Scene(model, q0=q)
    scene.set_ground()
    scene.set_body_contacts()
    sim = engine.Simulator(scene, "pcg", dt=H)
    assert run(sim, 144) <= PENETRATION
    R, p = link_poses(sim.model, sim.state.q)
    assert p[1, 2] == pytest.approx(0.75, abs=PENETRATION)  # on A (its centre over A's top face)
    assert np.abs(sim.state.qd).max() < 1e-5


def test_a_stack_of_ten_boxes_stands_ten_seconds():
    sim = engine.Simulator(box_stack(10), "pcg", dt=H)
    top = sim.state.q[-7:-4].copy()
    assert run(sim, 480) <= PENETRATION
    assert np.linalg.norm(sim.state.q[-7:-4] - top) < 0.01  # (9 gaps of 0.1 mm close: ≈ 1 mm of that)


def ramp(mu, mesh: bool):
    a = np.radians(30.0)
    R = np.array([[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]])  # x downhill along the ramp
    model = boxes(1, mu=mu)
    q = model.neutral_q()
    q[:3] = R[:, 2] * 0.25
    q[3:7] = matrix_to_quat(R[None])[0]
    scene = Scene(model, q0=q)
    if mesh:
        scene.add_static_collider("ramp", {**FLOOR, "vertices": np.array(FLOOR["vertices"], float) @ R.T}, friction=mu)
    else:
        scene.set_ground(normal=R[:, 2], friction=mu)
    return scene, R


@pytest.mark.parametrize("mesh", [False, True])
def test_a_box_slides_down_a_frictionless_ramp_as_far_as_gravity_says(mesh):
    """½ g sin 30° t² = 0.613 m in 0.5 s. BDF2 (the default) goes on across the ramp's contact, which only holds
    the box on the surface (redmax_impacts.py): after its Euler start (a h², ½ a h² ahead) it integrates the
    constant acceleration exactly, and the start's error e decays as e_(n+1) = (4 e_n − e_(n−1))/3 to ¾ a h²:
    it covers ½ a h² N² + ¾ a h² (1 − 3⁻ᴺ) in N steps, +0.26 % at N = 24 — matched to 1e-9 here (the contact
    adds nothing). Implicit Euler (restarted at every step, as BDF2 was while any contact row was near) covers
    ½ a h² N (N + 1), (1 + 1/N) times the exact slide: +4.2 % at N = 24."""
    a = 9.81 * 0.5
    for integrator in ("bdf2", "euler"):
        for steps in (24, 36):
            scene, R = ramp(0.0, mesh)
            sim = engine.Simulator(scene, "pcg", dt=0.5 / steps, integrator=integrator)
            x0 = sim.state.q[:3].copy()
            assert run(sim, steps) <= PENETRATION
            slide = (sim.state.q[:3] - x0) @ R[:, 0]
            h = 0.5 / steps
            if integrator == "bdf2":
                assert slide == pytest.approx(0.5 * a * h * h * steps * steps + 0.75 * a * h * h * (1 - 3.0 ** -steps),
                                              rel=1e-9)
            else:
                assert slide == pytest.approx(0.5 * a * h * h * steps * (steps + 1), rel=1e-9)
            assert abs((sim.state.q[:3] - x0) @ R[:, 2]) < 1e-9
            if steps == 24 and integrator == "bdf2":
                assert slide == pytest.approx(0.5 * a * 0.25, rel=0.003)


@pytest.mark.parametrize("mesh", [False, True])
def test_a_box_with_friction_above_the_slope_stays_put(mesh):
    """μ 0.8 on box and ramp: 0.64 combined (Blender's product) > tan 30° = 0.577."""
    scene, R = ramp(0.8, mesh)
    sim = engine.Simulator(scene, "pcg", dt=H)
    x0 = sim.state.q[:3].copy()
    run(sim, 96)
    assert np.linalg.norm(sim.state.q[:3] - x0) < 1e-3


@pytest.mark.parametrize("integrator", ["euler", "bdf2", "tr-bdf2", "blend"])
@pytest.mark.parametrize("drop, speculative_speed", [(1.0, 0.0), (3.0, 0.0), (2.0, 10.0)])
def test_a_bouncy_sphere_rebounds_to_e_squared_the_drop(integrator, drop, speculative_speed):
    """Bounciness 0.9 on sphere and floor (pair e = 0.81): the first rebound within 10 % of e² × the drop under
    every integrator (the integrator's h/2 bias is the rest). The drops make the speculative contact close the
    gap a step before the bounce under BDF2 (10 m/s: the add-on's margin), where the energy budget once capped the
    rebound at the energy the closing left (0.00 to 0.04 of the drop). Euler, without a budget on the rates: off
    the floor at exactly e times the speed it came in with."""
    b = engine.ModelBuilder()
    r = 0.25
    b.add_body("ball", joint="free", mass=1.0, inertia=(0.4 * r * r,) * 3,
               shape={"type": "sphere", "radius": r, "restitution": 0.9})
    model = b.finalize()
    q = model.neutral_q()
    q[2] = drop + r
    scene = Scene(model, q0=q)
    scene.add_static_collider("floor", FLOOR, restitution=0.9)
    sim = engine.Simulator(scene, "pcg", dt=H, integrator=integrator,
                           contact_options={"speculative_speed": speculative_speed})
    came_in, left, peak = None, None, 0.0
    for _ in range(200):
        vz = sim.state.qd[5]
        sim.step()
        if came_in is None and len(sim.contact.memory.speed) and sim.contact.memory.speed.max() > 0:
            came_in = sim.contact.memory.speed.max()
        if left is None and vz <= 0.0 < sim.state.qd[5]:
            left = sim.state.qd[5]
        if left is not None:
            peak = max(peak, sim.state.q[2] - r)
            if sim.state.qd[5] < 0:
                break
    if integrator == "bdf2":  # the case of the budget's credit (RedMaxStepper.solve): closed, then bounced
        assert came_in is not None
    if integrator == "euler":
        assert left == pytest.approx(0.81 * came_in, rel=1e-9)
    assert peak == pytest.approx(0.81 ** 2 * drop, rel=0.10)


def test_a_fast_small_ball_does_not_pass_a_thin_plate():
    """A 2 cm ball at 40 m/s (0.83 m a step) at a 1 cm plate, and at a single-triangle sheet: stopped in front."""
    for plate, face in (({"type": "box", "size": (0.01, 2.0, 2.0)}, -0.005),
                        ({"type": "mesh", "vertices": [(0, -1, -1), (0, 1, -1), (0, 0, 1)], "triangles": [(0, 1, 2)]}, 0.0)):
        b = engine.ModelBuilder()
        b.add_body("ball", joint="free", mass=0.01, inertia=(1.6e-6,) * 3, shape={"type": "sphere", "radius": 0.01})
        model = b.finalize().with_gravity((0.0, 0.0, 0.0))
        q, qd = model.neutral_q(), np.zeros(model.nv)
        q[0], qd[3] = -3.0, 40.0
        scene = Scene(model, q0=q, qd0=qd)
        scene.add_static_collider("plate", plate, position=(0.0, 0.0, 0.0))
        sim = engine.Simulator(scene, "pcg", dt=H)
        xs = []
        for _ in range(24):
            sim.step()
            xs.append(sim.state.q[0])
        assert max(xs) <= face - 0.01 + PENETRATION, plate["type"]


def test_the_speculative_margin_is_the_pairs_relative_motion():
    """Two boxes 0.3 m apart at 20 m/s (0.83 m a step): side by side, nothing can close their gap and no contact
    is made (a whipping chain's links are not contacts); head on, the gap closes within the step: a contact
    0.3 m open, and they meet without going inside each other."""
    def pair(v_a, v_b):
        model = boxes(2, size=0.2).with_gravity((0.0, 0.0, 0.0))
        q, qd = model.neutral_q(), np.zeros(model.nv)
        q[:3], q[7:10] = (0.0, 0.0, 1.0), (0.5, 0.0, 1.0)
        qd[3:6], qd[9:12] = v_a, v_b
        scene = Scene(model, q0=q, qd0=qd)
        scene.set_body_contacts()
        return scene, q, qd

    scene, q, qd = pair((0.0, 20.0, 0.0), (0.0, 20.0, 0.0))
    assert len(contact_stage(scene, H).detect(q, qd)) == 0
    scene, q, qd = pair((20.0, 0.0, 0.0), (-20.0, 0.0, 0.0))
    found = contact_stage(scene, H).detect(q, qd)
    assert len(found) and found.depth.max() == pytest.approx(-0.3, abs=1e-9)
    sim = engine.Simulator(scene, "pcg", dt=H)
    assert run(sim, 12) <= PENETRATION
    R, p = link_poses(sim.model, sim.state.q)
    assert p[1, 0] - p[0, 0] >= 0.2 - PENETRATION


def test_a_chain_dropped_on_stairs_comes_to_rest_on_the_steps():
    scene = chain_on_stairs(20)
    sim = engine.Simulator(scene, "pcg", dt=H)
    assert run(sim, 48 * 8) <= PENETRATION
    _, p = link_poses(sim.model, sim.state.q)
    p = p.copy()
    sim.step(12)
    R2, p2 = link_poses(sim.model, sim.state.q)
    assert np.linalg.norm(p2 - p, axis=1).max() < 1e-3  # at rest
    # every link on a tread or the floor: its centre one radius above the stair surface below it
    steps, rise, run_ = scene.metadata["steps"], scene.metadata["rise"], scene.metadata["run"]
    centre = p2 + np.einsum("nij,j->ni", R2, (0.075, 0.0, 0.0))
    below = np.where(centre[:, 0] < steps * run_, (steps - np.floor(centre[:, 0] / run_)) * rise, 0.0)
    assert np.all(centre[:, 2] >= below + 0.025 - PENETRATION)


def test_dense_and_tree_by_tree_contact_agree():
    """Two stacked boxes on the ground (two trees): the same velocities after a step either way."""
    out = []
    for space in ("dense", "sparse"):
        sim = engine.Simulator(box_stack(2), "pcg", dt=H, contact_options={"space": space, "max_iter": 20000,
                                                                         "velocity_max_iter": 20000, "tol": 1e-14,
                                                                         "velocity_tol": 1e-13})
        sim.step(3)
        out.append(sim.state.qd.copy())
    assert np.allclose(out[0], out[1], atol=1e-9)


def closure_gap(scene, q) -> float:
    """The largest distance (m) between the two points each of the scene's loop closures joins, from the link
    poses at q: the closure error of the state itself, whatever the step reports."""
    R, p = link_poses(scene.model, q)
    out = 0.0
    for lc in scene.loop_closures:
        ends = [lc.point_a if body < 0 else R[body] @ lc.point_a + p[body] for body in (lc.body_a,)]
        ends += [lc.point_b if lc.body_b < 0 else R[lc.body_b] @ lc.point_b + p[lc.body_b]]
        out = max(out, float(np.linalg.norm(ends[1] - ends[0])))
    return out


@pytest.mark.parametrize("closed_at", ["far_post", "middle"])
def test_contact_keeps_the_loop_closures_a_crate_rests_on_a_rope_bridge(closed_at):
    """A 100 kg crate dropped 1 m onto a bridge of 30 hinged 5 kg planks closed by a loop closure — at the far
    post, or in the middle under the crate (how the add-on maps the Blender rig: a chain from each post) — at
    the add-on's default step. The planks under the crate turn ~0.3 rad in a step when it lands; with the
    middle closure the closures' post-stabilization, blind to the contacts, pushed the deck 10–15 cm into the
    crate, the contact's projection broke the closure by up to 0.7 m and the energy grew by thousands of J
    (stages/closure_solve.py ``project``). Now: no contact deeper than 2 mm, no energy gained, the closure
    held at every step (from the state's own link poses); over the last second the crate touches the planks
    under it at every step and ends on them."""
    scene = crate_on_bridge(closed_at=closed_at)
    sim = engine.Simulator(scene, "pcg", dt=H)
    crate, planks = scene.metadata["crate"], scene.metadata["n_planks"]
    probe = contact_stage(sim.scene, sim.dt)
    start = sim.energy()
    deepest = gap = gained = 0.0
    for step in range(48 * 3):
        sim.step()
        c = probe.detect(sim.state.q)
        deepest = max(deepest, float(c.depth.max(initial=0.0)))
        gap, gained = max(gap, closure_gap(scene, sim.state.q)), max(gained, sim.energy() - start)
        if step >= 48 * 2:
            c = sim.contact.last.contacts
            on_deck = (c.body == crate) & (c.other_bodies() >= 0) & (c.other_bodies() < planks)
            on_deck |= (c.other_bodies() == crate) & (c.body < planks)
            assert on_deck.any(), step
    assert deepest <= PENETRATION and gap < 1e-6 and gained < 1e-6, (deepest, gap, gained)
    R, p = link_poses(sim.model, sim.state.q)
    centre = np.array([p[i] + R[i] @ sim.model.body_com[i] for i in range(planks)])  # plank centres
    under = np.argmin(np.abs(centre[:, 0] - p[crate, 0]))
    bottom = p[crate, 2] - 0.3 * R[crate, 2, 2]
    assert abs(bottom - (centre[under, 2] + 0.025)) < 0.03  # on the plank under it (the deck tilts under it)
    assert sim.stats.constraint_error < 1e-6


@pytest.mark.parametrize("closed_at", ["far_post", "middle"])
def test_a_closed_rope_bridge_swinging_without_the_crate_stays_bounded(closed_at):
    """The crate's bridge without the crate, at the add-on's default step: a crate's weight (981 N) stands on the
    middle plank for 0.5 s and is lifted off, and the undamped deck swings for 5 s more: its energy stays what
    the load left (the energy budget holds it; nothing feeds it), the hinges' rates stay bounded and the closure
    held at every step."""
    scene = crate_on_bridge(crate=False, closed_at=closed_at)
    half = scene.metadata["n_planks"] // 2
    ahead = 1.0 if closed_at == "far_post" else -1.0  # the middle plank's link frame: its near or its far hinge
    scene.add_moving_load((0.0, 0.0, -981.0), [(f"plank{half}", (0.0, 0.0, 0.0), (0.15 * ahead, 0.0, 0.0))], 0.0, 0.5,
                          frame="link")
    sim = engine.Simulator(scene, "pcg", dt=H)
    sim.step(48 // 2 + 2)  # the load on, then off
    left = sim.energy()
    rates, gap, energies = [], 0.0, []
    for _ in range(48 * 5):
        sim.step()
        rates.append(np.abs(sim.state.qd).max())
        energies.append(sim.energy())
        gap = max(gap, closure_gap(scene, sim.state.q))
    assert max(rates[:48]) > 1.0  # it does swing
    assert max(rates) < 50.0 and gap < 1e-6, (max(rates), gap)
    assert max(energies) <= left + 1e-6 * abs(left) and min(energies) > left - 0.05 * abs(left)


def test_the_hard_constraints_solver_uses_the_same_detection():
    """A free ball on the ground (the crash of factor augmentation with no joint rows) and two balls meeting
    head on (a contact between bodies): momentum kept, no overlap."""
    b = engine.ModelBuilder()
    b.add_body("ball", joint="free", mass=1.0, inertia=(4e-3,) * 3, shape={"type": "sphere", "radius": 0.1})
    model = b.finalize()
    q = model.neutral_q()
    q[2] = 0.5
    scene = Scene(model, q0=q)
    scene.set_ground()
    sim = engine.Simulator(scene, "hard-constraints", dt=H)
    sim.step(96)
    assert sim.state.q[2] == pytest.approx(0.1, abs=PENETRATION) and abs(sim.state.qd[5]) < 1e-6
    b = engine.ModelBuilder()
    for name in ("left", "right"):
        b.add_body(name, joint="free", mass=1.0, inertia=(4e-3,) * 3, shape={"type": "sphere", "radius": 0.1})
    model = b.finalize().with_gravity((0.0, 0.0, 0.0))
    q, qd = model.neutral_q(), np.zeros(model.nv)
    q[0], q[7], qd[3] = -0.5, 0.5, 2.0
    scene = Scene(model, q0=q, qd0=qd)
    scene.set_body_contacts()
    sim = engine.Simulator(scene, "hard-constraints", dt=H)
    for _ in range(48):
        sim.step()
        assert sim.state.q[7] - sim.state.q[0] >= 0.2 - PENETRATION
        assert sim.state.qd[3] + sim.state.qd[9] == pytest.approx(2.0, abs=1e-9)
    assert sim.state.qd[9] == pytest.approx(1.0, abs=1e-6)
