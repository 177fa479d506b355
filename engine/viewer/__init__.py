"""Desktop visual simulator: ``python -m engine view SCENE`` (docs/viewer.md).

Modules: ``session`` (the viewer's state and every UI action, no window),
``frame`` (what to draw, as arrays), ``render`` (polyscope structures),
``app`` (window, panels and live plots, screenshot, recording, benchmark),
``cli`` (the ``view`` command). Only ``render`` and ``app`` import polyscope,
so this package imports without it.
"""
from .session import (
    SCENES,
    SceneParams,
    SceneSource,
    ViewerSession,
    available_scenes,
    build_scene,
)

__all__ = ["ViewerSession", "SceneSource", "SceneParams", "SCENES", "available_scenes", "build_scene"]
