"""RedMax Blender add-on: translation between Blender data and the engine (no physics here).

Modules: ``properties`` (settings stored in .blend files), ``mapping``
(Blender → engine scene), ``bake`` and ``keyframes`` (simulate, then write
F-curves in one pass), ``links`` (cables, springs, loop closures and their
curves), ``demo`` (engine scenes as Blender data), ``kernels`` (the first-bake
compile stage and *Compile Now* in the preferences), ``operators`` and ``ui``.
"""
from __future__ import annotations

import os

import bpy

if __package__ and __package__.startswith("bl_ext.") and "NUMBA_CACHE_DIR" not in os.environ:
    # compiled kernels are cached in the extension's user folder (set before the engine imports numba)
    os.environ["NUMBA_CACHE_DIR"] = bpy.utils.extension_path_user(__package__.rsplit(".", 1)[0], path="numba_cache", create=True)

from . import kernels, operators, preview, properties, suggest, ui  # noqa: E402  (after the cache directory is set)

CLASSES = (*properties.CLASSES, *operators.CLASSES, *kernels.CLASSES, *suggest.CLASSES, *ui.CLASSES)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    properties.register_pointers()
    preview.register()
    bpy.types.TOPBAR_MT_file_export.append(operators.menu_export)
    kernels.schedule_background()  # compile what a first bake would miss, once Blender is up (not in -b)


def unregister():
    kernels.cancel_background()
    if hasattr(bpy.types, "TOPBAR_MT_file_export"):
        bpy.types.TOPBAR_MT_file_export.remove(operators.menu_export)
    preview.unregister()
    properties.unregister_pointers()
    for cls in reversed(CLASSES):
        if getattr(cls, "is_registered", False):
            bpy.utils.unregister_class(cls)
