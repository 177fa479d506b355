"""RedMax Blender add-on: translation between Blender data and the engine (no physics here).

This first version registers the "RedMax" N-panel tab and reports the engine
and numba status; authoring, baking and demo scenes come with the add-on issue.
"""
from __future__ import annotations

import os

import bpy

if __package__ and __package__.startswith("bl_ext.") and "NUMBA_CACHE_DIR" not in os.environ:
    # compiled kernels are cached in the extension's user folder (set before the engine imports numba)
    os.environ["NUMBA_CACHE_DIR"] = bpy.utils.extension_path_user(__package__.rsplit(".", 1)[0], path="numba_cache", create=True)

try:  # inside the installed extension: <ext>.engine
    from .. import engine
except ImportError:  # running from a checkout with the repo root on sys.path
    import engine


class REDMAX_PT_main(bpy.types.Panel):
    bl_label = "RedMax"
    bl_idname = "REDMAX_PT_main"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "RedMax"

    def draw(self, context):
        col = self.layout.column()
        col.label(text=f"Engine {engine.__version__}")
        if engine.JIT_ENABLED:
            col.label(text="numba: on (compiled kernels)", icon="CHECKMARK")
        else:
            col.label(text="numba: off (pure-Python path, slower)", icon="INFO")


CLASSES = (REDMAX_PT_main,)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)


def unregister():
    for cls in reversed(CLASSES):
        if getattr(cls, "is_registered", False):
            bpy.utils.unregister_class(cls)
