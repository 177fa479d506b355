"""Mass properties of closed triangle meshes and simple solids (SI units), and the body shapes
(``parse_shape``: the validated ``shape=`` dict of ``ModelBuilder.add_body``).

``mesh_mass_properties`` integrates density over the solid bounded by a
closed, consistently oriented triangle mesh with the divergence theorem: each
triangle forms a signed tetrahedron with the origin, whose volume, first and
second moments have closed forms (Tonon 2004, "Explicit exact formulas for the
3-D tetrahedron inertia tensor"). Non-convex meshes are handled exactly;
open meshes give wrong results, so the caller checks ``volume > 0``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .errors import ModelError


class MassProperties(NamedTuple):
    mass: float          # kg
    com: np.ndarray      # (3,) centre of mass, mesh coordinates (m)
    inertia: np.ndarray  # (3, 3) rotational inertia about the centre of mass, mesh axes (kg m²)
    volume: float        # m³


def mesh_mass_properties(vertices, triangles, density: float) -> MassProperties:
    """vertices: (n, 3) m; triangles: (m, 3) vertex indices, counter-clockwise seen from outside;
    density: kg/m³. Raises ValueError for an empty, degenerate or inside-out mesh."""
    V = np.asarray(vertices, float).reshape(-1, 3)
    T = np.asarray(triangles, np.int64).reshape(-1, 3)
    if len(T) == 0 or not np.isfinite(V).all():
        raise ValueError("mesh has no triangles or non-finite vertices")
    a, b, c = V[T[:, 0]], V[T[:, 1]], V[T[:, 2]]
    (bx, by, bz), (cx, cy, cz) = b.T, c.T  # 6 × signed tetra volume with the origin: a · (b × c)
    vol6 = a[:, 0] * (by * cz - bz * cy) + a[:, 1] * (bz * cx - bx * cz) + a[:, 2] * (bx * cy - by * cx)
    volume = vol6.sum() / 6.0
    if not volume > 1e-15:
        raise ValueError(f"mesh encloses no volume ({volume:.3g} m³): it must be closed and outward-facing")
    s = a + b + c
    com = (vol6 @ s) / (24.0 * volume)
    # ∫ x xᵀ dV over each tetra (0, a, b, c): det/120 · (Σ v vᵀ + (Σ v)(Σ v)ᵀ)
    w = vol6[:, None]
    second = ((w * s).T @ s + (w * a).T @ a + (w * b).T @ b + (w * c).T @ c) / 120.0
    mass = density * volume
    second_com = density * second - mass * np.outer(com, com)  # ∫ρ (x−c)(x−c)ᵀ
    inertia = np.trace(second_com) * np.eye(3) - second_com
    return MassProperties(float(mass), com, 0.5 * (inertia + inertia.T), float(volume))


def mesh_mass_properties_many(vertices, triangles, counts, density: float):
    """``mesh_mass_properties`` of k meshes in one pass (the same formulas, summed per mesh).

    vertices: (N, 3) m, all meshes' vertices; triangles: (M, 3) indices into ``vertices``, each mesh's
    ``counts[i]`` ≥ 1 triangles consecutive; density: kg/m³. Returns (mass (k,), com (k, 3), inertia
    (k, 3, 3), volume (k,)); a mesh that encloses no volume (or has non-finite vertices) gets NaN: the
    caller asks ``mesh_mass_properties`` for its error.
    """
    V = np.asarray(vertices, float).reshape(-1, 3)
    T = np.asarray(triangles, np.int64).reshape(-1, 3)
    counts = np.asarray(counts, np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    a, b, c = V[T[:, 0]], V[T[:, 1]], V[T[:, 2]]
    (bx, by, bz), (cx, cy, cz) = b.T, c.T
    vol6 = a[:, 0] * (by * cz - bz * cy) + a[:, 1] * (bz * cx - bx * cz) + a[:, 2] * (bx * cy - by * cx)
    volume = np.add.reduceat(vol6, starts) / 6.0
    volume[~(volume > 1e-15)] = np.nan  # (NaN stays NaN)
    s = a + b + c
    w = vol6[:, None]
    com = np.add.reduceat(w * s, starts) / (24.0 * volume[:, None])
    # ∫ x xᵀ dV over each tetra (0, a, b, c): det/120 · (Σ v vᵀ + (Σ v)(Σ v)ᵀ)
    outer = (w * s)[:, :, None] * s[:, None, :] + (w * a)[:, :, None] * a[:, None, :] \
        + (w * b)[:, :, None] * b[:, None, :] + (w * c)[:, :, None] * c[:, None, :]
    second = np.add.reduceat(outer, starts) / 120.0
    mass = density * volume
    second_com = density * second - mass[:, None, None] * com[:, :, None] * com[:, None, :]
    inertia = np.trace(second_com, axis1=1, axis2=2)[:, None, None] * np.eye(3) - second_com
    return mass, com, 0.5 * (inertia + inertia.transpose(0, 2, 1)), volume


def box_inertia(mass: float, size) -> np.ndarray:
    """Principal moments (3,) of a solid box of full edge lengths ``size`` (m)."""
    x, y, z = (float(s) for s in size)
    return mass / 12.0 * np.array([y * y + z * z, x * x + z * z, x * x + y * y])


def rod_inertia(mass: float, length: float, radius: float) -> np.ndarray:
    """Principal moments (3,) of a solid cylinder along local y (Blender's bone axis)."""
    side = mass * (3 * radius * radius + length * length) / 12.0
    return np.array([side, 0.5 * mass * radius * radius, side])


def equivalent_box(mass: float, principal_inertia) -> np.ndarray:
    """Edge lengths (3,) of the solid box with this mass and these principal moments
    (for drawing a body whose shape is unknown); zero where the moments allow none."""
    Ix, Iy, Iz = (float(v) for v in principal_inertia)
    sq = 6.0 / max(mass, 1e-300) * np.array([Iy + Iz - Ix, Ix + Iz - Iy, Ix + Iy - Iz])
    return np.sqrt(np.maximum(sq, 0.0))


# ---- body shapes (the ``shape=`` dict of ``ModelBuilder.add_body``; described in docs/contact.md)
SPHERE, BOX, CAPSULE, CYLINDER, CONE, CONVEX = 0, 1, 2, 3, 4, 5
SHAPE_TYPES = {"sphere": SPHERE, "box": BOX, "capsule": CAPSULE, "cylinder": CYLINDER, "cone": CONE,
               "convex": CONVEX}
SHAPE_NAMES = {v: k for k, v in SHAPE_TYPES.items()}
AXIS_DEFAULT = {CAPSULE: (0.0, 1.0, 0.0), CYLINDER: (0.0, 0.0, 1.0), CONE: (0.0, 0.0, 1.0)}  # bone axis; Blender's
COLLECTIONS = 20  # Blender's Collision Collections: a shape's ``groups`` is a bit mask over these
MAX_HULL_VERTICES = 256


class ContactShape(NamedTuple):
    kind: int             # SPHERE, BOX, CAPSULE, CYLINDER, CONE or CONVEX
    center: np.ndarray    # (3,) link frame
    rotation: np.ndarray  # (3, 3) shape axes in the link frame
    half: np.ndarray      # (3,) box half sizes; capsule, cylinder, cone: (half length, 0, 0) along ``axis``
    radius: float         # sphere, capsule, cylinder; cone: base radius
    axis: np.ndarray      # (3,) capsule/cylinder/cone axis in the link frame (unit; cone: base → apex)
    friction: float       # NaN: the other side's (or the pair default)
    margin: float = 0.0   # m: corners and edges rounded by it (outer size kept); convex hulls grow by it
    restitution: float = np.nan  # NaN: the other side's (or the pair default)
    groups: int = 1       # bit mask of collision collections (two shapes collide if they share one)
    vertices: np.ndarray | None = None  # convex: (m, 3) hull vertices in the link frame
    hull: np.ndarray | None = None      # convex: the same (m, 3) in the shape's own frame (centre, rotation), as
    #                                     given: one shared read-only array for every copy of one mesh


def _positive(shape: dict, key: str, where: str) -> float:
    v = shape.get(key)
    try:
        v = float(v)
    except (TypeError, ValueError):
        raise ModelError(f"{where}: '{key}' must be a positive number, got {shape.get(key)!r}") from None
    if not (np.isfinite(v) and v > 0):
        raise ModelError(f"{where}: '{key}' must be a positive number, got {v!r}")
    return v


def _vector(shape: dict, key: str, default, where: str) -> np.ndarray:
    try:
        v = np.asarray(shape.get(key, default), float)
    except (TypeError, ValueError):
        raise ModelError(f"{where}: '{key}' must be {np.shape(default)} finite numbers, got {shape.get(key)!r}") from None
    if v.shape != np.shape(default) or not np.isfinite(v).all():
        raise ModelError(f"{where}: '{key}' must be {np.shape(default)} finite numbers, got {shape.get(key)!r}")
    return v


_EYE3 = np.eye(3)


def det3(R) -> float:
    """Determinant of a 3×3 matrix (cofactors: np.linalg.det costs more than the whole check for one matrix)."""
    (a, b, c), (d, e, f), (g, h, i) = R.tolist()
    return a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)


def _material(shape: dict, key: str, where: str, hi: float) -> float:
    """A shape's friction (≥ 0) or restitution (in [0, 1]); NaN when not given."""
    v = shape.get(key, np.nan)
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return float("nan")
    try:
        v = float(v)
    except (TypeError, ValueError):
        v = -1.0
    if not (np.isfinite(v) and 0.0 <= v <= hi):
        bound = "≥ 0" if hi == np.inf else f"in [0, {hi:g}]"
        raise ModelError(f"{where}: '{key}' must be {bound}, got {shape.get(key)!r}")
    return v


def collision_groups(value, where: str) -> int:
    """A bit mask over the 20 collision collections from an int mask or a list of collection indices (0–19)."""
    if isinstance(value, (bool, np.bool_)):
        raise ModelError(f"{where}: 'groups' must be a bit mask or a list of collections 0–19, got {value!r}")
    if isinstance(value, (int, np.integer)):
        mask = int(value)
    else:
        try:
            idx = [int(i) for i in value]
        except (TypeError, ValueError):
            raise ModelError(f"{where}: 'groups' must be a bit mask or a list of collections 0–19, got {value!r}") from None
        if any(not 0 <= i < COLLECTIONS for i in idx):
            raise ModelError(f"{where}: collision collections are numbered 0–{COLLECTIONS - 1}, got {idx}")
        mask = sum(1 << i for i in set(idx))
    if not 0 < mask < (1 << COLLECTIONS):
        raise ModelError(f"{where}: 'groups' must name at least one of the {COLLECTIONS} collision collections, got {value!r}")
    return mask


MEMO_KEPT = 256  # entries a ``memo`` cache keeps before it starts again


def memo(cache: dict, key, make):
    """``cache[key]``, made by ``make()`` the first time; the cache is emptied when it holds MEMO_KEPT entries.
    The value is returned from a local, so another thread emptying the cache meanwhile costs a recomputation,
    never a KeyError. A ``make`` that raises leaves nothing behind."""
    value = cache.get(key)
    if value is None:
        value = make()
        if len(cache) >= MEMO_KEPT:
            cache.clear()
        cache[key] = value
    return value


_HULLS: dict = {}  # vertices' bytes → hull vertices (the same mesh on a thousand objects is one qhull run)


def convex_hull_vertices(vertices, where: str) -> np.ndarray:
    """The vertices (m, 3) of the convex hull of ``vertices`` (n, 3), read-only: bit-identical vertex sets
    share one array (``memo``); refuses an empty, flat (all in one plane), degenerate or non-finite point
    set by name."""
    try:
        V = np.asarray(vertices, float).reshape(-1, 3)
    except (TypeError, ValueError):
        raise ModelError(f"{where}: convex 'vertices' must be (n, 3) numbers, got {vertices!r}") from None
    return memo(_HULLS, V.tobytes(), lambda: _hull_of(V, where))  # (a refused set raises, and is not kept)


def _hull_of(V: np.ndarray, where: str) -> np.ndarray:
    hull = V[_hull_indices(V, where)]
    hull.flags.writeable = False
    return hull


def _hull_indices(V: np.ndarray, where: str) -> np.ndarray:
    if len(V) == 0:
        raise ModelError(f"{where}: convex hull of an empty vertex list (give at least 4 vertices not in one plane)")
    if not np.all(np.isfinite(V)):
        raise ModelError(f"{where}: convex 'vertices' must be finite")
    extent = float(np.ptp(V, axis=0).max())
    if len(V) < 4 or extent <= 1e-9:
        raise ModelError(f"{where}: convex hull of {len(V)} vertices is degenerate (it needs 4 vertices not in one plane)")
    centred = V - V.mean(axis=0)
    sv = np.linalg.svd(centred, compute_uv=False)
    if sv[2] <= 1e-9 * max(sv[0], 1e-300) or sv[2] / np.sqrt(len(V)) <= 1e-9:
        raise ModelError(f"{where}: convex hull of {len(V)} vertices is flat (they lie in one plane, or on one line): "
                         "it encloses no volume")
    import scipy.spatial

    try:
        hull = scipy.spatial.ConvexHull(V)
    except scipy.spatial.QhullError as e:  # (flatness is caught above; this is qhull's own refusal)
        raise ModelError(f"{where}: convex hull of {len(V)} vertices failed: {str(e).splitlines()[0]}") from None
    if hull.volume <= 1e-12 * extent ** 3:
        raise ModelError(f"{where}: convex hull of {len(V)} vertices is flat (volume {hull.volume:.3g} m³)")
    if len(hull.vertices) > MAX_HULL_VERTICES:
        raise ModelError(f"{where}: convex hull has {len(hull.vertices)} vertices, at most {MAX_HULL_VERTICES} "
                         "(decimate the mesh)")
    return np.sort(hull.vertices)


def parse_shape(shape: dict, com, where: str) -> ContactShape:
    """Validate one shape dict (docs/contact.md); ``com``: the default centre (link frame). A compound is
    refused here: ``parse_shapes`` splits it into its parts."""
    kind = SHAPE_TYPES.get(str(shape.get("type", "")).lower())
    if kind is None:
        extra = ", compound" if str(shape.get("type", "")).lower() != "compound" else " (a compound holds these)"
        raise ModelError(f"{where}: type must be one of {', '.join(SHAPE_TYPES)}{extra}, got {shape.get('type')!r}")
    center = _vector(shape, "center", np.asarray(com, float), where)
    rotation = _vector(shape, "rotation", np.eye(3), where)
    if abs(det3(rotation) - 1.0) > 1e-6 or not (np.abs(rotation.T @ rotation - _EYE3) <= 1e-6 + 1e-5 * _EYE3).all():
        raise ModelError(f"{where}: 'rotation' must be a rotation matrix")  # (np.allclose(RᵀR, I, atol=1e-6))
    half, radius, axis = np.zeros(3), 0.0, np.array(AXIS_DEFAULT.get(kind, (0.0, 0.0, 1.0)))
    vertices = hull = None
    margin = shape.get("margin", 0.0)
    try:
        margin = float(margin)
    except (TypeError, ValueError):
        margin = -1.0
    if not (np.isfinite(margin) and margin >= 0):
        raise ModelError(f"{where}: 'margin' must be ≥ 0 m, got {shape.get('margin')!r}")
    if kind == BOX:
        size = _vector(shape, "size", np.zeros(3), where)
        if not (size > 0).all():
            raise ModelError(f"{where}: box 'size' must be three positive edge lengths, got {size.tolist()}")
        half = 0.5 * size
        if margin >= half.min():
            raise ModelError(f"{where}: 'margin' {margin:g} m must be smaller than half the box's smallest edge")
    elif kind == CONVEX:
        hull = convex_hull_vertices(shape.get("vertices", ()), where)
        vertices = center + hull @ rotation.T
    else:
        radius = _positive(shape, "radius", where)
    if kind in (CAPSULE, CYLINDER, CONE):
        half[0] = 0.5 * _positive(shape, "length", where)
        axis = _vector(shape, "axis", np.array(AXIS_DEFAULT[kind]), where)
        if np.linalg.norm(axis) < 1e-12:
            raise ModelError(f"{where}: {SHAPE_NAMES[kind]} 'axis' has zero length")
        axis = rotation @ (axis / np.linalg.norm(axis))
        if kind != CAPSULE and margin >= min(radius, half[0]):
            raise ModelError(f"{where}: 'margin' {margin:g} m must be smaller than the {SHAPE_NAMES[kind]}'s "
                             "radius and half length")
        if kind == CONE and margin * (1.0 + np.hypot(radius, 2 * half[0]) / radius) >= 2 * half[0]:
            raise ModelError(f"{where}: 'margin' {margin:g} m leaves the cone no core (its rounded apex would "
                             "pass its base)")
    groups = collision_groups(shape.get("groups", 1), where)
    return ContactShape(kind, center, rotation, half, radius, axis, _material(shape, "friction", where, np.inf),
                        margin, _material(shape, "restitution", where, 1.0), groups, vertices, hull)


def parse_shapes(shape: dict, com, where: str) -> list[ContactShape]:
    """The validated parts of a shape dict: one for a simple shape, several for
    ``{"type": "compound", "shapes": [...]}`` (each part's centre and rotation in the link frame; friction,
    restitution, margin and groups given on the compound are the parts' defaults)."""
    if not isinstance(shape, dict):
        raise ModelError(f"{where}: a shape must be a dict, got {shape!r}")
    if str(shape.get("type", "")).lower() != "compound":
        return [parse_shape(shape, com, where)]
    parts = shape.get("shapes")
    if not isinstance(parts, (list, tuple)) or not parts:
        raise ModelError(f"{where}: a compound needs 'shapes', a non-empty list of shape dicts")
    inherited = {k: shape[k] for k in ("friction", "restitution", "margin", "groups") if k in shape}
    out = []
    for k, part in enumerate(parts):
        if not isinstance(part, dict):
            raise ModelError(f"{where} part {k}: a shape must be a dict, got {part!r}")
        if str(part.get("type", "")).lower() == "compound":
            raise ModelError(f"{where} part {k}: a compound cannot hold another compound")
        out.append(parse_shape({**inherited, **part}, com, f"{where} part {k}"))
    return out
