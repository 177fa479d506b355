"""Time the keyframe write of a bake: 1000 frames × 100 bones (a simulated 100-bone armature chain).

    python scripts/studies/keyframe_write_speed.py [--bones 100] [--frames 1000]

Prints the simulation and the keyframe-write seconds separately (the write is
one pass of ``keyframe_points.add`` + ``foreach_set`` per F-curve).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bones", type=int, default=100)
    ap.add_argument("--frames", type=int, default=1000)
    args = ap.parse_args(argv)
    os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="redmax_blender_"))
    import bpy

    sys.path.insert(0, str(ROOT))
    import addon
    from addon import bake

    addon.register()
    bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
    ctx = bpy.context
    arm = bpy.data.armatures.new("rig")
    ob = bpy.data.objects.new("rig", arm)
    ctx.scene.collection.objects.link(ob)
    ctx.view_layer.objects.active = ob
    bpy.ops.object.mode_set(mode="EDIT")
    prev = None
    for i in range(args.bones):
        eb = arm.edit_bones.new(f"b{i:03d}")
        eb.head, eb.tail = (0.1 * i, 0, 0), (0.1 * (i + 1), 0, 0)
        eb.parent, eb.use_connect = prev, prev is not None
        prev = eb
    bpy.ops.object.mode_set(mode="OBJECT")
    for pb in ob.pose.bones:
        pb.lock_ik_y = pb.lock_ik_z = True  # hinges about the bones' x
        pb.bone.redmax.stiffness, pb.bone.redmax.damping = 20.0, 0.5  # a stiff, damped rope
    ob.redmax.simulate = True
    ctx.scene.frame_start, ctx.scene.frame_end = 1, args.frames
    ctx.scene.redmax.substeps = 4
    ctx.scene.redmax.body_damping = 1.0  # air drag keeps the whipping tip of a long light chain tame
    job = bake.BakeJob(ctx)
    job.run()
    stats = job.finish()
    print(f"{args.bones} bones × {stats['frames']} frames: simulation {stats['seconds']:.2f} s, "
          f"keyframe write {stats['write_seconds']:.2f} s ({4 * args.bones} F-curves)")
    addon.unregister()
    return 0


if __name__ == "__main__":
    sys.exit(main())
