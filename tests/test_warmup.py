"""engine.apps.warmup: the kernel groups a solver needs, progress and cancel, and the warm-cache stamp; on a cold
cache (a subprocess), a bake step after the warm-up compiles nothing, also when a joint reaches its limit or bodies collide."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import engine
from engine.apps import warmup

ROOT = Path(__file__).resolve().parents[1]


def test_groups_per_solver_and_contact():
    names = [g.name for g in warmup.kernel_groups("pcg")]
    assert len(names) == 3 and "PCG" in names[1]
    assert "DIRECT" in warmup.kernel_groups("direct")[1].name
    with_contact = warmup.kernel_groups("dense", contact=True, contact_method="cholesky")
    assert len(with_contact) == 5 and "cholesky" in with_contact[-1].name and "cholesky" in with_contact[-2].name
    with pytest.raises(ValueError, match="'baraff'"):
        warmup.kernel_groups("baraff")


def test_scene_facts_pick_the_step_the_bake_runs():
    """closures=True: only the staged step with closures; False: only the step without (the one-call PCG
    step, or with contact the contact group's); None: both, as before the facts were known."""
    with_closures = [g.name for g in warmup.kernel_groups("pcg", closures=True)]
    assert len(with_closures) == 2 and "loop closures" in with_closures[1]
    without = [g.name for g in warmup.kernel_groups("pcg", closures=False, limits=False)]
    assert len(without) == 2 and "PCG step:" in without[1]
    assert [g.name for g in warmup.kernel_groups("pcg", contact=True, closures=False, limits=False)][1:] == [
        "ground contact (auto)", "contact between bodies and with mesh colliders (auto)"]
    limited = [g.name for g in warmup.kernel_groups("pcg", closures=False, limits=True)]
    assert len(limited) == 2 and "joint limits" in limited[1]
    assert len(warmup.kernel_groups("pcg", closures=False)) == 3  # limits not known: with and without
    # with closures the limit stage is in the closures group, unless the scene has no limits
    assert "joint limits" in warmup.kernel_groups("pcg", closures=True)[1].name
    assert "joint limits" not in warmup.kernel_groups("pcg", closures=True, limits=False)[1].name
    assert warmup._stamp_key("pcg", False, "minv", closures=True, limits=False) == "pcg/closures/no-limits"
    assert len(warmup.kernel_groups("pcg", contact=True)) == 5
    bridge = engine.scenes.bridge(7, 0)
    assert warmup.scene_facts(bridge) == {"contact": False, "closures": True, "limits": False, "body_damping": False}
    chain = engine.scenes.chain(3)
    chain.set_body_damping(0.1)
    assert warmup.scene_facts(chain) == {"contact": False, "closures": False, "limits": False, "body_damping": True}
    # a static collider alone is contact too (no ground, no body contacts)
    chain.add_static_collider("step", {"type": "box", "size": (1.0, 1.0, 0.2)}, position=(0, 0, -3.0))
    assert warmup.scene_facts(chain)["contact"] is True


@pytest.fixture()
def stamp_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(warmup, "cache_dir", lambda: tmp_path)
    return tmp_path


@pytest.mark.skipif(not engine.JIT_ENABLED, reason="the stamp describes numba's cache")
def test_compile_reports_every_group_and_leaves_a_stamp_that_is_checked(stamp_dir):
    assert not warmup.is_warm("pcg")  # no stamp in this directory
    seen = []
    result = warmup.compile_kernels("pcg", progress=lambda done, total, name: seen.append((done, total, name)))
    names = [g.name for g in warmup.kernel_groups("pcg")]
    assert seen == [(k, 3, n) for k, n in enumerate(names)] + [(3, 3, "")]
    assert set(result.seconds) == set(names) and result.kernels >= 10
    assert warmup.is_warm("pcg")
    assert not warmup.is_warm("pcg", contact=True)  # another kernel set, not compiled here
    stamp = json.loads((stamp_dir / warmup.STAMP_NAME).read_text())
    kernels = stamp["groups"]["pcg"]
    assert any(name.endswith(":pcg_solve") for name in kernels)
    # a kernel whose cached signature is gone (a changed source, a cleared cache) makes it cold again
    first = next(iter(kernels))
    kernels[first] = kernels[first] + ["(float32,)"]
    (stamp_dir / warmup.STAMP_NAME).write_text(json.dumps(stamp))
    assert not warmup.is_warm("pcg")
    stamp["source"] = "another tree"
    (stamp_dir / warmup.STAMP_NAME).write_text(json.dumps(stamp))
    assert not warmup.is_warm("pcg")


def test_a_stamp_with_open_facts_covers_the_known_ones(stamp_dir, monkeypatch):
    entries = {"engine.joints:matrix_to_quat_kernel": ["(float32,)"]}  # not in any cache: that entry is cold
    monkeypatch.setattr(warmup, "_entry_cached", lambda entry: entry != entries)
    stamp = {"source": warmup._source_key(), "groups": {"pcg/closures": {}}}
    (stamp_dir / warmup.STAMP_NAME).write_text(json.dumps(stamp))
    assert not warmup.is_warm("pcg", closures=True)  # an empty entry is no warm-up
    stamp["groups"] = {"pcg/closures": {"engine.joints:joint_transform": []}}
    (stamp_dir / warmup.STAMP_NAME).write_text(json.dumps(stamp))
    assert warmup.is_warm("pcg", closures=True) and warmup.is_warm("pcg", closures=True, body_damping=False)
    assert not warmup.is_warm("pcg", closures=False) and not warmup.is_warm("pcg")
    stamp["groups"] = {"pcg": {"engine.joints:joint_transform": []}, "pcg/no-closures": entries}
    (stamp_dir / warmup.STAMP_NAME).write_text(json.dumps(stamp))
    assert warmup.is_warm("pcg", closures=False, body_damping=True)  # the open-facts warm-up covers it
    assert not warmup.is_warm("direct", closures=False)


def test_cancel_stops_between_groups(stamp_dir):
    calls = []
    with pytest.raises(warmup.WarmupCancelled, match="after 1 of 3"):
        warmup.compile_kernels("pcg", progress=lambda *a: calls.append(a), cancel=lambda: len(calls) >= 1)
    assert len(calls) == 1
    assert not (stamp_dir / warmup.STAMP_NAME).exists()


# Each group's tiny scene, without numba (the same Python branches, in seconds): a stage that only solves when
# something is active must be active there, or its solve is left for the bake to compile.
ACTIVE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
from engine.apps import warmup
out = []
for facts in ({"closures": False, "limits": True, "contact": True}, {"closures": True, "limits": None, "contact": True},
              {"closures": None, "limits": None}):
    for group in warmup.kernel_groups("pcg", **facts):
        sim, row = group.run(), {"facts": facts, "group": group.name}
        if sim is not None and sim.limits is not None:
            row["limit_impulse"] = float(np.max(sim.limits.last_impulses, initial=0.0))
        if sim is not None and sim.contact is not None:
            lam, c = sim.contact.last.impulses, sim.contact.last.contacts
            row["pushing"] = int(np.sum(lam[0::3] > 0))
            row["gripping"] = int(np.sum(np.hypot(lam[1::3], lam[2::3]) > 0))
            row["friction"] = float(np.min(c.friction, initial=np.inf))
        out.append(row)
spaces = []
for articulated, closure in ((True, False), (False, False), (True, True)):  # the body-contact group's scenes
    sim = warmup._step(warmup._boxes_on_a_mesh(articulated, closure), "pcg", contact_method="minv")
    last = sim.contact.last
    pairs = last.contacts.other_bodies() >= 0
    spaces.append({"articulated": articulated, "closure": closure, "space": last.space,
                   "closure_rows": sim.contact.closure_rows is not None,
                   "pair_contacts": int(np.sum(pairs)), "pushing": int(np.sum(last.impulses[0::3] > 0))})
print("RESULT " + json.dumps({"groups": out, "spaces": spaces}), flush=True)
"""


def test_each_group_makes_the_stages_it_compiles_solve():
    """The hinge of a group with limits starts on its bound moving into it; the contact groups' lowest boxes
    touch the ground (or the mesh floor, and each other) with friction, so their PGS runs with sticking or
    sliding contacts, in each contact space."""
    env = dict(os.environ, ENGINE_DISABLE_JIT="1")
    proc = subprocess.run([sys.executable, "-c", ACTIVE, str(ROOT)], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=600)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stdout + proc.stderr
    result = json.loads(lines[-1][len("RESULT "):])
    rows = result["groups"]
    for facts in ({"closures": False, "limits": True, "contact": True}, {"closures": True, "limits": None, "contact": True},
                  {"closures": None, "limits": None}):
        mine = [r for r in rows if r["facts"] == facts]
        assert any("limit_impulse" in r for r in mine), mine  # some group steps with the limit stage
        assert all(r["limit_impulse"] > 0 for r in mine if "limit_impulse" in r), mine
        assert all(r["pushing"] > 0 and r["gripping"] > 0 and r["friction"] > 0 for r in mine if "pushing" in r), mine
        assert any("pushing" in r for r in mine) == facts.get("contact", False), mine
    # bodies against bodies and the mesh floor: one articulation in the dense space, several tree by tree, and
    # with a loop closure tree by tree projected onto it; in each, boxes touching each other and pushing
    spaces = {(c["articulated"], c["closure"]): c for c in result["spaces"]}
    assert [spaces[k]["space"] for k in ((True, False), (False, False), (True, True))] == ["dense", "sparse", "sparse"]
    assert spaces[(True, True)]["closure_rows"] and not spaces[(True, False)]["closure_rows"]
    assert all(c["pair_contacts"] > 0 and c["pushing"] > 0 for c in spaces.values()), spaces


# On an empty numba cache: the add-on's warm-up for a scene's facts, then that scene's bake steps, with numba's
# compile events recorded (scripts/studies/compile_profile.py's recorder). A rig whose first joint gravity drives into
# its lower bound within a few steps, and a ball joint at its end into Euler bounds: a hinge chain (argv[2] "chain": no loop closures, the staged step with the
# limit stage), or the same with a pinned ball joint ("closure": the limit stage works in the closures' metric),
# warmed up as the add-on does for an armature with a closure link (limits not known from the Blender scene).
# One process per rig: kernels the first rig's steps compiled would hide the second warm-up's gaps.
COLD_LIMITS = r"""
import json, sys
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/scripts", sys.argv[1] + "/scripts/studies"]
from compile_profile import CompileRecorder, install
recorder = CompileRecorder()
install(recorder)
import numpy as np
import engine
from engine.apps import warmup
from engine.model import ModelBuilder
from engine.scene import Scene

def limited_chain(closure):
    b = ModelBuilder()
    rod = {"com": (0, 0, -0.5), "mass": 1.0, "inertia": (0.08, 0.08, 0.001)}
    b.add_body("upper", joint="revolute", axis=(1, 0, 0), joint_name="shoulder", limits=(0.4, 1.5), **rod)
    b.add_body("lower", parent="upper", joint="revolute", axis=(1, 0, 0), joint_origin=(0, 0, -1.0),
               joint_name="elbow", limits=(-0.5, 0.5), **rod)
    # a ball joint whose Euler angles are bounded (a ball bone's Limit Rotation): its own rows and re-solves
    b.add_body("hand", parent="lower", joint="spherical", joint_origin=(0, 0, -1.0), joint_name="wrist",
               limits=(-0.26, 0.26), limit_angles="XYZ", com=(0.3, 0.2, -0.5), mass=1.0, inertia=(0.08, 0.08, 0.01))
    q0 = [0.45, 0.0, 1.0, 0.0, 0.0, 0.0]
    if closure:
        b.add_body("bob", joint="spherical", joint_origin=(2.0, 0, 1.0), joint_name="ball", **rod)
        q0 += [1.0, 0.0, 0.0, 0.0]
    scene = Scene(b.finalize(), name="limited", q0=np.array(q0))
    if closure:
        scene.add_loop_closure("bob", -1, (2.0, 0, 0.5), kind="point", name="pin")
    return scene

closure = sys.argv[2] == "closure"
facts = {"closures": closure, "limits": None if closure else True, "contact": False, "body_damping": False}
warmup.compile_kernels("pcg", **facts)
scene = limited_chain(closure)
sim = engine.Simulator(scene, "pcg", dt=1.0 / 48.0)
start = len(recorder.records)
at_limit = euler_at_limit = 0
for _ in range(24):
    sim.step()
    at_limit += bool(np.any(sim.limits.last_impulses > 0))
    euler_at_limit += bool(np.any((sim.limits.last_active >= 2) | (sim.limits.last_active <= -3)))  # the wrist's rows
late = [(name, round(incl, 2)) for name, _, incl, _, depth in recorder.records[start:] if depth == 0]
print("RESULT " + json.dumps({"facts": facts, "scene_facts": warmup.scene_facts(scene), "steps_at_limit": at_limit,
                              "steps_at_euler_limit": euler_at_limit,
                              "is_warm": warmup.is_warm("pcg", **facts), "compiled_in_steps": late}), flush=True)
"""


@pytest.mark.slow
@pytest.mark.skipif(not engine.JIT_ENABLED, reason="without numba nothing compiles")
def test_cold_cache_warmup_leaves_nothing_to_compile_when_a_joint_reaches_its_limit(tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", COLD_LIMITS, str(ROOT), rig], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=dict(
                                  os.environ, NUMBA_CACHE_DIR=str(tmp_path / rig), PYTHONUNBUFFERED="1"))
             for rig in ("chain", "closure")]  # (side by side: each is a cold compile of 30–60 s)
    cases = []
    try:
        for proc in procs:
            out, _ = proc.communicate(timeout=1200)
            lines = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
            assert proc.returncode == 0 and lines, out
            cases.append(json.loads(lines[-1][len("RESULT "):]))
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    for case in cases:
        facts = case["facts"]
        assert case["scene_facts"] == {k: v if v is not None else True for k, v in facts.items()}, case
        assert case["is_warm"] and case["steps_at_limit"] >= 12, case  # the shoulder rests on its bound
        assert case["steps_at_euler_limit"] >= 4, case
    late = {json.dumps(c["facts"]): (round(sum(s for _, s in c["compiled_in_steps"]), 1), c["compiled_in_steps"])
            for c in cases if c["compiled_in_steps"]}
    assert not late, f"compiled during the steps after the warm-up (CPU s, kernels) per warm-up facts: {late}"


# On an empty numba cache: the warm-up for a collision scene's facts, then its steps, with numba's compile events
# recorded. argv[2] "free": a pile of boxes on a mesh floor (tree by tree) and a chain on a mesh staircase (one
# articulation: the dense contact space), warmed up once for their facts (the same); "closure": the crate dropped on
# the rope bridge closed under it (the contact responses projected onto the closure, the closure's post-stabilization
# holding the contacts).
COLD_CONTACT = r"""
import json, sys
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/scripts", sys.argv[1] + "/scripts/studies"]
from compile_profile import CompileRecorder, install
recorder = CompileRecorder()
install(recorder)
import numpy as np
import engine
from engine.apps import warmup
from engine.scenes.collisions import box_pile, chain_on_stairs, crate_on_bridge

scenes = [box_pile(12), chain_on_stairs(6)] if sys.argv[2] == "free" else [crate_on_bridge(closed_at="middle")]
facts = [warmup.scene_facts(s) for s in scenes]
warmup.compile_kernels("pcg", **facts[0])
start = len(recorder.records)
touching = []
for scene in scenes:  # (the crate lands at 0.45 s on the planks the closure joins: its projection holds the contacts)
    sim = engine.Simulator(scene, "pcg", dt=1.0 / 48.0)
    spaces = set()
    for _ in range(48):
        sim.step()
        if len(sim.contact.last.contacts):
            spaces.add(sim.contact.last.space)
    touching.append(sorted(spaces))
late = [(name, round(incl, 2)) for name, _, incl, _, depth in recorder.records[start:] if depth == 0]
print("RESULT " + json.dumps({"facts": facts, "spaces": touching, "is_warm": warmup.is_warm("pcg", **facts[0]),
                              "compiled_in_steps": late}), flush=True)
"""


@pytest.mark.slow
@pytest.mark.skipif(not engine.JIT_ENABLED, reason="without numba nothing compiles")
def test_cold_cache_warmup_leaves_nothing_to_compile_in_a_collision_scene(tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", COLD_CONTACT, str(ROOT), rig], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=dict(
                                  os.environ, NUMBA_CACHE_DIR=str(tmp_path / rig), PYTHONUNBUFFERED="1"))
             for rig in ("free", "closure")]  # (side by side: each is a cold compile of minutes)
    cases = {}
    try:
        for rig, proc in zip(("free", "closure"), procs):
            out, _ = proc.communicate(timeout=2400)
            lines = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
            assert proc.returncode == 0 and lines, out[-3000:]
            cases[rig] = json.loads(lines[-1][len("RESULT "):])
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    free, closure = cases["free"], cases["closure"]
    assert all(f["contact"] and not f["closures"] for f in free["facts"]) and free["facts"][0] == free["facts"][1]
    assert closure["facts"][0]["contact"] and closure["facts"][0]["closures"]
    # the pile tree by tree (dense while its first contacts are on one box), the chain in one piece
    assert "sparse" in free["spaces"][0] and free["spaces"][1] == ["dense"], free
    assert closure["spaces"] == [["sparse"]], closure  # (a closure's projection is the tree-by-tree form's)
    assert free["is_warm"] and closure["is_warm"]
    late = {rig: (round(sum(s for _, s in c["compiled_in_steps"]), 1), c["compiled_in_steps"])
            for rig, c in cases.items() if c["compiled_in_steps"]}
    assert not late, f"compiled during the steps after the warm-up (CPU s, kernels) per rig: {late}"
