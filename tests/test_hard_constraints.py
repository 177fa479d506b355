"""The hard-constraints solver (seed 003): velocity-Verlet with exact joint correction in maximal
coordinates, motors, ground contact through Appendix C, and the Strandbeest."""
from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.errors import ModelError
from engine.solvers.steppers.hard_constraints import HardConstraintSystem


def test_chain_agrees_with_reduced_coordinates():
    """Without loops the maximal-coordinate bodies follow the reduced-coordinate (ABA) motion."""
    scene = engine.scenes.chain(3)
    a = engine.Simulator(scene, "hard-constraints", dt=5e-4)
    b = engine.Simulator(scene, "explicit", dt=5e-4)
    a.step(600)
    b.step(600)
    assert np.abs(a.state.q - b.state.q).max() < 2e-3
    assert max(a.stats.iterations) <= 6 and a.stats.constraint_error < 1e-10


@pytest.mark.parametrize("integrator", ["verlet", "symplectic"])
def test_four_bar_holds_its_loop_and_its_energy(integrator):
    sim = engine.Simulator(engine.scenes.four_bar(), "hard-constraints", dt=2e-3, integrator=integrator)
    e0 = sim.energy()
    worst = 0.0
    for _ in range(500):
        sim.step()
        worst = max(worst, sim.stats.constraint_error)
    assert worst < 1e-8
    assert abs(sim.energy() - e0) < 0.02 * abs(e0)  # symplectic in both variants: bounded drift


def test_verlet_keeps_a_tumbling_top_where_symplectic_euler_gains_energy():
    """Where the gyroscopic terms matter (a free brick spinning about its intermediate axis), Appendix
    A's σ* keeps the energy within 1 % at a 20 ms step, while symplectic Euler's explicit −h I⁻¹(ω × Iω)
    gains more than that at a 2 ms step. Also a scene with free bodies only (no rows to enforce)."""
    from engine.apps.bench.hard_constraints import keeps_energy

    assert keeps_energy(engine.scenes.tumbling_top, "verlet", 0.02, 5.0)
    assert not keeps_energy(engine.scenes.tumbling_top, "symplectic", 0.002, 5.0)
    sim = engine.Simulator(engine.scenes.tumbling_top(), "hard-constraints", dt=0.02)
    sim.step(250)
    w = sim.state.qd[:3]
    assert abs(w[1]) < 9.0  # it tumbles: after 5 s the spin is off the intermediate axis …
    I = np.diag(engine.geometry.box_inertia(1.0, (0.1, 0.2, 0.3)))
    L0 = I @ np.array([0.3, 10.0, 0.0])
    assert abs(np.linalg.norm(I @ w) - np.linalg.norm(L0)) < 1e-3 * np.linalg.norm(L0)  # … and |L| is kept


@pytest.mark.slow
def test_strandbeest_walks_with_exact_joints_for_ten_seconds():
    """Acceptance 1: every joint and loop error below 1e-8 m after every step over 10 s, and the
    Strandbeest walks forward when its crank turns."""
    scene = engine.scenes.strandbeest()
    sim = engine.Simulator(scene, "hard-constraints", dt=0.01)
    worst, heights = 0.0, []
    for _ in range(1000):
        sim.step()
        worst = max(worst, sim.stats.constraint_error)
        heights.append(sim.state.q[2])
    assert worst < 1e-8
    assert sim.state.q[0] > 3.0                       # ≈ 0.45 m/s forward
    assert abs(sim.state.q[1]) < 0.2 and np.ptp(heights) < 0.05  # on course, level
    crank = sim.state.q[scene.model.q_slice("crank")][0]
    assert abs(np.angle(np.exp(1j * (crank - 20.0)))) < 1e-6  # the motor turned it exactly 2 rad/s × 10 s


def test_strandbeest_on_a_stand_follows_the_crank_exactly():
    scene = engine.scenes.strandbeest(1, sides=1, fixed_chassis=True, ground=False)
    sim = engine.Simulator(scene, "hard-constraints", dt=0.01)
    sim.step(50)
    feet = [scene.model.body_index(n) for n in scene.model.body_names if n.startswith("dfg")]
    R, p = engine.algorithms.kinematics.link_poses(scene.model, sim.state.q)
    from engine.scenes.linkages import jansen_points
    expected = jansen_points(-2.0 * 0.5)["D"]  # the dfg link frame sits at D; +y turns the xz plane clockwise
    height = scene.model.joint_origin[0][2]
    assert np.allclose(p[feet[0]][[0, 2]], [expected[0], expected[1] + height], atol=1e-8)


def test_trike_rolls_forward_on_its_driven_axle():
    sim = engine.Simulator(engine.scenes.trike(), "hard-constraints", dt=0.01)
    sim.step(200)
    assert sim.state.q[0] > 0.5 * 4.0 * 0.15 * 2.0 * 0.7  # most of ω r t, despite starting from rest
    assert abs(sim.state.q[1]) < 0.05 and sim.stats.constraint_error < 1e-8


def test_bad_input_is_named():
    b = engine.ModelBuilder()
    b.add_body("slider", joint="prismatic", axis=(1, 0, 0))
    with pytest.raises(ModelError, match="joint 'slider_joint' is prismatic"):
        engine.Simulator(engine.Scene(b.finalize()), "hard-constraints")
    scene = engine.scenes.chain(2)
    with pytest.raises(ModelError, match="motor: no joint named 'elbow'"):
        engine.Simulator(scene, "hard-constraints", motors=[("elbow", 1.0)])
    scene.add_joint_spring("hinge0", 10.0)
    with pytest.raises(ValueError, match="joint springs"):
        engine.Simulator(scene, "hard-constraints")
    with pytest.raises(ValueError, match="unknown integrator"):
        engine.Simulator(engine.scenes.chain(2), "hard-constraints", integrator="rk4")


def test_planar_loops_close_with_pins_and_others_with_hinges():
    """A hinge closing a planar loop of parallel hinges is 3 rows redundant: it becomes a 2-row pin."""
    kinds = {c.name: c.kind for c in HardConstraintSystem(engine.scenes.four_bar()).constraints}
    assert kinds["coupler_rocker"] == "pin" and kinds["crank_pivot"] == "hinge"
