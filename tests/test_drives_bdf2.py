"""Drives under BDF2 (engine.Simulator's default integrator): a pendulum under a prescribed anchor keeps its
swing where implicit Euler loses it, the anchor still lands on its target every step, BDF2 restarts where a
prescribed motion jumps, and a motor's force bound holds over BDF2's shorter solve
(docs/redmax.md *Time integrators*; scripts/studies/driven_pendulum.py)."""
import math
import sys
from pathlib import Path

import numpy as np
import pytest

import engine
from engine.solvers.stages.prescribed import BDF2History

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "studies"))
import driven_pendulum  # noqa: E402


def _swing(kind, integrator, seconds=10.0, angle=30.0, reference=None):
    """(swing energy kept — over the start's, or over a reference run's —, largest angle in the last 2 s over the
    release angle, largest cart miss (m))."""
    e, peak, miss = driven_pendulum.run(kind, angle, seconds, 1 / 48, integrator=integrator)
    ref = driven_pendulum.swing_energy(math.radians(angle), 0.0) if reference is None else reference
    return e / ref, peak / angle, miss


def test_a_pendulum_under_a_still_animated_anchor_keeps_its_swing_under_bdf2_and_loses_it_under_euler():
    """10 s at 1/48 s, released at 30°, the anchor a prescribed free joint holding still (an animated anchor
    between its moves): BDF2 with its energy budget keeps the swing (measured 1.000), Euler does not (0.115)."""
    bdf2, bdf2_angle, miss = _swing("still", "bdf2")
    euler, euler_angle, _ = _swing("still", "euler")
    print(f"still anchor: swing energy kept BDF2 {bdf2:.3f} ({bdf2_angle:.3f} of the angle), "
          f"Euler {euler:.3f} ({euler_angle:.3f})")
    assert bdf2 >= 0.99 and bdf2_angle >= 0.99
    assert euler < 0.2
    assert miss < 1e-12


def test_a_pendulum_under_a_gliding_animated_anchor_keeps_what_bdf2_keeps_and_the_budget_adds_nothing():
    """The anchor glides at 0.5 m/s (an inertial frame: the exact swing keeps its energy). A moving anchor's work
    is not measured, so the budget re-bases at every step it moves and adds nothing: BDF2 alone, measured 0.779
    of the energy and 0.900 of the angle (Euler 0.115 and 0.410). The anchor is on its target at every step's
    end."""
    bdf2, bdf2_angle, miss = _swing("glide", "bdf2")
    alone = driven_pendulum.run("glide", 30.0, 10.0, 1 / 48, energy_guard=False)[0]
    euler, euler_angle, _ = _swing("glide", "euler")
    print(f"gliding anchor: swing energy kept BDF2 {bdf2:.3f} ({bdf2_angle:.3f} of the angle), "
          f"Euler {euler:.3f} ({euler_angle:.3f})")
    assert bdf2 == pytest.approx(alone / driven_pendulum.swing_energy(math.radians(30.0), 0.0), rel=1e-9)
    assert bdf2 > 0.75 and bdf2_angle > 0.89
    assert euler < 0.2 and euler_angle < 0.5
    assert miss < 1e-12


def _slider(motion, until=None):
    b = engine.ModelBuilder(gravity=(0, 0, 0))
    b.add_body("slider", joint="prismatic", axis=(1, 0, 0), mass=1.0)
    b.add_body("bob", parent="slider", joint="revolute", axis=(0, 0, 1), com=(0.5, 0, 0), mass=1.0,
               inertia=np.eye(3) * 0.01)
    sc = engine.Scene(b.finalize())
    sc.prescribe("slider_joint", motion, until=until)
    return sc


def test_once_an_animated_anchor_comes_to_rest_the_swing_keeps_its_energy_again():
    """The anchor glides, eases to rest between 1 s and 2 s and holds still: from then on the budget holds again
    (its rows do no work), so the swing's energy at 10 s is the one at 3 s under BDF2 (Euler loses most of it)."""
    kept = {}
    for integrator in ("bdf2", "euler"):
        sim = engine.Simulator(driven_pendulum.scene("stop", 30.0, 10.0), "pcg", dt=1 / 48, integrator=integrator)
        sim.step(144)
        e3 = driven_pendulum.swing_energy(sim.state.q[7], sim.state.qd[6])
        sim.step(336)
        kept[integrator] = driven_pendulum.swing_energy(sim.state.q[7], sim.state.qd[6]) / e3
    print(f"anchor at rest after 2 s: swing energy at 10 s over 3 s: BDF2 {kept['bdf2']:.4f}, Euler {kept['euler']:.3f}")
    assert abs(kept["bdf2"] - 1.0) < 1e-3
    assert kept["euler"] < 0.3


def test_a_prescribed_joint_lands_on_its_target_every_bdf2_step_with_bdf2_rates():
    """A smooth prescribed motion: the joint is on q̄ at every step's end, and (after the first, Euler step) its
    rate is BDF2's, (3 q̄(t + h) − 4 q̄(t) + q̄(t − h)) / 2h, not Euler's chord (q̄(t + h) − q̄(t)) / h."""
    y = lambda t: np.array([0.3 * math.sin(2.0 * t)])  # noqa: E731
    sim = engine.Simulator(_slider(y), "pcg", dt=0.02)
    assert isinstance(sim._stepper._history, BDF2History) and sim._stepper._bdf2
    h = 0.02
    for k in range(100):
        sim.step()
        t = sim.state.t
        assert abs(sim.state.q[0] - y(t)[0]) < 1e-12
        if k >= 1:
            bdf2 = (3 * y(t)[0] - 4 * y(t - h)[0] + y(t - 2 * h)[0]) / (2 * h)
            assert sim.state.qd[0] == pytest.approx(bdf2, abs=1e-9)


def test_bdf2_restarts_where_a_prescribed_motion_jumps():
    """A slider at rest until 0.5 s, then at 1 m/s (a kink), and a jump of 0.1 m at 1 s: the step that starts at
    each takes an Euler step (the history is not extrapolated across it), so the joint moves at the chord's
    rate — with the history BDF2's rate would overshoot by half the change (1.5 m/s after the kink)."""
    def y(t):
        return np.array([max(t - 0.5, 0.0) + (0.1 if t >= 1.0 - 1e-9 else 0.0)])

    h = 0.02
    sim = engine.Simulator(_slider(y), "pcg", dt=h)
    history = sim._stepper._history
    restarted = []
    for k in range(75):
        t0 = sim.state.t
        if k and history.extrapolation(sim.state) is None:
            restarted.append(round(t0, 6))
        sim.step()
        t = sim.state.t
        assert abs(sim.state.q[0] - y(t)[0]) < 1e-12
        chord = (y(t)[0] - y(t0)[0]) / h
        assert sim.state.qd[0] == pytest.approx(chord, abs=1e-9)  # Euler's on the kink and the jump, BDF2's = chord
    assert restarted == [0.5, 0.98, 1.0]  # the kink, and the jump (in the steps that start at 0.98 and 1.0)


def test_bdf2_restarts_when_a_prescription_ends_and_the_joint_goes_on_at_its_last_rate():
    sim = engine.Simulator(_slider(lambda t: np.array([2.0 * t]), until=0.5), "pcg", dt=0.01)
    history = sim._stepper._history
    for k in range(100):
        if abs(sim.state.t - 0.5) < 1e-9:
            assert history.extrapolation(sim.state) is None
        sim.step()
    assert sim.state.qd[0] == pytest.approx(2.0) and sim.state.q[0] == pytest.approx(2.0)


def test_a_weak_motor_under_bdf2_accelerates_at_its_force_bound_and_holds_its_target():
    """Max force 1 N·m on a wheel of inertia 1 kg·m², target 2 rad/s, 1/60 s: the speed rises at 1 rad/s² (each
    step's impulse at most F h: BDF2's solve is over 2h/3, a bound of F h there would accelerate at 1.5 rad/s²),
    then holds 2 rad/s exactly."""
    b = engine.ModelBuilder(gravity=(0, 0, 0))
    b.add_body("wheel", joint="revolute", axis=(0, 0, 1), mass=1.0, inertia=np.eye(3))
    sc = engine.Scene(b.finalize())
    sc.add_motor("world", "wheel", (0, 0, 1), target_velocity=2.0, max_force=1.0)
    h = 1 / 60
    sim = engine.Simulator(sc, "pcg", dt=h)
    assert sim._stepper._bdf2
    speeds = []
    for _ in range(180):
        sim.step()
        speeds.append(sim.state.qd[0])
        assert abs(sim._stepper.servos.last_impulses[0]) <= 1.0 * h * (1 + 1e-9)
    speeds = np.array(speeds)
    t = h * np.arange(1, 181)
    rising = t < 1.9
    np.testing.assert_allclose(speeds[rising], t[rising], rtol=1e-6)
    assert np.abs(speeds[t > 2.1] - 2.0).max() < 1e-9
