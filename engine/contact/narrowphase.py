"""The narrow phase: contacts of each candidate pair, compiled (the broad phase lists the pairs).

Per pair kind:

* sphere/capsule with sphere/capsule — the closest points of their segments (Ericson §5.1.9), exact;
  two points when two capsules lie parallel;
* box with box — the separating-axis test when they overlap (``box_box``), GJK when apart;
* any other convex pair — GJK on the cores, EPA when they overlap (``gjk``); a sphere's centre inside a box,
  cylinder or cone core: its depth in closed form (``point_inside``);
* a shape on a plane — every vertex of its core closer than the threshold, and the exact lowest point
  of a curved one;
* a shape on a static mesh triangle — GJK/EPA with the triangle as the second core (a box whose deepest point
  is over the triangle's face, the face normal the axis of least overlap: that point's height, no iterations,
  ``box_face_distance``). An edge or vertex
  of the triangle that is not sharp (a flat or concave edge between two triangles) gives no normal of
  its own: such a contact takes the face's normal, with the points of the shape over this face (Bullet's
  internal-edge problem: a box sliding over a flat floor of many triangles must not catch on their seams).

Then ``manifold`` makes several points where a face rests on a face. Contacts are written to a
``ContactOut`` with the normal from the second body (or the static collider) to the first, the depth
(> 0 penetrating, < 0 a gap still open: speculative), and a key (shape, other shape or static
element, manifold code) that identifies the contact from one step to the next.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._jit import kernel
from ..geometry import BOX, CAPSULE, CONE, CYLINDER, SPHERE
from .box_box import EDGES, FACE_TIE, SEPARATED, box_box_sat, box_edge
from .convex import FACE_COS, TRIANGLE, core_points, support, support_feature
from .gjk import gjk_epa
from .manifold import (CODE_EXACT, CODE_GJK, REFERENCE_COS, add_candidate, face_manifold, reduce_manifold)
from .point_inside import point_depth

MAX_FRICTION = 10.0  # Bullet clamps the combined friction to this


class ShapeArrays(NamedTuple):
    """m convex colliders (body shapes, and static convex colliders with body −1), ``colliders.py``."""

    kind: np.ndarray         # (m,) int64
    body: np.ndarray         # (m,) int64, −1 static
    collider: np.ndarray     # (m,) int64 static collider, −1 on bodies
    local_R: np.ndarray      # (m, 3, 3) shape axes in the link frame (static: world)
    local_p: np.ndarray      # (m, 3) shape centre in the link frame (static: world)
    dims: np.ndarray         # (m, 3) core dimensions (``convex``)
    rho: np.ndarray          # (m,) rounding radius
    reach: np.ndarray        # (m,) farthest surface point from the centre (m)
    vstart: np.ndarray       # (m,) convex: first vertex in hverts
    vcount: np.ndarray       # (m,)
    fstart: np.ndarray       # (m,) convex: first face
    fcount: np.ndarray       # (m,)
    friction: np.ndarray     # (m,) NaN: not given
    restitution: np.ndarray  # (m,) NaN: not given
    groups: np.ndarray       # (m,) int64 collision collection bits
    hverts: np.ndarray       # (V, 3) hull vertices, shape frame
    fnorm: np.ndarray        # (F, 3) hull face normals, shape frame
    ffirst: np.ndarray       # (F,) first entry of each face in findex
    fsize: np.ndarray        # (F,)
    findex: np.ndarray       # (K,) the faces' vertices (counter-clockwise seen from outside), local to the hull


class StaticArrays(NamedTuple):
    """Static planes and triangles, their colliders' materials and which bodies they touch."""

    plane_n: np.ndarray      # (P, 3) unit normals
    plane_d: np.ndarray      # (P,) offsets: the plane is n·x = d
    plane_collider: np.ndarray  # (P,)
    tri_v: np.ndarray        # (T, 3, 3) vertices (world)
    tri_n: np.ndarray        # (T, 3) unit face normals
    tri_sharp: np.ndarray    # (T, 3) bool: edge k (v_k → v_k+1) may give its own normal
    tri_collider: np.ndarray  # (T,)
    bvh_lo: np.ndarray       # (N, 3) node boxes
    bvh_hi: np.ndarray
    bvh_child: np.ndarray    # (N, 2) int64 children, −1 for a leaf
    bvh_first: np.ndarray    # (N,) leaf: first entry in bvh_tris
    bvh_count: np.ndarray    # (N,)
    bvh_tris: np.ndarray     # (T,) triangle indices in leaf order
    friction: np.ndarray     # (C,) per static collider
    restitution: np.ndarray  # (C,)
    groups: np.ndarray       # (C,)
    rho: np.ndarray          # (C,) rounding of a mesh's triangles (its margin)
    allowed: np.ndarray      # (C, n_bodies) bool: the collider touches that body


class ContactOut(NamedTuple):
    """Contacts found (capacity K; ``count[0]`` may exceed K: the caller grows the buffer and detects again)."""

    body: np.ndarray         # (K,)
    other: np.ndarray        # (K,) −1: static
    point: np.ndarray        # (K, 3)
    normal: np.ndarray       # (K, 3) from other (or the static collider) to body
    depth: np.ndarray        # (K,)
    key: np.ndarray          # (K,) int64
    friction: np.ndarray     # (K,)
    restitution: np.ndarray  # (K,)
    count: np.ndarray        # (1,) int64


def contact_out(capacity: int) -> ContactOut:
    k = int(capacity)
    return ContactOut(np.zeros(k, np.int64), np.zeros(k, np.int64), np.zeros((k, 3)), np.zeros((k, 3)), np.zeros(k),
                      np.zeros(k, np.int64), np.zeros(k), np.zeros(k), np.zeros(1, np.int64))


@kernel(inline="llvm", refcounts=False)
def combine(a, b, default, cap):
    """Blender's (Bullet's) rule for a pair: the product of the two sides' values (``btManifoldResult::
    calculateCombinedFriction`` and ``…Restitution``), capped; a side without a value takes the other's,
    neither: ``default``."""
    if np.isnan(a):
        return default if np.isnan(b) else b
    if np.isnan(b):
        return a
    return min(a * b, cap)


@kernel(refcounts=False)
def emit(mw, count, out, body, other, key_base, mu, e):
    """Reduce the candidates in mw to a manifold and append it to out."""
    m = reduce_manifold(mw, count)
    for k in range(m):
        c = mw.keep[k]
        w = out.count[0]
        if w < out.depth.shape[0]:
            out.body[w], out.other[w] = body, other
            for i in range(3):
                out.point[w, i] = mw.pts[c, i]
                out.normal[w, i] = mw.normal[c, i]
            out.depth[w] = mw.depth[c]
            out.key[w] = key_base + mw.code[c]
            out.friction[w], out.restitution[w] = mu, e
        out.count[0] = w + 1


@kernel(inline="llvm", refcounts=False)
def closest_segment_params(p1, q1, p2, q2):
    """s, t in [0, 1] of the closest points p1 + s (q1 − p1), p2 + t (q2 − p2) (Ericson §5.1.9)."""
    d1x, d1y, d1z = q1[0] - p1[0], q1[1] - p1[1], q1[2] - p1[2]
    d2x, d2y, d2z = q2[0] - p2[0], q2[1] - p2[1], q2[2] - p2[2]
    rx, ry, rz = p1[0] - p2[0], p1[1] - p2[1], p1[2] - p2[2]
    a = d1x * d1x + d1y * d1y + d1z * d1z
    e = d2x * d2x + d2y * d2y + d2z * d2z
    f = d2x * rx + d2y * ry + d2z * rz
    if a <= 1e-24 and e <= 1e-24:
        return 0.0, 0.0
    if a <= 1e-24:
        return 0.0, min(max(f / e, 0.0), 1.0)
    c = d1x * rx + d1y * ry + d1z * rz
    if e <= 1e-24:
        return min(max(-c / a, 0.0), 1.0), 0.0
    b = d1x * d2x + d1y * d2y + d1z * d2z
    den = a * e - b * b
    s = min(max((b * f - c * e) / den, 0.0), 1.0) if den > 1e-24 * a * e else 0.0
    t = (b * s + f) / e
    if t < 0.0:
        t, s = 0.0, min(max(-c / a, 0.0), 1.0)
    elif t > 1.0:
        t, s = 1.0, min(max((b - c) / a, 0.0), 1.0)
    return s, t


@kernel(refcounts=False)
def segment_pair(mw, P, Q, rho_a, rho_b, threshold):
    """Candidates of two rounded segments P (2, 3) and Q (2, 3) (a sphere's two ends coincide): the closest
    points, and both ends of the overlap when they lie parallel. Returns the count."""
    s, t = closest_segment_params(P[0], P[1], Q[0], Q[1])
    ax, ay, az = P[0, 0] + s * (P[1, 0] - P[0, 0]), P[0, 1] + s * (P[1, 1] - P[0, 1]), P[0, 2] + s * (P[1, 2] - P[0, 2])
    bx, by, bz = Q[0, 0] + t * (Q[1, 0] - Q[0, 0]), Q[0, 1] + t * (Q[1, 1] - Q[0, 1]), Q[0, 2] + t * (Q[1, 2] - Q[0, 2])
    dx, dy, dz = ax - bx, ay - by, az - bz
    dist = np.sqrt(dx * dx + dy * dy + dz * dz)
    if dist - rho_a - rho_b > threshold:
        return 0
    if dist > 1e-12:
        nx, ny, nz = dx / dist, dy / dist, dz / dist
    else:  # the axes cross: any direction perpendicular to both will do
        ux, uy, uz = P[1, 0] - P[0, 0], P[1, 1] - P[0, 1], P[1, 2] - P[0, 2]
        vx, vy, vz = Q[1, 0] - Q[0, 0], Q[1, 1] - Q[0, 1], Q[1, 2] - Q[0, 2]
        nx, ny, nz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
        nn = np.sqrt(nx * nx + ny * ny + nz * nz)
        if nn < 1e-12:
            nx, ny, nz, nn = 0.0, 0.0, 1.0, 1.0
        nx, ny, nz = nx / nn, ny / nn, nz / nn
    h = 0.5 * (dist + rho_a - rho_b)
    count = add_candidate(mw, 0, ax - h * nx, ay - h * ny, az - h * nz, nx, ny, nz, rho_a + rho_b - dist, CODE_GJK)
    ux, uy, uz = P[1, 0] - P[0, 0], P[1, 1] - P[0, 1], P[1, 2] - P[0, 2]
    vx, vy, vz = Q[1, 0] - Q[0, 0], Q[1, 1] - Q[0, 1], Q[1, 2] - Q[0, 2]
    uu, vv = ux * ux + uy * uy + uz * uz, vx * vx + vy * vy + vz * vz
    uv = ux * vx + uy * vy + uz * vz
    if uu < 1e-20 or vv < 1e-20 or uv * uv < FACE_COS * FACE_COS * uu * vv:
        return count
    # parallel: the ends of the overlap of Q's projection onto P
    t0 = ((Q[0, 0] - P[0, 0]) * ux + (Q[0, 1] - P[0, 1]) * uy + (Q[0, 2] - P[0, 2]) * uz) / uu
    t1 = ((Q[1, 0] - P[0, 0]) * ux + (Q[1, 1] - P[0, 1]) * uy + (Q[1, 2] - P[0, 2]) * uz) / uu
    lo, hi = max(min(t0, t1), 0.0), min(max(t0, t1), 1.0)
    if hi - lo < 1e-9:
        return count
    count = 0  # the two ends replace the closest point
    for k in range(2):
        u = lo if k == 0 else hi
        px, py, pz = P[0, 0] + u * ux, P[0, 1] + u * uy, P[0, 2] + u * uz
        sep = nx * (px - Q[0, 0]) + ny * (py - Q[0, 1]) + nz * (pz - Q[0, 2])
        if sep - rho_a - rho_b > threshold:
            continue
        h = 0.5 * (sep + rho_a - rho_b)
        count = add_candidate(mw, count, px - h * nx, py - h * ny, pz - h * nz, nx, ny, nz, rho_a + rho_b - sep,
                              1024 + k)
    return count


@kernel(refcounts=False)
def feature_manifold(mw, count, kA, dA, vA, fA, RA, pA, rho_a, kB, dB, vB, fB, RB, pB, rho_b, normal, threshold):
    """Manifold candidates for the contact normal (from B to A): the better-aligned face of the two is
    the reference; two parallel segments give their overlap. Returns the count."""
    for c in range(3):
        mw.na[c] = -normal[c]  # (direction from A towards B)
    ca, face_a = support_feature(kA, dA, vA, fA, RA, pA, mw.na, mw.fa, mw.na)
    cb, face_b = support_feature(kB, dB, vB, fB, RB, pB, normal, mw.fb, mw.nb)
    align_a = -(mw.na[0] * normal[0] + mw.na[1] * normal[1] + mw.na[2] * normal[2]) if face_a else -2.0
    align_b = (mw.nb[0] * normal[0] + mw.nb[1] * normal[1] + mw.nb[2] * normal[2]) if face_b else -2.0
    if max(align_a, align_b) >= REFERENCE_COS:
        if align_b >= align_a - FACE_TIE:  # (B's face on a tie: the same reference, and keys, step after step)
            return face_manifold(mw, count, mw.fb, cb, mw.nb, mw.fa, ca, rho_b, rho_a, False, threshold)
        return face_manifold(mw, count, mw.fa, ca, mw.na, mw.fb, cb, rho_a, rho_b, True, threshold)
    if ca == 2 and cb == 2 and count == 0:  # e.g. a capsule lying along a cylinder's side
        return segment_pair(mw, mw.fa, mw.fb, rho_a, rho_b, threshold)
    return count


@kernel(refcounts=False)
def add_closest(mw, count, dist, normal, a, b, rho_a, rho_b, threshold, only_if_deeper):
    """The single GJK/EPA point (cores' signed distance dist, closest points a, b) as a candidate; with
    ``only_if_deeper`` only when deeper than every candidate so far (a curved shape's exact point)."""
    signed = dist - rho_a - rho_b
    if signed > threshold:
        return count
    if only_if_deeper:
        for k in range(count):
            if mw.depth[k] >= -signed - 1e-9:
                return count
    h = 0.5 * (rho_a - rho_b)
    return add_candidate(mw, count, 0.5 * (a[0] + b[0]) - h * normal[0], 0.5 * (a[1] + b[1]) - h * normal[1],
                         0.5 * (a[2] + b[2]) - h * normal[2], normal[0], normal[1], normal[2], -signed, CODE_GJK)


@kernel(refcounts=False)
def core_distance(kA, dA, vA, RA, pA, kB, dB, vB, RB, pB, wk, normal, a, b):
    """``gjk_epa``'s signed distance of the two cores (normal from B to A, closest points a, b), but for a sphere's
    centre inside a box, cylinder or cone core: its depth in closed form (``point_inside``; EPA's is approximate)."""
    depth = -1.0
    if kA == SPHERE:
        depth = point_depth(kB, dB, RB, pB, pA, normal, b)
        if depth > 0.0:
            for c in range(3):
                a[c] = pA[c]
    elif kB == SPHERE:
        depth = point_depth(kA, dA, RA, pA, pB, normal, a)
        if depth > 0.0:
            for c in range(3):
                normal[c] = -normal[c]
                b[c] = pB[c]
    return -depth if depth > 0.0 else gjk_epa(kA, dA, vA, RA, pA, kB, dB, vB, RB, pB, wk, normal, a, b)


@kernel(refcounts=False)
def convex_pair(mw, wk, kA, dA, vA, fA, RA, pA, rho_a, kB, dB, vB, fB, RB, pB, rho_b, threshold, normal, a, b):
    """Candidates for two convex shapes (see the module docstring); returns the count."""
    if (kA == SPHERE or kA == CAPSULE) and (kB == SPHERE or kB == CAPSULE):
        for k in range(2):
            s = -1.0 if k == 0 else 1.0
            for c in range(3):
                mw.fa[k, c] = pA[c] + s * dA[2] * RA[c, 2]
                mw.fb[k, c] = pB[c] + s * dB[2] * RB[c, 2]
        return segment_pair(mw, mw.fa, mw.fb, rho_a, rho_b, threshold)
    if kA == BOX and kB == BOX:
        kind, index, depth = box_box_sat(dA, RA, pA, dB, RB, pB, normal)
        if kind != SEPARATED:
            # the faces within REFERENCE_COS of the axis give the manifold; an edge axis that is not near one
            # (two edges crossing) gives the single point where the edges come closest
            count = feature_manifold(mw, 0, kA, dA, vA, fA, RA, pA, rho_a, kB, dB, vB, fB, RB, pB, rho_b, normal,
                                     threshold)
            if count > 0:
                return count
            for c in range(3):
                mw.na[c] = -normal[c]
            if kind == EDGES:
                box_edge(dA, RA, pA, index // 3, mw.na, mw.fa[0], mw.fa[1])
                box_edge(dB, RB, pB, index % 3, normal, mw.fb[0], mw.fb[1])
                s, t = closest_segment_params(mw.fa[0], mw.fa[1], mw.fb[0], mw.fb[1])
                for c in range(3):
                    a[c] = mw.fa[0, c] + s * (mw.fa[1, c] - mw.fa[0, c])
                    b[c] = mw.fb[0, c] + t * (mw.fb[1, c] - mw.fb[0, c])
            else:  # (clipping lost every point to round-off: keep A's deepest point)
                support(kA, dA, vA, RA, pA, mw.na, a, mw.nb)
                for c in range(3):
                    b[c] = a[c] + depth * normal[c]
            return add_closest(mw, 0, -depth, normal, a, b, rho_a, rho_b, threshold, False)
    dist = core_distance(kA, dA, vA, RA, pA, kB, dB, vB, RB, pB, wk, normal, a, b)
    if dist - rho_a - rho_b > threshold:
        return 0
    count = feature_manifold(mw, 0, kA, dA, vA, fA, RA, pA, rho_a, kB, dB, vB, fB, RB, pB, rho_b, normal, threshold)
    return add_closest(mw, count, dist, normal, a, b, rho_a, rho_b, threshold, count > 0)


@kernel(refcounts=False)
def plane_pair(mw, pts, kA, dA, vA, RA, pA, rho_a, pn, pd, threshold, tmp, tmp2):
    """Candidates of a shape on the plane pn·x = pd (normal pn towards the shape's side): its core's
    vertices within the threshold, and a curved core's exact lowest point. Returns the count."""
    m = core_points(kA, dA, vA, RA, pA, pts)
    count = 0
    deepest = -np.inf
    for k in range(m):
        s = pn[0] * pts[k, 0] + pn[1] * pts[k, 1] + pn[2] * pts[k, 2] - pd
        signed = s - rho_a
        if signed > threshold:
            continue
        h = 0.5 * (s + rho_a)
        if count < mw.depth.shape[0]:
            count = add_candidate(mw, count, pts[k, 0] - h * pn[0], pts[k, 1] - h * pn[1], pts[k, 2] - h * pn[2],
                                  pn[0], pn[1], pn[2], -signed, k)
        else:  # full: replace the shallowest
            low = 0
            for j in range(count):
                if mw.depth[j] < mw.depth[low]:
                    low = j
            if -signed > mw.depth[low]:
                add_candidate(mw, low, pts[k, 0] - h * pn[0], pts[k, 1] - h * pn[1], pts[k, 2] - h * pn[2],
                              pn[0], pn[1], pn[2], -signed, k)
        deepest = max(deepest, -signed)
    if kA == CYLINDER or kA == CONE:
        for c in range(3):
            tmp[c] = -pn[c]
        support(kA, dA, vA, RA, pA, tmp, tmp2, tmp)
        s = pn[0] * tmp2[0] + pn[1] * tmp2[1] + pn[2] * tmp2[2] - pd
        signed = s - rho_a
        if signed <= threshold and -signed > deepest + 1e-9:
            h = 0.5 * (s + rho_a)
            count = add_candidate(mw, min(count, mw.depth.shape[0] - 1), tmp2[0] - h * pn[0], tmp2[1] - h * pn[1],
                                  tmp2[2] - h * pn[2], pn[0], pn[1], pn[2], -signed, CODE_EXACT)
    return count


@kernel(inline="llvm", refcounts=False)
def _box_triangle_overlap(h, R, p, tri, lx, ly, lz):
    """How far a box (half sizes h at R, p) and a triangle tri (3, 3) overlap along the unit axis l (m; < 0: apart)."""
    r = 0.0
    for k in range(3):
        r += h[k] * abs(lx * R[0, k] + ly * R[1, k] + lz * R[2, k])
    c = lx * p[0] + ly * p[1] + lz * p[2]
    lo, hi = np.inf, -np.inf
    for v in range(3):
        t = lx * tri[v, 0] + ly * tri[v, 1] + lz * tri[v, 2]
        lo, hi = min(lo, t), max(hi, t)
    return min(c + r - lo, hi - c + r)


@kernel(inline="llvm", refcounts=False)
def _face_side(tri, tn, p):
    """p's signed height over the plane of triangle tri (3, 3) along its unit face normal tn (m)."""
    return tn[0] * (p[0] - tri[0, 0]) + tn[1] * (p[1] - tri[0, 1]) + tn[2] * (p[2] - tri[0, 2])


@kernel(inline="llvm", refcounts=False)
def triangle_weights(tri, x):
    """(w1, w2): the barycentric weights of vertices 1 and 2 of triangle tri (3, 3) at the point x (3,) of its plane."""
    e1x, e1y, e1z = tri[1, 0] - tri[0, 0], tri[1, 1] - tri[0, 1], tri[1, 2] - tri[0, 2]
    e2x, e2y, e2z = tri[2, 0] - tri[0, 0], tri[2, 1] - tri[0, 1], tri[2, 2] - tri[0, 2]
    px, py, pz = x[0] - tri[0, 0], x[1] - tri[0, 1], x[2] - tri[0, 2]
    d00 = e1x * e1x + e1y * e1y + e1z * e1z
    d01 = e1x * e2x + e1y * e2y + e1z * e2z
    d11 = e2x * e2x + e2y * e2y + e2z * e2z
    d20 = px * e1x + py * e1y + pz * e1z
    d21 = px * e2x + py * e2y + pz * e2z
    den = d00 * d11 - d01 * d01
    return (d11 * d20 - d01 * d21) / den, (d00 * d21 - d01 * d20) / den


@kernel(refcounts=False)
def box_face_distance(h, R, p, tri, tn, normal, a, b):
    """GJK/EPA's answer for a box core (half sizes h at R, p) and a triangle tri (3, 3) of face normal tn when the
    face holds the contact, without their iterations (three in four of a pile's floor pairs): the signed distance
    (m, < 0 penetrating), normal (3,) ← ±tn towards the box's centre, a (3,) ← the core's point deepest along it,
    b (3,) ← a on the face. It is that when a's foot is inside the triangle (the distance: a's height; the depth:
    its depth, if no other axis of the separating-axis test — the box's faces, its edges across the triangle's —
    overlaps as little). NaN otherwise (near an edge, or another axis least): GJK/EPA then."""
    sgn = 1.0 if _face_side(tri, tn, p) >= 0.0 else -1.0
    ux, uy, uz = sgn * tn[0], sgn * tn[1], sgn * tn[2]
    for c in range(3):
        a[c] = p[c]
    for k in range(3):
        w = -h[k] if ux * R[0, k] + uy * R[1, k] + uz * R[2, k] >= 0.0 else h[k]
        for c in range(3):
            a[c] += w * R[c, k]
    s = ux * (a[0] - tri[0, 0]) + uy * (a[1] - tri[0, 1]) + uz * (a[2] - tri[0, 2])
    b[0], b[1], b[2] = a[0] - s * ux, a[1] - s * uy, a[2] - s * uz
    w1, w2 = triangle_weights(tri, b)
    if min(w1, w2, 1.0 - w1 - w2) < 1e-6:  # (on or near an edge: the edge logic of triangle_pair, after GJK/EPA)
        return np.nan
    if s < 0.0:
        for k in range(3):
            lx, ly, lz = R[0, k], R[1, k], R[2, k]
            if abs(lx * ux + ly * uy + lz * uz) < 1.0 - 1e-12 and _box_triangle_overlap(h, R, p, tri, lx, ly, lz) <= -s:
                return np.nan
            for e in range(3):
                f = (e + 1) % 3
                ex, ey, ez = tri[f, 0] - tri[e, 0], tri[f, 1] - tri[e, 1], tri[f, 2] - tri[e, 2]
                cx, cy, cz = ly * ez - lz * ey, lz * ex - lx * ez, lx * ey - ly * ex
                cl = np.sqrt(cx * cx + cy * cy + cz * cz)
                if cl < 1e-9 * np.sqrt(ex * ex + ey * ey + ez * ez):  # (parallel: a face axis covers it)
                    continue
                if _box_triangle_overlap(h, R, p, tri, cx / cl, cy / cl, cz / cl) <= -s:
                    return np.nan
    normal[0], normal[1], normal[2] = ux, uy, uz
    return s


@kernel(refcounts=False)
def triangle_pair(mw, wk, kA, dA, vA, fA, RA, pA, rho_a, tri, tn, sharp, rho_t, threshold, normal, a, b, eye,
                  zero, zdims, nofaces):
    """Candidates of a shape against one static triangle tri (3, 3) (face normal tn, sharp edge flags,
    rounding rho_t), the triangle being the second shape. Returns the count. A contact whose closest point
    is on an edge or vertex that is not sharp, with a normal that is not the face's, takes the face's normal
    and the part of the shape over the face (``static_mesh``)."""
    dist = box_face_distance(dA, RA, pA, tri, tn, normal, a, b) if kA == BOX else np.nan
    if np.isnan(dist):
        dist = gjk_epa(kA, dA, vA, RA, pA, TRIANGLE, zdims, tri, eye, zero, wk, normal, a, b)
    if dist - rho_a - rho_t > threshold + 1e-9:
        return 0
    along = normal[0] * tn[0] + normal[1] * tn[1] + normal[2] * tn[2]
    if kA == BOX and abs(along) >= FACE_COS:
        # EPA on a box just touching a triangle can return the face normal pointing through the triangle (seen at
        # −4e-9 m: a 0.2 m "depth" from the box's far face); the shorter way out is to the centre's side
        if along * _face_side(tri, tn, pA) < 0.0:
            for c in range(3):
                normal[c] = -normal[c]
    # where on the triangle is b: an edge or vertex that is not sharp takes the face normal
    w1, w2 = triangle_weights(tri, b)
    w0 = 1.0 - w1 - w2
    eps = 1e-7
    # the edges the point lies on: edge k runs from v_k to v_k+1, where the weight of the third vertex is 0
    on0, on1, on2 = w2 <= eps, w0 <= eps, w1 <= eps
    free_normal = (on0 and sharp[0]) or (on1 and sharp[1]) or (on2 and sharp[2])
    interior = not (on0 or on1 or on2)
    # closest on a flat or concave edge, which has no normal of its own, with another normal than the face's: the
    # part of the shape over this face, along the face's normal (Bullet's internal-edge fix), without the closest
    # point. Leaving it all to the neighbour lost boxes tilted across a floor seam (EPA's normal tilted on both).
    seam = not interior and not free_normal and abs(along) < FACE_COS  # (|along|: the flip above keeps it)
    if seam:
        sgn = 1.0 if _face_side(tri, tn, pA) >= 0.0 else -1.0
        for c in range(3):
            normal[c] = sgn * tn[c]
    count = feature_manifold(mw, 0, kA, dA, vA, fA, RA, pA, rho_a, TRIANGLE, zdims, tri, nofaces, eye, zero, rho_t,
                             normal, threshold)
    return count if seam else add_closest(mw, count, dist, normal, a, b, rho_a, rho_t, threshold, count > 0)
