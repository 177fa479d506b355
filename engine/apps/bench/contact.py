"""``bench contact``: a pile of N boxes dropped onto a mesh floor, the engine beside Blender's Rigid Body.

The rig (``engine.scenes.collisions.box_pile``): N cubes of 0.2 m and 1 kg, friction 0.5, on a jittered grid
about four layers high and turned at random, over a 20 × 20 m floor of 800 triangles (friction 0.5). Both
simulate ``SIM_TIME`` s at 24 fps:

* ``engine``: ``Simulator(scene, "pcg", dt=1/48)`` — the add-on's default 2 substeps per frame — every body's
  box against the others and the floor mesh (``engine.contact``). Seconds are the Simulator's setup and its
  steps (kernels loaded before, on a small pile); the contact stage's Gauss–Seidel at its default, at most 30
  sweeps per step (warm-started). ``engine_200_sweeps``: the same with up to 200 sweeps, until no contact
  velocity changes by more than 1e-7 m/s (the default before the cap: what the cap costs in penetration).
* ``bullet``: the same boxes (positions, turns, size, mass, friction) and floor built in Blender with its
  operators (``scripts/bullet_pile.py``: *Add › Mesh › Cube*, *Rigid Body › Add Active*, shape Box; the floor a
  20 × 20 Grid, *Add Passive*, shape Mesh), the rigid body world at its defaults (10 substeps per frame, 10
  solver iterations); seconds are ``bpy.ops.ptcache.bake`` of the frame range, the fastest of two (each on a
  new rig: a second bake of the same cache replays it). It runs
  in this process when the ``bpy`` module (the wheel, or Blender's own Python) and the repository's
  ``scripts/`` are there; otherwise the report says so and has the engine only.

Each side's poses are read once per frame and measured the same way: the deepest penetration between two
boxes or a box and the floor (the engine's narrow phase on the poses, ``scene_detector`` with no margin),
and the floor gap (median height of the lowest corner over the boxes of the bottom layer at the last frame:
0 for a box resting on the floor). ``seconds_per_step`` is seconds per frame (1/24 s of scene time).
"""
from __future__ import annotations

import importlib.util
import math
import time
from pathlib import Path

import numpy as np

from ...algorithms.kinematics import link_poses
from ...contact.handler import scene_detector
from ...scenes.collisions import box_pile
from ...simulator import Simulator
from .report import Progress, Row, SuiteResult, fit_slope, markdown_table

SUITE = "contact"
SIZES, QUICK_SIZES = (100, 500, 1000), (8, 27)
SIM_TIME, QUICK_SIM_TIME = 2.0, 0.25  # s of scene time
FPS, SUBSTEPS = 24, 2  # the add-on's defaults: h = 1/48 s
BOX = 0.2  # m, the cubes' edge (box_pile's default)
CONVERGED, CONVERGED_SWEEPS = "engine_200_sweeps", 200  # the contact solve run on (default: 30; Bullet: 10)
STAGES = ("detect", "space", "pgs", "stabilize")  # ContactHandler.seconds
BULLET_SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "bullet_pile.py"


def bullet_peer():
    """(``bake(scene, frames, fps) -> {"seconds", "poses": [(R (n, 3, 3), p (n, 3)) per frame], ...}``, None),
    or (None, why not) when Blender's Python module or the repository's scripts are missing."""
    if importlib.util.find_spec("bpy") is None:
        return None, "the bpy module is not installed (pip install bpy, or run scripts/blender_bench.py in Blender)"
    if not BULLET_SCRIPT.exists():
        return None, f"{BULLET_SCRIPT} is not there (an installed engine without the repository's scripts)"
    spec = importlib.util.spec_from_file_location("bullet_pile", BULLET_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.bake, ""


class PileProbe:
    """Penetration and floor gap of the pile at given body poses (the same measure for both simulators)."""

    def __init__(self, scene):
        self.detector = scene_detector(scene.finalize(), margin=0.0)

    def deepest(self, R, p) -> float:
        """m: the deepest overlap of two boxes or a box and the floor (0 when nothing overlaps)."""
        found = self.detector.detect(np.ascontiguousarray(R, dtype=float), np.ascontiguousarray(p, dtype=float))
        return float(max(found.depth.max(initial=0.0), 0.0))

    @staticmethod
    def floor_gap(R, p) -> float:
        """m: median height of the lowest corner over the boxes whose lowest corner is below half an edge."""
        lowest = p[:, 2] - 0.5 * BOX * np.abs(R[:, 2, :]).sum(axis=1)
        bottom = lowest[lowest < 0.5 * BOX]
        return float(np.median(bottom)) if bottom.size else math.nan


def _engine_run(scene, frames: int, sweeps: int | None = None) -> dict:
    t0 = time.perf_counter()
    options = {} if sweeps is None else {"contact_options": {"velocity_max_iter": sweeps}}
    sim = Simulator(scene, "pcg", dt=1.0 / (FPS * SUBSTEPS), **options)  # (its setup counts, as the world's build in Bullet's bake)
    seconds = time.perf_counter() - t0
    probe = PileProbe(scene)
    deepest, sweeps = 0.0, []
    for _ in range(frames):
        t0 = time.perf_counter()
        sim.step(SUBSTEPS)
        seconds += time.perf_counter() - t0
        sweeps.append(sim.contact.last.sweeps)
        R, p = link_poses(scene.model, sim.state.q)
        deepest = max(deepest, probe.deepest(R, p))
    return {"seconds": seconds, "deepest": deepest, "floor_gap": probe.floor_gap(R, p),
            "iterations": float(np.mean(sweeps)), "contacts": len(sim.contact.last.contacts),
            "stages": dict(sim.contact.seconds)}


def _bullet_run(bake, scene, frames: int) -> dict:
    out = bake(scene, frames, FPS)
    probe = PileProbe(scene)
    deepest = max(probe.deepest(R, p) for R, p in out["poses"])
    R, p = out["poses"][-1]
    return {"seconds": out["seconds"], "deepest": deepest, "floor_gap": probe.floor_gap(R, p),
            "iterations": float(out.get("iterations", math.nan)), "contacts": -1, "setup": out.get("setup", "")}


def run_contact(quick: bool = False, *, bullet=None, **_ignored) -> SuiteResult:
    """The pile at each size, engine then Bullet (``bullet``: a ``bake`` function as ``bullet_peer``'s; default:
    that one, when it can run)."""
    sizes, sim_time = (QUICK_SIZES, QUICK_SIM_TIME) if quick else (SIZES, SIM_TIME)
    frames = int(round(sim_time * FPS))
    why = ""
    if bullet is None:
        bullet, why = bullet_peer()
    t0 = time.perf_counter()
    _engine_run(box_pile(8), FPS)  # kernels loaded (or compiled) before anything is timed: a small pile lands
    compile_seconds = time.perf_counter() - t0
    rows, setup = [], ""
    for n in Progress(sizes, f"bench {SUITE}: box pile"):
        scene = box_pile(n)
        runs = {"engine": _engine_run(scene, frames), CONVERGED: _engine_run(scene, frames, CONVERGED_SWEEPS)}
        if bullet is not None:
            runs["bullet"] = _bullet_run(bullet, scene, frames)
            setup = runs["bullet"]["setup"]
        for method, r in runs.items():
            rows.append(Row(SUITE, "pile", method, n, 6 * n, r["seconds"] / frames, r["iterations"], repeats=frames,
                            compile_seconds=compile_seconds if method != "bullet" else math.nan,
                            extra={"bake_seconds": round(r["seconds"], 4), "frames": frames,
                                   "deepest_mm": round(1e3 * r["deepest"], 3),
                                   "floor_gap_mm": round(1e3 * r["floor_gap"], 3),
                                   **{f"{k}_seconds": round(v, 4) for k, v in r.get("stages", {}).items()}}))
    return SuiteResult(rows, _text(rows, frames, setup, why), min_fit=600 if not quick else 6)


def _text(rows, frames: int, setup: str, why: str) -> str:
    by = {(r.method, r.n): r for r in rows}
    body = []
    for n in sorted({r.n for r in rows}):
        bullet = by.get(("bullet", n))
        for method in dict.fromkeys(r.method for r in rows):
            r = by[(method, n)]
            ratio = (f"{r.extra['bake_seconds'] / bullet.extra['bake_seconds']:.2g}"
                     if bullet is not None and method != "bullet" else "—")
            body.append([n, method, f"{r.extra['bake_seconds']:.3g}", ratio, f"{r.extra['deepest_mm']:.2f}",
                         f"{r.extra['floor_gap_mm']:.2f}", f"{r.iterations:.3g}"])
    table = markdown_table(["N boxes", "simulator", "seconds", "× Bullet", "deepest penetration (mm)",
                            "floor gap (mm)", "iterations per step"], body)
    stages = [[r.n, r.method] + [f"{r.extra[f'{k}_seconds']:.3g}" for k in STAGES] for r in rows
              if f"{STAGES[0]}_seconds" in r.extra]
    stage_table = markdown_table(["N boxes", "simulator"] + [f"{k} (s)" for k in STAGES], stages)
    slopes = []
    for method in dict.fromkeys(r.method for r in rows):
        mine = [r for r in rows if r.method == method]
        slope = fit_slope([r.n for r in mine], [r.extra["bake_seconds"] for r in mine], min_n=min(r.n for r in rows))
        slopes.append(f"{method} {slope:.2f}")
    text = (f"## {frames} frames at {FPS} fps: seconds to simulate, deepest penetration, floor gap\n\n{table}\n\n"
            f"log-log slope of seconds against N (all sizes): {', '.join(slopes)}.\n\n"
            f"`engine`: pcg, {SUBSTEPS} substeps per frame (h = 1/{FPS * SUBSTEPS} s), the contact stage at its "
            "defaults (iterations: PGS sweeps per step, at most 30); "
            f"`{CONVERGED}`: the same with up to {CONVERGED_SWEEPS} sweeps (`contact_options={{\"velocity_max_iter\": "
            f"{CONVERGED_SWEEPS}}}`). The Scene is built in the engine (`engine.scenes.collisions.box_pile`). ")
    text += f"`bullet`: {setup}." if setup else f"`bullet`: not measured — {why}."
    return (text + f"\n\n## the engine's contact stage by part\n\n{stage_table}\n\n"
            "Seconds of the 48 frames' steps in each part of the contact stage (`ContactHandler.seconds`): detect (broad "
            "and narrow phase at the step's start), space (rows and responses), pgs (the velocity solve), stabilize "
            "(a second detection at the step's end and, where a contact is deeper than 1 mm, the position projection).\n")
