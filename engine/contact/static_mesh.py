"""Static triangle meshes (passive colliders of any shape: floors that are not level, ramps, stairs,
terrain): validation, the edges that may give a contact normal of their own, and the BVH.

A mesh collides face-wise, as a *triangle soup*: each triangle is two-sided (a body on either side is
pushed out on its side), so open meshes (a plane, a terrain sheet) and closed ones work alike, and so
does a non-manifold mesh — an edge shared by three or more triangles, or by two that disagree on their
orientation, is simply *sharp* (below). Refused by name: no triangles, non-finite vertices, triangle
indices out of range, every triangle without area. Triangles without area are dropped (counted in
``MeshData.dropped``).

Sharp edges. At an edge between two triangles the closest point of a shape can sit exactly on the
edge, and the edge's own normal (from the edge to the shape) would then tilt the contact: a box sliding
over a flat floor of many triangles catches on their seams (Bullet's "internal edge" problem, which
``btAdjustInternalEdgeContacts`` fixes after the fact). Here an edge is *sharp* — allowed its own
normal — only where the surface really bends outwards: a convex edge whose triangles meet at more than
``SHARP_ANGLE``, a boundary edge (one triangle), or an edge whose neighbours cannot tell (non-manifold,
inconsistently oriented). A flat or concave edge gives the face normal (``narrowphase.triangle_pair``).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..errors import ModelError
from .broadphase import build_bvh

SHARP_ANGLE = np.radians(1.0)


class MeshData(NamedTuple):
    vertices: np.ndarray    # (n, 3) world
    triangles: np.ndarray   # (T, 3) int64, the triangles kept
    normals: np.ndarray     # (T, 3) unit, by the right-hand rule
    sharp: np.ndarray       # (T, 3) bool, edge k from vertex k to k + 1
    dropped: int            # triangles without area
    non_manifold_edges: int  # edges shared by 3+ triangles or by 2 of opposite orientation claims


def validate_mesh(vertices, triangles, where: str) -> MeshData:
    """The checked mesh (see the module docstring) from vertices (n, 3) (m, world) and triangles (T, 3)."""
    try:
        V = np.asarray(vertices, float).reshape(-1, 3)
    except (TypeError, ValueError):
        raise ModelError(f"{where}: mesh 'vertices' must be (n, 3) numbers") from None
    try:
        F = np.asarray(triangles)
        if F.size and not np.issubdtype(F.dtype, np.integer):
            if not np.all(np.isfinite(F.astype(float))) or np.any(F.astype(float) != np.round(F.astype(float))):
                raise ValueError
        F = F.astype(np.int64).reshape(-1, 3)
    except (TypeError, ValueError):
        raise ModelError(f"{where}: mesh 'triangles' must be (T, 3) vertex indices") from None
    if len(F) == 0:
        raise ModelError(f"{where}: mesh has no triangles")
    if not np.all(np.isfinite(V)):
        raise ModelError(f"{where}: mesh vertices must be finite")
    if F.min() < 0 or F.max() >= len(V):
        raise ModelError(f"{where}: mesh triangle indices must be in 0 … {len(V) - 1}, got {F.min()} … {F.max()}")
    a, b, c = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
    cross = np.cross(b - a, c - a)
    area2 = np.linalg.norm(cross, axis=1)
    scale = max(float(np.ptp(V, axis=0).max()), 1e-9)
    keep = area2 > 1e-12 * scale * scale
    if not keep.any():
        raise ModelError(f"{where}: every triangle of the mesh has no area")
    F, cross, area2 = F[keep], cross[keep], area2[keep]
    normals = cross / area2[:, None]
    sharp, non_manifold = _sharp_edges(V, F, normals)
    return MeshData(V, F, normals, sharp, int((~keep).sum()), non_manifold)


def _sharp_edges(V, F, normals):
    """(T, 3) sharp flags and the count of non-manifold edges (module docstring)."""
    T = len(F)
    a = F.reshape(-1)                       # edge k of triangle t: F[t, k] → F[t, (k + 1) % 3]
    b = np.roll(F, -1, axis=1).reshape(-1)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    key = lo * (len(V) + 1) + hi
    order = np.argsort(key, kind="stable")
    sk = key[order]
    starts = np.flatnonzero(np.r_[True, sk[1:] != sk[:-1]])
    counts = np.diff(np.r_[starts, len(sk)])
    sharp = np.ones(3 * T, bool)
    non_manifold = 0
    for s, n in zip(starts, counts):
        if n == 1:
            continue  # boundary: sharp
        if n > 2:
            non_manifold += 1
            continue
        e1, e2 = order[s], order[s + 1]
        t1, t2 = e1 // 3, e2 // 3
        if a[e1] == a[e2]:  # both triangles run the edge the same way: their orientations disagree
            non_manifold += 1
            continue
        # the other triangle's far vertex seen from this one's face: below (convex) or above (concave)
        far2 = F[t2, (e2 % 3 + 2) % 3]
        far1 = F[t1, (e1 % 3 + 2) % 3]
        h2 = normals[t1] @ (V[far2] - V[a[e1]])
        h1 = normals[t2] @ (V[far1] - V[a[e2]])
        bend = np.arccos(np.clip(normals[t1] @ normals[t2], -1.0, 1.0))
        convex = h2 < 0.0 and h1 < 0.0
        sharp[e1] = sharp[e2] = bool(convex and bend > SHARP_ANGLE)
    return sharp.reshape(T, 3), non_manifold


def triangle_bvh(tri_v: np.ndarray):
    """(lo, hi, child, first, count, order) of a BVH over triangles tri_v (T, 3, 3) (``broadphase.build_bvh``)."""
    T = tri_v.shape[0]
    tlo, thi = np.ascontiguousarray(tri_v.min(axis=1)), np.ascontiguousarray(tri_v.max(axis=1))
    lo, hi = np.zeros((max(2 * T, 1), 3)), np.zeros((max(2 * T, 1), 3))
    child = np.full((max(2 * T, 1), 2), -1, np.int64)
    first, count = np.zeros(max(2 * T, 1), np.int64), np.zeros(max(2 * T, 1), np.int64)
    order = np.zeros(T, np.int64)
    n = build_bvh(tlo, thi, lo, hi, child, first, count, order)
    return lo[:n].copy(), hi[:n].copy(), child[:n].copy(), first[:n].copy(), count[:n].copy(), order
