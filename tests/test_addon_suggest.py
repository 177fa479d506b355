"""Suggest Settings in the real bpy wheel: the advisor's pick fills the panel and bakes stably."""
import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

if "BLENDER_USER_RESOURCES" not in os.environ:  # before `import bpy` (recipes §1)
    _user_dir = tempfile.mkdtemp(prefix="redmax_blender_")
    atexit.register(shutil.rmtree, _user_dir, ignore_errors=True)
    os.environ["BLENDER_USER_RESOURCES"] = _user_dir
bpy = pytest.importorskip("bpy")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import addon  # noqa: E402
from addon import mapping  # noqa: E402

from engine.apps.advise import Trial  # noqa: E402

LINKS, FPS, FRAMES = 10, 24, 48
WASTEFUL = 16  # substeps the panel starts with (a step costs alike at any dt: 16 × one setting's work)


@pytest.fixture(scope="module", autouse=True)
def registered():
    addon.register()
    yield
    addon.unregister()


@pytest.fixture()
def chain_rig():
    bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = FPS, 1.0
    scene.frame_start, scene.frame_end = 1, FRAMES
    assert bpy.ops.redmax.add_demo_scene(scene="CHAIN", size=LINKS) == {"FINISHED"}
    s = scene.redmax
    s.solver, s.substeps = "DENSE", WASTEFUL  # stable but wasteful: the advice is needed
    return bpy.context


def _stable(ctx, solver, substeps):
    """The advisor's stability test (divergence, energy growth) over the whole frame range."""
    run = Trial(mapping.build(ctx).scene, solver, substeps, FPS).advance(FRAMES - 1)
    return run.stable, run


def test_suggested_settings_bake_the_chain_stably(chain_rig):
    ctx = chain_rig
    assert bpy.ops.redmax.suggest_settings() == {"FINISHED"}, ctx.scene.redmax.last_message
    s = ctx.scene.redmax
    assert s.last_message.startswith("Suggested")
    assert s.substeps < WASTEFUL, "the chain is stable with far fewer steps per frame (geometric stiffness)"
    stable, run = _stable(ctx, s.solver.lower(), s.substeps)
    assert stable, f"{s.solver} × {s.substeps}: {run.verdict} {run.detail}"
    assert bpy.ops.redmax.bake() == {"FINISHED"}, s.last_message
    assert s.last_frames == FRAMES
    # the baked links stay within the chain's reach of its pivot at every frame (a blow-up leaves it)
    reach = mapping.build(ctx).scene.model  # link lengths: the chain hangs from the origin
    links = [ob for ob in ctx.scene.objects if ob.redmax.is_baked]
    assert links
    for frame in range(1, FRAMES + 1, 4):
        ctx.scene.frame_set(frame)
        for ob in links:
            p = np.array(ob.matrix_world.translation)
            assert np.all(np.isfinite(p)) and np.linalg.norm(p) < 2.0 * LINKS * _link_length(reach)


def _link_length(model):
    origins = np.linalg.norm(np.asarray(model.joint_origin), axis=1)
    return float(origins.max()) or 1.0


def test_suggest_settings_names_the_problem_of_a_bad_rig():
    bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 1
    with pytest.raises(RuntimeError, match="frame range"):
        bpy.ops.redmax.suggest_settings()


def test_modal_progress_runs_work_in_slices_and_esc_cancels_untouched():
    """addon.modal.drive, shared by Bake and Suggest Settings, on the real window manager."""
    from types import SimpleNamespace

    from addon import modal

    def work(n, fail_at=None):
        for i in range(n):
            if i == fail_at:
                raise ValueError(f"step {i} failed")
            yield (i + 1) / n, f"step {i}"

    op, ctx = SimpleNamespace(_timer=None), bpy.context
    ends = dict(status=lambda v: v, cancel=lambda: {"CANCELLED"}, finish=lambda: {"FINISHED"})
    timer, esc, other = (SimpleNamespace(type=t) for t in ("TIMER", "ESC", "MOUSEMOVE"))
    steps = work(3)
    assert modal.drive(op, ctx, other, steps, **ends) == {"PASS_THROUGH"}
    assert modal.drive(op, ctx, timer, steps, **ends) == {"FINISHED"}  # 3 tiny steps fit in one slice
    steps = work(3)
    assert modal.drive(op, ctx, esc, steps, **ends) == {"CANCELLED"}
    assert next(steps) == (1 / 3, "step 0")  # ESC ran none of the work
    failed = []
    out = modal.drive(op, ctx, timer, work(3, fail_at=1), **ends, errors=(ValueError,),
                      fail=lambda err: failed.append(str(err)) or {"CANCELLED"})
    assert out == {"CANCELLED"} and failed == ["step 1 failed"]
