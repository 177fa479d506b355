"""The add-on registers, unregisters and registers again in the real bpy wheel."""

import pytest

bpy = pytest.importorskip("bpy")

import addon  # noqa: E402


def _registered():
    return hasattr(bpy.types, "REDMAX_PT_main")


def _leftovers():
    """Classes, properties and handlers of the add-on still present."""
    classes = [c.__name__ for c in addon.CLASSES if getattr(c, "is_registered", False)]
    props = [f"{o.__name__}.redmax" for o in (bpy.types.Scene, bpy.types.Object, bpy.types.Bone, bpy.types.EditBone)
             if hasattr(o, "redmax")]
    lists = {n: getattr(bpy.app.handlers, n) for n in dir(bpy.app.handlers) if not n.startswith("_")}
    handlers = [f"{n}:{fn.__name__}" for n, fns in lists.items() if isinstance(fns, list)
                for fn in fns if getattr(fn, "__module__", "").startswith("addon")]
    return classes + props + handlers


def test_register_unregister_register_leaves_nothing_behind():
    addon.register()
    try:
        assert _registered()
        assert bpy.types.REDMAX_PT_main.bl_category == "RedMax"
    finally:
        addon.unregister()
    assert not _registered() and _leftovers() == []
    addon.unregister()  # a second unregister is harmless
    addon.register()
    assert _registered() and len(_leftovers()) == len(addon.CLASSES) + 4 + len(addon.preview.HANDLERS)
    addon.unregister()
    assert not _registered() and _leftovers() == []


def test_engine_is_importable_next_to_bpy():
    import engine

    m = engine.random_tree(3, seed=0)
    assert engine.crba(m, m.neutral_q()).shape == (m.nv, m.nv)
