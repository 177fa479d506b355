"""Desktop visual simulator: ``python -m engine view SCENE`` (docs/viewer.md).

Modules: ``session`` (the viewer's state and every UI action, no window),
``frame`` (what to draw, as arrays), ``render`` (polyscope structures),
``app`` (window, panels and live plots, screenshot, recording, benchmark),
``cli`` (the ``view`` command). Only ``render`` and ``app`` import polyscope,
so this package imports without it.
"""
from .frame import frame_geometry, scene_shapes
from .session import (
    SCENES,
    SceneParams,
    SceneSource,
    ViewerSession,
    available_scenes,
    build_scene,
)

__all__ = ["ViewerSession", "SceneSource", "SceneParams", "SCENES", "available_scenes", "build_scene", "frame_geometry",
           "scene_shapes", "SceneRenderer", "init_polyscope"]


def __getattr__(name):
    """``SceneRenderer`` and ``init_polyscope`` import polyscope: loaded on first use only."""
    if name == "SceneRenderer":
        from .render import SceneRenderer
        return SceneRenderer
    if name == "init_polyscope":
        from .app import init_polyscope
        return init_polyscope
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
