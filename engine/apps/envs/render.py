"""Images of an imitation environment drawn by the desktop viewer's renderer (``engine.apps.viewer``, polyscope).

``FrameRenderer(sim)`` draws the character's bodies as the viewer does (steel-blue boxes, joints),
the floor at z = 0 and a camera that follows the root from the side; ``frame(q)`` returns an RGB
image. ``contact_sheet(images, labels, path)`` tiles images into one PNG. Needs the ``viewer``
extra (polyscope, imageio); headless (EGL) as the viewer's ``--screenshot``.
"""
from __future__ import annotations

import numpy as np


class _Still:
    """The part of ``engine.apps.viewer.ViewerSession`` that ``SceneRenderer`` reads: a scene at a given q."""

    def __init__(self, scene, shapes, q):
        self.scene, self.shapes, self.q = scene, shapes, np.array(q, float)
        self.scene_version = 1

    def drag_line(self):
        return None  # nobody drags a body here

    def frame(self):
        from ..viewer import frame_geometry
        return frame_geometry(self.scene, self.shapes, self.q, 0.0)


class FrameRenderer:
    """Headless images of ``sim`` (an ``ImitationSim``) at any configuration; ``distance``: camera distance (m)."""

    def __init__(self, sim, resolution=(480, 400), distance: float | None = None):
        import polyscope as ps

        from ..viewer import SceneRenderer, init_polyscope, scene_shapes

        self.sim = sim
        init_polyscope(headless=True, resolution=resolution)
        self._still = _Still(sim.scene, scene_shapes(sim.scene), sim.ref.q[0])
        self.renderer = SceneRenderer(self._still)
        ps.set_ground_plane_height_mode("manual")
        ps.set_ground_plane_height(0.0)
        height = float(sim.scene.metadata.get("standing_height", 0.3))
        self.distance = distance if distance is not None else max(4.0 * height, 1.5)
        self._ps = ps

    def frame(self, q) -> np.ndarray:
        """RGB image (h, w, 3) uint8 of the character at q (nq,), seen from its right side, slightly from the front."""
        ps = self._ps
        self._still.q = np.array(q, float)
        self.renderer.update(self._still.frame())
        root = self._still.q[:3]
        target = np.array([root[0], root[1], 0.55 * max(root[2], 0.1)])
        view = np.array([0.35, -1.0, 0.35])
        ps.look_at(target + self.distance * view / np.linalg.norm(view), target)
        buf = ps.screenshot_to_buffer(transparent_bg=False, include_UI=False)
        return np.ascontiguousarray(buf[:, :, :3])

    def close(self) -> None:
        self._ps.remove_all_structures()


def contact_sheet(images, labels, path, columns: int = 5, title: str = "") -> None:
    """Tile ``images`` (same size) with a caption each into a PNG at ``path`` (matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(images)
    rows = (n + columns - 1) // columns
    h, w = images[0].shape[:2]
    fig, axes = plt.subplots(rows, columns, figsize=(columns * 2.4, rows * 2.4 * h / w + (0.4 if title else 0)),
                             squeeze=False)
    for ax in axes.ravel():
        ax.axis("off")
    for ax, img, lab in zip(axes.ravel(), images, labels):
        ax.imshow(img)
        ax.set_title(lab, fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
