"""Bake a RedMax demo scene headless and write the baked .blend plus a rendered PNG preview.

    python scripts/bake_demo.py [--scene BRIDGE] [--size 20] [--frames 250] [--substeps 2] [--out bake_out]
    blender -b -P scripts/bake_demo.py -- [same options]

With the ``bpy`` wheel (``pip install bpy==5.0.1``) no Blender install is
needed. Prints the bake and keyframe-write times; exits non-zero on failure.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scene", default="BRIDGE", choices=["BRIDGE", "UMBRELLA", "TREE", "CHAIN"])
    ap.add_argument("--size", type=int, default=0, help="scene size (0: the demo default; bridge 20 = 61 bodies)")
    ap.add_argument("--frames", type=int, default=250)
    ap.add_argument("--substeps", type=int, default=2)
    ap.add_argument("--solver", default="PCG", choices=["PCG", "DIRECT", "DENSE"])
    ap.add_argument("--out", default="bake_out", help="output directory for NAME.blend and NAME.png")
    ap.add_argument("--no-render", action="store_true")
    return ap.parse_args(argv)


def _frame_camera(bpy, scene):
    """A camera and a sun that see every mesh object of the scene."""
    import numpy as np
    from mathutils import Vector

    pts = np.array([(ob.matrix_world @ Vector(c))[:] for ob in scene.objects if ob.type == "MESH"
                    for c in ob.bound_box])
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    centre, radius = (lo + hi) / 2, max(float(np.linalg.norm(hi - lo)) / 2, 0.5)
    cam = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    scene.collection.objects.link(cam)
    direction = Vector((0.55, -1.0, 0.45)).normalized()
    cam.location = Vector(centre) + direction * radius * 3.2
    cam.rotation_euler = (-direction).to_track_quat("-Z", "Y").to_euler()
    cam.data.clip_end = radius * 20
    scene.camera = cam
    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    sun.rotation_euler = (math.radians(40), math.radians(10), math.radians(30))
    scene.collection.objects.link(sun)


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[1:]
    args = parse(argv)
    if "bpy" not in sys.modules and "BLENDER_USER_RESOURCES" not in os.environ:
        os.environ["BLENDER_USER_RESOURCES"] = tempfile.mkdtemp(prefix="redmax_blender_")  # recipes §1
    import bpy

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import addon

    addon.register()
    try:
        bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
        scene = bpy.context.scene
        scene.render.fps = 24
        scene.frame_start, scene.frame_end = 1, args.frames
        scene.redmax.substeps, scene.redmax.solver = args.substeps, args.solver
        t0 = time.perf_counter()
        bpy.ops.redmax.add_demo_scene(scene=args.scene, size=args.size)
        t_build = time.perf_counter() - t0
        t0 = time.perf_counter()
        result = bpy.ops.redmax.bake()
        t_bake = time.perf_counter() - t0
        s = scene.redmax
        if result != {"FINISHED"}:
            print(f"bake failed: {s.last_message}", file=sys.stderr)
            return 1
        n_bodies = sum(1 for ob in scene.objects if ob.redmax.is_baked)
        print(f"{args.scene.lower()}: {n_bodies} bodies, {s.last_frames} frames × {args.substeps} substeps "
              f"({args.solver}): bake {t_bake:.2f} s in total, of which simulation {s.last_seconds:.2f} s; "
              f"PCG iterations {s.last_iterations:.2f} mean / {s.last_max_iterations} max; scene built in {t_build:.2f} s")
        out = Path(args.out).resolve()
        out.mkdir(parents=True, exist_ok=True)
        name = f"{args.scene.lower()}_baked"
        _frame_camera(bpy, scene)
        bpy.ops.wm.save_as_mainfile(filepath=str(out / f"{name}.blend"))
        print(f"wrote {out / f'{name}.blend'}")
        if not args.no_render:
            scene.frame_set(args.frames)
            scene.render.engine = "BLENDER_WORKBENCH"
            scene.render.resolution_x, scene.render.resolution_y = 960, 540
            scene.render.filepath = str(out / f"{name}.png")
            t0 = time.perf_counter()
            bpy.ops.render.render(write_still=True)
            print(f"wrote {out / f'{name}.png'} (frame {args.frames}, {time.perf_counter() - t0:.1f} s)")
        return 0
    finally:
        addon.unregister()


if __name__ == "__main__":
    sys.exit(main())
