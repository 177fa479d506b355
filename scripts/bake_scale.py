"""Bake scale: each Blender-side stage of a RedMax bake against the object count, beside Blender's own
*Bake to Keyframes*.

    python scripts/blender_bench.py bake-scale [--quick] [--out DIR] [--rigs RIG …] [--sizes N …]
    blender -b -P scripts/blender_bench.py -- bake-scale [--quick] [--out DIR] [--rigs RIG …] [--sizes N …]

Rigs, built as an artist builds them, with Blender's operators:

* ``chain``: a passive anchor cube, n cubes in a row (*Add › Mesh › Cube* each, then *Object › Rigid Body ›
  Add Active* on the whole selection) and n HINGE Empties (*Add › Empty*, *Rigid Body Constraint*, its two
  objects set), the links swinging down from horizontal;
* ``tree``: an armature of n bones in a binary tree hanging from a fixed root (bones added in edit mode,
  hinges by the pose bones' IK locks, *Simulate* on);
* ``bridge``: n planks between two passive piers hinged plank to plank (the last hinge closes the loop), a
  passive beam above the deck and a RedMax cable from the beam to every plank (*RedMax › Add Cable*).

The operators are called without ``bpy.ops``' Python wrapper, which evaluates the whole view layer before
and after every call (that makes building a rig of n objects take time in n²: 4 s for a 200-link chain, the
same calls 0.07 s): ``_bpy.ops.call``, the function ``bpy.ops`` itself calls, writes the same data
(``tests/test_bake_scale.py`` compares the two builds property by property), then one view-layer update.

Each rig and size is measured in a new process (``--worker``): building, then three times a bake with
``bpy.ops.redmax.bake`` (its stages from the scene's statistics: read, simulate, write keys, detach) and Clear
Bake; the first bake of a session also loads the compiled kernels from numba's cache, and every bake
reads its collision shapes afresh (``forget_shapes``). The chain at 1000 (the
largest size up to 1000) checks that the round trip restores the scene bit for bit. Blender's *Bake to
Keyframes* (``bpy.ops.rigidbody.bake_to_keyframes``) bakes the same chain at 50, 200 and 1000 links, each in a
process of its own (its result can crash the next frame change, issue 33). Writes ``DIR/bake-scale.csv``,
``.md`` and ``.png`` (log-log per stage, slopes fitted from 100 objects on).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RIGS = ("chain", "tree", "bridge")
SIZES = (10, 20, 50, 100, 200, 500, 1000, 2000)
QUICK_SIZES = (10, 50, 100)
BULLET_SIZES = (50, 200, 1000)
FRAMES, QUICK_FRAMES = 250, 40
STAGES = ("read", "simulate", "write keys", "detach", "scene update")
MIN_FIT = 100
REPEATS = 3  # bakes per rig and size in one session; the report takes the fastest


# ------------------------------------------------------------------ building
def op(idname: str, **properties):
    """Run operator ``idname`` ("mesh.primitive_cube_add") without ``bpy.ops``' view-layer updates."""
    from _bpy import ops as _ops

    result = _ops.call(idname, properties)
    if "FINISHED" not in result:
        raise RuntimeError(f"{idname} returned {sorted(result)}")
    return result


def plain_op(idname: str, **properties):
    """The same call through ``bpy.ops`` (with its view-layer updates): the reference of the fast build."""
    import bpy

    module, name = idname.split(".")
    return getattr(getattr(bpy.ops, module), name)(**properties)


def _active():
    import bpy

    return bpy.context.view_layer.objects.active


def _add_active_bodies(call, objects):
    """Select ``objects`` only and *Object › Rigid Body › Add Active* them in one call."""
    import bpy

    for ob in bpy.context.view_layer.objects:
        ob.select_set(ob in objects)
    bpy.context.view_layer.objects.active = objects[0]
    call("rigidbody.objects_add", type="ACTIVE")


def _hinge(call, name, location, rotation, a, b):
    call("object.empty_add", location=location, rotation=rotation)
    host = _active()
    host.name = name
    call("rigidbody.constraint_add", type="HINGE")  # (on the active object, the new Empty)
    host.rigid_body_constraint.object1, host.rigid_body_constraint.object2 = a, b
    return host


def build_chain(n, call=op, link=0.3):
    """A passive anchor and ``n`` cubes along +Y, each hinged (about world X) to the previous one."""
    call("mesh.primitive_cube_add", size=link, location=(0.0, 0.0, 0.0))
    anchor = _active()
    anchor.name = "anchor"
    call("rigidbody.object_add", type="PASSIVE")
    cubes = []
    for i in range(n):
        call("mesh.primitive_cube_add", size=0.9 * link, location=(0.0, (i + 1) * link, 0.0))
        cubes.append(_active())
        cubes[-1].name = f"link{i + 1}"
    _add_active_bodies(call, cubes)
    for i, (a, b) in enumerate(zip([anchor, *cubes], cubes)):
        _hinge(call, f"hinge{i + 1}", (0.0, (i + 0.5) * link, 0.0), (0.0, math.pi / 2, 0.0), a, b)
    return cubes


def build_bridge(n, call=op, width=0.5, sag=math.radians(20)):
    """``n`` planks in a shallow arc hinged plank to plank about world Y, the first to a passive pier, and a
    cable from a passive beam above the deck to every plank. (Pinned to a second pier as well, the deck closes
    a loop, and a loop-closed chain of 200 planks diverges at 2 substeps: docs/blender.md, *Ropes and chains*.)"""
    import bpy

    joints = [(0.0, 0.0)]  # (x, z) of the hinges along the arc, equal chords
    for i in range(n):
        theta = -sag + 2 * sag * (i + 0.5) / n
        joints.append((joints[-1][0] + width * math.cos(theta), joints[-1][1] + width * math.sin(theta)))
    call("mesh.primitive_cube_add", size=width, location=(0.0, 0.0, -0.5 * width))
    pier = _active()
    pier.name = "pier"
    call("rigidbody.object_add", type="PASSIVE")
    planks = []
    for i, ((x0, z0), (x1, z1)) in enumerate(zip(joints, joints[1:])):
        call("mesh.primitive_cube_add", size=1.0, location=((x0 + x1) / 2, 0.0, (z0 + z1) / 2),
             rotation=(0.0, -math.atan2(z1 - z0, x1 - x0), 0.0), scale=(0.9 * width, 1.0, 0.1))
        planks.append(_active())
        planks[-1].name = f"plank{i + 1}"
    _add_active_bodies(call, planks)
    for i, ((x, z), a, b) in enumerate(zip(joints, [pier, *planks], planks)):
        _hinge(call, f"hinge{i + 1}", (x, 0.0, z), (-math.pi / 2, 0.0, 0.0), a, b)
    span = joints[-1][0]
    call("mesh.primitive_cube_add", size=1.0, location=(span / 2, 0.0, 2.0), scale=(span, 0.2, 0.2))
    beam = _active()
    beam.name = "beam"
    call("rigidbody.object_add", type="PASSIVE")
    for plank in planks:
        x = (plank.location.x - span / 2) / span  # above the plank, in the beam's (scaled) frame
        call("redmax.add_cable", object_a=beam.name, point_a=(x, 0.0, 0.0), object_b=plank.name,
             stiffness=2e4, damping=200.0)
    bpy.context.scene.redmax.body_damping = 0.1
    return planks


def build_tree(n, call=op):
    """An armature of ``n`` bones in a binary tree hanging from a fixed root: each bone a hinge about its x."""
    import bpy

    arm = bpy.data.armatures.new("tree")
    ob = bpy.data.objects.new("tree", arm)
    bpy.context.scene.collection.objects.link(ob)
    bpy.context.view_layer.objects.active = ob
    call("object.mode_set", mode="EDIT")
    bones = []
    for i in range(n):
        eb = arm.edit_bones.new(f"b{i}")
        if i == 0:
            eb.head, eb.tail = (0.0, 0.0, 0.0), (0.0, 0.0, -0.5)
        else:
            parent = bones[(i - 1) // 2]
            level = int(math.log2(i + 1))
            side = 1.0 if i % 2 else -1.0
            d = parent.tail - parent.head
            d.normalize()
            spread = [0.0, 0.0, 0.0]
            spread[level % 2] = 0.6 * side  # alternate the branching plane level by level
            direction = d + type(d)(spread)
            direction.normalize()
            eb.head, eb.tail = parent.tail, parent.tail + direction * (0.5 * 0.85 ** level)
            eb.parent, eb.use_connect = parent, True
        bones.append(eb)
    call("object.mode_set", mode="OBJECT")
    for pb in ob.pose.bones:
        pb.lock_ik_y = pb.lock_ik_z = True
    ob.redmax.simulate = True
    return [ob]


BUILDERS = {"chain": build_chain, "tree": build_tree, "bridge": build_bridge}


def build(rig, n, call=op):
    """Build ``rig`` with ``n`` bodies in an empty scene (at 24 fps, the factory frame rate); returns seconds."""
    import bpy

    bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
    t0 = time.perf_counter()
    BUILDERS[rig](n, call)
    bpy.context.view_layer.update()
    return time.perf_counter() - t0


# ----------------------------------------------------------------- measuring
def _quiet(fn):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn()


def forget_shapes() -> None:
    """Empty the engine's convex-hull caches (``engine.geometry``, ``engine.contact.colliders``), so that every
    bake of a session reads its shapes as the first one does. They keep up to 256 vertex sets: the later bakes
    of a rig with fewer distinct hulls skipped their computation and those of a larger one did not, so the read
    stage's minimum over the bakes of a session grew faster than n across that size (bridge: n^1.16)."""
    import importlib

    from addon._engine import engine

    importlib.import_module(f"{engine.__name__}.geometry")._HULLS.clear()
    importlib.import_module(f"{engine.__name__}.contact.colliders")._FACES.clear()


def bake_once(scene) -> dict:
    """One ``redmax.bake`` (its shapes read afresh: ``forget_shapes``) and one Clear Bake, timed (stages from
    the scene's statistics)."""
    import bpy

    forget_shapes()
    t0, cpu = time.perf_counter(), time.process_time()
    result = _quiet(bpy.ops.redmax.bake)
    whole = time.perf_counter() - t0
    if result != {"FINISHED"}:
        raise RuntimeError(f"bake failed: {scene.redmax.last_message}")
    stages = json.loads(scene.redmax.last_stages)
    out = {**stages["wall"], "bake": whole, "cpu": {**stages["cpu"], "bake": time.process_time() - cpu}}
    updates = []  # Clear Bake's own scene update (its frame change), timed apart

    def before(*_):
        updates.append((time.perf_counter(), time.process_time()))

    def after(*_):
        updates[-1] = (time.perf_counter() - updates[-1][0], time.process_time() - updates[-1][1])

    bpy.app.handlers.frame_change_pre.append(before)
    bpy.app.handlers.frame_change_post.append(after)
    try:
        t0, cpu = time.perf_counter(), time.process_time()
        _quiet(bpy.ops.redmax.clear_bake)
        out["clear"], out["cpu"]["clear"] = time.perf_counter() - t0, time.process_time() - cpu
    finally:
        bpy.app.handlers.frame_change_pre.remove(before)
        bpy.app.handlers.frame_change_post.remove(after)
    out["clear update"], out["cpu"]["clear update"] = (sum(u[0] for u in updates), sum(u[1] for u in updates))
    return out


def worker(rig, n, frames, check) -> dict:
    """Measure one rig and size in this process (see the module docstring)."""
    import bpy

    sys.path.insert(0, str(ROOT))
    import addon

    addon.register()
    out = {"rig": rig, "n": n, "frames": frames, "build": build(rig, n)}
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    out["objects"] = len(scene.objects)
    out["bones"] = sum(len(ob.data.bones) for ob in scene.objects if ob.type == "ARMATURE")
    from addon import kernels

    if kernels.needed(scene.redmax):  # a cold numba cache compiles first (not measured: the bench is warm)
        out["compiled_first"] = _quiet(lambda: kernels.run_blocking(scene.redmax))
    before = None
    if check:
        sys.path.insert(0, str(ROOT / "tests"))
        from blender_rigs import scene_snapshot

        before = scene_snapshot(scene, list(scene.objects))
    runs = [bake_once(scene)]
    if check:
        from blender_rigs import differences

        out["round_trip_differences"] = len(differences(before, scene_snapshot(scene, list(scene.objects))))
    runs += [bake_once(scene) for _ in range(REPEATS - 1)]
    out["first"] = runs[0]
    out.update({k: min(r[k] for r in runs) for k in runs[0] if k != "cpu"})
    out["cpu"] = {k: min(r["cpu"][k] for r in runs) for k in runs[0]["cpu"]}
    return out


def bullet_worker(n, frames) -> dict:
    """Blender's own Bake to Keyframes of the chain (its active bodies selected), timed."""
    import bpy

    out = {"rig": "chain", "n": n, "frames": frames, "build": build("chain", n)}
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    cubes = [ob for ob in scene.objects if ob.rigid_body is not None and ob.rigid_body.type == "ACTIVE"]
    _add_active_bodies(op, cubes)
    window = bpy.context.window_manager.windows[0]  # (as from the 3D viewport's Object menu: its keying needs an area)
    area = next(a for a in window.screen.areas if a.type == "VIEW_3D")
    region = next(r for r in area.regions if r.type == "WINDOW")
    with bpy.context.temp_override(window=window, area=area, region=region):
        t0 = time.perf_counter()
        result = _quiet(lambda: bpy.ops.rigidbody.bake_to_keyframes(frame_start=1, frame_end=frames))
        out["bake_to_keyframes"] = time.perf_counter() - t0
    out["result"] = sorted(result)
    return out


def _spawn(args, timeout):
    """Run this script as a worker in a new process; returns its JSON result (or an error)."""
    import bpy

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="redmax_blender_"))
    if bpy.app.binary_path and Path(bpy.app.binary_path).name.startswith("blender"):
        cmd = [bpy.app.binary_path, "-b", "--factory-startup", "-P", __file__, "--", *args]
    else:
        cmd = [sys.executable, __file__, *args]
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    for line in reversed(run.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    return {"error": f"exit {run.returncode}: {(run.stderr or run.stdout)[-400:]}"}


# ------------------------------------------------------------------- report
def slope(ns, ts):
    pts = [(x, t) for x, t in zip(ns, ts) if x >= MIN_FIT and t > 0]
    if len(pts) < 2:
        return math.nan
    import numpy as np

    ln, lt = np.log(np.array(pts, dtype=float)).T
    return float(np.polyfit(ln, lt, 1)[0])


def write_report(rows, bullet, out: Path, quick: bool, command: str = "") -> Path:
    """DIR/bake-scale.csv, .png and .md of the measured ``rows`` and ``bullet``; ``command``: the run's options
    after ``bake-scale`` (named in the report)."""
    import csv

    out.mkdir(parents=True, exist_ok=True)
    cpu_columns = [f"cpu {k}" for k in (*STAGES, "bake", "clear", "clear update")]
    columns = ["rig", "n", "objects", "bones", "frames", "build", *STAGES, "bake", "clear", "clear update", "first_bake",
               *cpu_columns,
               "round_trip_differences", "error"]
    with open(out / "bake-scale.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({**r, "first_bake": r.get("first", {}).get("bake", ""),
                        **{f"cpu {k}": v for k, v in r.get("cpu", {}).items()}})
        for b in bullet:
            w.writerow({"rig": "chain (Bake to Keyframes)", "n": b["n"], "frames": b.get("frames"),
                        "build": b.get("build", ""), "bake": b.get("bake_to_keyframes", ""), "error": b.get("error", "")})
    _plot(rows, out / "bake-scale.png")
    (out / "bake-scale.md").write_text(_markdown(rows, bullet, quick, command))
    return out / "bake-scale.md"


def _slopes_line(title, rows, seconds) -> str:
    """Fitted slopes of each stage, Clear Bake without its scene update, the scene updates and the whole bake."""
    series = {s: [seconds(r)[s] for r in rows] for s in STAGES}
    series["clear (without its scene update)"] = [seconds(r)["clear"] - seconds(r)["clear update"] for r in rows]
    series["clear's scene update"] = [seconds(r)["clear update"] for r in rows]
    series["bake"] = [seconds(r)["bake"] for r in rows]
    ns = [r["n"] for r in rows]
    return f"{title} over n ≥ {MIN_FIT}: " + ", ".join(f"{k} {slope(ns, v):.2f}" for k, v in series.items())


def _cell(x, digits=3):
    return "—" if x in (None, "") or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.{digits}g}"


def _markdown(rows, bullet, quick, command="") -> str:
    from addon._engine import bench  # (report helpers: the machine line)
    import importlib

    report = importlib.import_module(f"{bench.__name__}.report")
    import bpy

    lines = ["# Bake scale: a bake's Blender side against the object count", "",
             f"Machine: {report.machine_summary()}; Blender {bpy.app.version_string}. "
             f"Command: `python scripts/blender_bench.py bake-scale{' --quick' if quick else ''}{command}` "
             "(rigs and method: `scripts/bake_scale.py`). Seconds; the minimum of three bakes in one session "
             "(the first bake of a session, which also loads the compiled kernels, in its own column; every bake "
             "reads its collision shapes afresh: `bake_scale.forget_shapes`); "
             f"{rows[0]['frames'] if rows else FRAMES} frames at 24 fps, PCG, 2 substeps.", ""]
    for rig in RIGS:
        rs = [r for r in rows if r["rig"] == rig]
        if not rs:
            continue
        lines += [f"## {rig}", "", "| n | objects | build | read | simulate | write keys | detach | scene update | "
                  "bake | simulate share | first bake | Clear Bake (scene update) |", "|" + "---|" * 12]
        for r in rs:
            if "error" in r:
                lines.append(f"| {r['n']} | — | {r['error'][:80]} |" + " |" * 9)
                continue
            share = r["simulate"] / r["bake"] if r["bake"] else math.nan
            lines.append(f"| {r['n']} | {r['objects']} | {_cell(r['build'])} | "
                         + " | ".join(_cell(r[s]) for s in STAGES)
                         + f" | {_cell(r['bake'])} | {100 * share:.0f} % | {_cell(r['first']['bake'])} | "
                           f"{_cell(r['clear'])} ({_cell(r['clear update'])}) |")
        ok = [r for r in rs if "error" not in r]
        lines += ["", _slopes_line("log-log slopes", ok, lambda r: r), "",
                  "The same bakes in CPU seconds of the Blender process (`time.process_time`: on a shared machine it "
                  "moves less with the load than the wall clock; Blender's own threads count too):", "",
                  "| n | read | simulate | write keys | detach | scene update | bake | simulate share | "
                  "Clear Bake (scene update) |", "|" + "---|" * 9]
        for r in ok:
            c = r["cpu"]
            lines.append(f"| {r['n']} | " + " | ".join(_cell(c[s]) for s in STAGES)
                         + f" | {_cell(c['bake'])} | {100 * c['simulate'] / c['bake']:.0f} % | {_cell(c['clear'])} "
                           f"({_cell(c['clear update'])}) |")
        lines += ["", _slopes_line("CPU log-log slopes", ok, lambda r: r["cpu"]), ""]
        checked = [r for r in ok if "round_trip_differences" in r]
        for r in checked:
            lines += [f"Round trip (bake, Clear Bake) at n = {r['n']}: {r['round_trip_differences']} differences "
                      "in every RNA property of every object, rigid body, constraint and of the rigid body world "
                      "(`tests/blender_rigs.scene_snapshot`).", ""]
    if bullet:
        ours = {r["n"]: r for r in rows if r["rig"] == "chain" and "error" not in r}
        lines += ["## Beside Blender's *Bake to Keyframes* (the chain)", "",
                  "| n | RedMax bake (first of a session) | RedMax bake | Bake to Keyframes | ratio |", "|---|---|---|---|---|"]
        for b in bullet:
            r = ours.get(b["n"])
            theirs = b.get("bake_to_keyframes")
            ratio = f"{theirs / r['bake']:.0f}×" if r and theirs else "—"
            lines.append(f"| {b['n']} | {_cell(r['first']['bake']) if r else '—'} | {_cell(r['bake']) if r else '—'} | "
                         f"{_cell(theirs) if theirs else b.get('error', '—')} | {ratio} |")
        lines += ["", "*Bake to Keyframes* steps Bullet through the frames, then keys every object frame by frame "
                  "(`anim.keyframe_insert_by_name`, a view-layer update each), then removes the objects from the "
                  "simulation; RedMax keys each object's F-curves in one pass.", ""]
    return "\n".join(lines)


def _plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    rigs = [rig for rig in RIGS if any(r["rig"] == rig and "error" not in r for r in rows)]
    if not rigs:
        return
    fig, axes = plt.subplots(1, len(rigs), figsize=(5 * len(rigs), 4.5), squeeze=False)
    for ax, rig in zip(axes[0], rigs):
        rs = [r for r in rows if r["rig"] == rig and "error" not in r]
        ns = np.array([r["n"] for r in rs], float)
        for stage in (*STAGES, "clear", "bake"):  # (Clear Bake with its scene update)
            ts = np.array([max(r[stage], 1e-5) for r in rs])
            ax.loglog(ns, ts, "o-", markersize=3, label=f"{stage} ({slope(ns, ts):.2f})")
        ax.set_title(f"{rig}: seconds (slope from n = {MIN_FIT})")
        ax.set_xlabel("bodies n")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------- main
def run(out: Path, quick: bool = False, rigs=None, sizes=None) -> Path:
    """Measure every rig and size (or only ``rigs`` and ``sizes``) and Bake to Keyframes (not with ``rigs`` or
    ``sizes``: a partial run), then write the report; returns the markdown's path."""
    partial = rigs is not None or sizes is not None
    command = (f" --rigs {' '.join(rigs)}" if rigs else "") + (f" --sizes {' '.join(map(str, sizes))}" if sizes else "")
    unknown = set(rigs or ()) - set(RIGS)
    if unknown:
        raise ValueError(f"bake-scale: unknown rig(s) {', '.join(sorted(unknown))} (rigs: {', '.join(RIGS)})")
    frames = QUICK_FRAMES if quick else FRAMES
    sizes = tuple(sizes) if sizes else QUICK_SIZES if quick else SIZES
    rigs = tuple(r for r in RIGS if rigs is None or r in rigs)
    check_at = max((n for n in sizes if n <= 1000), default=None)
    rows, bullet = [], []
    for n in sizes:  # (sizes interleaved across rigs: a load change on the machine touches all of them alike)
        for rig in rigs:
            print(f"bake-scale: {rig} n = {n}", flush=True)
            r = _spawn(["--worker", rig, str(n), str(frames), *(["--check"] if rig == "chain" and n == check_at else [])],
                       timeout=3600)
            rows.append({"rig": rig, "n": n, "frames": frames, **r})
    rows.sort(key=lambda r: (RIGS.index(r["rig"]), r["n"]))
    for n in () if partial else QUICK_SIZES[:2] if quick else BULLET_SIZES:
        print(f"bake-scale: Bake to Keyframes, chain n = {n}", flush=True)
        bullet.append({"n": n, **_spawn(["--bullet", str(n), str(frames)], timeout=7200)})
    return write_report(rows, bullet, out, quick, command)


def _worker_main(argv) -> int:
    if "BLENDER_USER_RESOURCES" not in os.environ:
        os.environ["BLENDER_USER_RESOURCES"] = tempfile.mkdtemp(prefix="redmax_blender_")  # recipes §1
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", nargs=3, metavar=("RIG", "N", "FRAMES"))
    ap.add_argument("--bullet", nargs=2, metavar=("N", "FRAMES"))
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    if args.worker:
        result = worker(args.worker[0], int(args.worker[1]), int(args.worker[2]), args.check)
    else:
        result = bullet_worker(int(args.bullet[0]), int(args.bullet[1]))
    print("RESULT " + json.dumps(result), flush=True)
    sys.stdout.flush()
    os._exit(0)  # (no teardown: Bake to Keyframes' result can crash Blender when the scene is freed)


if __name__ == "__main__":
    sys.exit(_worker_main(sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[1:]))
