"""Polyscope structures for a viewer session: body boxes (one mesh), joints (points), springs and
cables (a curve network coloured by tension), loop closures, moving loads (the car), the drag, and the
static colliders (one fixed mesh: stairs, posts, floors).

``SceneRenderer(session)`` registers them (``build``, again after a rebuild) and
``update()`` moves them to the session's current state. The ground is
polyscope's ground plane under the scene's initial bounding box (fixed, so it
does not follow the bodies). Radii are relative to that box.
"""
from __future__ import annotations

import numpy as np
import polyscope as ps

from .frame import static_geometry
from .session import ViewerSession

BODY_COLOR = (0.22, 0.45, 0.85)       # steel blue; tests look for it in screenshots
JOINT_COLOR = (0.12, 0.12, 0.12)
CLOSURE_COLOR = (0.10, 0.75, 0.25)
CAR_COLOR = (0.98, 0.78, 0.05)
DRAG_COLOR = (0.90, 0.10, 0.60)
SLACK_COLOR = np.array([0.62, 0.62, 0.62])   # cables without tension
LOW_TENSION = np.array([1.00, 0.80, 0.35])   # → HIGH_TENSION as tension reaches the largest seen so far
HIGH_TENSION = np.array([0.75, 0.00, 0.00])

STATIC_COLOR = (0.55, 0.55, 0.52)
BODIES, JOINTS, PAIRS, CLOSURES, DRAG = "bodies", "joints", "springs and cables", "loop closures", "drag"
STATICS = "static colliders"


def tension_colors(tension: np.ndarray, tension_only: np.ndarray, scale: float) -> np.ndarray:
    """(m, 3) RGB per spring/cable: grey when slack, light orange → dark red with |tension| / scale."""
    s = np.clip(np.abs(tension) / max(scale, 1e-300), 0.0, 1.0)[:, None]
    colors = (1 - s) * LOW_TENSION + s * HIGH_TENSION
    colors[tension_only & (tension <= 0)] = SLACK_COLOR
    return colors


class SceneRenderer:
    """Draws one ViewerSession; ``update()`` each frame, ``build()`` after the scene changed."""

    def __init__(self, session: ViewerSession):
        self.session = session
        self.build()

    def build(self) -> None:
        s = self.session
        ps.remove_all_structures()
        self.version = s.scene_version
        f = s.frame()
        self.max_tension = float(np.abs(f.tension).max(initial=0.0))
        static_v, static_f = static_geometry(s.scene)
        pts = [f.box_vertices, f.pair_a, f.pair_b, f.closure_a, f.joints, static_v]
        allp = np.concatenate([p for p in pts if len(p)])
        lo, hi = allp.min(axis=0), allp.max(axis=0)
        pad = 0.05 * max(np.linalg.norm(hi - lo), 1e-3)
        lo, hi = lo - pad, hi + pad
        ps.set_automatically_compute_scene_extents(False)
        ps.set_bounding_box(lo, hi)
        ps.set_length_scale(float(np.linalg.norm(hi - lo)))
        self.bodies = ps.register_surface_mesh(BODIES, f.box_vertices, s.shapes.faces, color=BODY_COLOR,
                                               smooth_shade=False, edge_width=0.0)
        self.statics = (ps.register_surface_mesh(STATICS, static_v, static_f, color=STATIC_COLOR, smooth_shade=False,
                                                 edge_width=0.0) if len(static_f) else None)
        self.joints = (ps.register_point_cloud(JOINTS, f.joints, radius=0.004, color=JOINT_COLOR)
                       if len(f.joints) else None)
        m = len(f.tension)
        self.pairs = None
        if m:
            nodes = np.empty((2 * m, 3))
            nodes[0::2], nodes[1::2] = f.pair_a, f.pair_b
            self.pairs = ps.register_curve_network(PAIRS, nodes, np.arange(2 * m).reshape(m, 2), radius=0.0015)
        c = len(f.closure_a)
        self.closures = (ps.register_point_cloud(CLOSURES, np.vstack([f.closure_a, f.closure_b]), radius=0.007,
                                                 color=CLOSURE_COLOR) if c else None)
        self.loads = [ps.register_point_cloud(f"car {load.name}", np.zeros((1, 3)), radius=0.012, color=CAR_COLOR)
                      for load in s.scene.moving_loads]
        self.drag = ps.register_curve_network(DRAG, np.zeros((2, 3)), np.array([[0, 1]]), radius=0.002,
                                              color=DRAG_COLOR, enabled=False)
        self.update(f)
        self.look_at_scene(lo, hi)

    def look_at_frames(self, frames, covered_right: float = 0.0) -> None:
        """Point the camera at everything the bodies cover over ``frames`` (e.g. a recording);
        ``covered_right``: pixels on the right hidden by a panel."""
        boxes = np.concatenate([f.box_vertices for f in frames])
        self.look_at_scene(boxes.min(axis=0), boxes.max(axis=0), covered_right)

    @staticmethod
    def look_at_scene(lo, hi, covered_right: float = 0.0, vertical_fov_deg: float = 45.0) -> None:
        """Camera that fits the box lo–hi into the view left of ``covered_right`` pixels: looking across
        its thinner horizontal side (a bridge from the front, a chain swinging in the yz plane from the
        side), a little from the side and above."""
        lo, hi = np.asarray(lo, float), np.asarray(hi, float)
        center, ext = 0.5 * (lo + hi), np.maximum(hi - lo, 1e-3)
        view = np.array([0.3, -1.0, 0.5]) if ext[1] <= ext[0] else np.array([-1.0, -0.3, 0.5])
        view /= np.linalg.norm(view)  # from the target towards the camera
        right = np.cross([0.0, 0.0, 1.0], view)
        right /= np.linalg.norm(right)
        up = np.cross(view, right)
        corners = (np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)]) - 0.5) * ext
        half_w, half_h = np.abs(corners @ right).max(), np.abs(corners @ up).max()
        half_d = np.abs(corners @ view).max()
        w, h = ps.get_window_size()
        free = float(np.clip(1.0 - covered_right / max(w, 1), 0.3, 1.0))  # fraction of the width left free
        tan_v = np.tan(np.radians(vertical_fov_deg) / 2)
        tan_h = tan_v * w / max(h, 1)
        distance = 1.1 * max(half_h / tan_v, half_w / (tan_h * free)) + half_d
        target = center + (1.0 - free) * distance * tan_h * right  # the scene sits in the middle of the free part
        ps.look_at(target + distance * view, target)

    def update(self, frame=None) -> None:
        """Move everything to the session's state (``frame``: an already computed ``session.frame()``)."""
        s = self.session
        if s.scene_version != self.version:
            self.build()
            return
        f = frame if frame is not None else s.frame()
        self.bodies.update_vertex_positions(f.box_vertices)
        if self.joints is not None:
            self.joints.update_point_positions(f.joints)
        if self.pairs is not None:
            nodes = np.empty((2 * len(f.tension), 3))
            nodes[0::2], nodes[1::2] = f.pair_a, f.pair_b
            self.pairs.update_node_positions(nodes)
            self.max_tension = max(self.max_tension, float(np.abs(f.tension).max(initial=0.0)))
            self.pairs.add_color_quantity("tension", tension_colors(f.tension, s.shapes.tension_only, self.max_tension),
                                          defined_on="edges", enabled=True)
        if self.closures is not None:
            self.closures.update_point_positions(np.vstack([f.closure_a, f.closure_b]))
        for cloud, x, active in zip(self.loads, f.loads, f.loads_active):
            cloud.set_enabled(bool(active))
            if active:
                cloud.update_point_positions(x[None, :])
        line = s.drag_line()
        self.drag.set_enabled(line is not None)
        if line is not None:
            self.drag.update_node_positions(np.array(line))
