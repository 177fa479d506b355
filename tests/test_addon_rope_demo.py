"""The rope demos (issue #22) in the real bpy wheel: built as Blender data, baked at 30 fps without substeps."""
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


@pytest.fixture(scope="module", autouse=True)
def registered():
    addon.register()
    yield
    addon.unregister()


@pytest.mark.parametrize("kind", ["ROPE", "ROPE_PINNED"])
def test_rope_demos_bake_at_30_fps_without_substeps(kind):
    bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
    ctx = bpy.context
    ctx.scene.render.fps = 30
    assert bpy.ops.redmax.add_demo_scene(scene=kind, size=48) == {"FINISHED"}
    ref = addon.demo.engine_scene(kind, 48)
    m = mapping.build(ctx)
    assert (m.scene.model.n_bodies, len(m.scene.loop_closures)) == (48, len(ref.loop_closures))
    ctx.scene.redmax.substeps = 1
    ctx.scene.frame_start, ctx.scene.frame_end = 1, 60
    assert bpy.ops.redmax.bake() == {"FINISHED"}, ctx.scene.redmax.last_message
    assert ctx.scene.redmax.last_frames == 60
    tip = bpy.data.objects["link24"]  # the middle: the pinned rope's ends stay put
    path = []
    for f in (1, 30, 60):
        ctx.scene.frame_set(f)
        path.append(np.array(tip.matrix_world.translation))
    assert np.isfinite(path).all()
    assert np.linalg.norm(path[2] - path[0]) > 0.1  # it visibly moves
