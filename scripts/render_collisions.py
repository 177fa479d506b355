"""Render frames of two rigs baked by the add-on (issue #30), with Workbench, to check by eye for interpenetration:
the 10-link chain swinging onto a passive floor (docs/results/collisions_chain_f{N}.png) and the 20-capsule chain
dropped onto a passive Mesh staircase, whose treads are two triangles each (docs/results/collisions_stairs_f{N}.png).

    PYTHONPATH=. python scripts/render_collisions.py
"""
import math
import sys
from pathlib import Path

import bpy
from mathutils import Vector

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from blender_rigs import artist_constraint, artist_cube  # noqa: E402
from test_addon_collisions import frames, passive_plane  # noqa: E402
from test_addon_collisions_slow import chain, staircase  # noqa: E402

import addon  # noqa: E402
from addon import bake  # noqa: E402

FRAMES = (20, 96)
STAIR_FRAMES = (9, 192)


def swinging_chain(scene):
    """The 10-link chain on a post, released over a passive plane (``test_addon_collisions_slow``)."""
    frames(scene, 97)
    passive_plane()
    post = artist_cube("post", 0.2, (0, 0, 1.0), "PASSIVE")
    links = chain(10, 0.25, (0.2, 0.2, 0.2), (0, 0.25, 1.0))
    artist_constraint("joint00", "POINT", post, links[0], (0, 0.125, 1.0))
    return (4.0, 1.25, 1.0), (0.0, 1.25, 0.45)


def chain_on_stairs(scene):
    """Twenty capsule links dropped 0.5 m onto the mesh staircase, friction 1 (the slow test's rig)."""
    frames(scene, 193)
    passive_plane()
    stairs = staircase()
    stairs.rigid_body.friction = 1.0
    for c in chain(20, 0.15, (0.15, 0.05, 0.05), (0.1 + 0.075, 0, 6 * 0.15 + 0.5), along=(1.0, 0.0, 0.0)):
        c.rigid_body.collision_shape, c.rigid_body.friction = "CAPSULE", 1.0
        c.rotation_euler = (0.0, math.pi / 2, 0.0)
        c.scale = (0.05, 0.05, 0.15)
    return (1.4, -4.2, 1.6), (1.4, 0.0, 0.4)


def main(out_dir: Path = ROOT / "docs" / "results") -> list:
    addon.register()
    out = []
    for name, build, shots in (("chain", swinging_chain, FRAMES), ("stairs", chain_on_stairs, STAIR_FRAMES)):
        out += render(name, build, shots, out_dir)
    return out


def render(name, build, shots, out_dir: Path) -> list:
    bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
    scene = bpy.context.scene
    scene.render.fps = 24
    eye, target = build(scene)
    bpy.context.view_layer.update()
    job = bake.BakeJob(bpy.context)
    job.run()
    job.finish()
    bpy.ops.object.camera_add(location=eye)
    cam = scene.camera = bpy.context.active_object
    cam.rotation_euler = (Vector(target) - cam.location).to_track_quat("-Z", "Y").to_euler()
    bpy.ops.object.light_add(type="SUN", location=(0, 0, 5))
    r = scene.render
    r.engine = "BLENDER_WORKBENCH"
    r.resolution_x, r.resolution_y, r.resolution_percentage = 480, 320, 100
    scene.display.shading.light = "STUDIO"
    scene.display.shading.color_type = "RANDOM"
    scene.display.shading.show_shadows = True
    r.image_settings.file_format = "PNG"
    out = []
    for f in shots:
        scene.frame_set(f)
        r.filepath = str(out_dir / f"collisions_{name}_f{f}.png")
        bpy.ops.render.render(write_still=True)
        out.append(r.filepath)
    return out


if __name__ == "__main__":
    for path in main():
        print(path, Path(path).stat().st_size, "bytes")
