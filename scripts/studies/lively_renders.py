"""Renders of baked rigs as a user would bake them (issue #31): a hinge pendulum released at 60° and a taut rope
bridge (30 planks between two passive posts), built with Blender's operators (tests/blender_rigs.py), baked at the
add-on's default settings, then rendered with Workbench at a few frames into one contact sheet per rig — the
pendulum (top) above the same rig baked with Implicit Euler (the step before issue #31; frames 1, 7, 13, then
the last 2 s), the taut bridge (top) above one with 1 % slack (frames 1, 13, 61, 121).

    python scripts/studies/lively_renders.py --out docs/results     # (the bpy wheel; or blender -b -P ... -- ARGS)

Writes OUT/liveliness_blender_pendulum.png and OUT/liveliness_blender_rope_bridge.png and prints, per rendered
frame, the pendulum's angle and the bridge's lowest plank.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for p in (ROOT, ROOT / "tests"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))
os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="redmax_render_"))

import bpy  # noqa: E402
import numpy as np  # noqa: E402

FPS = 24


def _args():
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[1:]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="bake_out", help="folder for the PNG sheets")
    return ap.parse_args(argv)


def _fresh(frames):
    bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
    s = bpy.context.scene
    s.render.fps, s.render.fps_base = FPS, 1.0
    s.frame_start, s.frame_end = 1, frames
    return bpy.context


def _camera_and_light(location, target, lens=35.0):
    from mathutils import Vector

    bpy.ops.object.camera_add(location=location)
    cam = bpy.context.active_object
    cam.data.lens = lens
    direction = Vector(target) - Vector(location)
    cam.rotation_euler = direction.to_track_quat("-Z", "Y").to_euler()
    bpy.context.scene.camera = cam
    bpy.ops.object.light_add(type="SUN", location=(0, 0, 10))
    return cam


def _render(path, size=(320, 240)):
    s = bpy.context.scene
    s.render.engine = "BLENDER_WORKBENCH"
    s.render.resolution_x, s.render.resolution_y = size
    s.render.film_transparent = False
    s.render.filepath = str(path)
    bpy.ops.render.render(write_still=True)
    img = bpy.data.images.load(str(path))
    w, h = img.size
    px = np.array(img.pixels[:], dtype=np.float32).reshape(h, w, 4)[::-1]
    bpy.data.images.remove(img)
    return px


def _sheet(tiles, cols, path):
    """Tiles (h, w, 4) in rows of ``cols``, written as one PNG through Blender's image API."""
    h, w = tiles[0].shape[:2]
    rows = math.ceil(len(tiles) / cols)
    out = np.ones((rows * h, cols * w, 4), np.float32)
    for k, t in enumerate(tiles):
        r, c = divmod(k, cols)
        out[r * h:(r + 1) * h, c * w:(c + 1) * w] = t
    img = bpy.data.images.new("sheet", cols * w, rows * h, alpha=True)
    img.pixels[:] = out[::-1].ravel()
    img.filepath_raw, img.file_format = str(path), "PNG"
    img.save()
    bpy.data.images.remove(img)


def _bake():
    from addon import bake

    job = bake.BakeJob(bpy.context)
    job.run()
    return job.finish()


def pendulum(out: Path, tmp: Path):
    from blender_rigs import artist_pendulum

    tiles = []
    frames = (1, 7, 13, 193, 205, 217, 229, 241)
    for integrator in ("BDF2", "EULER"):
        _fresh(241)
        top, bob = artist_pendulum(theta0=math.pi / 3, L=1.0, side=0.15)
        bob.rigid_body.linear_damping = bob.rigid_body.angular_damping = 0.0
        _camera_and_light((3.2, 0.0, -0.4), (0.0, 0.0, -0.5))
        bpy.context.scene.redmax.integrator = integrator
        _bake()
        for f in frames:
            bpy.context.scene.frame_set(f)
            p = bob.matrix_world.translation
            print(f"pendulum {integrator} frame {f}: {math.degrees(math.atan2(p.y, -p.z)):+.1f}°")
            tiles.append(_render(tmp / f"pendulum_{integrator}_{f}.png"))
    _sheet(tiles, len(frames), out / "liveliness_blender_pendulum.png")


def rope_bridge(out: Path, tmp: Path):
    from blender_rigs import artist_rope_bridge

    tiles = []
    for slack in (0.0, 0.01):
        _fresh(121)
        posts, planks, hinges = artist_rope_bridge(slack=slack)
        _camera_and_light((7.5, -14.0, 4.0), (7.5, 0.0, -0.6), lens=35.0)
        _bake()
        for f in (1, 13, 61, 121):
            bpy.context.scene.frame_set(f)
            low = min(ob.matrix_world.translation.z for ob in planks)
            print(f"rope bridge, slack {slack:.0%}, frame {f}: lowest plank at {low:+.4f} m")
            tiles.append(_render(tmp / f"bridge_{slack}_{f}.png", size=(400, 200)))
    _sheet(tiles, 4, out / "liveliness_blender_rope_bridge.png")


def main():
    args = _args()
    import addon

    addon.register()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        pendulum(out, Path(tmp))
        rope_bridge(out, Path(tmp))
    print(f"wrote {out / 'liveliness_blender_pendulum.png'} and {out / 'liveliness_blender_rope_bridge.png'}")


if __name__ == "__main__":
    main()
