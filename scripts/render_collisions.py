"""Render two frames of the 10-link chain swinging onto a passive floor, baked by the add-on (issue #30), with
Workbench: docs/results/collisions_chain_f{N}.png (checked by eye for interpenetration).

    PYTHONPATH=. python scripts/render_collisions.py
"""
import sys
from pathlib import Path

import bpy
from mathutils import Vector

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from blender_rigs import artist_constraint, artist_cube  # noqa: E402
from test_addon_collisions import frames, passive_plane  # noqa: E402
from test_addon_collisions_slow import chain  # noqa: E402

import addon  # noqa: E402
from addon import bake  # noqa: E402

FRAMES = (20, 96)


def main(out_dir: Path = ROOT / "docs" / "results") -> list:
    addon.register()
    bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
    scene = bpy.context.scene
    scene.render.fps = 24
    frames(scene, 97)
    passive_plane()
    post = artist_cube("post", 0.2, (0, 0, 1.0), "PASSIVE")
    links = chain(10, 0.25, (0.2, 0.2, 0.2), (0, 0.25, 1.0))
    artist_constraint("joint00", "POINT", post, links[0], (0, 0.125, 1.0))
    job = bake.BakeJob(bpy.context)
    job.run()
    job.finish()
    bpy.ops.object.camera_add(location=(4.0, 1.25, 1.0))
    cam = scene.camera = bpy.context.active_object
    cam.rotation_euler = (Vector((0.0, 1.25, 0.45)) - cam.location).to_track_quat("-Z", "Y").to_euler()
    bpy.ops.object.light_add(type="SUN", location=(0, 0, 5))
    r = scene.render
    r.engine = "BLENDER_WORKBENCH"
    r.resolution_x, r.resolution_y, r.resolution_percentage = 480, 320, 100
    scene.display.shading.light = "STUDIO"
    scene.display.shading.color_type = "RANDOM"
    scene.display.shading.show_shadows = True
    r.image_settings.file_format = "PNG"
    out = []
    for f in FRAMES:
        scene.frame_set(f)
        r.filepath = str(out_dir / f"collisions_chain_f{f}.png")
        bpy.ops.render.render(write_still=True)
        out.append(r.filepath)
    return out


if __name__ == "__main__":
    for path in main():
        print(path, Path(path).stat().st_size, "bytes")
