"""A bake's stages in the real bpy wheel: the frames it reads, its progress and timing line, a failure or a
cancel at any stage (the scene exactly as before, also for a re-bake and for objects linked from a
library or deleted meanwhile), the live preview driving the bake's own simulation run, and the
bake-scale bench's rigs built like the plain operator calls build them."""
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from addon import bake, kernels, keyframes, mapping, preview, snapshot  # noqa: E402
from addon.run import SimulationRun  # noqa: E402
from blender_rigs import (armature, artist_chain, artist_cube, artist_pendulum, differences, in_world,  # noqa: E402
                          scene_snapshot)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import bake_scale  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def registered(addon_registered):
    yield


class FrameLog:
    """Every frame change while it is on (a frame_change_pre handler)."""

    def __enter__(self):
        self.frames = []
        bpy.app.handlers.frame_change_pre.append(self._log)
        return self

    def _log(self, scene, *_):
        self.frames.append(scene.frame_current)

    def __exit__(self, *exc):
        bpy.app.handlers.frame_change_pre.remove(self._log)


def _rig(ctx):
    """A pendulum, a hinge chain joined to it by a cable, and a simulated armature (the round-trip test's rig)."""
    scene = ctx.scene
    scene.frame_start, scene.frame_end = 1, 30
    top, bob = artist_pendulum(theta0=0.4)
    anchor, cubes = artist_chain(3)
    cubes[1].rotation_mode = "XZY"
    cubes[1].keyframe_insert("scale", frame=1)  # an action of the user's
    for ob in ctx.view_layer.objects:
        ob.select_set(ob in (bob, cubes[-1]))
    ctx.view_layer.objects.active = cubes[-1]
    assert bpy.ops.redmax.add_cable(stiffness=2e4, damping=20.0) == {"FINISHED"}
    rig = armature(ctx, "rig", [("a", (2, 0, 0), (2, 0.4, 0), None), ("b", (2, 0.4, 0), (2, 0.8, 0), "a")])
    rig.redmax.simulate = True
    rig.pose.bones["b"].rotation_mode, rig.pose.bones["b"].rotation_euler = "YXZ", (0.1, 0.2, 0.3)
    scene.frame_set(1)
    return cubes


def _state(scene):
    out = scene_snapshot(scene, list(scene.objects))
    out["redmax snapshot"] = (scene.redmax.snapshot, [(i.object.name if i.object else None, i.data)
                                                      for i in scene.redmax.snapshot_objects])
    out["bones"] = {ob.name: [(b.name, b.parent.name if b.parent else None, [tuple(r) for r in b.matrix_local])
                              for b in ob.data.bones] for ob in scene.objects if ob.type == "ARMATURE"}
    return out


# ----------------------------------------------------------------- frames read
def test_a_bake_with_nothing_to_follow_changes_the_frame_only_to_read_the_start_and_to_return(ctx):
    scene = ctx.scene
    scene.frame_start, scene.frame_end = 5, 40
    scene.redmax.preroll = 2
    artist_chain(3)
    scene.frame_set(17)  # the user's frame
    with FrameLog() as log:
        assert bpy.ops.redmax.bake() == {"FINISHED"}, scene.redmax.last_message
    assert log.frames == [3, 17]  # the first simulated frame (start − preroll), then back


def test_a_bake_that_follows_an_animation_reads_each_frame_once(ctx):
    ob = armature(ctx, "leg", [("thigh", (0, 0, 0), (0, 0, -0.5), None), ("shin", (0, 0, -0.5), (0, 0, -1), "thigh")])
    for f in (1, 21):
        for pb in ob.pose.bones:
            pb.lock_ik_y = pb.lock_ik_z = True
            pb.rotation_quaternion = (math.cos(f / 40), math.sin(f / 40), 0, 0)
            pb.keyframe_insert("rotation_quaternion", frame=f)
    ob.redmax.simulate = ob.redmax.follow_animation = True
    scene = ctx.scene
    scene.frame_start, scene.frame_end = 1, 20
    scene.frame_set(9)
    with FrameLog() as log:
        assert bpy.ops.redmax.bake() == {"FINISHED"}, scene.redmax.last_message
    assert sorted(log.frames[:-1]) == list(range(1, 21)) and log.frames[-1] == 9  # each frame once, then back
    assert log.frames[-2] == 1  # (the start last: the mapping reads the scene right there)


# ------------------------------------------------------- progress and timing
def test_the_progress_covers_reading_simulating_and_writing_and_the_timing_line_names_them(ctx):
    artist_chain(60)  # more objects than one progress report of the key writing covers
    ctx.scene.frame_start, ctx.scene.frame_end = 1, 12
    job = bake.BakeJob(ctx, read=False)
    seen = list(job.stages())
    stages = list(dict.fromkeys(stage for stage, _, _ in seen))
    assert stages == ["reading the scene", "simulating", "writing keys"]
    overall = [done for *_, done in seen]
    assert overall == sorted(overall) and overall[-1] == pytest.approx(1.0) and overall[0] <= 0.1
    assert sum(stage == "writing keys" for stage, *_ in seen) >= 2
    line = ctx.scene.redmax.last_timings
    assert [w for w in ("read", "simulate", "write keys", "detach") if w in line] == ["read", "simulate", "write keys",
                                                                                      "detach"]
    assert all(job.timings[s] > 0 for s in ("read", "simulate", "write keys", "detach"))


# ------------------------------------------------------------ failing safely
FAILURES = {  # stage: (module, function name, the call that raises)
    "unbake": (keyframes, "assign", 3),  # (a re-bake first shows the scene as before the earlier bake)
    "read": (mapping, "build_scene", 1),
    "simulate": (SimulationRun, "substep", 5),
    "write keys": (keyframes.ActionWriter, "write", 3),
    "assign": (keyframes, "assign_slot", 3),
    "snapshot": (snapshot, "store", 1),
    "detach": (snapshot, "detach", 1),
}


def _inject(monkeypatch, stage, after=False):
    owner, name, at = FAILURES[stage]
    original = getattr(owner, name)
    calls = []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == at and not after:
            raise RuntimeError(f"injected failure in {stage}")
        out = original(*args, **kwargs)
        if len(calls) == at and after:
            raise RuntimeError(f"injected failure after {stage}")
        return out

    monkeypatch.setattr(owner, name, failing)


@pytest.mark.parametrize("stage, rebake", [(stage, rebake) for rebake in (False, True) for stage in FAILURES
                                           if rebake or stage != "unbake"])  # (a first bake unbakes nothing)
def test_a_failure_at_any_stage_leaves_the_scene_exactly_as_before(ctx, monkeypatch, stage, rebake):
    scene = ctx.scene
    _rig(ctx)
    if rebake:
        assert bpy.ops.redmax.bake() == {"FINISHED"}, scene.redmax.last_message
        scene.frame_set(1)
    before = _state(scene)
    _inject(monkeypatch, stage, after=stage == "detach")
    with pytest.raises(RuntimeError, match="injected failure"):
        bpy.ops.redmax.bake()
    monkeypatch.undo()
    scene.frame_set(1)
    assert not differences(before, _state(scene))
    if not rebake:
        assert bpy.ops.redmax.bake() == {"FINISHED"}  # and the scene still bakes and clears
        assert bpy.ops.redmax.clear_bake() == {"FINISHED"}
        before.pop("redmax snapshot")
        after = _state(scene)
        after.pop("redmax snapshot")
        assert not differences(before, after)


@pytest.mark.parametrize("stop_in", ["simulating", "writing keys"])
def test_cancelling_in_any_stage_leaves_the_scene_exactly_as_before(ctx, stop_in):
    scene = ctx.scene
    _rig(ctx)
    artist_chain(55)  # (the key writing reports progress more than once)
    scene.redmax.collisions = False  # (built where the rig's chain is: the two chains' cubes overlap)
    scene.frame_set(1)
    before = _state(scene)
    job = bake.BakeJob(ctx, read=False)
    steps = job.stages()
    for stage, _, _ in steps:
        if stage == stop_in:
            break
    steps.close()  # ESC: what the operator does
    job.abort()
    scene.frame_set(1)
    assert not differences(before, _state(scene))
    assert not any(a.name.startswith(bake.BAKE_PREFIX) for a in bpy.data.actions)


def test_objects_linked_from_a_library_are_refused_by_name_before_anything_is_written(ctx, tmp_path):
    artist_chain(3)
    library = str(tmp_path / "chain.blend")
    bpy.ops.wm.save_as_mainfile(filepath=library)
    bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
    scene = bpy.context.scene
    with bpy.data.libraries.load(library, link=True) as (source, linked):
        linked.objects = list(source.objects)
    bpy.ops.rigidbody.world_add()
    w = scene.rigidbody_world
    w.collection, w.constraints = bpy.data.collections.new("RigidBodyWorld"), bpy.data.collections.new("Constraints")
    for ob in linked.objects:
        scene.collection.objects.link(ob)
        (w.constraints if ob.rigid_body_constraint else w.collection).objects.link(ob)
    scene.frame_start, scene.frame_end = 1, 20
    bpy.context.view_layer.update()
    assert mapping.build(bpy.context).scene.model.n_bodies == 3  # it would simulate them
    before = _state(scene)
    with pytest.raises(RuntimeError, match=r"object 'link\d' is linked from the library '.*chain.blend'"):
        bpy.ops.redmax.bake()
    assert scene.redmax.last_message.startswith("failed")
    assert not differences(before, _state(scene))
    assert not any(a.name.startswith(bake.BAKE_PREFIX) for a in bpy.data.actions)


def test_an_object_deleted_while_the_bake_runs_is_named_and_the_scene_is_as_the_delete_left_it(ctx):
    def purge_the_second_link(bake_meanwhile):
        bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
        scene = bpy.context.scene
        scene.frame_start, scene.frame_end = 1, 20
        anchor, cubes = artist_chain(3)
        scene.frame_set(1)
        job = None
        if bake_meanwhile:
            job = bake.BakeJob(bpy.context)
            steps = job.steps()
            next(steps)
        bpy.data.objects.remove(cubes[1])  # purged: the job's reference dies
        if job is not None:
            for _ in steps:
                pass
            with pytest.raises(bake.BakeError, match="object 'link2' was deleted while the bake ran"):
                job.finish()
        scene.frame_set(1)
        return _state(scene)

    assert not differences(purge_the_second_link(False), purge_the_second_link(True))


# ------------------------------------------------------------ one run object
def test_the_live_preview_follows_the_animation_with_the_bakes_own_simulation(ctx):
    ob = armature(ctx, "leg", [("thigh", (0, 0, 0), (0, 0, -0.5), None), ("shin", (0, 0, -0.5), (0, 0, -1), "thigh")])
    for pb in ob.pose.bones:
        pb.lock_ik_y = pb.lock_ik_z = True
        pb.rotation_mode = "QUATERNION"
    for f in range(1, 42, 4):
        for name, amp in (("thigh", 0.5), ("shin", 0.8)):
            th = amp * math.sin(2 * math.pi * (f - 1) / 40)
            ob.pose.bones[name].rotation_quaternion = (math.cos(th / 2), math.sin(th / 2), 0, 0)
            ob.pose.bones[name].keyframe_insert("rotation_quaternion", frame=f)
    ob.redmax.simulate = ob.redmax.follow_animation = True
    ob.redmax.follow_scale = 40.0
    scene = ctx.scene
    scene.frame_start, scene.frame_end = 1, 40
    scene.frame_set(1)
    job = bake.BakeJob(ctx)  # the reference: the bake's simulation (not written)
    job.run()
    job.abort()
    assert job.follow is not None and np.ptp(np.array(job.qs), axis=0).max() > 0.3  # it moves
    scene.redmax.live_preview = True
    try:
        for f in range(1, 41):
            scene.frame_set(f)
            session = preview._sessions[scene.name]
            np.testing.assert_allclose(session.run.q, job.qs[f - 1], atol=1e-6, err_msg=f"frame {f}")
        assert isinstance(session.run, SimulationRun) and session.run.follow is not None
    finally:
        scene.redmax.live_preview = False


# ------------------------------------------------------------- bake-scale rigs
@pytest.mark.parametrize("rig", bake_scale.RIGS)
def test_the_bench_builds_its_rigs_as_the_plain_operator_calls_do(rig):
    states = []
    for call in (bake_scale.plain_op, bake_scale.op):
        bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
        bake_scale.BUILDERS[rig](6, call)
        bpy.context.view_layer.update()
        states.append(_state(bpy.context.scene))
    assert states[0].keys() == states[1].keys() and len(states[0]) >= 4  # (objects, actions, snapshot, bones)
    assert not differences(*states)


def test_the_bench_worker_bakes_a_rig_and_checks_the_round_trip(tmp_path):
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "bake_scale.py"), "--worker", "chain", "10", "12",
                          "--check"], capture_output=True, text=True, timeout=600,
                         env={**__import__("os").environ, "PYTHONPATH": str(ROOT),
                              "BLENDER_USER_RESOURCES": str(tmp_path)})
    line = next(x for x in run.stdout.splitlines() if x.startswith("RESULT "))
    result = __import__("json").loads(line[len("RESULT "):])
    assert result["round_trip_differences"] == 0 and result["objects"] == 21
    assert all(result[s] > 0 for s in ("read", "simulate", "write keys", "bake", "clear"))


def test_the_bench_reads_every_bakes_shapes_afresh_and_refuses_an_unknown_rig(ctx, tmp_path):
    """Every bake of a bench session maps its Convex Hulls as the first one does (the engine's hull caches emptied:
    kept, they spared the later bakes of small rigs only, and the read stage's minimum grew faster than n)."""
    import importlib

    from addon._engine import engine

    artist_cube("hull", 1.0, (0, 0, 1), "ACTIVE").rigid_body.collision_shape = "CONVEX_HULL"
    bpy.context.view_layer.update()
    mapping.build(ctx)
    caches = [importlib.import_module(f"{engine.__name__}.{m}") for m in ("geometry", "contact.colliders")]
    assert caches[0]._HULLS  # (the hull faces are cached when a contact stage is built)
    caches[1]._FACES[b"probe"] = None
    bake_scale.forget_shapes()
    assert not caches[0]._HULLS and not caches[1]._FACES
    with pytest.raises(ValueError, match="unknown rig"):
        bake_scale.run(tmp_path, rigs=["chian"])


def test_a_bridge_bake_parses_each_shape_once_and_makes_each_distinct_hull_once(ctx, monkeypatch):
    """The bench's bridge of 24 planks (copies of one cube mesh, each at its own angle) and its two passive Convex
    Hulls: one parse per shape in the whole bake, one qhull run and one hull-faces computation per distinct vertex set
    (2000 planks were 2000 face computations and three parses each, issue #33)."""
    import importlib

    from addon._engine import engine
    from addon.mapping import collisions

    ctx.scene.frame_start, ctx.scene.frame_end = 1, 4
    bake_scale.build_bridge(24)
    ctx.view_layer.update()
    hulls = [ob for ob in ctx.scene.objects if ob.rigid_body is not None]
    assert len(hulls) == 26 and {ob.rigid_body.collision_shape for ob in hulls} == {"CONVEX_HULL"}
    shapes = collisions.Shapes(ctx.evaluated_depsgraph_get())
    distinct = len({shapes.body(ob)["vertices"].tobytes() for ob in hulls})
    assert distinct < 24 // 4  # (Add › Cube's own last bits vary a little)
    geometry, colliders = (importlib.import_module(f"{engine.__name__}.{m}") for m in ("geometry", "contact.colliders"))
    if kernels.needed(ctx.scene.redmax):  # a cold cache: the bake's first-use compile builds scenes of its own
        assert kernels.run_blocking(ctx.scene.redmax, echo=lambda *_: None)
    counts = {"parsed": 0, "hull": 0, "faces": 0}
    for name, module, attr in (("parsed", geometry, "parse_shape"), ("hull", geometry, "_hull_indices"),
                               ("faces", colliders, "_hull_faces")):
        def counting(*args, _real=getattr(module, attr), _name=name, **kwargs):
            counts[_name] += 1
            return _real(*args, **kwargs)
        monkeypatch.setattr(module, attr, counting)
    bake_scale.forget_shapes()
    assert bpy.ops.redmax.bake() == {"FINISHED"}
    assert counts == {"parsed": 26, "hull": distinct, "faces": distinct}


def test_a_baked_object_keeps_its_settings_out_of_the_world_and_clear_bake_links_it_back(ctx):
    scene = ctx.scene
    scene.frame_start, scene.frame_end = 1, 10
    anchor, cubes = artist_chain(2)
    post = artist_cube("post", 0.2, (2, 0, 0), "PASSIVE")
    order = [ob.name for ob in scene.rigidbody_world.collection.objects]
    assert bpy.ops.redmax.bake() == {"FINISHED"}
    assert not any(in_world(c) for c in cubes) and in_world(anchor) and in_world(post)
    assert all(c.rigid_body is not None for c in cubes)
    assert bpy.ops.redmax.clear_bake() == {"FINISHED"}
    assert [ob.name for ob in scene.rigidbody_world.collection.objects] == order
