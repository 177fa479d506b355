"""The first bake on a cold numba cache shows a compile stage at once and can be cancelled; Compile
Now warms the cache; the README main job bakes a motion one can see (real bpy wheel, subprocesses
where a fresh process or a cold cache is the point)."""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

bpy = pytest.importorskip("bpy")  # (conftest.py gave Blender a throw-away user folder)

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import addon  # noqa: E402
from addon import kernels  # noqa: E402

import engine  # noqa: E402

# A chain demo, a snapshot of everything a bake could touch, then Bake on a cold cache; the test
# interrupts it (Ctrl+C, the headless ESC) at the first compile line and compares the snapshots.
COLD_BAKE = r"""
import json, os, signal, sys, time
# Ctrl+C as in a terminal: a test run started as a background job (CI shells: `cmd &`) hands its children SIGINT
# ignored, and Python then installs no KeyboardInterrupt handler (the test failed that way, not the add-on)
signal.signal(signal.SIGINT, signal.default_int_handler)
import bpy
sys.path.insert(0, sys.argv[1])
import addon
addon.register()
bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
assert bpy.ops.redmax.add_demo_scene(scene="CHAIN", size=3) == {"FINISHED"}
scene = bpy.context.scene
scene.frame_start, scene.frame_end = 1, 8

def snapshot():
    return {"objects": {ob.name: [list(r) for r in ob.matrix_world] for ob in scene.objects},
            "actions": sorted(a.name for a in bpy.data.actions), "frame": scene.frame_current,
            "baked": [ob.name for ob in scene.objects if ob.redmax.is_baked],
            "animated": [ob.name for ob in scene.objects if ob.animation_data is not None],
            "message": scene.redmax.last_message}

before = snapshot()
print("T0", repr(time.time()), flush=True)
result = bpy.ops.redmax.bake()
print("RESULT", json.dumps({"result": sorted(result), "unchanged": snapshot() == before,
                            "needed": addon.kernels.needed(scene.redmax)}), flush=True)
os._exit(0)  # the compile thread finishes its group in the background; nothing waits for it
"""


@pytest.mark.skipif(not engine.JIT_ENABLED, reason="without numba nothing compiles")
def test_cold_cache_bake_prints_the_compile_stage_within_a_second_and_ctrl_c_changes_nothing(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba_cache"), BLENDER_USER_RESOURCES=str(tmp_path),
               PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-c", COLD_BAKE, str(ROOT)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)
    lines, t0, first = [], None, None
    try:
        for line in proc.stdout:
            lines.append(line.rstrip())
            if line.startswith("T0 "):
                t0 = float(line.split()[1])
            elif t0 is not None and first is None and kernels.TITLE in line:
                first = time.time() - t0
                assert re.search(r"1 of \d kernel groups", line), line
                proc.send_signal(signal.SIGINT)  # cancel while the first group compiles
            elif line.startswith("RESULT "):
                result = json.loads(line[len("RESULT "):])
                break
        else:
            pytest.fail("no result:\n" + "\n".join(lines))
    finally:
        proc.kill()
        proc.wait()
    assert first is not None and first < 1.0, lines
    assert any("cancelled" in ln for ln in lines), lines
    assert result == {"result": ["CANCELLED"], "unchanged": True, "needed": True}, lines


@pytest.fixture()
def registered():
    addon.register()
    bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
    yield bpy.context
    addon.unregister()


def test_compile_now_warms_the_cache_for_the_scene_settings(registered):
    settings = registered.scene.redmax
    settings.solver = "DIRECT"
    assert bpy.ops.redmax.compile_kernels() == {"FINISHED"}
    assert not kernels.needed(settings) and engine.apps.warmup.is_warm("direct")
    assert kernels.REDMAX_AP_preferences.is_registered
    assert kernels.REDMAX_AP_preferences.bl_idname == "addon"  # the add-on's module from a checkout


def test_main_job_bakes_a_motion_one_can_see(tmp_path):
    """scripts/bake_demo.py as setup_and_run.sh runs it (shorter): the umbrella opens — a part travels
    ≥ 10 % of the scene's size, the runner ≥ 30 % of its rail — and the contact sheet is written."""
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path))
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "bake_demo.py"), "--scene", "UMBRELLA",
                          "--frames", "36", "--sheet", "3", "--out", str(tmp_path)],
                         capture_output=True, text=True, env=env, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    motion = re.search(r"motion: '(.+)' travelled ([\d.]+) m = (\d+) % of the scene size \(([\d.]+) m", out.stdout)
    runner = re.search(r"runner travelled ([\d.]+) m = (\d+) % of its ([\d.]+) m rail", out.stdout)
    assert motion and runner, out.stdout
    travel, size = float(motion.group(2)), float(motion.group(4))
    assert travel >= 0.1 * size and motion.group(1).startswith("rib")
    assert float(runner.group(1)) >= 0.3 * float(runner.group(3))
    img = bpy.data.images.load(str(tmp_path / "umbrella_baked.png"))
    try:
        assert tuple(img.size) == (3 * 640, 360)  # three frames in one row
    finally:
        bpy.data.images.remove(img)
    assert (tmp_path / "umbrella_baked.blend").stat().st_size > 0


def test_bridge_demo_carries_its_car_as_a_moving_load_labelled_exaggerated(registered):
    from addon import mapping

    assert bpy.ops.redmax.add_demo_scene(scene="BRIDGE", size=7) == {"FINISHED"}
    ref_scene = addon.demo.engine_scene("BRIDGE", 7)
    ref = ref_scene.moving_loads[0]
    m = mapping.build(registered)
    (load,) = m.scene.moving_loads
    assert load.force == pytest.approx(ref.force) and (load.t_start, load.t_end) == (ref.t_start, ref.t_end)
    assert [m.scene.model.body_names[b] for b, _, _ in load.path] == [f"deck{i}" for i in range(7)]
    R, p = engine.link_poses(m.scene.model, m.scene.q0)  # the mapped link frames are the joint hosts'
    R0, p0 = engine.link_poses(ref_scene.model, ref_scene.q0)
    for (b, s, e), (rb, rs, re_) in zip(load.path, ref.path):  # the same world points at the start
        assert p[b] + R[b] @ s == pytest.approx(p0[rb] + R0[rb] @ rs, abs=1e-6)
        assert p[b] + R[b] @ e == pytest.approx(p0[rb] + R0[rb] @ re_, abs=1e-6)
    car = next(ob for ob in registered.scene.objects if ob.name.startswith("Car"))
    assert "exaggerated for show" in car.name and "500×" in car.name
    assert not car.redmax.simulate and car.animation_data.action is not None
    spec = json.loads(car[addon.loads.PROP])  # a path over an object that is not simulated is refused by name
    spec["path"][3][0] = "just an empty"
    registered.scene.collection.objects.link(bpy.data.objects.new("just an empty", None))
    car[addon.loads.PROP] = json.dumps(spec)
    with pytest.raises(mapping.MappingError, match="'just an empty', which is not a simulated object"):
        mapping.build(registered)


@pytest.mark.parametrize("kind", [k for k, *_ in addon.demo.DEMO_ITEMS])
def test_warmup_facts_read_from_the_blender_scene_are_those_of_the_scene_the_bake_builds(registered, kind):
    """The compile stage picks the step to compile (with or without loop closures, body damping) from the
    Blender scene before anything is built; they must agree with the engine scene the bake maps."""
    from addon import mapping

    assert bpy.ops.redmax.add_demo_scene(scene=kind, size=0) == {"FINISHED"}
    bscene = registered.scene
    facts = mapping.scene_facts(bscene)
    built = engine.apps.warmup.scene_facts(mapping.build(registered).scene)
    assert {k: facts[k] for k in ("closures", "body_damping")} == {k: built[k] for k in ("closures", "body_damping")}
    assert facts["limits"] in (None, built["limits"])  # None: not known from the Blender scene (both compiled)
    assert kernels.options(bscene.redmax)["closures"] == facts["closures"]


def test_warmup_facts_find_a_loop_closed_by_rigid_body_constraints(registered):
    """Three hinged boxes hanging from an empty; a fourth hinge from the last box back to the empty closes
    a loop (as the mapping leaves it out of the tree: a loop closure)."""
    from addon import mapping
    from blender_rigs import box, constraint, empty

    boxes = [box(f"box{k}", (0.2, 0.2, 0.2), (0.5 * k + 0.5, 0, 1.0)) for k in range(3)]
    for ob in boxes:
        ob.redmax.simulate = True
    anchor = empty("anchor", (0, 0, 1.0))
    for k, (a, b) in enumerate([(anchor, boxes[0]), (boxes[0], boxes[1]), (boxes[1], boxes[2])]):
        constraint(empty(f"hinge{k}", (0.5 * k + 0.25, 0, 1.0)), "HINGE", a, b)
    assert mapping.scene_facts(registered.scene)["closures"] is False
    assert not engine.apps.warmup.scene_facts(mapping.build(registered).scene)["closures"]
    assert mapping.scene_facts(registered.scene)["limits"] is False
    hinge = bpy.data.objects["hinge1"].rigid_body_constraint
    hinge.use_limit_ang_z, hinge.limit_ang_z_lower, hinge.limit_ang_z_upper = True, -0.5, 0.5
    assert mapping.scene_facts(registered.scene)["limits"] is None
    assert engine.apps.warmup.scene_facts(mapping.build(registered).scene)["limits"]
    constraint(empty("closing", (0, 0, 1.0)), "POINT", boxes[2], anchor)
    assert mapping.scene_facts(registered.scene)["closures"] is True
    assert engine.apps.warmup.scene_facts(mapping.build(registered).scene)["closures"]


@pytest.mark.parametrize("closed", [False, True])
def test_warmup_facts_of_a_baked_scene_are_those_of_its_rebake(registered, closed):
    """Found by a tester: a bake takes the rigid bodies and constraints out of Blender's world, so the facts
    read from the baked scene were all unknown and a second bake compiled a 'loop closures' group the rig
    does not need. A re-bake maps the scene as it was before the bake: its facts are read that way."""
    from addon import mapping
    from blender_rigs import artist_chain, artist_constraint, in_world

    scene = registered.scene
    scene.frame_start, scene.frame_end = 1, 10
    anchor, cubes = artist_chain(3)
    hinge = bpy.data.objects["hinge2"].rigid_body_constraint
    hinge.use_limit_ang_z, hinge.limit_ang_z_lower, hinge.limit_ang_z_upper = True, -0.5, 0.5
    if closed:
        artist_constraint("closing", "POINT", cubes[-1], anchor, (0, 1.0, 0))
    before = kernels.options(scene.redmax)
    assert (before["closures"], before["limits"]) == (closed, None)
    assert before["closures"] == engine.apps.warmup.scene_facts(mapping.build(registered).scene)["closures"]
    assert bpy.ops.redmax.bake() == {"FINISHED"}, scene.redmax.last_message
    assert not in_world(bpy.data.objects["hinge2"]) and not in_world(cubes[0])
    assert kernels.options(scene.redmax) == before
    assert not kernels.needed(scene.redmax)  # what the bake compiled covers its re-bake
