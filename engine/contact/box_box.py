"""Overlapping boxes by the separating-axis test (Gottschalk, Lin & Manocha 1996; Ericson §4.4.1).

Two boxes are disjoint iff one of 15 axes separates their projections: the 3 face normals of each and
the 9 cross products of an edge of each. When none does, the axis of least overlap is the minimum
translation that separates them, exactly: a face normal (then the contact is that face against the
other box, clipped into a manifold, ``manifold.face_manifold``) or an edge pair (one point, the
edges' closest points). Face axes win ties, within 5 % and 0.5 mm, as in Box2D's ``b2CollidePolygons``:
an edge axis that is barely shallower would make a resting box flicker between one point and four.
"""
from __future__ import annotations

import numpy as np

from .._jit import kernel

FACE_A, FACE_B, EDGES, SEPARATED = 0, 1, 2, 3
FACE_PREFERENCE = 5e-4  # m: an edge axis must overlap this much less (and 5 % less) than the best face's to win
FACE_TIE = 1e-6  # ``narrowphase.feature_manifold`` takes B's face as the reference within this of A's alignment


@kernel(refcounts=False)
def box_box_sat(ha, RA, pA, hb, RB, pB, normal):
    """(kind, index, depth) for boxes of half sizes ha, hb (3,) at rotations RA, RB and centres pA, pB:
    kind FACE_A (index = A's axis), FACE_B, EDGES (index = 3 i + j for A's axis i × B's axis j) or
    SEPARATED; depth > 0 the least overlap (m); normal (3,) ← the unit direction from B to A."""
    tx, ty, tz = pA[0] - pB[0], pA[1] - pB[1], pA[2] - pB[2]
    best_face, face_kind, face_index = np.inf, FACE_A, 0
    for i in range(3):  # A's faces (A_i · B_j by columns)
        ra = ha[i]
        rb = 0.0
        for j in range(3):
            rb += hb[j] * abs(RA[0, i] * RB[0, j] + RA[1, i] * RB[1, j] + RA[2, i] * RB[2, j])
        overlap = ra + rb - abs(tx * RA[0, i] + ty * RA[1, i] + tz * RA[2, i])
        if overlap < 0.0:
            return SEPARATED, i, overlap
        if overlap < best_face:
            best_face, face_kind, face_index = overlap, FACE_A, i
    for j in range(3):  # B's faces
        ra = 0.0
        for i in range(3):
            ra += ha[i] * abs(RA[0, i] * RB[0, j] + RA[1, i] * RB[1, j] + RA[2, i] * RB[2, j])
        overlap = ra + hb[j] - abs(tx * RB[0, j] + ty * RB[1, j] + tz * RB[2, j])
        if overlap < 0.0:
            return SEPARATED, 3 + j, overlap
        if overlap < best_face * (1.0 - 1e-12):
            best_face, face_kind, face_index = overlap, FACE_B, j
    best_edge, edge_index = np.inf, -1
    ex, ey, ez = 0.0, 0.0, 0.0
    for i in range(3):
        for j in range(3):
            lx = RA[1, i] * RB[2, j] - RA[2, i] * RB[1, j]
            ly = RA[2, i] * RB[0, j] - RA[0, i] * RB[2, j]
            lz = RA[0, i] * RB[1, j] - RA[1, i] * RB[0, j]
            ll = np.sqrt(lx * lx + ly * ly + lz * lz)
            if ll < 1e-6:  # parallel edges: a face axis covers them
                continue
            lx, ly, lz = lx / ll, ly / ll, lz / ll
            ra = 0.0
            rb = 0.0
            for k in range(3):
                ra += ha[k] * abs(lx * RA[0, k] + ly * RA[1, k] + lz * RA[2, k])
                rb += hb[k] * abs(lx * RB[0, k] + ly * RB[1, k] + lz * RB[2, k])
            dist = tx * lx + ty * ly + tz * lz
            overlap = ra + rb - abs(dist)
            if overlap < 0.0:
                return SEPARATED, 6 + 3 * i + j, overlap
            if overlap < best_edge:
                best_edge, edge_index = overlap, 3 * i + j
                s = 1.0 if dist >= 0.0 else -1.0
                ex, ey, ez = s * lx, s * ly, s * lz
    if edge_index >= 0 and best_edge < 0.95 * best_face - FACE_PREFERENCE:
        normal[0], normal[1], normal[2] = ex, ey, ez
        return EDGES, edge_index, best_edge
    R = RA if face_kind == FACE_A else RB
    dist = tx * R[0, face_index] + ty * R[1, face_index] + tz * R[2, face_index]
    s = 1.0 if dist >= 0.0 else -1.0
    for c in range(3):
        normal[c] = s * R[c, face_index]
    return face_kind, face_index, best_face


@kernel(refcounts=False)
def box_edge(h, R, p, axis, d, a, b):
    """The box edge along ``axis`` farthest in direction d (3,): its ends into a, b (3,)."""
    for c in range(3):
        a[c] = p[c]
    for k in range(3):
        if k == axis:
            continue
        s = R[0, k] * d[0] + R[1, k] * d[1] + R[2, k] * d[2]
        w = h[k] if s >= 0.0 else -h[k]
        for c in range(3):
            a[c] += w * R[c, k]
    for c in range(3):
        b[c] = a[c] + h[axis] * R[c, axis]
        a[c] -= h[axis] * R[c, axis]


@kernel(inline="llvm", refcounts=False)
def _overlap_along(ha, RA, pA, hb, RB, pB, ux, uy, uz):
    """How far the boxes' extents overlap along the unit direction u from B to A: B's support in u less A's in −u
    (m; < 0: a gap along u)."""
    ra = 0.0
    rb = 0.0
    for k in range(3):
        ra += ha[k] * abs(ux * RA[0, k] + uy * RA[1, k] + uz * RA[2, k])
        rb += hb[k] * abs(ux * RB[0, k] + uy * RB[1, k] + uz * RB[2, k])
    return ra + rb - ((pA[0] - pB[0]) * ux + (pA[1] - pB[1]) * uy + (pA[2] - pB[2]) * uz)


@kernel(refcounts=False)
def box_pair_depth_bound(ha, RA, pA, hb, RB, pB, normal, reference_cos):
    """A bound (m) on every depth the narrow phase reports for these boxes' cores, without their manifold: the
    least overlap of ``box_box_sat`` (or minus the gap it proves), and the overlap along any face axis a manifold
    may measure depths along — a face within the reference tie (``FACE_TIE``) of the least-overlap face, or
    within ``reference_cos`` of an edge axis (every clipped point lies in the other box's reference face's prism,
    so its depth along that face's normal is at most the overlap there). normal (3,): scratch."""
    kind, index, depth = box_box_sat(ha, RA, pA, hb, RB, pB, normal)
    if kind == SEPARATED:
        return depth
    cut = reference_cos if kind == EDGES else 1.0 - 2.0 * FACE_TIE
    bound = depth
    for side in range(2):
        R = RA if side == 0 else RB
        for k in range(3):
            a = R[0, k] * normal[0] + R[1, k] * normal[1] + R[2, k] * normal[2]
            if abs(a) >= cut:
                s = 1.0 if a > 0.0 else -1.0
                bound = max(bound, _overlap_along(ha, RA, pA, hb, RB, pB, s * R[0, k], s * R[1, k], s * R[2, k]))
    return bound
