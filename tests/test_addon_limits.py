"""Joint limits authored in Blender (real bpy wheel) reach the engine and hold in a bake: a rigid
body HINGE with ``limit_ang_z`` (both object orders), a bone with a Limit Rotation constraint, and
per-axis bounds of universal and ball bones."""
import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")  # (conftest.py gave Blender a throw-away user folder)

from addon import bake, mapping  # noqa: E402
from blender_rigs import box, empty, fcurve_world  # noqa: E402

import engine  # noqa: E402

LIMIT = 0.3
Y_HINGE = np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]]).T  # columns: local x = world x, local z = world y


@pytest.fixture(scope="module", autouse=True)
def registered(addon_registered):
    yield


def _bake(ctx, frames=180):
    ctx.scene.frame_start, ctx.scene.frame_end = 1, frames
    ctx.scene.redmax.substeps = 1  # dt = 1/60 s
    job = bake.BakeJob(ctx)
    job.run()
    job.finish()
    return job


def _tilt(W):
    """Angle (rad) by which a frame's x axis has turned about world +y (tip down is positive)."""
    return math.atan2(-W[2, 0], W[0, 0])


def _baked_angles(ctx, ob, frames, bone=None):
    out = []
    for f in range(1, frames + 1):
        ctx.scene.frame_set(f)
        W = np.array(ob.matrix_world @ ob.pose.bones[bone].matrix) if bone else np.array(ob.matrix_world)
        if bone:  # a bone points along its y axis
            W = W[:, [1, 0, 2]]
        out.append(_tilt(W))
    return np.array(out)


@pytest.mark.parametrize("leaf_is_object1", [False, True])
def test_hinge_limit_ang_z_stops_where_blenders_own_solver_stops(ctx, leaf_is_object1):
    """A horizontal leaf on a HINGE about world y with limit_ang_z (−0.1, 0.3) falls under gravity:
    Blender's rigid body solver and the bake stop it at the same bound (which one depends on the
    constraint's object order), never beyond by more than 2 mrad, at rest."""
    anchor = box("anchor", (0.1, 0.1, 0.1), (0, 0, 0.5))
    leaf = box("leaf", (1.0, 0.1, 0.1), (0.5, 0, 0))
    pivot = empty("pivot", (0, 0, 0), Y_HINGE)
    bpy.ops.rigidbody.world_add()
    for ob, kind in ((anchor, "PASSIVE"), (leaf, "ACTIVE")):
        ctx.view_layer.objects.active = ob
        bpy.ops.rigidbody.object_add(type=kind)
    ctx.view_layer.objects.active = pivot
    bpy.ops.rigidbody.constraint_add(type="HINGE")
    c = pivot.rigid_body_constraint
    c.object1, c.object2 = (leaf, anchor) if leaf_is_object1 else (anchor, leaf)
    c.use_limit_ang_z, c.limit_ang_z_lower, c.limit_ang_z_upper = True, -0.1, LIMIT
    frames = 150
    ctx.scene.rigidbody_world.point_cache.frame_end = frames
    blender = []
    for f in range(1, frames + 1):
        ctx.scene.frame_set(f)
        blender.append(_tilt(np.array(leaf.matrix_world)))
    stop = blender[-1]
    assert stop == pytest.approx(LIMIT if leaf_is_object1 else 0.1, abs=2e-3)
    ctx.scene.frame_set(1)
    model = mapping.build(ctx).scene.model
    assert model.joint_type[0] == engine.joints.REVOLUTE
    job = _bake(ctx, frames)
    # the poses the bake writes (on playback Blender's own rigid body world still drives an ACTIVE body)
    angles = np.array([_tilt(job.mapping.world_matrices(q)[0]) for q in job.qs])
    assert angles.max() <= stop + 2e-3                    # never beyond the stop by more than 2 mrad
    assert angles[-1] == pytest.approx(stop, abs=2e-3)    # comes to rest where Blender's hinge rests
    assert abs(angles[-1] - angles[-10]) < 1e-6


def _limit_rotation(pose_bone, **bounds):
    c = pose_bone.constraints.new("LIMIT_ROTATION")
    c.owner_space = "LOCAL"
    for axis, (lo, hi) in bounds.items():
        setattr(c, f"use_limit_{axis}", True)
        setattr(c, f"min_{axis}", lo)
        setattr(c, f"max_{axis}", hi)
    return c


def _rig(ctx, bones):
    """Armature 'rig' (simulated) with bones (name, head, tail, parent or None; connected to the parent)."""
    arm = bpy.data.armatures.new("rig")
    ob = bpy.data.objects.new("rig", arm)
    ctx.scene.collection.objects.link(ob)
    ctx.view_layer.objects.active = ob
    bpy.ops.object.mode_set(mode="EDIT")
    for name, head, tail, parent in bones:
        eb = arm.edit_bones.new(name)
        eb.head, eb.tail = head, tail
        if parent:
            eb.parent, eb.use_connect = arm.edit_bones[parent], True
    bpy.ops.object.mode_set(mode="OBJECT")
    ob.redmax.simulate = True
    return ob


def _horizontal_bone(ctx):
    """A 1 m bone along world +x whose only free axis is its own axis along world y (a hinge)."""
    ob = _rig(ctx, [("arm", (0, 0, 0), (1, 0, 0), None)])
    pb = ob.pose.bones["arm"]
    M = np.array(ob.matrix_world @ pb.matrix)[:3, :3]
    hinge = next(i for i in (0, 2) if abs(abs(M[1, i]) - 1.0) < 1e-6)  # bone x or z along world y
    pb.lock_ik_y = True
    setattr(pb, "lock_ik_z" if hinge == 0 else "lock_ik_x", True)
    return ob, pb, "xyz"[hinge]


def test_bone_limit_rotation_stops_the_bone_in_the_bake(ctx):
    ob, pb, axis = _horizontal_bone(ctx)
    _limit_rotation(pb, **{axis: (-LIMIT, LIMIT)})
    model = mapping.build(ctx).scene.model
    assert model.joint_type[0] == engine.joints.REVOLUTE
    np.testing.assert_allclose([model.joint_lower[0], model.joint_upper[0]], [-LIMIT, LIMIT])
    _bake(ctx)
    tilt = np.abs(_baked_angles(ctx, ob, 180, bone="arm"))
    assert tilt.max() <= LIMIT + 2e-3
    assert tilt[-1] == pytest.approx(LIMIT, abs=2e-3)


def test_universal_and_ball_bones_take_per_axis_bounds(ctx):
    ob = _rig(ctx, [("hip", (0, 0, 0), (0, 0, -0.5), None), ("knee", (0, 0, -0.5), (0, 0, -1), "hip")])
    pb = ob.pose.bones
    pb["hip"].lock_ik_y = True  # universal about the bone's x and z
    _limit_rotation(pb["hip"], x=(-0.2, 0.4), z=(-0.1, 0.1))
    _limit_rotation(pb["knee"], x=(-0.5, 0.6), y=(-0.3, 0.3), z=(-0.2, 0.25))  # ball
    model = mapping.build(ctx).scene.model
    hip, knee = model.v_slice("rig:hip"), model.v_slice("rig:knee")
    np.testing.assert_allclose(model.joint_lower[hip], [-0.2, -0.1])
    np.testing.assert_allclose(model.joint_upper[hip], [0.4, 0.1])
    np.testing.assert_allclose(model.joint_lower[knee], [-0.5, -0.3, -0.2])
    np.testing.assert_allclose(model.joint_upper[knee], [0.6, 0.3, 0.25])


def test_a_limit_rotation_outside_local_space_is_refused_by_name_and_a_muted_one_ignored(ctx):
    """Found by a tester: Blender's own *Add Bone Constraint* gives a Limit Rotation in World Space, which the
    bake read as bone-local angles while playback applies it in world space (the bone chain left its keys).
    Only Local Space is a joint limit: any other owner space is refused by name; a muted one is ignored."""
    ob, pb, axis = _horizontal_bone(ctx)
    bpy.ops.object.mode_set(mode="POSE")
    ob.data.bones.active = ob.data.bones["arm"]
    assert bpy.ops.pose.constraint_add(type="LIMIT_ROTATION") == {"FINISHED"}
    bpy.ops.object.mode_set(mode="OBJECT")
    c = pb.constraints["Limit Rotation"]
    assert c.owner_space == "WORLD"  # Blender's default
    setattr(c, f"use_limit_{axis}", True)
    setattr(c, f"min_{axis}", -LIMIT)
    setattr(c, f"max_{axis}", LIMIT)
    with pytest.raises(bake.BakeError, match="bone 'arm' of 'rig': its Limit Rotation constraint 'Limit Rotation' "
                                             "works in World Space; set its Owner Space to Local Space"):
        bake.BakeJob(ctx)
    c.owner_space = "POSE"
    with pytest.raises(mapping.MappingError, match="works in Pose Space"):
        mapping.build(ctx)
    c.mute = True  # ignored, as Blender ignores it on playback
    model = mapping.build(ctx).scene.model
    assert np.isinf(model.joint_lower[0]) and np.isinf(model.joint_upper[0])
    c.mute, c.owner_space = False, "LOCAL"
    _bake(ctx, 90)
    for f in range(1, 91):  # playback (Blender applies the constraint) shows the keys; the bake overshoots ≤ 2 mrad
        ctx.scene.frame_set(f)
        played = np.array(ob.matrix_world @ pb.matrix)
        assert np.abs(played - np.array(fcurve_world(ob, f, "arm"))).max() < 3e-3, f


@pytest.mark.parametrize("euler_order, rotation_mode, expected", [
    ("AUTO", "QUATERNION", "XYZ"),
    ("AUTO", "ZXY", "XYZ"),  # the bake turns the bone to quaternion mode, in which 'AUTO' is XYZ on playback
    ("YZX", "QUATERNION", "YZX"),
])
def test_ball_bone_keys_stay_within_the_euler_bounds_blender_clamps(ctx, euler_order, rotation_mode, expected):
    """Found by a tester: a ball bone's Limit Rotation (Local Space, ±15° on X, Y, Z) clamps Euler angles
    (the constraint's order; 'AUTO' = XYZ for a quaternion bone), which the bake once read as bounds on the
    rotation vector: with two axes turning at once the keys passed Blender's bounds and playback, where
    Blender clamps, left them. A horizontal bone with a second bone fixed across its tip (the centre of mass
    off its axis) falls under gravity and twists at once; the bake keys Euler angles within the bounds, so
    playback shows the keys at every frame."""
    bound = math.radians(15.0)
    arm = bpy.data.armatures.new("rig")
    ob = bpy.data.objects.new("rig", arm)
    ctx.scene.collection.objects.link(ob)
    ctx.view_layer.objects.active = ob
    bpy.ops.object.mode_set(mode="EDIT")
    eb = arm.edit_bones.new("ball")
    eb.head, eb.tail = (0, 0, 0), (0.5, 0, 0)
    side = arm.edit_bones.new("side")  # fixed to the ball bone: the pair's centre of mass is off its axis
    side.head, side.tail, side.parent, side.use_connect = (0.5, 0, 0), (0.5, 0.5, 0), eb, True
    bpy.ops.object.mode_set(mode="OBJECT")
    ob.redmax.simulate = True
    pb = ob.pose.bones["ball"]
    ob.pose.bones["side"].lock_ik_x = ob.pose.bones["side"].lock_ik_y = ob.pose.bones["side"].lock_ik_z = True
    c = _limit_rotation(pb, x=(-bound, bound), y=(-bound, bound), z=(-bound, bound))
    c.euler_order, pb.rotation_mode = euler_order, rotation_mode
    model = mapping.build(ctx).scene.model
    assert model.joint_type[0] == engine.joints.SPHERICAL
    assert engine.joints.LIMIT_ANGLES[int(model.joint_limit_order[0])] == expected
    frames = 90
    ctx.scene.frame_start, ctx.scene.frame_end = 1, frames
    ctx.scene.redmax.substeps = 1
    assert bpy.ops.redmax.bake() == {"FINISHED"}
    assert pb.rotation_mode == "QUATERNION"
    rest = ob.matrix_world @ ob.data.bones["ball"].matrix_local
    worst_pose, worst_euler, on_two = 0.0, 0.0, 0
    for f in range(1, frames + 1):
        ctx.scene.frame_set(f)
        keyed = fcurve_world(ob, f, "ball")  # the keys, no constraint
        played = ob.matrix_world @ pb.matrix  # Blender applies the Limit Rotation
        worst_pose = max(worst_pose, float(np.abs(np.array(played) - np.array(keyed)).max()))
        euler = np.array((rest.inverted() @ keyed).to_euler(expected))
        worst_euler = max(worst_euler, float(np.abs(euler).max()) - bound)
        on_two = max(on_two, int(np.sum(np.abs(euler) > bound - 2e-3)))
    print(f"ball bone ±15° {euler_order} ({rotation_mode}): keys beyond Blender's Euler bounds by {math.degrees(max(worst_euler, 0.0)):.4f}°, "
          f"playback − keys {worst_pose:.2e}")
    assert on_two >= 2  # two axes at their bounds at once
    assert worst_euler < 1e-4
    assert worst_pose < 1e-4
