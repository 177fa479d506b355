"""The crate on the closed rope bridge at the add-on's step (issue #30 acceptance 1–2, docs/redmax.md *Loop closures*).

    python scripts/studies/crate_bridge.py [--seconds 4] [--closed-at middle]

``engine.scenes.crate_on_bridge``: 30 hinged 5 kg planks between two posts, a 100 kg crate dropped 1 m onto the
middle; ``--closed-at middle`` closes the loop between the two middle planks, under the crate (how the add-on
maps the Blender rig: a chain grown from each post), ``far_post`` at the far post. For each solver option set and
substep count (24 fps): the most energy the run gained over its start (J; the energy budget lets none be made),
the fastest hinge (rad/s), the largest closure gap read off the link poses after every step (m), the deepest
contact after every step (m, its own detector) and the crate's height at the end (m).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402

import engine  # noqa: E402
from engine.algorithms.kinematics import link_poses  # noqa: E402
from engine.contact.handler import contact_stage  # noqa: E402
from engine.scenes.collisions import crate_on_bridge  # noqa: E402

VARIANTS = [("pcg (defaults: BDF2, hold, joints' K)", "pcg", {}),
            ("pcg, integrator='euler'", "pcg", {"integrator": "euler"}),
            ("pcg, geometric_stiffness=False", "pcg", {"geometric_stiffness": False}),
            ("pcg, energy_guard=False", "pcg", {"energy_guard": False}),
            ("direct", "direct", {}),
            ("dense", "dense", {})]


def closure_gap(scene, q) -> float:
    """The largest distance between the two points each loop closure joins (m), from the link poses at q."""
    R, p = link_poses(scene.model, q)
    out = 0.0
    for lc in scene.loop_closures:
        a = lc.point_a if lc.body_a < 0 else R[lc.body_a] @ lc.point_a + p[lc.body_a]
        b = lc.point_b if lc.body_b < 0 else R[lc.body_b] @ lc.point_b + p[lc.body_b]
        out = max(out, float(np.linalg.norm(b - a)))
    return out


def run(closed_at: str, solver: str, options: dict, substeps: int, seconds: float) -> dict:
    scene = crate_on_bridge(closed_at=closed_at)
    sim = engine.Simulator(scene, solver, dt=1.0 / (24 * substeps), **options)
    probe = contact_stage(sim.scene, sim.dt)
    start, gained, fastest, gap, deepest = sim.energy(), -np.inf, 0.0, 0.0, 0.0
    wall = time.perf_counter()
    steps = int(round(seconds * 24 * substeps))
    for _ in range(steps):
        try:
            sim.step()
        except Exception as err:  # a divergence: what it reached until then
            return {"diverged": f"{type(err).__name__} at t = {sim.state.t:.2f} s", "gained": gained,
                    "fastest": fastest, "gap": gap, "deepest": deepest, "z": np.nan, "seconds": 0.0}
        gained = max(gained, sim.energy() - start)
        fastest = max(fastest, float(np.abs(sim.state.qd).max()))
        gap = max(gap, closure_gap(scene, sim.state.q))
        c = probe.detect(sim.state.q)
        deepest = max(deepest, float(c.depth.max(initial=0.0)))
    crate = scene.model.q_slice("crate").start
    return {"diverged": "", "gained": gained, "fastest": fastest, "gap": gap, "deepest": deepest,
            "z": float(sim.state.q[crate + 2]), "seconds": time.perf_counter() - wall}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--closed-at", default="middle", choices=("middle", "far_post"))
    ap.add_argument("--substeps", type=int, nargs="+", default=[2, 5, 10])
    args = ap.parse_args(argv)
    print(f"crate_on_bridge(closed_at={args.closed_at!r}), {args.seconds:g} s at 24 fps")
    print("| options | substeps | energy gained (J) | fastest hinge (rad/s) | closure gap (m) | deepest (mm) | crate z (m) |")
    print("|---|---|---|---|---|---|---|")
    for name, solver, options in VARIANTS:
        for sub in args.substeps if not options and solver == "pcg" else args.substeps[:1]:
            r = run(args.closed_at, solver, options, sub, args.seconds)
            z = r["diverged"] or f"{r['z']:.3f}"
            print(f"| {name} | {sub} | {r['gained']:.3g} | {r['fastest']:.1f} | {r['gap']:.1e} | {r['deepest'] * 1e3:.2f}"
                  f" | {z} |", flush=True)


if __name__ == "__main__":
    main()
