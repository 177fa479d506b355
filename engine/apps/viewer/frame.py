"""What the viewer draws, as plain arrays (no window): body boxes, joints, springs and cables with
their tension, loop closures and moving loads (the bridge's car) at a configuration q; and, fixed, the
static colliders (``static_geometry``: mesh colliders as their triangles, convex ones as their boxes).

Bodies are drawn as boxes. A body's ``shape`` decides it: a box shape is drawn as
it is (``size``, ``center`` and ``rotation`` in the link frame), a sphere as its
bounding cube, a capsule as its bounding box along its axis. A body without a
shape gets the solid box with its mass and principal moments
(``geometry.equivalent_box``, as the Blender demo does), centred on the centre of
mass along the principal axes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...algorithms.kinematics import link_poses
from ...contact.shapes import BOX, SPHERE, parse_shape
from ...errors import ModelError
from ...geometry import equivalent_box
from ...scene import WORLD, Scene

MIN_EDGE = 0.01  # m: boxes thinner than this are drawn at this thickness (as in the Blender demo)

# unit cube corners (±1) and its 12 outward-facing triangles
CUBE_CORNERS = np.array([[x, y, z] for z in (-1, 1) for y in (-1, 1) for x in (-1, 1)], dtype=float)


def _cube_faces() -> np.ndarray:
    quads = [(0, 2, 6, 4), (1, 3, 7, 5), (0, 1, 5, 4), (2, 3, 7, 6), (0, 1, 3, 2), (4, 5, 7, 6)]  # −x +x −y +y −z +z
    tris = []
    for a, b, c, d in quads:
        for t in ((a, b, c), (a, c, d)):
            p = CUBE_CORNERS[list(t)]
            normal = np.cross(p[1] - p[0], p[2] - p[0])
            tris.append(t if normal @ p.mean(axis=0) > 0 else (t[0], t[2], t[1]))
    return np.array(tris, dtype=np.int64)


CUBE_FACES = _cube_faces()


def body_box_size(model, i: int) -> np.ndarray:
    """Edge lengths (3,) of body i's drawn box (m)."""
    return 2.0 * drawn_box(model, i)[0]


def drawn_box(model, i: int):
    """(half sizes (3,), centre (3,), axes (3, 3)) of body i's drawn box, centre and axes in its
    body frame (COM, principal axes)."""
    shape = model.body_shapes[i]
    try:
        s = parse_shape(shape, model.body_com[i], "shape") if shape else None
    except (ModelError, TypeError, ValueError):  # an unusable shape is drawn as the equivalent box
        s = None
    Rb, com = model.body_rotation[i], model.body_com[i]
    if s is None:
        half = 0.5 * equivalent_box(float(model.body_mass[i]), model.body_principal_inertia[i])
        return np.maximum(half, 0.5 * MIN_EDGE), np.zeros(3), np.eye(3)
    if s.kind == BOX:
        half, axes = s.half, s.rotation
    elif s.kind == SPHERE:
        half, axes = np.full(3, s.radius), np.eye(3)
    else:  # capsule: x along its axis
        t1 = np.cross(s.axis, [1.0, 0, 0] if abs(s.axis[0]) < 0.9 else [0, 1.0, 0])
        t1 /= np.linalg.norm(t1)
        axes = np.column_stack([s.axis, t1, np.cross(s.axis, t1)])
        half = np.array([s.half[0] + s.radius, s.radius, s.radius])
    return np.maximum(half, 0.5 * MIN_EDGE), Rb.T @ (s.center - com), Rb.T @ axes


@dataclass
class SceneShapes:
    """What stays fixed while a scene plays. n bodies, m pairs."""

    half_size: np.ndarray     # (n, 3) half edge lengths of each body's box (m)
    box_center: np.ndarray    # (n, 3) the box's centre in the body frame (m)
    box_axes: np.ndarray      # (n, 3, 3) the box's axes in the body frame
    faces: np.ndarray         # (12 n, 3) triangles of all boxes; triangle f belongs to body f // 12
    movable: np.ndarray       # (n,) bool: some joint between the body and the world moves
    joint_bodies: np.ndarray  # (k,) bodies whose inboard joint moves (a joint marker at their link origin)
    tension_only: np.ndarray  # (m,) bool: cable (True) or spring/damper (False)

    @property
    def n_bodies(self) -> int:
        return self.half_size.shape[0]


def scene_shapes(scene: Scene) -> SceneShapes:
    model = scene.model
    n = model.n_bodies
    boxes = [drawn_box(model, i) for i in range(n)]
    half = np.array([b[0] for b in boxes]).reshape(n, 3)
    centers = np.array([b[1] for b in boxes]).reshape(n, 3)
    axes = np.array([b[2] for b in boxes]).reshape(n, 3, 3)
    faces = (CUBE_FACES[None, :, :] + 8 * np.arange(n)[:, None, None]).reshape(-1, 3)
    movable = np.zeros(n, dtype=bool)
    for i in range(n):  # parents come first
        p = int(model.body_parent[i])
        movable[i] = model.joint_nv[i] > 0 or (p >= 0 and movable[p])
    tension_only = np.array([pair[7] for pair in scene.pairs], dtype=bool)
    return SceneShapes(half, centers, axes, faces, movable, np.flatnonzero(model.joint_nv > 0), tension_only)


def static_geometry(scene: Scene):
    """(vertices (v, 3), triangles (t, 3)) of the scene's static colliders in world coordinates: a mesh
    collider's own triangles, a convex collider's parts as their bounding boxes (as bodies are drawn); a plane
    is the viewer's ground. Empty arrays when there is none."""
    verts, faces = [], []
    count = 0
    for collider in getattr(scene, "static_colliders", ()):
        if collider.mesh is not None:
            parts = [(np.asarray(collider.mesh.vertices, float), np.asarray(collider.mesh.triangles, np.int64))]
        else:
            parts = []
            for shape in collider.parts:
                half = np.asarray(shape.half, float) if shape.kind == BOX else np.full(3, float(shape.radius))
                if shape.kind != BOX and shape.vertices is not None:  # a hull: its extent along the shape axes
                    local = (np.asarray(shape.vertices, float) - shape.center) @ shape.rotation
                    half = np.abs(local).max(axis=0)
                corners = shape.center + (CUBE_CORNERS * np.maximum(half, 0.5 * MIN_EDGE)) @ np.asarray(shape.rotation).T
                parts.append((corners, CUBE_FACES))
        for v, f in parts:
            verts.append(v)
            faces.append(f + count)
            count += len(v)
    if not verts:
        return np.zeros((0, 3)), np.zeros((0, 3), np.int64)
    return np.vstack(verts), np.vstack(faces)


@dataclass
class Frame:
    """The scene at one instant, in world coordinates (m)."""

    body_rotation: np.ndarray  # (n, 3, 3) body frame → world
    body_position: np.ndarray  # (n, 3) centres of mass
    box_rotation: np.ndarray   # (n, 3, 3) each drawn box's axes → world
    box_position: np.ndarray   # (n, 3) each drawn box's centre
    box_vertices: np.ndarray   # (8 n, 3)
    joints: np.ndarray         # (k, 3) joint positions (link origins of bodies with moving joints)
    pair_a: np.ndarray         # (m, 3) spring/cable attachment points
    pair_b: np.ndarray         # (m, 3)
    tension: np.ndarray        # (m,) N: k (ℓ − L), 0 for a slack cable, < 0 for a compressed spring
    closure_a: np.ndarray      # (c, 3) loop-closure points on body a and body b (apart = drift)
    closure_b: np.ndarray      # (c, 3)
    loads: np.ndarray          # (l, 3) where each moving load acts (NaN while it is off its path)

    @property
    def loads_active(self) -> np.ndarray:
        return np.isfinite(self.loads[:, 0])


def _points(R, p, bodies, points) -> np.ndarray:
    """World positions (m, 3) of link-frame points on bodies (−1: already world)."""
    out = np.array(points, float).reshape(-1, 3)
    on_body = bodies >= 0
    if on_body.any():
        b = bodies[on_body]
        out[on_body] = p[b] + np.einsum("mij,mj->mi", R[b], out[on_body])
    return out


def frame_geometry(scene: Scene, shapes: SceneShapes, q, t: float) -> Frame:
    """Everything to draw at configuration q (nq,) and time t (s)."""
    model = scene.model
    R_link, p_link = link_poses(model, q)
    R = R_link @ model.body_rotation
    p = p_link + np.einsum("nij,nj->ni", R_link, model.body_com)
    box_R = R @ shapes.box_axes
    box_p = p + np.einsum("nij,nj->ni", R, shapes.box_center)
    corners = CUBE_CORNERS[None, :, :] * shapes.half_size[:, None, :]  # (n, 8, 3) box frame
    verts = (np.einsum("nij,nkj->nki", box_R, corners) + box_p[:, None, :]).reshape(-1, 3)
    a, b, la, lb, k, _, rest, tension_only = scene.pair_arrays()
    xa, xb = _points(R_link, p_link, a, la), _points(R_link, p_link, b, lb)
    stretch = np.linalg.norm(xb - xa, axis=1) - rest
    tension = np.where(tension_only & (stretch <= 0), 0.0, k * stretch)
    cl = scene.loop_closures
    ca = _points(R_link, p_link, np.array([c.body_a for c in cl], np.int64), [c.point_a for c in cl])
    cb = _points(R_link, p_link, np.array([c.body_b for c in cl], np.int64), [c.point_b for c in cl])
    loads = np.full((len(scene.moving_loads), 3), np.nan)
    for i, load in enumerate(scene.moving_loads):
        body, x = load.at(t)
        if body != WORLD:
            loads[i] = p_link[body] + R_link[body] @ x
    return Frame(R, p, box_R, box_p, verts, p_link[shapes.joint_bodies], xa, xb, tension, ca, cb, loads)
