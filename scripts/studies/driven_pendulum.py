"""Energy a pendulum keeps when it hangs from a prescribed joint (an animated anchor), Euler against BDF2
(docs/redmax.md *Time integrators*, "Drives").

    python scripts/studies/driven_pendulum.py [--dt 1/48] [--seconds 10] [--angle 30]

A 1 kg bob 1 m below a cart on a free joint (its rod massless, the bob's own inertia 0.004 kg·m²), released at
``--angle`` degrees; the cart is prescribed (``Scene.prescribe`` with an ``engine.control.JointTrajectory``
sampled at 24 fps, as the add-on's animated anchors are) to hold still, to glide at a constant 0.5 m/s, or to
start from rest at 1 s and glide at 0.5 m/s after 2 s (an ease-in key), to glide and come to rest between 1 s
and 2 s (an ease-out key), to sway sideways or to rise and sink
(0.1 m at 0.3 Hz). Without dampers the swing's energy in the cart's frame,
E = ½ (m L² + I) θ̇² + m g L (1 − cos θ), is kept exactly by the physics while the cart holds still or glides (a
frame moving at a constant velocity is inertial): what is lost is the integrator's. The other motions change it
physically, so it is compared with the swing of a reference run at 1/960 s (explicit solver).

Prints, per integrator (implicit Euler; BDF2 without the energy budget; BDF2 with it, ``engine.Simulator``'s
default) and anchor motion: the swing energy at the end over the start's (or the reference's),
the largest angle in the last 2 s, and the largest distance of the cart from its target at a step's end.
"""
from __future__ import annotations

import argparse
import math
import sys
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402

import engine  # noqa: E402
from engine.control import JointTrajectory  # noqa: E402

L, MASS, IC, G = 1.0, 1.0, 0.004, 9.81
FPS = 24


def cart_pendulum():
    b = engine.ModelBuilder()
    b.add_body("cart", joint="free", mass=1.0)
    b.add_body("bob", parent="cart", joint="revolute", axis=(1, 0, 0), com=(0, 0, -L), mass=MASS,
               inertia=np.eye(3) * IC)
    return b.finalize()


def cart_motion(kind, seconds):
    """The cart's (y, z) (m) at time t for each anchor motion."""
    if kind == "still":
        return lambda t: (0.0, 0.0)
    if kind == "glide":
        return lambda t: (0.5 * t, 0.0)
    if kind == "ease":  # rest until 1 s, a cosine ease to 0.5 m/s at 2 s, then gliding
        def y(t):
            if t <= 1.0:
                return 0.0, 0.0
            if t <= 2.0:
                s = t - 1.0
                return 0.5 * (0.5 * s - 0.5 / math.pi * math.sin(math.pi * s)), 0.0
            return 0.25 + 0.5 * (t - 2.0), 0.0
        return y
    if kind == "stop":  # gliding at 0.5 m/s, a cosine ease to rest between 1 s and 2 s, then still
        def y(t):
            if t <= 1.0:
                return 0.5 * t, 0.0
            if t <= 2.0:
                s = t - 1.0
                return 0.5 + 0.5 * (0.5 * s + 0.5 / math.pi * math.sin(math.pi * s)), 0.0
            return 0.75, 0.0
        return y
    if kind == "sway":  # swaying sideways, 0.1 m at 0.3 Hz (below the pendulum's 0.5 Hz)
        return lambda t: (0.1 * math.sin(2 * math.pi * 0.3 * t), 0.0)
    if kind == "lift":  # rising and sinking, 0.1 m at 0.3 Hz (gravity's work through the anchor)
        return lambda t: (0.0, 0.1 * math.sin(2 * math.pi * 0.3 * t))
    raise ValueError(kind)


def scene(kind, angle, seconds):
    model = cart_pendulum()
    sc = engine.Scene(model)
    y = cart_motion(kind, seconds)
    ts = np.arange(0.0, seconds + 2.0 / FPS, 1.0 / FPS)
    sc.prescribe("cart_joint", JointTrajectory("free", [[0.0, *y(t), 1.0, 0.0, 0.0, 0.0] for t in ts], 0.0,
                                               1.0 / FPS))
    sc.q0[7] = math.radians(angle)
    sc.qd0[4:6] = (np.array(y(1e-6)) - y(0.0)) / 1e-6  # the bob starts moving with the cart
    sc.joint_damping[:] = 0.0
    return sc


def swing_energy(theta, theta_dot):
    """E in the cart's frame (J); exact while the cart holds still or glides."""
    return 0.5 * (MASS * L * L + IC) * theta_dot ** 2 + MASS * G * L * (1.0 - math.cos(theta))


def run(kind, angle, seconds, dt, solver="pcg", **options):
    """(swing energy at the end, largest |θ| in the last 2 s (deg), largest cart miss (m))."""
    sc = scene(kind, angle, seconds)
    sim = engine.Simulator(sc, solver, dt=dt, **options)
    steps = int(round(seconds / dt))
    motion = sc.prescribed[0].motion
    miss = peak = 0.0
    for k in range(steps):
        sim.step()
        q = sim.state.q
        miss = max(miss, float(np.abs(q[:7] - motion(sim.state.t)).max()))
        if sim.state.t > seconds - 2.0:
            peak = max(peak, abs(math.degrees(q[7])))
    q, qd = sim.state.q, sim.state.qd
    return swing_energy(q[7], qd[6]), peak, miss


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dt", default="1/48")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--angle", type=float, default=30.0)
    ap.add_argument("--kinds", default="still,glide,ease,stop,sway,lift")
    a = ap.parse_args(argv)
    dt = float(Fraction(a.dt))
    e0 = swing_energy(math.radians(a.angle), 0.0)
    print(f"pendulum {L} m from a prescribed cart, released at {a.angle}°, dt = {a.dt} s, {a.seconds} s; "
          f"swing energy kept = E_end / E_ref")
    print("| anchor | integrator | swing energy kept | largest angle, last 2 s | cart miss |")
    print("|---|---|---|---|---|")
    for kind in a.kinds.split(","):
        ref = e0
        if kind not in ("still", "glide"):
            ref = run(kind, a.angle, a.seconds, 1.0 / 960.0, "explicit")[0]
        for label, options in (("euler", {"integrator": "euler"}), ("bdf2, no budget", {"energy_guard": False}),
                               ("bdf2 (default)", {})):
            e, peak, miss = run(kind, a.angle, a.seconds, dt, **options)
            print(f"| {kind} | {label} | {e / ref:.3f} | {peak:.2f}° | {miss:.1e} m |", flush=True)


if __name__ == "__main__":
    main()
