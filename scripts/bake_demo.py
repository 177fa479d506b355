"""Bake a RedMax demo scene headless; write the baked .blend and a contact sheet of its motion.

    python scripts/bake_demo.py [--scene UMBRELLA] [--size 0] [--frames 120] [--substeps 2] [--out bake_out]
    blender -b -P scripts/bake_demo.py -- [same options]

With the ``bpy`` wheel (``pip install bpy==5.0.1``) no Blender install is
needed. Prints the bake and keyframe-write times (on a cold numba cache, the
compile stage first), how far the moving part travelled against the scene's
size, and writes NAME_baked.blend and NAME_baked.png: rendered frames at which
the part that moves most is 0 %, 25 %, … 100 % of its way, stamped with the
frame number. Exits non-zero on failure.
"""
from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _at_least(low: int):
    """argparse type: an integer ≥ low."""
    def parse_int(text: str) -> int:
        value = int(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value
    parse_int.__name__ = "integer"  # argparse's "invalid integer value" for text that is not a number
    return parse_int


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scene", default="UMBRELLA", type=str.upper, choices=["BRIDGE", "UMBRELLA", "TREE", "CHAIN"])
    ap.add_argument("--size", type=_at_least(0), default=0, help="scene size (0: the demo default; bridge 20 = 61 bodies)")
    ap.add_argument("--frames", type=_at_least(2), default=120, help="frames to bake (≥ 2: the first is the start pose)")
    ap.add_argument("--substeps", type=_at_least(1), default=2, help="simulation steps per frame (≥ 1)")
    ap.add_argument("--solver", default="PCG", type=str.upper, choices=["PCG", "DIRECT", "DENSE"])
    ap.add_argument("--out", default="bake_out", help="output directory for NAME.blend and NAME.png")
    ap.add_argument("--sheet", type=_at_least(1), default=6, help="frames on the contact sheet (3 per row)")
    ap.add_argument("--no-render", action="store_true")
    return ap.parse_args(argv)


def _mesh_corners(scene):
    """World corners (k, 3) of every mesh and curve object's bounding box at the current frame."""
    import numpy as np
    from mathutils import Vector

    return np.array([(ob.matrix_world @ Vector(c))[:] for ob in scene.objects if ob.type in ("MESH", "CURVE")
                     for c in ob.bound_box])


def motion(bpy, scene, frames):
    """How far the baked objects move: (scene size (m), travel (m), the object that travelled most,
    {object name: travel}, mesh corners (k, 3) over all frames, that object's distance from its start
    per frame). Travel is an object's largest distance from where it starts; the scene size is the
    diagonal of the box holding every mesh over the whole animation."""
    import numpy as np

    baked = [ob for ob in scene.objects if ob.redmax.is_baked]
    corners, paths = [], []
    for f in frames:
        scene.frame_set(f)
        corners.append(_mesh_corners(scene))
        paths.append([ob.matrix_world.translation[:] for ob in baked])
    pts = np.concatenate(corners)
    size = float(np.linalg.norm(pts.max(axis=0) - pts.min(axis=0)))
    away = np.linalg.norm(np.array(paths) - paths[0], axis=-1)  # (frames, objects): distance from the start
    travels = dict(zip((ob.name for ob in baked), away.max(axis=0).tolist()))
    k = int(np.argmax(away.max(axis=0)))
    return size, float(away[:, k].max()), baked[k].name, travels, pts, away[:, k]


def sheet_frames(frames, away, n):
    """``n`` frames that show the motion: the first frames at which the moving part is 0, 1/(n−1), …,
    all of its largest distance from the start ``away`` (per frame) away, then the last frame."""
    import numpy as np

    away = np.asarray(away)
    picks = [frames[int(np.argmax(away >= t * away.max() - 1e-12))] for t in np.linspace(0, 1, n - 1)]
    return sorted(set(picks + [frames[-1]]))


def _frame_camera(bpy, scene, pts=None):
    """A camera that sees every point of ``pts`` (n, 3) (the meshes over the whole animation; default:
    the meshes at the current frame) in the scene's render size, and a sun."""
    import numpy as np
    from mathutils import Vector

    if pts is None:
        pts = _mesh_corners(scene)

    lo, hi = pts.min(axis=0), pts.max(axis=0)
    centre = (lo + hi) / 2
    cam = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    scene.collection.objects.link(cam)
    back = np.array([0.55, -1.0, 0.45]) / np.linalg.norm([0.55, -1.0, 0.45])  # from the centre to the camera
    right = np.cross([0.0, 0.0, 1.0], back)
    right /= np.linalg.norm(right)
    up = np.cross(back, right)
    # tangents of the half fields of view (50 mm lens on a 36 mm sensor across 16:9), then the nearest
    # distance at which every point is inside both, plus a 10 % margin
    tan_x = 0.5 * cam.data.sensor_width / cam.data.lens
    tan_y = tan_x * scene.render.resolution_y / scene.render.resolution_x
    rel = pts - centre
    along, x, y = rel @ back, np.abs(rel @ right), np.abs(rel @ up)
    distance = 1.1 * float(np.max(np.maximum(along + x / tan_x, along + y / tan_y)))
    direction = Vector(back)
    cam.location = Vector(centre) + direction * distance
    radius = float(np.linalg.norm(hi - lo))
    cam.rotation_euler = (-direction).to_track_quat("-Z", "Y").to_euler()
    cam.data.clip_end = radius * 40
    scene.camera = cam
    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    sun.rotation_euler = (math.radians(40), math.radians(10), math.radians(30))
    scene.collection.objects.link(sun)


@contextlib.contextmanager
def native_output_silenced():
    """Blender's own C-level prints inside the block go to /dev/null: a headless render's harmless "EGL Error"
    lines (recipes §6) and "Saved: ..." for every temporary frame. Python's exceptions still surface."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)


def contact_sheet(bpy, scene, frames, path, columns=3, width=640, height=360):
    """Render ``frames`` (Workbench, frame number stamped) and tile them row by row into one PNG."""
    import numpy as np

    r = scene.render
    r.engine = "BLENDER_WORKBENCH"
    r.resolution_x, r.resolution_y, r.resolution_percentage = width, height, 100
    r.use_stamp, r.use_stamp_frame, r.use_stamp_labels, r.stamp_font_size = True, True, True, 24
    r.stamp_foreground, r.stamp_background = (0.0, 0.0, 0.0, 1.0), (1.0, 1.0, 1.0, 0.0)
    for key in ("date", "time", "render_time", "camera", "lens", "scene", "filename", "memory", "hostname",
                "frame_range", "marker", "sequencer_strip"):
        setattr(r, f"use_stamp_{key}", False)
    rows = -(-len(frames) // columns)
    sheet = np.ones((rows * height, columns * width, 4), np.float32)
    tmp = Path(tempfile.mkdtemp(prefix="redmax_sheet_"))
    for k, f in enumerate(frames):
        scene.frame_set(f)
        r.filepath = str(tmp / f"frame{f:04d}.png")
        with native_output_silenced():
            bpy.ops.render.render(write_still=True)
        img = bpy.data.images.load(r.filepath)
        px = np.empty(width * height * 4, np.float32)
        img.pixels.foreach_get(px)
        bpy.data.images.remove(img)
        row, col = divmod(k, columns)
        y0 = (rows - 1 - row) * height  # Blender images start at the bottom row
        sheet[y0:y0 + height, col * width:(col + 1) * width] = px.reshape(height, width, 4)
    out = bpy.data.images.new("contact sheet", columns * width, rows * height, alpha=True)
    out.pixels.foreach_set(sheet.ravel())
    out.filepath_raw, out.file_format = str(path), "PNG"
    out.save()
    bpy.data.images.remove(out)


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[1:]
    args = parse(argv)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from engine.output_paths import OutputPathError, output_folder

    try:
        out = output_folder(args.out, "--out").resolve()  # before the bake, not after it
    except OutputPathError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if "bpy" not in sys.modules and "BLENDER_USER_RESOURCES" not in os.environ:
        os.environ["BLENDER_USER_RESOURCES"] = tempfile.mkdtemp(prefix="redmax_blender_")  # recipes §1
    import bpy
    import numpy as np

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
        # a cold cache: compile (printed) what this scene's bake runs (its loop closures decide which step)
        if addon.kernels.needed(scene.redmax):
            t0 = time.perf_counter()
            if bpy.ops.redmax.compile_kernels() != {"FINISHED"}:
                return 1
            print(f"kernels compiled in {time.perf_counter() - t0:.1f} s (once per numba cache)")
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
        name = f"{args.scene.lower()}_baked"
        frames = range(scene.frame_start, scene.frame_end + 1)
        size, travel, mover, travels, pts, away = motion(bpy, scene, frames)
        share = 100 * travel / size  # (a bridge deck's sag under the car is well under 1 % of the bridge)
        print(f"motion: '{mover}' travelled {travel:.3f} m = {share:.{0 if share >= 10 else 1 if share >= 1 else 2}f} % "
              f"of the scene size "
              f"({size:.2f} m, the box around every mesh over the animation)")
        if args.scene == "UMBRELLA":
            from engine.scenes.umbrella import TUBE_LENGTH as UMBRELLA_RAIL

            runner = travels["runner"]
            print(f"umbrella: the runner travelled {runner:.3f} m = {100 * runner / UMBRELLA_RAIL:.0f} % of "
                  f"its {UMBRELLA_RAIL:.2f} m rail (the tube)")
        _frame_camera(bpy, scene, pts)
        scene.frame_set(scene.frame_start)
        with native_output_silenced():
            bpy.ops.wm.save_as_mainfile(filepath=str(out / f"{name}.blend"))
        print(f"wrote {out / f'{name}.blend'}")
        if not args.no_render:
            shown = sheet_frames(list(frames), away, args.sheet)
            t0 = time.perf_counter()
            contact_sheet(bpy, scene, shown, out / f"{name}.png")
            print(f"wrote {out / f'{name}.png'} (contact sheet of frames {', '.join(map(str, shown))}; "
                  f"{time.perf_counter() - t0:.1f} s)")
        return 0
    finally:
        addon.unregister()


if __name__ == "__main__":
    sys.exit(main())
