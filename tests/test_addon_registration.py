"""The add-on registers, unregisters and registers again in the real bpy wheel."""
import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

# Before `import bpy`: otherwise the import writes into ~/.config/blender (recipes §1).
if "BLENDER_USER_RESOURCES" not in os.environ:
    _user_dir = tempfile.mkdtemp(prefix="redmax_blender_")
    atexit.register(shutil.rmtree, _user_dir, ignore_errors=True)
    os.environ["BLENDER_USER_RESOURCES"] = _user_dir
bpy = pytest.importorskip("bpy")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import addon  # noqa: E402


def _registered():
    return hasattr(bpy.types, "REDMAX_PT_main")


def test_register_unregister_register_leaves_nothing_behind():
    addon.register()
    try:
        assert _registered()
        assert bpy.types.REDMAX_PT_main.bl_category == "RedMax"
    finally:
        addon.unregister()
    assert not _registered()
    addon.unregister()  # a second unregister is harmless
    addon.register()
    assert _registered()
    addon.unregister()
    assert not _registered()


def test_engine_is_importable_next_to_bpy():
    import engine

    m = engine.random_tree(3, seed=0)
    assert engine.crba(m, m.neutral_q()).shape == (m.nv, m.nv)
