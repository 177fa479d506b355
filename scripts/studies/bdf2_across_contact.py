"""BDF2 across persistent contact (issue #30): the contact cases at the add-on's step, with BDF2 restarted after
every step that had contact rows near ("restart": the rule before) and going on across rows that only hold the
bodies ("across": ``redmax_impacts.py``), side by side in one process.

    python scripts/studies/bdf2_across_contact.py

Rows: the frictionless 30° ramp (plane and mesh) after 0.5 s at 24 and 60 steps (its exact slide 0.6131 m), the
resting box's height after 2 s (exact 0.25 m), the top of a stack of ten after 10 s (its drift), the rebound of a
sphere (pair restitution 0.81) dropped 2 m (e² × 2 m = 1.312 m).
"""
from __future__ import annotations

import numpy as np

import engine
from engine.geometry import box_inertia
from engine.joints import matrix_to_quat
from engine.scene import Scene
from engine.scenes.collisions import box_stack
from engine.solvers.steppers import redmax_impacts

H = 1 / 48
FLOOR = {"type": "mesh", "vertices": [(-5, -5, 0), (5, -5, 0), (5, 5, 0), (-5, 5, 0)], "triangles": [(0, 1, 2), (0, 2, 3)]}


def box(mu=0.0):
    b = engine.ModelBuilder()
    b.add_body("box", joint="free", mass=1.0, inertia=box_inertia(1.0, (0.5,) * 3),
               shape={"type": "box", "size": (0.5,) * 3, "friction": mu})
    return b.finalize()


def ramp_slide(steps, mesh):
    a = np.radians(30.0)
    R = np.array([[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]])
    model = box()
    q = model.neutral_q()
    q[:3] = R[:, 2] * 0.25
    q[3:7] = matrix_to_quat(R[None])[0]
    scene = Scene(model, q0=q)
    if mesh:
        scene.add_static_collider("ramp", {**FLOOR, "vertices": np.array(FLOOR["vertices"], float) @ R.T}, friction=0.0)
    else:
        scene.set_ground(normal=R[:, 2], friction=0.0)
    sim = engine.Simulator(scene, "pcg", dt=0.5 / steps)
    x0 = sim.state.q[:3].copy()
    sim.step(steps)
    return float((sim.state.q[:3] - x0) @ R[:, 0])


def resting_z():
    model = box(0.5)
    q = model.neutral_q()
    q[2] = 0.25
    scene = Scene(model, q0=q)
    scene.add_static_collider("floor", FLOOR)
    sim = engine.Simulator(scene, "pcg", dt=H)
    sim.step(96)
    return float(sim.state.q[2])


def stack_drift():
    sim = engine.Simulator(box_stack(10), "pcg", dt=H)
    top = sim.state.q[-7:-4].copy()
    sim.step(480)
    return float(np.linalg.norm(sim.state.q[-7:-4] - top))


def rebound(drop=2.0):
    b = engine.ModelBuilder()
    r = 0.25
    b.add_body("ball", joint="free", mass=1.0, inertia=(0.4 * r * r,) * 3,
               shape={"type": "sphere", "radius": r, "restitution": 0.9})
    model = b.finalize()
    q = model.neutral_q()
    q[2] = drop + r
    scene = Scene(model, q0=q)
    scene.add_static_collider("floor", FLOOR, restitution=0.9)
    sim = engine.Simulator(scene, "pcg", dt=H)
    left, peak = False, 0.0
    for _ in range(200):
        vz = sim.state.qd[5]
        sim.step()
        left = left or vz <= 0.0 < sim.state.qd[5]
        if left:
            peak = max(peak, sim.state.q[2] - r)
            if sim.state.qd[5] < 0:
                break
    return peak


def main():
    exact = 0.5 * 9.81 * 0.5 * 0.25
    cases = [(f"ramp {kind}, {n} steps: slide (exact {exact:.4f} m)", lambda n=n, m=m: ramp_slide(n, m), exact)
             for n in (24, 60) for kind, m in (("plane", False), ("mesh", True))]
    cases += [("resting box z after 2 s (exact 0.25 m)", resting_z, 0.25),
              ("stack of ten: top drift in 10 s (m)", stack_drift, None),
              ("sphere e = 0.81, 2 m drop: rebound (e² × 2 = 1.312 m)", rebound, 0.81 ** 2 * 2.0)]
    across = redmax_impacts.ImpactCheck.impacted
    print(f"{'case':58s} {'restart':>10s} {'across':>10s}   (relative to exact)")
    for name, run, ref in cases:
        out = []
        for restart in (True, False):
            redmax_impacts.ImpactCheck.impacted = (lambda *a: True) if restart else across
            out.append(run())
        redmax_impacts.ImpactCheck.impacted = across
        rel = "" if ref is None else "   " + "  ".join(f"{100 * (v / ref - 1):+.2f} %" for v in out)
        print(f"{name:58s} {out[0]:10.5f} {out[1]:10.5f}{rel}")


if __name__ == "__main__":
    main()
