"""Blender's own scene update against the object count, with no add-on (issue 33, acceptance 2).

    python scripts/studies/blender_scene_update.py [--sizes N …]

A bake ends with one scene update (``frame_set`` after its keys are assigned and its bodies taken out of the rigid
body world) and Clear Bake with another (after the bodies and constraints are linked back): Blender rebuilds its
dependency graph's relations and evaluates the scene. This study does the same with plain data-API objects, n cubes
and n Empties (the chain rig's 2n objects), each size in a new process, and prints the minimum of three of each
(wall and CPU seconds) and the log-log slopes over n ≥ 100:

* ``rebuild``: a relations rebuild and evaluation (an Empty linked, evaluated and unlinked, then ``frame_set``);
* ``rebuild keyed``: the same with every cube keyed (7 F-curves × 250 linear keys, as a bake writes them) in one
  action with a slot per cube; ``rebuild keyed, n actions``: an action per cube;
* ``frame keyed``: a frame change only (no rebuild);
* ``rebuild keyed, rigid bodies out``: the keyed cubes keep rigid bodies but are unlinked from the world (as after
  a bake);
* ``relink``: the cubes' rigid bodies linked back into the world's collection, then ``frame_set`` (as Clear Bake);
  ``relink, world off``: the same with the rigid body world disabled (no Bullet world to rebuild).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

FRAMES = 250
SIZES = (100, 200, 500, 1000, 2000)
MIN_FIT = 100
CASES = ("rebuild", "rebuild keyed", "rebuild keyed, n actions", "frame keyed", "rebuild keyed, rigid bodies out",
         "relink", "relink, world off")


def _scene(n, rigid_bodies=False):
    import bpy

    bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
    sc = bpy.context.scene
    sc.frame_start, sc.frame_end = 1, FRAMES
    corners = [(x, y, z) for x in (-.1, .1) for y in (-.1, .1) for z in (-.1, .1)]
    faces = [(0, 1, 3, 2), (4, 5, 7, 6), (0, 1, 5, 4), (2, 3, 7, 6), (0, 2, 6, 4), (1, 3, 7, 5)]
    cubes = []
    for i in range(n):
        me = bpy.data.meshes.new(f"cube{i}")
        me.from_pydata(corners, [], faces)
        ob = bpy.data.objects.new(f"cube{i}", me)
        ob.location.y = 0.3 * i
        sc.collection.objects.link(ob)
        cubes.append(ob)
        empty = bpy.data.objects.new(f"empty{i}", None)
        empty.location.y = 0.3 * i + 0.15
        sc.collection.objects.link(empty)
    if rigid_bodies:
        bpy.ops.rigidbody.world_add()
        world = sc.rigidbody_world
        world.collection = bpy.data.collections.new("RigidBodyWorld")
        for ob in cubes:
            world.collection.objects.link(ob)  # (Blender gives each a rigid body)
    bpy.context.view_layer.update()
    sc.frame_set(1)
    return sc, cubes


def _key(cubes, one_action=True):
    import bpy
    import numpy as np
    from bpy_extras import anim_utils

    co = np.empty(2 * FRAMES, np.float32)
    co[0::2] = np.arange(1, FRAMES + 1)
    shared = bpy.data.actions.new("bake") if one_action else None
    for ob in cubes:
        action = shared or bpy.data.actions.new(ob.name)
        slot = action.slots.new(id_type="OBJECT", name=ob.name)
        bag = anim_utils.action_ensure_channelbag_for_slot(action, slot)
        for path, values in (("location", ob.location), ("rotation_quaternion", (1.0, 0.0, 0.0, 0.0))):
            for i, v in enumerate(values):
                fc = bag.fcurves.new(path, index=i)
                fc.keyframe_points.add(FRAMES)
                co[1::2] = v
                fc.keyframe_points.foreach_set("co", co)
                fc.update()
        ad = ob.animation_data_create()
        ad.action, ad.action_slot = action, slot
    bpy.context.view_layer.update()


def _clock(fn):
    t, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t, time.process_time() - c


def _best(runs):
    return [min(r[0] for r in runs), min(r[1] for r in runs)]


def _rebuild(sc):
    """(wall, cpu) of three relations rebuilds, each with an evaluation at a new frame."""
    import bpy

    probe = bpy.data.objects.get("probe") or bpy.data.objects.new("probe", None)
    runs = []
    for k in range(3):
        sc.collection.objects.link(probe)  # (a change of the scene's collection: the relations are rebuilt)
        bpy.context.view_layer.update()
        sc.collection.objects.unlink(probe)
        runs.append(_clock(lambda k=k: sc.frame_set(2 + k % 2)))
    return _best(runs)


def _relink(sc, cubes):
    world = sc.rigidbody_world
    runs = []
    for _ in range(3):
        for ob in cubes:
            world.collection.objects.unlink(ob)
        sc.frame_set(1)
        for ob in cubes:
            world.collection.objects.link(ob)
        runs.append(_clock(lambda: sc.frame_set(1)))
    return _best(runs)


def worker(n) -> dict:
    out = {"n": n, "objects": 2 * n}
    sc, cubes = _scene(n)
    out["rebuild"] = _rebuild(sc)
    _key(cubes)
    out["rebuild keyed"] = _rebuild(sc)
    out["frame keyed"] = _best([_clock(lambda k=k: sc.frame_set(5 + k)) for k in range(3)])
    sc, cubes = _scene(n)
    _key(cubes, one_action=False)
    out["rebuild keyed, n actions"] = _rebuild(sc)
    sc, cubes = _scene(n, rigid_bodies=True)
    out["relink"] = _relink(sc, cubes)
    sc.rigidbody_world.enabled = False
    out["relink, world off"] = _relink(sc, cubes)
    sc.rigidbody_world.enabled = True
    for ob in cubes:
        sc.rigidbody_world.collection.objects.unlink(ob)
    _key(cubes)
    out["rebuild keyed, rigid bodies out"] = _rebuild(sc)
    return out


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
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker is not None:
        print("RESULT " + json.dumps(worker(args.worker)), flush=True)
        os._exit(0)  # (no teardown)
    rows = []
    for n in args.sizes:
        run = subprocess.run([sys.executable, __file__, "--worker", str(n)], capture_output=True, text=True)
        line = next((s for s in run.stdout.splitlines() if s.startswith("RESULT ")), None)
        if line is None:
            raise RuntimeError(f"n = {n}: {run.stderr[-400:]}")
        rows.append(json.loads(line[len("RESULT "):]))
    print("| n | objects | " + " | ".join(CASES) + " |")
    print("|" + "---|" * (2 + len(CASES)))
    for r in rows:
        print(f"| {r['n']} | {r['objects']} | " + " | ".join(f"{r[c][0]:.3g} / {r[c][1]:.3g}" for c in CASES) + " |")
    ns = [r["n"] for r in rows]
    for k, what in ((0, "wall"), (1, "CPU")):
        print(f"{what} log-log slopes over n ≥ {MIN_FIT}: "
              + ", ".join(f"{c} {slope(ns, [r[c][k] for r in rows]):.2f}" for c in CASES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
