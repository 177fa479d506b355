"""A swing beside something at rest on the ground: the energy budget is one for the whole scene (a finding, 2026-11-29).

    python scripts/studies/mixed_scene_liveliness.py [--dt 1/48] [--seconds 10]

A 1 m pendulum (a 1 kg point bob hinged 3 m up, no damping, released at 60°) alone, and in one scene with a
six-capsule ragdoll (free root, ball joints) dropped from 0.6 m onto the ground 3 m away, which it never
touches. Prints, per step (BDF2 with the energy budget "hold": ``engine.Simulator``'s default; BDF2 without it;
implicit Euler), the pendulum's largest angle in the last 2 s and the budget's scaled-down / scaled-up steps.

Why it matters: while any contact or limit impulse acts in a step, ``EnergyGuard.apply`` scales no rate up and
holds the budget at the step's end energy — for the whole scene, so the swing's numerical damping under BDF2 is
no longer given back once the ragdoll lies on the ground (measured at 1/48 s: 59.99° alone, 43.1° beside the
resting ragdoll). Budgets per island of trees (springs, cables and closures joining trees; contact impulses
attributed to the trees they act on) would keep the swing's energy; not done yet.
"""
from __future__ import annotations

import argparse
import sys
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402

import engine  # noqa: E402
from engine.scene import Scene  # noqa: E402


def scene(with_ragdoll: bool) -> Scene:
    b = engine.ModelBuilder()
    b.add_body("bob", joint="revolute", axis=(1, 0, 0), joint_origin=(0, 0, 3.0), com=(0, 0, -1.0), mass=1.0,
               inertia=(1e-9,) * 3, joint_name="hinge")
    if with_ragdoll:
        parent = -1
        for i in range(6):
            b.add_body(f"rag{i}", parent=parent, joint="free" if i == 0 else "spherical",
                       joint_origin=(3.0, 0.0, 0.6) if i == 0 else (0.2, 0.0, 0.0), com=(0.1, 0.0, 0.0), mass=2.0,
                       inertia=(0.02,) * 3, shape={"type": "capsule", "radius": 0.05, "length": 0.15, "axis": (1, 0, 0)})
            parent = f"rag{i}"
    model = b.finalize()
    q0 = model.neutral_q()
    q0[0] = np.radians(60.0)
    sc = Scene(model, q0=q0, name="pendulum_beside_ragdoll" if with_ragdoll else "pendulum")
    if with_ragdoll:
        sc.set_ground()
    return sc


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dt", default="1/48")
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args(argv)
    dt = float(Fraction(args.dt))
    steps, tail = int(round(args.seconds / dt)), int(round(2.0 / dt))
    print(f"pendulum 60°, 1 m, no damping; dt = {args.dt} s, {args.seconds:g} s; largest angle in the last 2 s")
    for label, options in (("BDF2 + budget (default)", {}), ("BDF2, no budget", {"energy_guard": False, "integrator": "bdf2"}),
                           ("implicit Euler", {"integrator": "euler"})):
        row = []
        for ragdoll in (False, True):
            sim = engine.Simulator(scene(ragdoll), "pcg", dt=dt, **options)
            top = 0.0
            for i in range(steps):
                sim.step()
                if i >= steps - tail:
                    top = max(top, abs(float(sim.state.q[0])))
            guard = sim._stepper._energy_guard
            scaled = f" (down {guard.clamped_steps}, up {guard.boosted_steps})" if guard is not None else ""
            row.append(f"{'beside the ragdoll' if ragdoll else 'alone'} {np.degrees(top):6.2f}°{scaled}")
        print(f"{label:26s} " + "   ".join(row))


if __name__ == "__main__":
    main()
