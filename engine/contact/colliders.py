"""What collides, as the compiled detection reads it: the bodies' shapes, the static colliders and the pair
filter, packed into flat arrays (``narrowphase.ShapeArrays``, ``StaticArrays``) once per simulator.

A *static collider* (``Scene.add_static_collider``) is a passive object in world coordinates: a plane
(the ground of ``Scene.set_ground`` is one), a triangle mesh (``static_mesh``) or a convex shape or
compound (the shape dicts of bodies). Its friction and restitution always have values (a shape on a
body may leave its own unset: the pair then takes the collider's).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelError
from ..geometry import BOX, CAPSULE, CONE, CONVEX, CYLINDER, SPHERE, ContactShape, collision_groups, memo, parse_shapes
from .narrowphase import ShapeArrays, StaticArrays
from .static_mesh import MeshData, triangle_bvh, validate_mesh

PLANE, MESH, SOLID = "plane", "mesh", "convex"


@dataclass(frozen=True)
class StaticCollider:
    """A passive collider (world coordinates). kind "plane" (normal·x = offset), "mesh" or "convex" (parts)."""

    name: str
    kind: str
    friction: float
    restitution: float
    groups: int = 1
    bodies: tuple | None = None           # body indices it touches (None: every body with a shape)
    normal: tuple = (0.0, 0.0, 1.0)       # plane
    offset: float = 0.0
    mesh: MeshData | None = None          # mesh
    parts: tuple = field(default=())      # convex: ContactShape in world coordinates
    margin: float = 0.0                   # mesh: triangles rounded by it


def _number(value, what: str, lo: float, hi: float) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = np.nan
    if not (np.isfinite(v) and lo <= v <= hi):
        bound = "≥ 0" if hi == np.inf else f"in [{lo:g}, {hi:g}]"
        raise ModelError(f"{what} must be {bound}, got {value!r}")
    return v


def static_collider(name: str, shape: dict, position, rotation, friction: float, restitution: float,
                    bodies) -> StaticCollider:
    """Validate a static collider (``Scene.add_static_collider``): shape dict of type "plane" (key
    "normal", through ``position``), "mesh" ("vertices", "triangles", optional "margin") or any body
    shape (convex, compound); position (3,), rotation (3, 3) place it in the world."""
    where = f"static collider '{name}'"
    if not isinstance(shape, dict):
        raise ModelError(f"{where}: shape must be a dict, got {shape!r}")
    p = np.asarray(position, float).reshape(3)
    R = np.asarray(rotation, float).reshape(3, 3)
    mu = _number(shape.get("friction", friction), f"{where}: friction", 0.0, np.inf)
    e = _number(shape.get("restitution", restitution), f"{where}: restitution", 0.0, 1.0)
    groups = collision_groups(shape.get("groups", 1), where)
    kind = str(shape.get("type", "")).lower()
    if kind == PLANE:
        n = np.asarray(shape.get("normal", (0.0, 0.0, 1.0)), float).reshape(-1)
        if n.shape != (3,) or not np.all(np.isfinite(n)) or np.linalg.norm(n) < 1e-12:
            raise ModelError(f"{where}: plane 'normal' must be 3 finite numbers, not all zero")
        n = R @ (n / np.linalg.norm(n))
        return StaticCollider(name, PLANE, mu, e, groups, bodies, tuple(n), float(n @ p))
    if kind == MESH:
        margin = _number(shape.get("margin", 0.0), f"{where}: margin", 0.0, np.inf)
        try:
            V = np.asarray(shape.get("vertices", ()), float).reshape(-1, 3)
        except (TypeError, ValueError):
            raise ModelError(f"{where}: mesh 'vertices' must be (n, 3) numbers") from None
        if not np.all(np.isfinite(V)):
            raise ModelError(f"{where}: mesh vertices must be finite")
        mesh = validate_mesh(p + V @ R.T, shape.get("triangles", ()), where)
        return StaticCollider(name, MESH, mu, e, groups, bodies, mesh=mesh, margin=margin)
    parts = parse_shapes(shape, np.zeros(3), where)
    world = tuple(ContactShape(s.kind, p + R @ s.center, R @ s.rotation, s.half, s.radius, R @ s.axis, mu, s.margin, e,
                               groups, None if s.vertices is None else p + s.vertices @ R.T, s.hull) for s in parts)
    return StaticCollider(name, SOLID, mu, e, groups, bodies, parts=world)


def _axis_frame(axis) -> np.ndarray:
    """A rotation whose third column is the unit ``axis``."""
    z = np.asarray(axis, float) / np.linalg.norm(axis)
    seed = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(seed, z)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


_FACES: dict = {}  # hull vertices' bytes (shape frame) → hull_faces (a thousand copies of one cube are one hull)


def hull_faces(local_vertices: np.ndarray):
    """Faces of a convex hull as polygons: (normals (F, 3), vertex lists counter-clockwise seen from
    outside). Coplanar triangles of qhull are merged into one polygon."""
    local_vertices = np.ascontiguousarray(local_vertices, dtype=float)
    key = (local_vertices.shape, local_vertices.tobytes())
    normals, polys = memo(_FACES, key, lambda: _hull_faces(local_vertices))
    return normals.copy(), [p.copy() for p in polys]


def _hull_faces(local_vertices: np.ndarray):
    import scipy.spatial

    hull = scipy.spatial.ConvexHull(local_vertices)
    eq = hull.equations  # (n, d) with n outward
    atol = 1e-9 * max(float(np.ptp(local_vertices, axis=0).max()), 1.0)
    groups: list[list[int]] = []
    reps = np.empty_like(eq)  # each group's first plane
    for k in range(len(eq)):  # (np.allclose's test against every group at once)
        close = np.all(np.abs(reps[:len(groups)] - eq[k]) <= atol + 1e-5 * np.abs(eq[k]), axis=1)
        hit = np.flatnonzero(close)
        if hit.size:
            groups[hit[0]].append(k)
        else:
            reps[len(groups)] = eq[k]
            groups.append([k])
    normals, polys = [], []
    for g in groups:
        n = eq[g[0], :3] / np.linalg.norm(eq[g[0], :3])
        vids = np.unique(hull.simplices[g].ravel())
        pts = local_vertices[vids]
        c = pts.mean(axis=0)
        u = pts[0] - c
        u /= np.linalg.norm(u)
        w = np.cross(n, u)
        angle = np.arctan2((pts - c) @ w, (pts - c) @ u)
        normals.append(n)
        polys.append(vids[np.argsort(angle)])
    return np.array(normals), polys


def _shape_row(s: ContactShape):
    """(kind, local_R, local_p, dims, rho, reach, hull vertices in the shape frame or None)."""
    m = s.margin
    if s.kind == SPHERE:
        return SPHERE, np.eye(3), s.center, np.zeros(3), s.radius, s.radius, None
    if s.kind == CAPSULE:
        h = s.half[0]
        return CAPSULE, _axis_frame(s.axis), s.center, np.array([0.0, 0.0, h]), s.radius, h + s.radius, None
    if s.kind == BOX:
        return BOX, s.rotation, s.center, s.half - m, m, float(np.linalg.norm(s.half)), None
    if s.kind == CYLINDER:
        r, h = s.radius, s.half[0]
        return CYLINDER, _axis_frame(s.axis), s.center, np.array([r - m, 0.0, h - m]), m, float(np.hypot(r, h)), None
    if s.kind == CONE:  # the inner parallel cone (``convex``): base up by m, apex down by m / sin(half angle)
        r, h = s.radius, s.half[0]
        sin_a = r / np.hypot(r, 2 * h)
        zb, za = -h + m, h - m / sin_a
        return CONE, _axis_frame(s.axis), s.center, np.array([(za - zb) * r / (2 * h), za, zb]), m, float(np.hypot(r, h)), None
    # the hull as parsed, in the shape frame: bit-identical for copies of one mesh wherever they sit (the round
    # trip from the link frame differs in the last bits with the centre, and each copy's faces were computed anew)
    local = s.hull if s.hull is not None else (s.vertices - s.center) @ s.rotation
    return CONVEX, s.rotation, s.center, np.zeros(3), m, float(np.linalg.norm(local, axis=1).max()) + m, local


def shape_arrays(body_shapes: list, statics: list) -> ShapeArrays:
    """ShapeArrays of body_shapes [(body, ContactShape), …] and the convex parts of the static colliders
    (their index in ``statics``)."""
    rows = [(b, -1, s) for b, s in body_shapes]
    rows += [(-1, c, s) for c, col in enumerate(statics) if col.kind == SOLID for s in col.parts]
    m = len(rows)
    kind, body, collider = np.zeros(m, np.int64), np.zeros(m, np.int64), np.zeros(m, np.int64)
    local_R, local_p, dims = np.zeros((m, 3, 3)), np.zeros((m, 3)), np.zeros((m, 3))
    rho, reach, mu, e = np.zeros(m), np.zeros(m), np.zeros(m), np.zeros(m)
    vstart, vcount, fstart, fcount, groups = (np.zeros(m, np.int64) for _ in range(5))
    hverts, fnorm, ffirst, fsize, findex = [], [], [], [], []
    nv = nf = nk = 0
    for i, (b, c, s) in enumerate(rows):
        kind[i], local_R[i], local_p[i], dims[i], rho[i], reach[i], local = _shape_row(s)
        body[i], collider[i] = b, c
        mu[i], e[i], groups[i] = s.friction, s.restitution, s.groups
        if local is not None:
            normals, polys = hull_faces(local)
            vstart[i], vcount[i], fstart[i], fcount[i] = nv, len(local), nf, len(polys)
            hverts.append(local)
            fnorm.append(normals)
            for poly in polys:
                ffirst.append(nk)
                fsize.append(len(poly))
                findex.extend(poly.tolist())
                nk += len(poly)
            nv += len(local)
            nf += len(polys)
    return ShapeArrays(kind, body, collider, local_R, local_p, dims, rho, reach, vstart, vcount, fstart, fcount, mu, e,
                       groups, np.concatenate(hverts) if hverts else np.zeros((0, 3)),
                       np.concatenate(fnorm) if fnorm else np.zeros((0, 3)), np.array(ffirst, np.int64),
                       np.array(fsize, np.int64), np.array(findex, np.int64))


def static_arrays(statics: list, n_bodies: int, shaped_bodies) -> StaticArrays:
    """StaticArrays of the planes and meshes in ``statics``; ``shaped_bodies``: bodies a collider without
    a list of its own touches."""
    C = len(statics)
    allowed = np.zeros((C, n_bodies), bool)
    for c, col in enumerate(statics):
        allowed[c, list(shaped_bodies if col.bodies is None else col.bodies)] = True
    planes = [(c, col) for c, col in enumerate(statics) if col.kind == PLANE]
    meshes = [(c, col) for c, col in enumerate(statics) if col.kind == MESH]
    tri_v = [col.mesh.vertices[col.mesh.triangles] for _, col in meshes]
    tri_v = np.ascontiguousarray(np.concatenate(tri_v)) if tri_v else np.zeros((0, 3, 3))
    lo, hi, child, first, count, order = triangle_bvh(tri_v)
    return StaticArrays(
        np.array([col.normal for _, col in planes], float).reshape(-1, 3),
        np.array([col.offset for _, col in planes], float), np.array([c for c, _ in planes], np.int64),
        tri_v, np.concatenate([col.mesh.normals for _, col in meshes]) if meshes else np.zeros((0, 3)),
        np.concatenate([col.mesh.sharp for _, col in meshes]) if meshes else np.zeros((0, 3), bool),
        np.concatenate([np.full(len(col.mesh.triangles), c, np.int64) for c, col in meshes]) if meshes
        else np.zeros(0, np.int64),
        lo, hi, child, first, count, order,
        np.array([col.friction for col in statics], float), np.array([col.restitution for col in statics], float),
        np.array([col.groups for col in statics], np.int64), np.array([col.margin for col in statics], float), allowed)


def body_shape_list(model, bodies=None) -> list:
    """[(body, ContactShape)] of every colliding shape part of ``bodies`` (default: all bodies)."""
    out = []
    for b in range(model.n_bodies) if bodies is None else bodies:
        shape = model.body_shapes[b]
        if not shape or not shape.get("collide", True):
            continue
        out += [(b, s) for s in model.shape_parts(b)]
    return out
