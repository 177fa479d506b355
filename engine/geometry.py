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


# ---- body shapes (the ``shape=`` dict of ``ModelBuilder.add_body``; described in engine.contact.shapes)
SPHERE, BOX, CAPSULE = 0, 1, 2
SHAPE_TYPES = {"sphere": SPHERE, "box": BOX, "capsule": CAPSULE}


class ContactShape(NamedTuple):
    kind: int             # SPHERE, BOX or CAPSULE
    center: np.ndarray    # (3,) link frame
    rotation: np.ndarray  # (3, 3) shape axes in the link frame
    half: np.ndarray      # (3,) box half sizes; capsule: (half length, 0, 0) along ``axis``
    radius: float
    axis: np.ndarray      # (3,) capsule axis in the link frame (unit)
    friction: float       # NaN: use the ground's


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
    v = np.asarray(shape.get(key, default), float)
    if v.shape != np.shape(default) or not np.isfinite(v).all():
        raise ModelError(f"{where}: '{key}' must be {np.shape(default)} finite numbers, got {shape.get(key)!r}")
    return v


_EYE3 = np.eye(3)


def det3(R) -> float:
    """Determinant of a 3×3 matrix (cofactors: np.linalg.det costs more than the whole check for one matrix)."""
    (a, b, c), (d, e, f), (g, h, i) = R.tolist()
    return a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)


def parse_shape(shape: dict, com, where: str) -> ContactShape:
    """Validate a shape dict (see the module docstring); ``com``: the default centre (link frame)."""
    kind = SHAPE_TYPES.get(str(shape.get("type", "")).lower())
    if kind is None:
        raise ModelError(f"{where}: type must be one of {', '.join(SHAPE_TYPES)}, got {shape.get('type')!r}")
    center = _vector(shape, "center", np.asarray(com, float), where)
    rotation = _vector(shape, "rotation", np.eye(3), where)
    if abs(det3(rotation) - 1.0) > 1e-6 or not (np.abs(rotation.T @ rotation - _EYE3) <= 1e-6 + 1e-5 * _EYE3).all():
        raise ModelError(f"{where}: 'rotation' must be a rotation matrix")  # (np.allclose(RᵀR, I, atol=1e-6))
    half, radius, axis = np.zeros(3), 0.0, np.array([0.0, 1.0, 0.0])
    if kind == BOX:
        size = _vector(shape, "size", np.zeros(3), where)
        if not (size > 0).all():
            raise ModelError(f"{where}: box 'size' must be three positive edge lengths, got {size.tolist()}")
        half = 0.5 * size
    else:
        radius = _positive(shape, "radius", where)
    if kind == CAPSULE:
        half[0] = 0.5 * _positive(shape, "length", where)
        axis = _vector(shape, "axis", np.array([0.0, 1.0, 0.0]), where)
        if np.linalg.norm(axis) < 1e-12:
            raise ModelError(f"{where}: capsule 'axis' has zero length")
        axis = rotation @ (axis / np.linalg.norm(axis))
    mu = shape.get("friction", np.nan)
    if mu is not None and not (isinstance(mu, float) and np.isnan(mu)):
        try:
            mu = float(mu)
        except (TypeError, ValueError):
            mu = -1.0
        if not (np.isfinite(mu) and mu >= 0):
            raise ModelError(f"{where}: 'friction' must be ≥ 0, got {shape.get('friction')!r}")
    return ContactShape(kind, center, rotation, half, radius, axis, float(np.nan if mu is None else mu))
