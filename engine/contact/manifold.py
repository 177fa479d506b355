"""Contact manifolds: several points where a face rests on a face, so that boxes stack without rocking.

One contact point per pair (the closest or deepest points of GJK/EPA) lets a box resting on a face
pivot about that point. A manifold instead takes the *reference face* — the face of either shape
whose outward normal is closest to the contact normal, if within ``REFERENCE_COS`` of it — and clips
the other shape's feature facing it (the *incident* face, edge or vertex; ``convex.support_feature``)
against the reference face's side planes (Sutherland–Hodgman; the one-shot manifold of Gregorius,
"Robust Contact Creation for Physics Simulations", GDC 2015, and of ODE's and Bullet's box–box).
Every clipped point is measured along the reference normal; those closer than the pair's threshold
(the speculative distance) become contacts, all with the reference face's normal. More than four are
reduced to four: the deepest, the farthest from it, the largest triangle, the largest quadrilateral
(as Bullet's ``btPersistentManifold::sortCachedPoints`` keeps the largest area).

Every point carries a code (which incident vertex, or which incident edge crossed which side plane),
so that the solver can warm-start it next step (``narrowphase`` makes it part of the contact's key).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._jit import kernel
from .convex import MAX_FEATURE

REFERENCE_COS = 0.98      # a face within 11.5° of the contact normal may serve as the reference
MAX_CANDIDATES = 40
MANIFOLD_POINTS = 4
CODE_GJK = 1023           # the single closest/deepest point
CODE_FLIP = 512           # added when the reference face is A's
CODE_EXACT = 2047         # a plane's exact support point on a curved shape


class ManifoldWork(NamedTuple):
    """Scratch of one pair (reused; one per thread)."""

    fa: np.ndarray        # (MAX_FEATURE, 3) features of A and B
    fb: np.ndarray
    na: np.ndarray        # (3,) their face normals
    nb: np.ndarray
    poly: np.ndarray      # (2, 4 MAX_FEATURE, 3) clipping ping-pong
    pcode: np.ndarray     # (2, 4 MAX_FEATURE) int64
    pts: np.ndarray       # (MAX_CANDIDATES, 3) candidate contact points
    normal: np.ndarray    # (MAX_CANDIDATES, 3) their normals (from B to A)
    depth: np.ndarray     # (MAX_CANDIDATES,)
    code: np.ndarray      # (MAX_CANDIDATES,) int64
    keep: np.ndarray      # (MANIFOLD_POINTS,) int64


def manifold_work() -> ManifoldWork:
    m = 4 * MAX_FEATURE
    return ManifoldWork(np.zeros((MAX_FEATURE, 3)), np.zeros((MAX_FEATURE, 3)), np.zeros(3), np.zeros(3),
                        np.zeros((2, m, 3)), np.zeros((2, m), np.int64), np.zeros((MAX_CANDIDATES, 3)),
                        np.zeros((MAX_CANDIDATES, 3)), np.zeros(MAX_CANDIDATES), np.zeros(MAX_CANDIDATES, np.int64),
                        np.zeros(MANIFOLD_POINTS, np.int64))


@kernel(inline="llvm", refcounts=False)
def add_candidate(mw, count, px, py, pz, nx, ny, nz, depth, code):
    """Append a candidate (point, normal from B to A, depth > 0 penetrating) when there is room."""
    if count >= mw.depth.shape[0]:
        return count
    mw.pts[count, 0], mw.pts[count, 1], mw.pts[count, 2] = px, py, pz
    mw.normal[count, 0], mw.normal[count, 1], mw.normal[count, 2] = nx, ny, nz
    mw.depth[count] = depth
    mw.code[count] = code
    return count + 1


@kernel(refcounts=False)
def clip_against_face(ref, nref, normal, inc, ninc, poly, pcode):
    """Clip the incident feature inc (ninc points: vertex, segment or polygon) against the side planes of
    the reference polygon ref (nref ≥ 3 points, outward normal ``normal``). Result in poly[0], codes in
    pcode[0] (vertex j: j; where incident edge j crosses side i: 16 + 16 i + j); returns its size."""
    # orientation of the reference polygon about its normal (the inside of edge i is on its left then)
    ox, oy, oz = 0.0, 0.0, 0.0
    for i in range(nref):
        k = (i + 1) % nref
        ox += ref[i, 1] * ref[k, 2] - ref[i, 2] * ref[k, 1]
        oy += ref[i, 2] * ref[k, 0] - ref[i, 0] * ref[k, 2]
        oz += ref[i, 0] * ref[k, 1] - ref[i, 1] * ref[k, 0]
    orient = 1.0 if ox * normal[0] + oy * normal[1] + oz * normal[2] >= 0.0 else -1.0
    for j in range(ninc):
        poly[0, j, 0], poly[0, j, 1], poly[0, j, 2] = inc[j, 0], inc[j, 1], inc[j, 2]
        pcode[0, j] = j
    n = ninc
    src = 0
    cap = poly.shape[1]
    # a point this close outside a side still counts as inside: aligned boxes put their corners exactly on
    # the sides, and round-off must not turn a kept corner (its code) into a crossing from one step to the next
    ex0, ey0, ez0 = ref[1, 0] - ref[0, 0], ref[1, 1] - ref[0, 1], ref[1, 2] - ref[0, 2]
    tol = 1e-7 * np.sqrt(ex0 * ex0 + ey0 * ey0 + ez0 * ez0) + 1e-12
    for i in range(nref):
        k = (i + 1) % nref
        ex, ey, ez = ref[k, 0] - ref[i, 0], ref[k, 1] - ref[i, 1], ref[k, 2] - ref[i, 2]
        # inward side normal: normal × edge (left of the edge)
        sx = orient * (normal[1] * ez - normal[2] * ey)
        sy = orient * (normal[2] * ex - normal[0] * ez)
        sz = orient * (normal[0] * ey - normal[1] * ex)
        sl = np.sqrt(sx * sx + sy * sy + sz * sz) + 1e-300  # (distances in m)
        dst = 1 - src
        m = 0
        if n == 1:
            d0 = (sx * (poly[src, 0, 0] - ref[i, 0]) + sy * (poly[src, 0, 1] - ref[i, 1])
                  + sz * (poly[src, 0, 2] - ref[i, 2])) / sl
            if d0 >= -tol:
                poly[dst, 0, 0], poly[dst, 0, 1], poly[dst, 0, 2] = poly[src, 0, 0], poly[src, 0, 1], poly[src, 0, 2]
                pcode[dst, 0] = pcode[src, 0]
                m = 1
        else:
            last = n if n > 2 else 1  # a segment is one open edge, a polygon n closed ones
            for j in range(last):
                jn = (j + 1) % n
                dj = (sx * (poly[src, j, 0] - ref[i, 0]) + sy * (poly[src, j, 1] - ref[i, 1])
                      + sz * (poly[src, j, 2] - ref[i, 2])) / sl + tol
                dn = (sx * (poly[src, jn, 0] - ref[i, 0]) + sy * (poly[src, jn, 1] - ref[i, 1])
                      + sz * (poly[src, jn, 2] - ref[i, 2])) / sl + tol
                if dj >= 0.0 and m < cap:
                    poly[dst, m, 0], poly[dst, m, 1], poly[dst, m, 2] = poly[src, j, 0], poly[src, j, 1], poly[src, j, 2]
                    pcode[dst, m] = pcode[src, j]
                    m += 1
                if (dj >= 0.0) != (dn >= 0.0) and m < cap:
                    t = dj / (dj - dn)
                    for c in range(3):
                        poly[dst, m, c] = poly[src, j, c] + t * (poly[src, jn, c] - poly[src, j, c])
                    pcode[dst, m] = 16 + 16 * i + (pcode[src, j] % 16)
                    m += 1
                if n == 2 and dn >= 0.0 and m < cap:  # the segment's far end
                    poly[dst, m, 0], poly[dst, m, 1], poly[dst, m, 2] = poly[src, jn, 0], poly[src, jn, 1], poly[src, jn, 2]
                    pcode[dst, m] = pcode[src, jn]
                    m += 1
        n = m
        src = dst
        if n == 0:
            break
    if src != 0:
        for j in range(n):
            poly[0, j, 0], poly[0, j, 1], poly[0, j, 2] = poly[1, j, 0], poly[1, j, 1], poly[1, j, 2]
            pcode[0, j] = pcode[1, j]
    return n


@kernel(refcounts=False)
def face_manifold(mw, count, ref, nref, normal, inc, ninc, rho_ref, rho_inc, flip, threshold):
    """Candidates from the reference polygon ref (outward unit normal ``normal``, rounding rho_ref) and
    the incident feature inc (rounding rho_inc): clipped points whose signed distance along the normal
    is ≤ threshold. ``flip``: the reference face is A's (the contact normal, from B to A, is −normal)."""
    m = clip_against_face(ref, nref, normal, inc, ninc, mw.poly, mw.pcode)
    s_n = -1.0 if flip else 1.0
    for j in range(m):
        x, y, z = mw.poly[0, j, 0], mw.poly[0, j, 1], mw.poly[0, j, 2]
        s = normal[0] * (x - ref[0, 0]) + normal[1] * (y - ref[0, 1]) + normal[2] * (z - ref[0, 2])
        signed = s - rho_ref - rho_inc
        if signed > threshold:
            continue
        h = 0.5 * (s + rho_inc - rho_ref)  # the midpoint of the two surfaces
        count = add_candidate(mw, count, x - h * normal[0], y - h * normal[1], z - h * normal[2],
                              s_n * normal[0], s_n * normal[1], s_n * normal[2], -signed,
                              mw.pcode[0, j] + (CODE_FLIP if flip else 0))
    return count


@kernel(inline="llvm", refcounts=False)
def _area2(p, i, j, k, nx, ny, nz):
    """Twice the signed area of triangle (p[i], p[j], p[k]) about (nx, ny, nz)."""
    ax, ay, az = p[j, 0] - p[i, 0], p[j, 1] - p[i, 1], p[j, 2] - p[i, 2]
    bx, by, bz = p[k, 0] - p[i, 0], p[k, 1] - p[i, 1], p[k, 2] - p[i, 2]
    return nx * (ay * bz - az * by) + ny * (az * bx - ax * bz) + nz * (ax * by - ay * bx)


@kernel(refcounts=False)
def reduce_manifold(mw, count):
    """Indices (into the candidates) of at most MANIFOLD_POINTS to keep, in mw.keep; returns how many."""
    if count <= MANIFOLD_POINTS:
        for k in range(count):
            mw.keep[k] = k
        return count
    i0 = 0
    for k in range(count):
        if mw.depth[k] > mw.depth[i0]:
            i0 = k
    nx, ny, nz = mw.normal[i0, 0], mw.normal[i0, 1], mw.normal[i0, 2]
    i1, best = -1, -1.0
    for k in range(count):
        d = (mw.pts[k, 0] - mw.pts[i0, 0]) ** 2 + (mw.pts[k, 1] - mw.pts[i0, 1]) ** 2 + (mw.pts[k, 2] - mw.pts[i0, 2]) ** 2
        if k != i0 and d > best:
            i1, best = k, d
    i2, best = -1, -1.0
    for k in range(count):
        a = abs(_area2(mw.pts, i0, i1, k, nx, ny, nz))
        if k != i0 and k != i1 and a > best:
            i2, best = k, a
    if best <= 1e-24:  # all on one line: the two ends suffice
        mw.keep[0], mw.keep[1] = i0, i1
        return 2
    sign = 1.0 if _area2(mw.pts, i0, i1, i2, nx, ny, nz) > 0.0 else -1.0
    i3, best = -1, 0.0
    for k in range(count):  # the point farthest outside the triangle (the largest quadrilateral)
        if k == i0 or k == i1 or k == i2:
            continue
        out = max(-sign * _area2(mw.pts, i0, i1, k, nx, ny, nz), -sign * _area2(mw.pts, i1, i2, k, nx, ny, nz),
                  -sign * _area2(mw.pts, i2, i0, k, nx, ny, nz))
        if out > best:
            i3, best = k, out
    mw.keep[0], mw.keep[1], mw.keep[2] = i0, i1, i2
    if i3 < 0:
        return 3
    mw.keep[3] = i3
    return 4
