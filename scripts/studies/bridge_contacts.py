"""Why the bake-scale bridge's simulation grows faster than its plank count (issue 33): its contacts.

    python scripts/studies/bridge_contacts.py [--sizes N …] [--frames F]

Builds the bench's bridge (``scripts/bake_scale.py``, ``build_bridge``: n planks hinged in one chain from a pier,
a cable from a beam to each) in the bpy wheel, maps it as a bake does (``addon.run.SimulationRun``: the scene's
solver, substeps and contact options) and simulates F frames after a first one (kernels loaded), each size in a new process. Prints per size the
simulation's wall and CPU seconds, how many substeps had contacts, the most and the mean contacts of those
substeps, the contact stage's seconds by part (``ContactHandler.seconds``: detect, space = the contact-space
inertia A = J M⁻¹ Jᵀ, pgs, stabilize) and the log-log slopes over n ≥ 100.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SIZES = (100, 200, 500, 1000, 2000)
FRAMES = 250
MIN_FIT = 100
PARTS = ("detect", "space", "pgs", "stabilize")


def worker(n: int, frames: int) -> dict:
    sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]
    import bpy

    import addon
    import bake_scale
    from addon import kernels
    from addon.run import SimulationRun

    addon.register()
    with contextlib.redirect_stdout(io.StringIO()):
        bake_scale.build("bridge", n)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    if kernels.needed(scene.redmax):
        with contextlib.redirect_stdout(io.StringIO()):
            kernels.run_blocking(scene.redmax)
    run = SimulationRun(scene, bpy.context.evaluated_depsgraph_get(), solver=scene.redmax.solver,
                        substeps=scene.redmax.substeps)
    contact = run.sim._stepper.contact
    run.advance(1)  # (the first substeps load the compiled kernels: not counted)
    for part in contact.seconds:
        contact.seconds[part] = 0.0
    counts = []
    t0, cpu = time.perf_counter(), time.process_time()
    for _ in range(frames * run.substeps):
        run.substep()
        counts.append(len(contact.last.contacts))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu
    touching = [k for k in counts if k]
    return {"n": n, "nv": run.sim.model.nv, "wall": wall, "cpu": cpu, "substeps": len(counts),
            "with contacts": len(touching), "most": max(counts), "mean": sum(touching) / max(len(touching), 1),
            **{p: contact.seconds[p] for p in PARTS}}


def slope(ns, ts) -> float:
    import numpy as np

    pts = [(x, t) for x, t in zip(ns, ts) if x >= MIN_FIT and t > 0]
    if len(pts) < 2:
        return math.nan
    ln, lt = np.log(np.array(pts, float)).T
    return float(np.polyfit(ln, lt, 1)[0])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", nargs="+", type=int, default=list(SIZES))
    ap.add_argument("--frames", type=int, default=FRAMES)
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker is not None:
        print("RESULT " + json.dumps(worker(args.worker, args.frames)), flush=True)
        os._exit(0)  # (no teardown)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    rows = []
    for n in args.sizes:
        run = subprocess.run([sys.executable, __file__, "--worker", str(n), "--frames", str(args.frames)],
                             capture_output=True, text=True, env=env)
        line = next((s for s in run.stdout.splitlines() if s.startswith("RESULT ")), None)
        if line is None:
            raise RuntimeError(f"n = {n}: {run.stderr[-400:]}")
        rows.append(json.loads(line[len("RESULT "):]))
    print("| n | simulate wall / CPU | substeps with contacts | most contacts | mean contacts | "
          + " | ".join(PARTS) + " |")
    print("|" + "---|" * (5 + len(PARTS)))
    for r in rows:
        print(f"| {r['n']} | {r['wall']:.3g} / {r['cpu']:.3g} | {r['with contacts']} of {r['substeps']} | {r['most']} | "
              f"{r['mean']:.0f} | " + " | ".join(f"{r[p]:.3g}" for p in PARTS) + " |")
    ns = [r["n"] for r in rows]
    print(f"log-log slopes over n ≥ {MIN_FIT}: " + ", ".join(
        f"{k} {slope(ns, [r[k] for r in rows]):.2f}" for k in ("cpu", "wall", "mean", *PARTS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
