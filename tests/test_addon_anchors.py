"""Moving anchors (addon/mapping/anchors.py) with the real bpy wheel: what Blender moves by its animation —
an animated passive rigid body, an animated Empty, an active body with Animated on, a bone of an animated
armature — carries the chains, cables and springs attached to it, exactly, at every frame; a body that
Blender lets go of mid-bake is released and simulated."""
import math

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

import engine  # noqa: E402
from addon import bake, keyframes  # noqa: E402
from blender_rigs import HINGE_ABOUT_X, artist_constraint, artist_cube, artist_pendulum, keys  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def registered(addon_registered):
    yield


def _bake(ctx, **options):
    job = bake.BakeJob(ctx, **options)
    job.run()
    job.finish()
    return job


def _pivot_error(scene, anchor, body, frames, pivot_world):
    """Largest distance (m) over ``frames`` between the pivot as carried by ``anchor`` (its animation) and as
    carried by ``body`` (its baked keys): zero when the joint stays on the moving anchor."""
    scene.frame_set(frames[0])
    in_anchor = np.linalg.inv(np.array(anchor.matrix_world)) @ np.array([*pivot_world, 1.0])
    in_body = np.linalg.inv(np.array(body.matrix_world)) @ np.array([*pivot_world, 1.0])
    err = 0.0
    for f in frames:
        scene.frame_set(f)
        a = np.array(anchor.matrix_world) @ in_anchor
        b = np.array(body.matrix_world) @ in_body
        err = max(err, float(np.linalg.norm(a[:3] - b[:3])))
    return err


def _hanging_chain(n=10, link=0.2):
    """A passive 'carrier' cube at the origin and n active cubes hanging below it along −z, hinged about world X."""
    carrier = artist_cube("carrier", 0.2, (0, 0, 0), "PASSIVE")
    cubes, prev = [], carrier
    for i in range(n):
        cube = artist_cube(f"link{i + 1}", link * 0.8, (0, 0, -(i + 1) * link), "ACTIVE")
        cube.rigid_body.linear_damping = cube.rigid_body.angular_damping = 0.0
        artist_constraint(f"hinge{i + 1}", "HINGE", prev, cube, (0, 0, -(i + 0.5) * link), HINGE_ABOUT_X)
        cubes.append(cube)
        prev = cube
    return carrier, cubes


def _carrier_path(carrier):
    """Keys on the carrier's location: a 2 m path along +y, up and down 0.3 m on the way, frames 1–80."""
    carrier.rigid_body.kinematic = True
    for f, (y, z) in ((1, (0.0, 0.0)), (40, (1.0, 0.3)), (80, (2.0, 0.0))):
        carrier.location = (0.0, y, z)
        carrier.keyframe_insert("location", frame=f)


def _reference_error(job, scene, carrier, cubes, frames, fine=16):
    """Largest distance (m) over frames and links between the baked chain and the engine at 1/(fps·fine) s with
    the carrier prescribed by its own F-curves, sampled every such step."""
    fps = scene.render.fps
    curves = sorted((fc for fc in keyframes.fcurves(carrier) if fc.data_path == "location"), key=lambda fc: fc.array_index)
    samples = [[*(fc.evaluate(1 + k / fine) for fc in curves), 1.0, 0.0, 0.0, 0.0]
               for k in range((frames[-1] - 1) * fine + 1)]
    ref = engine.Scene(job.mapping.scene.model, name="reference")
    ref.prescribe("carrier", engine.control.JointTrajectory("free", samples, 0.0, 1.0 / fps / fine, "linear"))
    sim = engine.Simulator(ref, "pcg", dt=1.0 / fps / fine)
    worst = 0.0
    for f in frames[1:]:
        sim.step(fine)
        expected = job.mapping.world_matrices(sim.state.q)[1:, :3, 3]
        scene.frame_set(f)
        baked = np.array([np.array(c.matrix_world)[:3, 3] for c in cubes])
        worst = max(worst, float(np.linalg.norm(baked - expected, axis=1).max()))
    return worst


def test_a_chain_hangs_on_a_passive_anchor_moving_along_a_2m_path(ctx):
    """Acceptance 1 of issue #32: a 10-link hinge chain under a passive cube keyed (Animated on) along a 2 m
    path. Its top stays on the moving anchor at every frame (< 1e-4 m), and it swings as the engine does at
    1/960 s with the anchor's motion prescribed from the same F-curves (within 2 % of the chain's length) when
    the bake steps at 1/480 s (Substeps 8; the step's own accuracy at larger steps is the integrator's, not the
    anchor's: printed for Substeps 2)."""
    scene = ctx.scene
    scene.frame_start, scene.frame_end = 1, 120
    carrier, cubes = _hanging_chain()
    _carrier_path(carrier)
    scene.frame_set(1)
    frames = list(range(1, 121))
    length = 10 * 0.2
    results = {}
    for substeps in (2, 8):
        job = _bake(ctx, substeps=substeps)
        assert [p.joint for p in job.mapping.scene.prescribed] == ["carrier"]
        assert not job.mapping.targets[0].keyed  # the carrier plays its own animation
        top = _pivot_error(scene, carrier, cubes[0], frames, (0.0, 0.0, -0.1))
        assert top < 1e-4
        results[substeps] = _reference_error(job, scene, carrier, cubes, frames)
        print(f"Substeps {substeps}: top off the moving anchor by {top:.2e} m, links off the 1/960 s reference by "
              f"{results[substeps]:.4f} m ({100 * results[substeps] / length:.2f} % of the chain)")
    assert results[8] < 0.02 * length


def _animate(ob, how):
    """Make ``ob`` move over frames 1–60: its own keys, a driver, a keyed parent or a constraint to one."""
    if how == "keys":
        ob.keyframe_insert("location", frame=1)
        ob.location.y += 1.0
        ob.keyframe_insert("location", frame=60)
    elif how == "driver":
        fc = ob.driver_add("location", 1)
        fc.driver.expression = "frame / 60"
    else:
        bpy.ops.object.empty_add(location=(0, 0, 0))
        mover = bpy.context.active_object
        mover.name = "mover"
        mover.keyframe_insert("rotation_euler", frame=1)
        mover.rotation_euler.z = 1.0
        mover.keyframe_insert("rotation_euler", frame=60)
        if how == "parent":
            ob.parent = mover
        else:
            bpy.context.view_layer.objects.active = ob
            assert bpy.ops.object.constraint_add(type="COPY_ROTATION") == {"FINISHED"}
            ob.constraints[-1].target = mover


@pytest.mark.parametrize("how", ["keys", "driver", "parent", "constraint"])
def test_a_pendulum_stays_on_its_animated_passive_anchor_however_it_is_animated(ctx, how):
    """Found by a tester (refused until issue #32): a passive anchor with Animated on, moved by keys, a driver, an
    animated parent or a constraint to an animated object. The hinge stays on it at every frame."""
    scene = ctx.scene
    scene.frame_start, scene.frame_end = 1, 40
    top, bob = artist_pendulum()
    top.rigid_body.kinematic = True
    _animate(top, how)
    scene.frame_set(1)
    job = _bake(ctx)
    assert [p.joint for p in job.mapping.scene.prescribed] == ["top"]
    assert _pivot_error(scene, top, bob, list(range(1, 41)), (0.0, 0.0, 0.0)) < 1e-4


def test_a_passive_anchor_that_blender_does_not_animate_stays_part_of_the_world(ctx):
    """Animated off: Bullet ignores a passive body's keys, and so does the bake (no moving anchor)."""
    scene = ctx.scene
    scene.frame_start, scene.frame_end = 1, 20
    top, bob = artist_pendulum()
    _animate(top, "keys")
    scene.frame_set(1)
    job = _bake(ctx)
    assert not job.mapping.scene.prescribed and len(job.mapping.targets) == 1


def _add_link(ctx, a, b, kind="cable", **options):
    for ob in ctx.view_layer.objects:
        ob.select_set(ob in (a, b))
    ctx.view_layer.objects.active = b
    op = bpy.ops.redmax.add_cable if kind == "cable" else bpy.ops.redmax.add_spring
    assert op(**options) == {"FINISHED"}


@pytest.mark.parametrize("post_kind", ["passive", "empty"])
def test_a_cable_pulls_from_an_animated_passive_body_or_empty(ctx, post_kind):
    """A cable from a keyed post (a passive body with Animated on, or an Empty) drags a free cube along: the
    cube follows the post (it stays within the cable's reach of it at every frame)."""
    scene = ctx.scene
    scene.frame_start, scene.frame_end = 1, 60
    scene.gravity = (0.0, 0.0, 0.0)
    if post_kind == "passive":
        post = artist_cube("post", 0.1, (0, 0, 0), "PASSIVE")
        post.rigid_body.kinematic = True
    else:
        bpy.ops.object.empty_add(location=(0, 0, 0))
        post = ctx.active_object
        post.name = "post"
    cube = artist_cube("cube", 0.2, (0, 0.5, 0), "ACTIVE")
    _add_link(ctx, post, cube, "spring", stiffness=500.0, damping=20.0)
    post.keyframe_insert("location", frame=1)
    post.location = (2.0, 0.0, 0.0)
    post.keyframe_insert("location", frame=60)
    scene.frame_set(1)
    job = _bake(ctx)
    assert [p.joint for p in job.mapping.scene.prescribed] == ["post"]
    scene.frame_set(60)
    gap = np.array(cube.matrix_world)[:3, 3] - np.array(post.matrix_world)[:3, 3]
    assert np.array(cube.matrix_world)[0, 3] > 1.5  # dragged along +x with the post
    assert abs(np.linalg.norm(gap) - 0.5) < 0.1


def test_a_chain_hangs_from_an_active_body_with_animated_on(ctx):
    """An active rigid body with Animated on follows its animation in Blender (refused until issue #32): the
    chain under it is baked hanging from it, and it is not keyed."""
    scene = ctx.scene
    scene.frame_start, scene.frame_end = 1, 40
    top = artist_cube("top", 0.2, (0, 0, 0), "ACTIVE")
    top.rigid_body.kinematic = True
    bob = artist_cube("bob", 0.1, (0, 0.5, -0.5), "ACTIVE")
    artist_constraint("hinge", "HINGE", top, bob, (0, 0, 0), HINGE_ABOUT_X)
    _animate(top, "keys")
    scene.frame_set(1)
    job = _bake(ctx)
    assert not top.redmax.is_baked and bob.redmax.is_baked
    assert _pivot_error(scene, top, bob, list(range(1, 41)), (0.0, 0.0, 0.0)) < 1e-4


def test_a_cable_hangs_from_a_bone_its_action_moves(ctx):
    """A bone of an armature that is not simulated, posed by its action, carries the spring hung from its tail."""
    from blender_rigs import armature

    scene = ctx.scene
    scene.frame_start, scene.frame_end = 1, 60
    arm = armature(ctx, "Rig", [("arm", (0, 0, 0), (1, 0, 0), None)])
    pb = arm.pose.bones["arm"]
    pb.rotation_mode = "XYZ"
    pb.keyframe_insert("rotation_euler", frame=1)
    pb.rotation_euler = (0.0, 0.0, 1.2)
    pb.keyframe_insert("rotation_euler", frame=60)
    weight = artist_cube("weight", 0.1, (1.0, 0.0, -0.5), "ACTIVE")
    for ob in ctx.view_layer.objects:
        ob.select_set(False)
    link = scene.redmax.links.add()
    link.kind, link.name = "SPRING", "hang"
    link.object_a, link.bone_a, link.point_a = arm, "arm", (0.0, 1.0, 0.0)  # the bone's tail (Y along the bone)
    link.object_b, link.stiffness, link.damping = weight, 2000.0, 40.0
    scene.frame_set(1)
    job = _bake(ctx)
    assert [p.joint for p in job.mapping.scene.prescribed] == ["Rig:arm"]
    for f in (1, 30, 60):
        scene.frame_set(f)
        tail = np.array(arm.matrix_world @ arm.pose.bones["arm"].matrix)[:3, :3] @ np.array([0.0, 1.0, 0.0]) \
            + np.array(arm.matrix_world @ arm.pose.bones["arm"].matrix)[:3, 3]
        hang = np.array(weight.matrix_world)[:3, 3] - tail
        assert abs(np.linalg.norm(hang) - 0.5) < 0.05 and hang[2] < -0.3, (f, hang)  # on the moving tail


@pytest.mark.parametrize("flag", ["kinematic", "enabled"])
def test_a_body_blender_lets_go_of_falls_as_bullet_drops_it(ctx, flag):
    """An active cube keyed Animated on (or Dynamic off) and moved by keys until frame 10, then let go: the bake
    holds it as Blender does (on its animation; with Dynamic off where it is), lets go of it at frame 10 (with the
    speed of its last frame) and it flies as in Blender's own playback (to 2 cm over 30 frames)."""
    scene = ctx.scene
    scene.frame_start, scene.frame_end = 1, 40
    cube = artist_cube("cube", 0.2, (0, 0, 2.0), "ACTIVE")
    cube.rigid_body.linear_damping = cube.rigid_body.angular_damping = 0.0
    rb = cube.rigid_body
    held, free = (True, False) if flag == "kinematic" else (False, True)
    setattr(rb, flag, held)
    rb.keyframe_insert(flag, frame=1)
    rb.keyframe_insert(flag, frame=10)
    setattr(rb, flag, free)
    rb.keyframe_insert(flag, frame=11)
    cube.keyframe_insert("location", frame=1)
    cube.location.x = 1.0
    cube.keyframe_insert("location", frame=10)
    scene.rigidbody_world.point_cache.frame_end = 40
    bullet = []
    for f in range(1, 41):
        scene.frame_set(f)
        bullet.append(np.array(cube.matrix_world)[:3, 3])
    scene.frame_set(1)
    job = _bake(ctx)
    assert cube.redmax.is_baked
    baked = []
    for f in range(1, 41):
        scene.frame_set(f)
        baked.append(np.array(cube.matrix_world)[:3, 3])
    bullet, baked = np.array(bullet), np.array(baked)
    assert np.abs(baked[:10] - bullet[:10]).max() < 1e-4  # on its animation while held
    assert bullet[-1, 2] < 1.0  # Blender dropped it
    print(f"{flag}: baked − Bullet after the release up to {np.abs(baked - bullet).max():.2e} m")
    assert np.abs(baked - bullet).max() < 2e-2
