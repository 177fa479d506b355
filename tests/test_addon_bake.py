"""The add-on in the real bpy wheel: mapping, bake correctness, failure safety, save/reload, demos."""
import math
from pathlib import Path

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

ROOT = Path(__file__).resolve().parents[1]

import addon  # noqa: E402
from addon import bake, links, mapping  # noqa: E402

import engine  # noqa: E402
from blender_rigs import X_TO_Z, armature as _armature, box as _box, constraint as _constraint  # noqa: E402
from blender_rigs import empty as _empty, keys as _keys  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def registered(addon_registered):
    yield


def _pendulum(theta0=0.05, L=1.0, side=0.1):
    anchor = _empty("anchor")
    bob = _box("bob", (side, side, side), (0, L * math.sin(theta0), -L * math.cos(theta0)))
    pivot = _empty("pivot", (0, 0, 0), X_TO_Z)
    _constraint(pivot, "HINGE", anchor, bob)
    return bob


def _angle(bob):
    p = np.array(bob.matrix_world.translation)
    return math.atan2(p[1], -p[2])


def test_hinge_pendulum_maps_to_a_revolute_joint_at_the_pivot(ctx):
    _pendulum()
    m = mapping.build(ctx)
    model = m.scene.model
    assert model.n_bodies == 1 and model.joint_type[0] == engine.joints.REVOLUTE
    R, p = engine.link_poses(model, m.scene.q0)
    np.testing.assert_allclose(p[0], 0.0, atol=1e-6)  # float32 in Blender; the joint sits at the constraint's pivot
    np.testing.assert_allclose(R[0] @ model.joint_axis[0], [1, 0, 0], atol=1e-6)  # the host's local z
    assert model.body_mass[0] == pytest.approx(1000 * 0.1**3, rel=1e-5)  # volume × the default density


def test_bake_matches_the_simulation_and_the_pendulum_period(ctx):
    bob = _pendulum()
    scene = ctx.scene
    scene.frame_start, scene.frame_end = 1, 301
    scene.redmax.substeps = 4
    job = bake.BakeJob(ctx)
    job.run()
    job.finish()
    assert bob.redmax.is_baked and bob.animation_data.action is not None
    for f in (1, 2, 50, 151, 301):
        scene.frame_set(f)
        W = job.mapping.world_matrices(job.qs[f - 1])[0]
        np.testing.assert_allclose(np.array(bob.matrix_world), W, atol=1e-5)
    angles = []
    for f in range(1, 302):
        scene.frame_set(f)
        angles.append(_angle(bob))
    angles = np.array(angles)
    t = (np.arange(len(angles))) / 60.0
    up = [i for i in range(1, len(angles)) if angles[i - 1] < 0 <= angles[i]]  # upward zero crossings
    tc = [t[i - 1] + (t[i] - t[i - 1]) * (-angles[i - 1]) / (angles[i] - angles[i - 1]) for i in up]
    period = np.mean(np.diff(tc))
    m, s, L, g = 1.0, 0.1, 1.0, 9.81
    I_pivot = m * s * s / 6 + m * L * L  # compound pendulum: cube about an edge-parallel axis at distance L
    expected = 2 * math.pi * math.sqrt(I_pivot / (m * g * L))
    assert period == pytest.approx(expected, rel=0.01)



def test_baked_bridge_world_transforms_equal_the_simulated_states(ctx):
    assert bpy.ops.redmax.add_demo_scene(scene="BRIDGE", size=7) == {"FINISHED"}
    scene = ctx.scene
    scene.frame_start, scene.frame_end = 1, 40
    job = bake.BakeJob(ctx)
    job.run()
    job.finish()
    assert len(job.mapping.targets) > 20
    for f in (1, 13, 40):
        scene.frame_set(f)
        W = job.mapping.world_matrices(job.qs[f - 1])
        got = np.array([np.array(t.object.matrix_world) for t in job.mapping.targets])
        np.testing.assert_allclose(got, W, atol=1e-5)


def test_live_preview_follows_the_timeline_and_restores_the_rest_pose(ctx):
    bob = _pendulum(theta0=0.3)
    scene = ctx.scene
    scene.frame_start, scene.frame_end = 1, 100
    scene.redmax.substeps = 4
    rest = np.array(bob.matrix_world)
    job = bake.BakeJob(ctx)  # the reference: what a bake would produce (not finished, nothing written)
    job.run()
    job.abort()
    scene.redmax.live_preview = True
    for f in range(1, 31):  # playing forward
        scene.frame_set(f)
    np.testing.assert_allclose(np.array(bob.matrix_world), job.mapping.world_matrices(job.qs[29])[0], atol=1e-5)
    scene.frame_set(60)  # a jump forward is simulated through
    np.testing.assert_allclose(np.array(bob.matrix_world), job.mapping.world_matrices(job.qs[59])[0], atol=1e-5)
    scene.frame_set(10)  # a jump back resets from the start frame
    np.testing.assert_allclose(np.array(bob.matrix_world), job.mapping.world_matrices(job.qs[9])[0], atol=1e-5)
    assert bob.animation_data is None  # no keyframes
    scene.redmax.live_preview = False
    ctx.view_layer.update()
    np.testing.assert_allclose(np.array(bob.matrix_world), rest, atol=1e-6)


def test_live_preview_stops_with_a_message_on_a_broken_link(ctx):
    bob = _pendulum()
    other = _box("other", (0.1, 0.1, 0.1), (1, 0, 0))
    ctx.view_layer.objects.active = other
    for ob in ctx.view_layer.objects:
        ob.select_set(ob in (bob, other))
    assert bpy.ops.redmax.add_cable() == {"FINISHED"}
    name = ctx.scene.redmax.links[0].name
    bpy.data.objects.remove(other)
    ctx.scene.redmax.live_preview = True
    ctx.scene.frame_set(2)
    assert not ctx.scene.redmax.live_preview
    assert ctx.scene.redmax.last_message.startswith("Live preview stopped") and name in ctx.scene.redmax.last_message

def test_clear_bake_gives_the_previous_animation_back(ctx):
    bob = _pendulum()
    bob.keyframe_insert("location", frame=1)
    user_action = bob.animation_data.action
    scene = ctx.scene
    scene.frame_start, scene.frame_end = 1, 20
    assert bpy.ops.redmax.bake() == {"FINISHED"}
    assert bob.animation_data.action is not user_action
    assert bpy.ops.redmax.clear_bake() == {"FINISHED"}
    assert bob.animation_data.action == user_action
    assert not any(a.name.startswith(bake.BAKE_PREFIX) for a in bpy.data.actions)


def test_failed_bake_leaves_keyframes_bit_for_bit_and_names_the_cable(ctx):
    bob = _pendulum()
    other = _box("weight", (0.1, 0.1, 0.1), (0.5, 0, -1))
    scene = ctx.scene
    scene.frame_start, scene.frame_end = 1, 30
    assert bpy.ops.redmax.bake() == {"FINISHED"}  # an earlier bake the user keeps
    before = _keys(bob)
    action = bob.animation_data.action
    links.add_link(scene, "CABLE", ((bob, ""), (other, "")), name="stay cable")
    bpy.data.objects.remove(other)
    with pytest.raises(RuntimeError, match="cable 'stay cable': object B is missing"):
        bpy.ops.redmax.bake()
    assert bob.animation_data.action == action
    assert _keys(bob) == before
    assert "stay cable" in scene.redmax.last_message



def test_cancelled_bake_leaves_keyframes_bit_for_bit(ctx):
    bob = _pendulum()
    scene = ctx.scene
    scene.frame_start, scene.frame_end = 1, 30
    bob.keyframe_insert("location", frame=1)
    bob.keyframe_insert("rotation_euler", frame=7)
    before, action, frame = _keys(bob), bob.animation_data.action, scene.frame_current
    job = bake.BakeJob(ctx)
    steps = job.steps()
    for _ in range(10):  # what the modal operator does between timer events, then ESC
        next(steps)
    job.abort()
    assert bob.animation_data.action == action and _keys(bob) == before
    assert not bob.redmax.is_baked and scene.frame_current == frame
    assert [a.name for a in bpy.data.actions] == [action.name]  # nothing left behind


def test_armature_ik_locks_give_joint_types_and_axes(ctx):
    ob = _armature(ctx, "rig", [("hip", (0, 0, 0), (0, 0, -0.5), None), ("knee", (0, 0, -0.5), (0, 0, -1), "hip"),
                                ("ankle", (0, 0, -1), (0, 0, -1.5), "knee")])
    pb = ob.pose.bones
    pb["hip"].lock_ik_y = True  # one lock → universal about x and z
    pb["knee"].lock_ik_y = pb["knee"].lock_ik_z = True  # two locks → hinge about x
    # ankle: no locks → ball
    ob.redmax.simulate = True
    m = mapping.build(ctx)
    model = m.scene.model
    types = {n: int(model.joint_type[model.body_index(f"rig:{n}")]) for n in ("hip", "knee", "ankle")}
    assert types == {"hip": engine.joints.UNIVERSAL, "knee": engine.joints.REVOLUTE, "ankle": engine.joints.SPHERICAL}
    k = model.body_index("rig:knee")
    R, p = engine.link_poses(model, m.scene.q0)
    bone_x = np.array(ob.matrix_world @ ob.pose.bones["knee"].matrix)[:3, 0]
    np.testing.assert_allclose(R[k] @ model.joint_axis[k], bone_x, atol=1e-6)
    np.testing.assert_allclose(p[k], [0, 0, -0.5], atol=1e-6)  # the joint is at the bone head
    # and the bones bake back onto themselves
    ctx.scene.frame_start, ctx.scene.frame_end = 1, 10
    job = bake.BakeJob(ctx)
    job.run()
    job.finish()
    ctx.scene.frame_set(10)
    W = job.mapping.world_matrices(job.qs[-1])
    for name in ("hip", "knee", "ankle"):
        i = model.body_index(f"rig:{name}")
        got = np.array(ob.matrix_world @ ob.pose.bones[name].matrix)
        np.testing.assert_allclose(got, W[i], atol=1e-5)


def test_slider_bone_is_prismatic_and_bakes_its_location(ctx):
    ob = _armature(ctx, "crane", [("boom", (0, 0, 0), (1, 0, 0), None), ("hook", (1, 0, 0), (1, 0, -0.5), "boom", False)])
    ob.pose.bones["boom"].bone.redmax.joint = "FIXED"
    hook_settings = ob.pose.bones["hook"].bone.redmax
    hook_settings.joint, hook_settings.axis = "PRISMATIC", "Y"  # slides along itself, i.e. down
    hook_settings.stiffness, hook_settings.damping = 50.0, 1.0
    ob.redmax.simulate = True
    m = mapping.build(ctx)
    model = m.scene.model
    k = model.body_index("crane:hook")
    assert model.joint_type[k] == engine.joints.PRISMATIC
    R, _ = engine.link_poses(model, m.scene.q0)
    np.testing.assert_allclose(R[k] @ model.joint_axis[k], [0, 0, -1], atol=1e-6)
    ctx.scene.frame_start, ctx.scene.frame_end = 1, 30
    job = bake.BakeJob(ctx)
    job.run()
    job.finish()
    paths = {fc.data_path for fc in ob.animation_data.action.layers[0].strips[0].channelbags[0].fcurves}
    assert 'pose.bones["hook"].location' in paths and 'pose.bones["boom"].location' not in paths
    for f in (10, 30):
        ctx.scene.frame_set(f)
        W = job.mapping.world_matrices(job.qs[f - 1])[k]
        np.testing.assert_allclose(np.array(ob.matrix_world @ ob.pose.bones["hook"].matrix), W, atol=1e-5)
    assert W[2, 3] < -0.05  # gravity pulled the hook down its slider

def test_a_loop_of_constraints_becomes_a_loop_closure(ctx):
    anchor = _empty("anchor")
    a = _box("a", (0.05, 0.05, 1.0), (0, 0, -0.5))
    b = _box("b", (0.05, 1.0, 0.05), (0, 0.5, -1.0))
    _constraint(_empty("j1", (0, 0, 0), X_TO_Z), "HINGE", anchor, a)
    _constraint(_empty("j2", (0, 0, -1), X_TO_Z), "HINGE", a, b)
    _constraint(_empty("j3", (0, 1, -1), X_TO_Z), "POINT", b, anchor)  # closes the loop to the world
    m = mapping.build(ctx)
    assert m.scene.model.n_bodies == 2
    closures = [lc.name for lc in m.scene.loop_closures]  # any one edge of the loop may close it
    assert len(closures) == 1 and closures[0] in ("j1", "j2", "j3")


def test_links_and_settings_survive_save_and_reload(ctx, tmp_path):
    bob = _pendulum()
    other = _box("weight", (0.1, 0.1, 0.1), (0.5, 0, -1))
    scene = ctx.scene
    scene.redmax.solver, scene.redmax.substeps = "DIRECT", 3
    item = links.add_link(scene, "SPRING", ((bob, ""), (other, "")), (0.05, 0, 0), (0, 0, 0.05), name="s1",
                          stiffness=1234.0)
    item.use_current_length, item.rest_length = False, 0.3
    bob.redmax.mass = 2.5
    path = str(tmp_path / "saved.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    scene = bpy.context.scene
    s = scene.redmax
    assert (s.solver, s.substeps, len(s.links)) == ("DIRECT", 3, 1)
    item = s.links[0]
    assert (item.name, item.kind, item.stiffness, item.rest_length) == ("s1", "SPRING", 1234.0, pytest.approx(0.3))
    assert item.object_a.name == "bob" and tuple(item.point_a) == pytest.approx((0.05, 0, 0))
    assert item.curve is not None and len(item.curve.modifiers) == 2
    assert bpy.data.objects["bob"].redmax.mass == 2.5


@pytest.mark.parametrize("kind", ["BRIDGE", "UMBRELLA", "TREE", "CHAIN"])
def test_demo_scenes_build_and_bake_headless(ctx, kind):
    sizes = {"BRIDGE": 7, "UMBRELLA": 2, "TREE": 3, "CHAIN": 4}
    assert bpy.ops.redmax.add_demo_scene(scene=kind, size=sizes[kind]) == {"FINISHED"}
    ref = addon.demo.engine_scene(kind, sizes[kind])
    m = mapping.build(ctx)
    assert m.scene.model.n_bodies == ref.model.n_bodies
    assert m.scene.model.nv == ref.model.nv
    rest_springs = sum(1 for link in ctx.scene.redmax.links if link.name.endswith(" spring"))  # demo.py: slides pushed away
    assert len(m.scene.pairs) == len(ref.pairs) + rest_springs and len(m.scene.loop_closures) == len(ref.loop_closures)
    ctx.scene.frame_start, ctx.scene.frame_end = 1, 12
    assert bpy.ops.redmax.bake() == {"FINISHED"}
    assert ctx.scene.redmax.last_frames == 12


@pytest.mark.parametrize("kind", ["ROPE", "ROPE_PINNED"])
def test_rope_demos_bake_at_30_fps_without_substeps(ctx, kind):
    """Issue #22: the rope demos bake at the frame rate with one step per frame, and move."""
    ctx.scene.render.fps = 30
    assert bpy.ops.redmax.add_demo_scene(scene=kind, size=48) == {"FINISHED"}
    ref = addon.demo.engine_scene(kind, 48)
    m = mapping.build(ctx)
    assert (m.scene.model.n_bodies, len(m.scene.loop_closures)) == (48, len(ref.loop_closures))
    ctx.scene.redmax.substeps = 1
    ctx.scene.frame_start, ctx.scene.frame_end = 1, 60
    assert bpy.ops.redmax.bake() == {"FINISHED"}, ctx.scene.redmax.last_message
    assert ctx.scene.redmax.last_frames == 60
    middle = bpy.data.objects["link24"]  # the pinned rope's ends stay put
    path = []
    for f in (1, 30, 60):
        ctx.scene.frame_set(f)
        path.append(np.array(middle.matrix_world.translation))
    assert np.isfinite(path).all()
    assert np.linalg.norm(path[2] - path[0]) > 0.1  # it visibly moves


@pytest.mark.parametrize("name", ["bridge", "umbrella", "tree", "armature"])
def test_shipped_blend_scenes_open_and_bake(name):
    path = ROOT / "blend_scenes" / f"{name}.blend"
    bpy.ops.wm.open_mainfile(filepath=str(path))
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 10
    assert bpy.ops.redmax.bake() == {"FINISHED"}, scene.redmax.last_message
    assert any(ob.redmax.is_baked for ob in scene.objects)


def test_quaternions_match_mathutils_and_stay_continuous():
    from mathutils import Matrix

    rng = np.random.default_rng(3)
    Rs = []
    for _ in range(50):
        q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        Rs.append(q * np.sign(np.linalg.det(q)))
    q = bake.quaternions(np.array(Rs))
    for R, qi in zip(Rs, q):
        ref = np.array(Matrix(R.tolist()).to_quaternion())
        assert min(np.abs(qi - ref).max(), np.abs(qi + ref).max()) < 1e-6  # mathutils is float32
    signs = rng.choice([-1.0, 1.0], size=(50, 1))
    smooth = bake.continuous(q[:1].repeat(50, axis=0) * signs)
    assert np.all(np.sum(smooth[1:] * smooth[:-1], axis=-1) > 0)


def test_slider_on_a_connected_bone_is_refused_by_name(ctx):
    ob = _armature(ctx, "arm", [("a", (0, 0, 0), (1, 0, 0), None), ("b", (1, 0, 0), (2, 0, 0), "a")])
    ob.redmax.simulate = True
    ob.pose.bones["b"].bone.redmax.joint = "PRISMATIC"
    with pytest.raises(mapping.MappingError, match=r"bone 'b'.*not connected"):
        mapping.build(ctx)


def _animated_leg(ctx):
    ob = _armature(ctx, "leg", [("thigh", (0, 0, 0), (0, 0, -0.5), None), ("shin", (0, 0, -0.5), (0, 0, -1), "thigh")])
    for pb in ob.pose.bones:
        pb.lock_ik_y = pb.lock_ik_z = True  # hinges about the bones' x
        pb.rotation_mode = "QUATERNION"
    for f in range(1, 62, 2):  # a kick: 1 Hz swing of the thigh, the shin bending behind it
        t = (f - 1) / 60
        for name, amp, phase in (("thigh", 0.5, 0.0), ("shin", 0.8, 1.0)):
            th = amp * math.sin(2 * math.pi * t + phase)
            pb = ob.pose.bones[name]
            pb.rotation_quaternion = (math.cos(th / 2), math.sin(th / 2), 0, 0)
            pb.keyframe_insert("rotation_quaternion", frame=f)
    ob.redmax.simulate = True
    ctx.scene.frame_start, ctx.scene.frame_end = 1, 61
    return ob


def _tracking_error(ctx, ob, animated):
    """Largest bone rotation angle (rad) between the baked motion and the animation, frames 11–61."""
    from addon import follow

    baked = follow.sample_poses(ctx.scene, [ob], range(1, 62))[ob.name]
    R = np.einsum("fbji,fbjk->fbik", baked[10:, :, :3, :3], animated[10:, :, :3, :3])
    return float(np.arccos(np.clip((np.trace(R, axis1=-2, axis2=-1) - 1) / 2, -1, 1)).max())


def test_follow_animation_tracks_the_action_and_clear_gives_it_back(ctx):
    from addon import follow

    ob = _animated_leg(ctx)
    action = ob.animation_data.action
    animated = follow.sample_poses(ctx.scene, [ob], range(1, 62))[ob.name]
    ctx.scene.redmax.substeps = 2
    assert bpy.ops.redmax.bake() == {"FINISHED"}  # passive: the leg just swings under gravity
    passive = _tracking_error(ctx, ob, animated)
    bpy.ops.redmax.clear_bake()
    ob.redmax.follow_animation, ob.redmax.follow_scale = True, 40.0  # kp 2e4, kd 40: lag ≈ kd/kp = 2 ms
    ob.redmax.follow_gains = "MANUAL"  # (the per-bone gains; test_addon_follow.py: the automatic ones)
    for bone in ob.data.bones:
        bone.redmax.follow_kd = 1.0
    assert bpy.ops.redmax.bake() == {"FINISHED"}, ctx.scene.redmax.last_message
    assert ob.animation_data.action is not action
    tracked = _tracking_error(ctx, ob, animated)
    print(f"tracking error: followed {tracked:.4f} rad, passive {passive:.3f} rad")
    assert tracked < 0.03 and passive > 0.3, (tracked, passive)
    bpy.ops.redmax.clear_bake()
    assert ob.animation_data.action == action


def test_follow_animation_without_an_action_names_the_armature(ctx):
    ob = _armature(ctx, "arm", [("a", (0, 0, 0), (0, 0, -1), None)])
    ob.redmax.simulate = ob.redmax.follow_animation = True
    with pytest.raises(RuntimeError, match="armature 'arm': Follow Animation needs an action"):
        bpy.ops.redmax.bake()


def test_export_scene_opens_in_the_engine_and_simulates_the_same(ctx, tmp_path):
    assert bpy.ops.redmax.add_demo_scene(scene="BRIDGE", size=7) == {"FINISHED"}
    path = tmp_path / "bridge.json"
    assert bpy.ops.redmax.export_scene(filepath=str(path)) == {"FINISHED"}
    loaded = engine.load_scene(path)
    m = mapping.build(ctx)
    assert loaded.model.n_bodies == m.scene.model.n_bodies and len(loaded.pairs) == len(m.scene.pairs)
    a, b = engine.Simulator(loaded, "pcg", dt=1 / 60), engine.Simulator(m.scene, "pcg", dt=1 / 60)
    a.step(30)
    b.step(30)
    np.testing.assert_allclose(a.state.q, b.state.q, atol=1e-9)
