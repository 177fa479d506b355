"""Ground contact in the add-on (real bpy wheel): settings, contact shapes from objects and bones, bakes."""

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

import addon  # noqa: E402
from addon import bake, mapping  # noqa: E402

import engine  # noqa: E402
from blender_rigs import armature as _armature, box as _box, keys as _keys  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def registered(addon_registered):
    yield


def _baked_z(ctx, ob, frames):
    z = []
    for f in frames:
        ctx.scene.frame_set(f)
        z.append(ob.matrix_world.translation.z)
    return np.array(z)


def test_defaults_and_the_ground_panel(ctx):
    s = ctx.scene.redmax
    assert s.collide_with_ground is False
    assert s.ground_height == 0.0 and s.ground_friction == pytest.approx(0.8) and s.ground_restitution == 0.0
    assert s.contact_method == "AUTO"
    assert type(s).bl_rna.properties["collide_with_ground"].name == "Collide with ground plane"
    ob = _box("cube", (0.2, 0.2, 0.2), (0, 0, 1))
    assert ob.redmax.collide is True
    assert bpy.types.REDMAX_PT_ground.bl_parent_id == "REDMAX_PT_main"
    with pytest.raises(TypeError):
        s.ground_restitution = "a lot"
    s.ground_restitution = 2.0  # clamped to [0, 1]
    s.ground_friction = -1.0    # clamped to ≥ 0
    assert s.ground_restitution == 1.0 and s.ground_friction == 0.0


def test_register_unregister_leaves_nothing_behind():
    addon.unregister()
    assert not hasattr(bpy.types, "REDMAX_PT_ground") and not hasattr(bpy.types.Scene, "redmax")
    addon.register()
    assert hasattr(bpy.types, "REDMAX_PT_ground") and hasattr(bpy.types.Scene, "redmax")


def test_shapes_are_the_bounding_box_and_bone_capsules(ctx):
    rot = np.array([[0.0, -1, 0], [1, 0, 0], [0, 0, 1]])  # 90° about z
    ob = _box("slab", (0.4, 0.2, 0.1), (1, 2, 3), rot)
    ob.scale = (2.0, 1.0, 1.0)
    ob.redmax.simulate = True
    rig = _armature(ctx, "rig", [("a", (0, 0, 1), (0.5, 0, 1), None), ("b", (0.5, 0, 1), (1.0, 0, 1), "a")])
    rig.redmax.simulate = True
    rig.data.bones["b"].redmax.contact_radius = 0.03
    rig.data.bones["a"].redmax.collide = False
    ctx.view_layer.update()
    m = mapping.build(ctx)
    model = m.scene.model
    i = model.body_index("slab")
    sh = engine.contact.shapes.contact_shape(model, i)
    np.testing.assert_allclose(sh.half, [0.4, 0.1, 0.05], atol=1e-6)  # the object's scale is in the box
    R, p = engine.link_poses(model, m.scene.q0)
    np.testing.assert_allclose(R[i] @ sh.center + p[i], [1, 2, 3], atol=1e-6)
    np.testing.assert_allclose(R[i] @ sh.rotation, rot, atol=1e-6)
    b = model.body_index("rig:b")
    sb = engine.contact.shapes.contact_shape(model, b)
    assert sb.kind == engine.contact.shapes.CAPSULE and sb.radius == pytest.approx(0.03)
    assert 2 * sb.half[0] == pytest.approx(0.5)
    np.testing.assert_allclose(R[b] @ sb.axis, [1, 0, 0], atol=1e-6)
    np.testing.assert_allclose(R[b] @ sb.center + p[b], [0.75, 0, 1], atol=1e-6)
    a = model.body_index("rig:a")
    assert model.body_shapes[a]["collide"] is False and engine.contact.shapes.contact_shape(model, a) is None
    assert model.body_shapes[a]["radius"] == pytest.approx(0.05)  # 10 % of the bone length


def test_dropped_cube_rests_on_the_ground_and_falls_through_without_it(ctx):
    ob = _box("cube", (0.2, 0.2, 0.2), (0, 0, 1))
    ob.redmax.simulate = True
    scene = ctx.scene
    scene.frame_start, scene.frame_end = 1, 90
    scene.redmax.collide_with_ground = True
    job = bake.BakeJob(ctx)
    job.run()
    job.finish()
    assert job.sim.scene.ground is not None
    z = _baked_z(ctx, ob, range(1, 91))
    assert z[-1] == pytest.approx(0.1, abs=2e-3)
    assert z.min() > 0.1 - 1e-3
    assert abs(z[-1] - z[-10]) < 1e-3  # at rest
    scene.redmax.collide_with_ground = False
    job = bake.BakeJob(ctx)
    job.run()
    job.finish()
    assert job.sim.scene.ground is None
    assert _baked_z(ctx, ob, [90])[0] < -1.0  # free fall: 1 − g t²/2 at t = 1.48 s


@pytest.mark.parametrize("method", ["MINV", "CHOLESKY", "IMPULSE"])
def test_other_contact_methods_and_a_raised_ground(ctx, method):
    ob = _box("cube", (0.2, 0.2, 0.2), (0, 0, 1))
    ob.redmax.simulate = True
    scene = ctx.scene
    scene.frame_start, scene.frame_end = 1, 60
    s = scene.redmax
    s.collide_with_ground, s.ground_height, s.contact_method = True, 0.5, method
    job = bake.BakeJob(ctx)
    assert job.sim.contact.method == method.lower()
    job.run()
    job.finish()
    assert _baked_z(ctx, ob, [60])[0] == pytest.approx(0.6, abs=2e-3)


def test_hanging_bone_chain_touches_the_ground_and_stops(ctx):
    bones = [("b0", (0, 0, 0.5), (0.3, 0, 0.5), None), ("b1", (0.3, 0, 0.5), (0.6, 0, 0.5), "b0"),
             ("b2", (0.6, 0, 0.5), (0.9, 0, 0.5), "b1")]
    rig = _armature(ctx, "chain", bones)
    rig.redmax.simulate = True
    for b in rig.data.bones:
        b.redmax.damping = 0.2  # joint damping: the chain settles
    scene = ctx.scene
    scene.frame_start, scene.frame_end = 1, 180
    scene.redmax.collide_with_ground = True
    scene.redmax.substeps = 4
    job = bake.BakeJob(ctx)
    job.run()
    job.finish()
    tails = []
    for f in range(1, 181):
        scene.frame_set(f)
        tails.append([np.array(rig.matrix_world @ rig.pose.bones[n].tail) for n, *_ in bones])
    tails = np.array(tails)  # (frames, bones, 3)
    radius = 0.03  # 10 % of 0.3 m
    assert tails[:, :, 2].min() > radius - 2e-3  # never through the ground
    assert tails[-1, :, 2].min() < radius + 5e-3  # the chain (0.9 m long, hung at 0.5 m) lies on it
    assert np.abs(tails[-1] - tails[-10]).max() < 5e-3  # and has stopped


def test_failed_contact_bake_leaves_keys_untouched(ctx):
    ob = _box("cube", (0.2, 0.2, 0.2), (0, 0, 1))
    ob.redmax.simulate = True
    scene = ctx.scene
    scene.frame_start, scene.frame_end = 1, 20
    assert bpy.ops.redmax.bake() == {"FINISHED"}  # an earlier bake the user keeps
    before, action = _keys(ob), ob.animation_data.action
    scene.redmax.collide_with_ground = True
    ob.redmax.collide = False  # ground on, but nothing can touch it
    with pytest.raises(RuntimeError, match="ground plane"):
        bpy.ops.redmax.bake()
    assert ob.animation_data.action == action and _keys(ob) == before
    assert "ground plane" in scene.redmax.last_message and "Collide" in scene.redmax.last_message
    scene.redmax.live_preview = True  # the live preview stops with the same message
    scene.frame_set(2)
    assert not scene.redmax.live_preview and "ground plane" in scene.redmax.last_message


def test_exported_scene_file_keeps_the_ground_and_the_shapes(ctx, tmp_path):
    ob = _box("cube", (0.2, 0.2, 0.2), (0, 0, 1))
    ob.redmax.simulate = True
    s = ctx.scene.redmax
    s.collide_with_ground, s.ground_height, s.ground_friction = True, 0.25, 0.5
    path = tmp_path / "scene.json"
    assert bpy.ops.redmax.export_scene(filepath=str(path)) == {"FINISHED"}
    loaded = engine.load_scene(path)
    assert loaded.ground.height == pytest.approx(0.25) and loaded.ground.friction == pytest.approx(0.5)
    shape = engine.contact.shapes.contact_shape(loaded.model, 0)
    np.testing.assert_allclose(shape.half, [0.1, 0.1, 0.1], atol=1e-6)
