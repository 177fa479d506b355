"""Regenerate the ready-made scenes in ``blend_scenes/`` (unbaked; open one and press Bake).

    python scripts/make_blend_scenes.py [--out blend_scenes]

bridge.blend, umbrella.blend, tree.blend: the demo scenes (``redmax.add_demo_scene``)
with a camera and a sun. armature.blend: a 12-bone hanging tail whose bones
are hinges and universal joints from their IK locks, with joint springs, and
a cable from its tip to an anchor: the armature workflow in one file.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))


def armature_example(bpy, addon):
    ctx = bpy.context
    arm = bpy.data.armatures.new("tail")
    ob = bpy.data.objects.new("tail", arm)
    ctx.scene.collection.objects.link(ob)
    ctx.view_layer.objects.active = ob
    bpy.ops.object.mode_set(mode="EDIT")
    prev = None
    for i in range(12):
        eb = arm.edit_bones.new(f"tail{i:02d}")
        eb.head, eb.tail = (0.15 * i, 0, 2.0), (0.15 * (i + 1), 0, 2.0)
        eb.parent, eb.use_connect = prev, prev is not None
        prev = eb
    bpy.ops.object.mode_set(mode="OBJECT")
    for i, pb in enumerate(ob.pose.bones):
        pb.lock_ik_y = True  # no twist: universal joints …
        if i % 2:
            pb.lock_ik_z = True  # … and every other one a hinge
        pb.bone.redmax.stiffness, pb.bone.redmax.damping = 4.0, 0.05
    ob.redmax.simulate = True
    ob.redmax.linear_density = 10.0  # kg/m
    ctx.scene.redmax.substeps = 4
    ctx.scene.redmax.body_damping = 0.2
    anchor = bpy.data.objects.new("anchor", None)
    anchor.location = (1.2, 0.0, 0.6)
    ctx.scene.collection.objects.link(anchor)
    addon.links.add_link(ctx.scene, "CABLE", ((ob, "tail11"), (anchor, "")), (0, 0.15, 0), (0, 0, 0),
                         name="tip cable", stiffness=500.0, damping=5.0)
    item = ctx.scene.redmax.links[-1]
    item.use_current_length, item.rest_length = False, 0.8


def _open_umbrella(scene):
    """The closed umbrella's mesh corners plus the ring its rib tips reach when open (so the saved
    camera sees the umbrella after the bake opens it)."""
    import numpy as np

    from bake_demo import _mesh_corners
    import importlib

    u = importlib.import_module("engine.scenes.umbrella")  # (the package exports the function under that name)

    reach, drop = u.RIB_LENGTH * np.sin(u.OPEN_ANGLE), u.RIB_LENGTH * np.cos(u.OPEN_ANGLE)
    ring = [(reach * np.cos(a), reach * np.sin(a), u.TUBE_LENGTH - drop) for a in np.linspace(0, 2 * np.pi, 16)]
    return np.vstack([_mesh_corners(scene), ring])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "blend_scenes"))
    args = ap.parse_args(argv)
    os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="redmax_blender_"))
    import bpy

    sys.path.insert(0, str(ROOT))
    import addon
    from bake_demo import _frame_camera, _mesh_corners

    addon.register()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        for name, build in (("bridge", lambda: bpy.ops.redmax.add_demo_scene(scene="BRIDGE")),
                            ("umbrella", lambda: bpy.ops.redmax.add_demo_scene(scene="UMBRELLA")),
                            ("tree", lambda: bpy.ops.redmax.add_demo_scene(scene="TREE")),
                            ("armature", lambda: armature_example(bpy, addon))):
            bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
            scene = bpy.context.scene
            scene.render.fps, scene.frame_start, scene.frame_end = 24, 1, 120
            build()
            if any(ob.type == "MESH" for ob in scene.objects):
                _frame_camera(bpy, scene, _mesh_corners(scene) if name != "umbrella" else _open_umbrella(scene))
            path = out / f"{name}.blend"
            bpy.ops.wm.save_as_mainfile(filepath=str(path), compress=True)
            path.with_suffix(".blend1").unlink(missing_ok=True)  # Blender's backup of the previous file
            print(f"wrote {path} ({path.stat().st_size / 1e3:.0f} kB)")
    finally:
        addon.unregister()
    return 0


if __name__ == "__main__":
    sys.exit(main())
