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
  solver iterations); seconds are ``bpy.ops.ptcache.bake`` of the frame range (each bake on a new rig: a second
  bake of the same cache replays it). It runs
  in this process when the ``bpy`` module (the wheel, or Blender's own Python) and the repository's
  ``scripts/`` are there; otherwise the report says so and has the engine only.

The machine may be shared: at each size the engine and Bullet take turns, ``repeats`` times (engine, Bullet,
engine, Bullet, …; default ``default_repeats``: 3 up to 500 boxes, 2 above), and each side's fastest run is
reported with the slowest beside it (the spread), so a burst of load that slows one run falls on both sides alike.
``engine_200_sweeps`` runs once per size (it measures what the sweep cap costs in penetration).

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


MEASURES = ("deepest", "floor_gap", "iterations")  # the same in every run of a side (both are deterministic)


def _engine_run(scene, frames: int, sweeps: int | None = None, measure: bool = True) -> dict:
    """Seconds of the Simulator's setup and steps over ``frames`` frames; with ``measure`` the pile's penetration
    and floor gap read each frame (outside the timed steps)."""
    t0 = time.perf_counter()
    options = {} if sweeps is None else {"contact_options": {"velocity_max_iter": sweeps}}
    sim = Simulator(scene, "pcg", dt=1.0 / (FPS * SUBSTEPS), **options)  # (its setup counts, as the world's build in Bullet's bake)
    seconds = time.perf_counter() - t0
    probe = PileProbe(scene) if measure else None
    deepest, sweeps = 0.0, []
    for _ in range(frames):
        t0 = time.perf_counter()
        sim.step(SUBSTEPS)
        seconds += time.perf_counter() - t0
        sweeps.append(sim.contact.last.sweeps)
        if measure:
            R, p = link_poses(scene.model, sim.state.q)
            deepest = max(deepest, probe.deepest(R, p))
    return {"seconds": seconds, "deepest": deepest if measure else math.nan,
            "floor_gap": probe.floor_gap(R, p) if measure else math.nan,
            "iterations": float(np.mean(sweeps)), "contacts": len(sim.contact.last.contacts),
            "stages": dict(sim.contact.seconds)}


def _bullet_run(bake, scene, frames: int, measure: bool = True) -> dict:
    """One Bullet bake (a new rig); with ``measure`` its poses played back and measured as the engine's."""
    out = bake(scene, frames, FPS, bakes=1, poses=measure)
    deepest = floor_gap = math.nan
    if measure:
        probe = PileProbe(scene)
        deepest = max(probe.deepest(R, p) for R, p in out["poses"])
        R, p = out["poses"][-1]
        floor_gap = probe.floor_gap(R, p)
    return {"seconds": out["seconds"], "deepest": deepest, "floor_gap": floor_gap,
            "iterations": float(out.get("iterations", math.nan)), "contacts": -1, "setup": out.get("setup", "")}


def default_repeats(n: int, quick: bool = False) -> int:
    """Interleaved runs per side at n boxes: 3 up to 500 boxes (where the ratio to Bullet is read), 2 above, 1 in a
    quick run."""
    return 1 if quick else 3 if n <= 500 else 2


def run_contact(quick: bool = False, *, bullet=None, repeats: int | None = None, **_ignored) -> SuiteResult:
    """The pile at each size, the engine and Bullet in turn ``repeats`` times (``default_repeats`` when None),
    each side's fastest run reported (``bullet``: a ``bake`` function as ``bullet_peer``'s; default: that one,
    when it can run)."""
    if repeats is not None and int(repeats) < 1:
        raise ValueError(f"bench contact: repeats must be ≥ 1, got {repeats}")
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
        turns = default_repeats(n, quick) if repeats is None else int(repeats)
        runs = {"engine": []}
        if bullet is not None:
            runs["bullet"] = []
        for k in range(turns):  # interleaved: engine, Bullet, engine, Bullet, …
            runs["engine"].append(_engine_run(scene, frames, measure=k == 0))
            if bullet is not None:
                runs["bullet"].append(_bullet_run(bullet, scene, frames, measure=k == 0))
                setup = runs["bullet"][-1]["setup"]
        runs[CONVERGED] = [_engine_run(scene, frames, CONVERGED_SWEEPS)]
        for method in ("engine", CONVERGED, "bullet"):
            if method not in runs:
                continue
            timed = [r["seconds"] for r in runs[method]]
            r = dict(min(runs[method], key=lambda r: r["seconds"]), **{k: runs[method][0][k] for k in MEASURES})
            rows.append(Row(SUITE, "pile", method, n, 6 * n, r["seconds"] / frames, r["iterations"], repeats=frames,
                            compile_seconds=compile_seconds if method != "bullet" else math.nan,
                            extra={"bake_seconds": round(r["seconds"], 4), "bake_seconds_max": round(max(timed), 4),
                                   "runs": len(timed), "frames": frames,
                                   "deepest_mm": round(1e3 * r["deepest"], 3),
                                   "floor_gap_mm": round(1e3 * r["floor_gap"], 3),
                                   **{f"{k}_seconds": round(v, 4) for k, v in r.get("stages", {}).items()}}))
        if bullet is not None:
            pairs = [e["seconds"] / b["seconds"] for e, b in zip(runs["engine"], runs["bullet"])]
            engine_row = next(r for r in rows if r.n == n and r.method == "engine")
            engine_row.extra["paired_ratios"] = " ".join(f"{x:.2f}" for x in pairs)
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
            spread = (f"{r.extra['bake_seconds']:.3g}–{r.extra['bake_seconds_max']:.3g} ({r.extra['runs']})"
                      if r.extra["runs"] > 1 else "(1 run)")
            body.append([n, method, f"{r.extra['bake_seconds']:.3g}", spread, ratio,
                         r.extra.get("paired_ratios", "—").replace(" ", ", ") or "—", f"{r.extra['deepest_mm']:.2f}",
                         f"{r.extra['floor_gap_mm']:.2f}", f"{r.iterations:.3g}"])
    table = markdown_table(["N boxes", "simulator", "seconds (fastest)", "fastest–slowest (runs)", "× Bullet",
                            "× Bullet run by run", "deepest penetration (mm)", "floor gap (mm)",
                            "iterations per step"], body)
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
            "At each size the engine and Bullet ran in turn (engine, Bullet, engine, …); seconds are each side's "
            "fastest run, × Bullet the ratio of the fastest runs, and run by run the ratio of each engine run to the "
            "Bullet run after it. "
            f"`engine`: pcg, {SUBSTEPS} substeps per frame (h = 1/{FPS * SUBSTEPS} s), the contact stage at its "
            "defaults (iterations: PGS sweeps per step, at most 30); "
            f"`{CONVERGED}`: the same with up to {CONVERGED_SWEEPS} sweeps (`contact_options={{\"velocity_max_iter\": "
            f"{CONVERGED_SWEEPS}}}`). The Scene is built in the engine (`engine.scenes.collisions.box_pile`). ")
    text += f"`bullet`: {setup}." if setup else f"`bullet`: not measured — {why}."
    return (text + f"\n\n## the engine's contact stage by part\n\n{stage_table}\n\n"
            f"Seconds of the {frames} frames' steps (the engine's fastest run) in each part of the contact stage "
            "(`ContactHandler.seconds`): detect (broad and narrow phase at the step's start), space (rows and "
            "responses), pgs (the velocity solve), stabilize (at the step's end, a detection of the bodies that can "
            "have gone deeper than 1 mm and, where one has, the position projection).\n")
