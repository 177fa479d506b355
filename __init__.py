"""Blender extension entry point: the repository root is the extension package.

Imports nothing from Blender at import time; ``register``/``unregister``
forward to ``addon`` (see blender_manifest.toml).
"""


def register():
    from . import addon

    addon.register()


def unregister():
    from . import addon

    addon.unregister()
