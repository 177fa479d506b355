"""Distance and penetration of two convex cores: GJK, then EPA when they overlap (compiled).

GJK (Gilbert, Johnson & Keerthi 1988; the form of van den Bergen, *Collision Detection in Interactive
3D Environments*, §4.3) finds the point v of the Minkowski difference D = A − B closest to the
origin, from support points w = s_A(−v) − s_B(v) of D: the simplex holding the closest point is
reduced by the Voronoi-region tests of Ericson (*Real-Time Collision Detection*, §5.1.2, 5.1.5,
5.1.6), and the loop stops when ‖v‖² − v·w ≤ ε‖v‖² (v·w bounds the distance from below). Then
‖v‖ is the distance, v/‖v‖ the normal from B to A, and the barycentric weights of v on the simplex
give the closest points on A and B.

If the origin is inside D (the cores overlap), EPA (van den Bergen 2001, §4.3.5) grows the final
simplex into a polytope inside D towards D's boundary, always expanding the face closest to the
origin, until the support in that face's normal adds less than ε: the face's distance is the
penetration depth p and −normal the direction from B to A that separates them by the least
translation. A new support point w replaces the faces it sees by a fan of faces from w to their
boundary (the horizon); the faces it sees are found by walking the polytope's face adjacency from
the expanded face (van den Bergen's silhouette; Bullet's btGjkEpa2 ``EPA::expand``), never by a
plane test of every face: w on the plane of a distant face (a flat cap of a cylinder or a box's face,
where many faces of the polytope are coplanar) sees it by round-off, and a horizon of two loops folds
the polytope inside out (issue #30: depths that depended on the order of the pair). A polytope pair
converges exactly; a curved core to ε after enough expansions (``EPA_VERTICES``), except where a whole
ring of directions is (nearly) equally deep — a sphere centred in a cylinder —, whose polygon of at
most ``EPA_VERTICES`` vertices leaves the depth short by about r(1 − cos(π/k)) (measured 1.4e-4 m); the narrow
phase gives a sphere's centre inside a box, cylinder or cone its depth in closed form instead
(``narrowphase.core_distance``).

Signed distance convention: ``gjk_epa`` returns d > 0 (apart) or −p (overlapping) of the *cores*;
the narrow phase subtracts the rounding radii.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._jit import kernel
from .convex import TRIANGLE, support

GJK_ITERATIONS = 96
GJK_TOLERANCE = 1e-13     # relative: stop when ‖v‖² − v·w ≤ this · ‖v‖²
EPA_VERTICES = 128
EPA_FACES = 512
EPA_TOLERANCE = 1e-11     # relative to the shapes' scale


class GjkWork(NamedTuple):
    """Scratch of one GJK/EPA call (reused across calls; one per thread)."""

    W: np.ndarray      # (EPA_VERTICES, 3) points of D (simplex first, then the polytope)
    A: np.ndarray      # (EPA_VERTICES, 3) their support points on A
    B: np.ndarray      # (EPA_VERTICES, 3) … and on B
    lam: np.ndarray    # (4,) barycentric weights of the simplex's closest point
    face: np.ndarray   # (EPA_FACES, 3) int64 vertex indices
    fn: np.ndarray     # (EPA_FACES, 3) outward unit normals
    fd: np.ndarray     # (EPA_FACES,) distances from the origin
    alive: np.ndarray  # (EPA_FACES,) bool
    edges: np.ndarray  # (3 EPA_FACES, 2) int64 horizon
    adj: np.ndarray    # (EPA_FACES, 3) int64 the face across edge e (face[f, e] → face[f, e + 1])
    mark: np.ndarray   # (EPA_FACES,) int64 +tag: seen by this expansion's point, −tag: tested, not seen
    stack: np.ndarray  # (EPA_FACES,) int64 faces to walk from, then the new faces' slots
    hface: np.ndarray  # (3 EPA_FACES,) int64 the unseen face beyond each horizon edge
    start: np.ndarray  # (EPA_VERTICES,) int64 the horizon edge leaving each vertex
    v: np.ndarray      # (3,) scratch vectors
    d: np.ndarray
    sa: np.ndarray
    sb: np.ndarray
    tmp: np.ndarray


def gjk_work() -> GjkWork:
    return GjkWork(np.zeros((EPA_VERTICES, 3)), np.zeros((EPA_VERTICES, 3)), np.zeros((EPA_VERTICES, 3)), np.zeros(4),
                   np.zeros((EPA_FACES, 3), np.int64), np.zeros((EPA_FACES, 3)), np.zeros(EPA_FACES),
                   np.zeros(EPA_FACES, np.bool_), np.zeros((3 * EPA_FACES, 2), np.int64),
                   np.zeros((EPA_FACES, 3), np.int64), np.zeros(EPA_FACES, np.int64), np.zeros(EPA_FACES, np.int64),
                   np.zeros(3 * EPA_FACES, np.int64), np.zeros(EPA_VERTICES, np.int64), np.zeros(3), np.zeros(3),
                   np.zeros(3), np.zeros(3), np.zeros(3))


@kernel(inline="llvm", refcounts=False)
def _dot(a, i, b, j):
    return a[i, 0] * b[j, 0] + a[i, 1] * b[j, 1] + a[i, 2] * b[j, 2]


@kernel(inline="llvm", refcounts=False)
def _copy_row(src, i, dst, j):
    dst[j, 0] = src[i, 0]
    dst[j, 1] = src[i, 1]
    dst[j, 2] = src[i, 2]


@kernel(inline="llvm", refcounts=False)
def _keep(wk, i0, i1, i2, n):
    """The simplex becomes its points i0, i1, i2 (the first n of them), in that order (rows 4–6 of the
    buffers are the scratch: the simplex uses rows 0–3)."""
    for k in range(n):
        src = i0 if k == 0 else i1 if k == 1 else i2
        for buf in (wk.W, wk.A, wk.B):
            buf[4 + k, 0], buf[4 + k, 1], buf[4 + k, 2] = buf[src, 0], buf[src, 1], buf[src, 2]
    for k in range(n):
        for buf in (wk.W, wk.A, wk.B):
            buf[k, 0], buf[k, 1], buf[k, 2] = buf[4 + k, 0], buf[4 + k, 1], buf[4 + k, 2]
    return n


@kernel(inline="llvm", refcounts=False)
def _set_v(wk, n):
    """v ← Σ λ_k W_k over the first n simplex points."""
    for i in range(3):
        s = 0.0
        for k in range(n):
            s += wk.lam[k] * wk.W[k, i]
        wk.v[i] = s


@kernel(refcounts=False)
def closest_on_triangle(wk, i0, i1, i2):
    """Ericson §5.1.5 for the origin and the triangle W[i0], W[i1], W[i2]; the simplex is reduced to the
    feature holding the closest point (its weights in lam, v set). Returns the new simplex size."""
    W = wk.W
    abx, aby, abz = W[i1, 0] - W[i0, 0], W[i1, 1] - W[i0, 1], W[i1, 2] - W[i0, 2]
    acx, acy, acz = W[i2, 0] - W[i0, 0], W[i2, 1] - W[i0, 1], W[i2, 2] - W[i0, 2]
    d1 = -(abx * W[i0, 0] + aby * W[i0, 1] + abz * W[i0, 2])
    d2 = -(acx * W[i0, 0] + acy * W[i0, 1] + acz * W[i0, 2])
    if d1 <= 0.0 and d2 <= 0.0:
        n = _keep(wk, i0, i1, i2, 1)
        wk.lam[0] = 1.0
        _set_v(wk, n)
        return n
    d3 = -(abx * W[i1, 0] + aby * W[i1, 1] + abz * W[i1, 2])
    d4 = -(acx * W[i1, 0] + acy * W[i1, 1] + acz * W[i1, 2])
    if d3 >= 0.0 and d4 <= d3:
        n = _keep(wk, i1, i0, i2, 1)
        wk.lam[0] = 1.0
        _set_v(wk, n)
        return n
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        t = d1 / (d1 - d3)
        n = _keep(wk, i0, i1, i2, 2)
        wk.lam[0], wk.lam[1] = 1.0 - t, t
        _set_v(wk, n)
        return n
    d5 = -(abx * W[i2, 0] + aby * W[i2, 1] + abz * W[i2, 2])
    d6 = -(acx * W[i2, 0] + acy * W[i2, 1] + acz * W[i2, 2])
    if d6 >= 0.0 and d5 <= d6:
        n = _keep(wk, i2, i0, i1, 1)
        wk.lam[0] = 1.0
        _set_v(wk, n)
        return n
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        t = d2 / (d2 - d6)
        n = _keep(wk, i0, i2, i1, 2)
        wk.lam[0], wk.lam[1] = 1.0 - t, t
        _set_v(wk, n)
        return n
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and d4 - d3 >= 0.0 and d5 - d6 >= 0.0:
        t = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        n = _keep(wk, i1, i2, i0, 2)
        wk.lam[0], wk.lam[1] = 1.0 - t, t
        _set_v(wk, n)
        return n
    denom = 1.0 / (va + vb + vc)
    v, w = vb * denom, vc * denom
    n = _keep(wk, i0, i1, i2, 3)
    wk.lam[0], wk.lam[1], wk.lam[2] = 1.0 - v - w, v, w
    _set_v(wk, n)
    return n


@kernel(refcounts=False)
def closest_on_simplex(wk, n):
    """Reduce the simplex of n points (1–4) to the smallest one holding its point closest to the origin;
    returns its size, 4 when the origin is inside the tetrahedron."""
    W = wk.W
    if n == 1:
        wk.lam[0] = 1.0
        _set_v(wk, 1)
        return 1
    if n == 2:
        abx, aby, abz = W[1, 0] - W[0, 0], W[1, 1] - W[0, 1], W[1, 2] - W[0, 2]
        ll = abx * abx + aby * aby + abz * abz
        t = -(abx * W[0, 0] + aby * W[0, 1] + abz * W[0, 2]) / ll if ll > 0.0 else 0.0
        if t <= 0.0:
            n = _keep(wk, 0, 1, 2, 1)
            wk.lam[0] = 1.0
        elif t >= 1.0:
            n = _keep(wk, 1, 0, 2, 1)
            wk.lam[0] = 1.0
        else:
            wk.lam[0], wk.lam[1] = 1.0 - t, t
        _set_v(wk, n)
        return n
    if n == 3:
        return closest_on_triangle(wk, 0, 1, 2)
    # tetrahedron: the origin is inside when every face has it on the opposite vertex's side; else the
    # closest point is on a face — all four are tried (a sign test that skips faces fails on slivers)
    inside = True
    for f in range(4):
        i0, i1, i2, io = (0, 1, 2, 3) if f == 0 else (0, 3, 1, 2) if f == 1 else (0, 2, 3, 1) if f == 2 else (1, 3, 2, 0)
        nx = (W[i1, 1] - W[i0, 1]) * (W[i2, 2] - W[i0, 2]) - (W[i1, 2] - W[i0, 2]) * (W[i2, 1] - W[i0, 1])
        ny = (W[i1, 2] - W[i0, 2]) * (W[i2, 0] - W[i0, 0]) - (W[i1, 0] - W[i0, 0]) * (W[i2, 2] - W[i0, 2])
        nz = (W[i1, 0] - W[i0, 0]) * (W[i2, 1] - W[i0, 1]) - (W[i1, 1] - W[i0, 1]) * (W[i2, 0] - W[i0, 0])
        s_origin = -(nx * W[i0, 0] + ny * W[i0, 1] + nz * W[i0, 2])
        s_other = nx * (W[io, 0] - W[i0, 0]) + ny * (W[io, 1] - W[i0, 1]) + nz * (W[io, 2] - W[i0, 2])
        if not s_origin * s_other > 0.0:
            inside = False
    if inside:
        return 4
    for k in range(4):  # the tetrahedron, kept in rows 8–11 while faces are tried
        _copy_row(W, k, W, 8 + k)
        _copy_row(wk.A, k, wk.A, 8 + k)
        _copy_row(wk.B, k, wk.B, 8 + k)
    best, best_n = np.inf, 1
    for f in range(4):
        for k in range(4):
            _copy_row(W, 8 + k, W, k)
            _copy_row(wk.A, 8 + k, wk.A, k)
            _copy_row(wk.B, 8 + k, wk.B, k)
        i0, i1, i2 = (0, 1, 2) if f == 0 else (0, 3, 1) if f == 1 else (0, 2, 3) if f == 2 else (1, 3, 2)
        m = closest_on_triangle(wk, i0, i1, i2)
        dist = wk.v[0] ** 2 + wk.v[1] ** 2 + wk.v[2] ** 2
        if dist < best:
            best, best_n = dist, m
            for k in range(m):  # rows 12–14 and lam[…] of the best face so far
                _copy_row(W, k, W, 12 + k)
                _copy_row(wk.A, k, wk.A, 12 + k)
                _copy_row(wk.B, k, wk.B, 12 + k)
            for k in range(3):
                W[15, k] = wk.lam[k]
    for k in range(best_n):
        _copy_row(W, 12 + k, W, k)
        _copy_row(wk.A, 12 + k, wk.A, k)
        _copy_row(wk.B, 12 + k, wk.B, k)
        wk.lam[k] = W[15, k]
    _set_v(wk, best_n)
    return best_n


@kernel(inline="llvm", refcounts=False)
def minkowski_support(kA, dA, vA, RA, pA, kB, dB, vB, RB, pB, wk, dx, dy, dz, row):
    """W[row] = s_A(d) − s_B(−d), with A[row], B[row] the support points."""
    wk.d[0], wk.d[1], wk.d[2] = dx, dy, dz
    support(kA, dA, vA, RA, pA, wk.d, wk.sa, wk.tmp)
    wk.d[0], wk.d[1], wk.d[2] = -dx, -dy, -dz
    support(kB, dB, vB, RB, pB, wk.d, wk.sb, wk.tmp)
    for i in range(3):
        wk.A[row, i] = wk.sa[i]
        wk.B[row, i] = wk.sb[i]
        wk.W[row, i] = wk.sa[i] - wk.sb[i]


@kernel(refcounts=False)
def gjk_epa(kA, dA, vA, RA, pA, kB, dB, vB, RB, pB, wk, normal, a, b):
    """Signed distance (m) between the cores A and B (see ``convex``), with normal (3,) ← the unit
    direction from B to A and a, b (3,) ← the closest (or, overlapping, deepest) points on A's and B's
    cores; a − b = distance · normal."""
    dx, dy, dz = pA[0] - pB[0], pA[1] - pB[1], pA[2] - pB[2]
    if dx * dx + dy * dy + dz * dz < 1e-30:
        dx, dy, dz = 1.0, 0.0, 0.0
    minkowski_support(kA, dA, vA, RA, pA, kB, dB, vB, RB, pB, wk, dx, dy, dz, 0)
    n = 1
    wk.lam[0] = 1.0
    _set_v(wk, 1)
    scale = max(np.sqrt(wk.W[0, 0] ** 2 + wk.W[0, 1] ** 2 + wk.W[0, 2] ** 2), 1e-6)
    vv = wk.v[0] ** 2 + wk.v[1] ** 2 + wk.v[2] ** 2
    overlap = vv <= (1e-14 * scale) ** 2
    for _ in range(GJK_ITERATIONS):
        if overlap:
            break
        minkowski_support(kA, dA, vA, RA, pA, kB, dB, vB, RB, pB, wk, -wk.v[0], -wk.v[1], -wk.v[2], n)
        vw = wk.v[0] * wk.W[n, 0] + wk.v[1] * wk.W[n, 1] + wk.v[2] * wk.W[n, 2]
        if vv - vw <= GJK_TOLERANCE * vv:
            break  # v is the closest point to within the tolerance
        duplicate = False
        for k in range(n):
            if abs(wk.W[k, 0] - wk.W[n, 0]) + abs(wk.W[k, 1] - wk.W[n, 1]) + abs(wk.W[k, 2] - wk.W[n, 2]) <= 1e-15 * scale:
                duplicate = True
        if duplicate:
            break
        for k in range(n):  # the simplex before the update (rows 16–19), restored if it makes no progress
            _copy_row(wk.W, k, wk.W, 16 + k)
            _copy_row(wk.A, k, wk.A, 16 + k)
            _copy_row(wk.B, k, wk.B, 16 + k)
            wk.W[20, k] = wk.lam[k]
        previous = n
        n = closest_on_simplex(wk, n + 1)
        if n == 4:
            if vw > 0.0:
                # w lies on v's side of the plane v·x = 0, as does the old simplex: the new one cannot enclose
                # the origin (a sliver tetrahedron fooled the sign tests), and v·w > 0 proves A and B apart
                n = previous
                for k in range(n):
                    _copy_row(wk.W, 16 + k, wk.W, k)
                    _copy_row(wk.A, 16 + k, wk.A, k)
                    _copy_row(wk.B, 16 + k, wk.B, k)
                    wk.lam[k] = wk.W[20, k]
                _set_v(wk, n)
                break
            overlap = True
            break
        new = wk.v[0] ** 2 + wk.v[1] ** 2 + wk.v[2] ** 2
        if new <= (1e-14 * scale) ** 2:
            overlap = True
            break
        if new >= vv:  # no progress (round-off): the previous v is as close as it gets
            n = previous
            for k in range(n):
                _copy_row(wk.W, 16 + k, wk.W, k)
                _copy_row(wk.A, 16 + k, wk.A, k)
                _copy_row(wk.B, 16 + k, wk.B, k)
                wk.lam[k] = wk.W[20, k]
            _set_v(wk, n)
            break
        vv = new
    if not overlap:
        dist = np.sqrt(vv)
        for i in range(3):
            normal[i] = wk.v[i] / dist
            sa, sb = 0.0, 0.0
            for k in range(n):
                sa += wk.lam[k] * wk.A[k, i]
                sb += wk.lam[k] * wk.B[k, i]
            a[i], b[i] = sa, sb
        return dist
    return -epa(kA, dA, vA, RA, pA, kB, dB, vB, RB, pB, wk, n, scale, normal, a, b)


@kernel(refcounts=False)
def _grow_simplex(kA, dA, vA, RA, pA, kB, dB, vB, RB, pB, wk, n, scale):
    """Complete a simplex of n < 4 points around an origin it touches to a tetrahedron of D."""
    W = wk.W
    if n == 1:  # farthest support among the six axis directions
        best = -1.0
        for k in range(6):
            s = 1.0 if k < 3 else -1.0
            ax = k % 3
            minkowski_support(kA, dA, vA, RA, pA, kB, dB, vB, RB, pB, wk, s if ax == 0 else 0.0, s if ax == 1 else 0.0,
                              s if ax == 2 else 0.0, 1)
            d = (W[1, 0] - W[0, 0]) ** 2 + (W[1, 1] - W[0, 1]) ** 2 + (W[1, 2] - W[0, 2]) ** 2
            if d > best:
                best = d
                _copy_row(W, 1, W, 3)
                _copy_row(wk.A, 1, wk.A, 3)
                _copy_row(wk.B, 1, wk.B, 3)
        _copy_row(W, 3, W, 1)
        _copy_row(wk.A, 3, wk.A, 1)
        _copy_row(wk.B, 3, wk.B, 1)
        n = 2
    if n == 2:  # a direction perpendicular to the segment with the widest support
        ex, ey, ez = W[1, 0] - W[0, 0], W[1, 1] - W[0, 1], W[1, 2] - W[0, 2]
        el = np.sqrt(ex * ex + ey * ey + ez * ez) + 1e-300
        ex, ey, ez = ex / el, ey / el, ez / el
        sx, sy, sz = (1.0, 0.0, 0.0) if abs(ex) < 0.6 else (0.0, 1.0, 0.0)
        ux, uy, uz = ey * sz - ez * sy, ez * sx - ex * sz, ex * sy - ey * sx
        ul = np.sqrt(ux * ux + uy * uy + uz * uz)
        ux, uy, uz = ux / ul, uy / ul, uz / ul
        tx, ty, tz = ey * uz - ez * uy, ez * ux - ex * uz, ex * uy - ey * ux
        best = -1.0
        for k in range(6):
            c, s = np.cos(np.pi * k / 3), np.sin(np.pi * k / 3)
            minkowski_support(kA, dA, vA, RA, pA, kB, dB, vB, RB, pB, wk, c * ux + s * tx, c * uy + s * ty,
                              c * uz + s * tz, 2)
            px, py, pz = W[2, 0] - W[0, 0], W[2, 1] - W[0, 1], W[2, 2] - W[0, 2]
            cx, cy, cz = py * ez - pz * ey, pz * ex - px * ez, px * ey - py * ex
            d = cx * cx + cy * cy + cz * cz
            if d > best:
                best = d
                _copy_row(W, 2, W, 3)
                _copy_row(wk.A, 2, wk.A, 3)
                _copy_row(wk.B, 2, wk.B, 3)
        _copy_row(W, 3, W, 2)
        _copy_row(wk.A, 3, wk.A, 2)
        _copy_row(wk.B, 3, wk.B, 2)
        n = 3
    # n == 3: the triangle's normal, both ways: keep the farther support
    e1x, e1y, e1z = W[1, 0] - W[0, 0], W[1, 1] - W[0, 1], W[1, 2] - W[0, 2]
    e2x, e2y, e2z = W[2, 0] - W[0, 0], W[2, 1] - W[0, 1], W[2, 2] - W[0, 2]
    nx, ny, nz = e1y * e2z - e1z * e2y, e1z * e2x - e1x * e2z, e1x * e2y - e1y * e2x
    best, sign = -1.0, 1.0
    for s in (1.0, -1.0):
        minkowski_support(kA, dA, vA, RA, pA, kB, dB, vB, RB, pB, wk, s * nx, s * ny, s * nz, 3)
        d = abs(nx * (W[3, 0] - W[0, 0]) + ny * (W[3, 1] - W[0, 1]) + nz * (W[3, 2] - W[0, 2]))
        if d > best:
            best, sign = d, s
    minkowski_support(kA, dA, vA, RA, pA, kB, dB, vB, RB, pB, wk, sign * nx, sign * ny, sign * nz, 3)
    return best > 1e-24 * scale ** 3


@kernel(inline="llvm", refcounts=False)
def _set_face(wk, f, i, j, k):
    """Face f = (i, j, k) with its outward normal and distance; False when it has no area."""
    W = wk.W
    e1x, e1y, e1z = W[j, 0] - W[i, 0], W[j, 1] - W[i, 1], W[j, 2] - W[i, 2]
    e2x, e2y, e2z = W[k, 0] - W[i, 0], W[k, 1] - W[i, 1], W[k, 2] - W[i, 2]
    nx, ny, nz = e1y * e2z - e1z * e2y, e1z * e2x - e1x * e2z, e1x * e2y - e1y * e2x
    nn = np.sqrt(nx * nx + ny * ny + nz * nz)
    if nn <= 1e-300:
        return False
    wk.face[f, 0], wk.face[f, 1], wk.face[f, 2] = i, j, k
    wk.fn[f, 0], wk.fn[f, 1], wk.fn[f, 2] = nx / nn, ny / nn, nz / nn
    wk.fd[f] = (nx * W[i, 0] + ny * W[i, 1] + nz * W[i, 2]) / nn
    wk.alive[f] = True
    return True


@kernel(refcounts=False)
def _horizon(wk, best, nv, tag, eps):
    """The faces point W[nv] sees, found by walking the adjacency from the face ``best`` (which it sees),
    marked +tag; the edges between them and the faces it does not see (marked −tag) into edges / hface,
    wound as their seen face has them. Returns their count. Bullet's btGjkEpa2 ``EPA::expand`` walks the same
    way (recursively): a face counts as seen only if it is reached through seen faces, so round-off on a
    distant coplanar face cannot tear a second hole in the polytope."""
    W = wk.W
    wk.mark[best] = tag
    wk.stack[0] = best
    top, ne = 1, 0
    while top > 0:
        top -= 1
        f = wk.stack[top]
        for e in range(3):
            g = wk.adj[f, e]
            if wk.mark[g] == tag:
                continue
            if wk.mark[g] != -tag:
                i0 = wk.face[g, 0]
                if (wk.fn[g, 0] * (W[nv, 0] - W[i0, 0]) + wk.fn[g, 1] * (W[nv, 1] - W[i0, 1])
                        + wk.fn[g, 2] * (W[nv, 2] - W[i0, 2])) > eps:
                    wk.mark[g] = tag
                    wk.stack[top] = g
                    top += 1
                    continue
                wk.mark[g] = -tag
            wk.edges[ne, 0], wk.edges[ne, 1] = wk.face[f, e], wk.face[f, (e + 1) % 3]
            wk.hface[ne] = g
            ne += 1
    return ne


@kernel(refcounts=False)
def _stitch(wk, ne, nv, nf, tag, eps):
    """Replace the faces marked +tag by the fan from W[nv] to the ne horizon edges, linked to their
    neighbours. Returns the new face count bound, or −1 (the polytope left unchanged) when the horizon is
    not one simple loop, a fan face has no area, or the origin falls outside one (Bullet's ``newface``
    refuses the last two)."""
    for h in range(ne):
        wk.start[wk.edges[h, 0]] = -1
        wk.start[wk.edges[h, 1]] = -1
    for h in range(ne):
        if wk.start[wk.edges[h, 0]] >= 0:
            return -1  # a vertex the horizon passes twice
        wk.start[wk.edges[h, 0]] = h
    h, steps = 0, 0
    while steps < ne:  # one loop through every edge
        h = wk.start[wk.edges[h, 1]]
        steps += 1
        if h < 0 or (h == 0 and steps < ne):
            return -1
    if h != 0:
        return -1
    slot = 0
    for h in range(ne):
        while slot < wk.alive.shape[0] and wk.alive[slot]:
            slot += 1
        if slot >= wk.alive.shape[0] or not _set_face(wk, slot, wk.edges[h, 0], wk.edges[h, 1], nv) \
                or wk.fd[slot] < -eps:
            if slot < wk.alive.shape[0]:
                wk.alive[slot] = False
            for k in range(h):
                wk.alive[wk.stack[k]] = False
            return -1
        wk.stack[h] = slot
        wk.mark[slot] = 0
        nf = max(nf, slot + 1)
    for f in range(nf):
        if wk.mark[f] == tag:
            wk.alive[f] = False
    for h in range(ne):
        s, g = wk.stack[h], wk.hface[h]
        u, w = wk.edges[h, 0], wk.edges[h, 1]
        for c in range(3):
            if wk.face[g, c] == w and wk.face[g, (c + 1) % 3] == u:
                wk.adj[g, c] = s
        wk.adj[s, 0] = g
        nxt = wk.stack[wk.start[w]]
        wk.adj[s, 1] = nxt
        wk.adj[nxt, 2] = s
    return nf


@kernel(refcounts=False)
def epa(kA, dA, vA, RA, pA, kB, dB, vB, RB, pB, wk, n, scale, normal, a, b):
    """Penetration depth ≥ 0 of the overlapping cores from GJK's final simplex (n points); normal, a, b
    as ``gjk_epa``."""
    W = wk.W
    if n < 4 and not _grow_simplex(kA, dA, vA, RA, pA, kB, dB, vB, RB, pB, wk, n, scale):
        # D is flat around the origin (touching faces): depth 0, the normal from B's centre to A's
        cx, cy, cz = pB[0], pB[1], pB[2]
        if kB == TRIANGLE:
            cx = (vB[0, 0] + vB[1, 0] + vB[2, 0]) / 3.0
            cy = (vB[0, 1] + vB[1, 1] + vB[2, 1]) / 3.0
            cz = (vB[0, 2] + vB[1, 2] + vB[2, 2]) / 3.0
        dx, dy, dz = pA[0] - cx, pA[1] - cy, pA[2] - cz
        dl = np.sqrt(dx * dx + dy * dy + dz * dz)
        if dl < 1e-300:
            dx, dy, dz, dl = 0.0, 0.0, 1.0, 1.0
        normal[0], normal[1], normal[2] = dx / dl, dy / dl, dz / dl
        for i in range(3):
            s = 0.0
            for k in range(n):
                s += wk.lam[k] * wk.A[k, i]
            a[i] = s
            b[i] = s
        return 0.0
    wk.alive[:] = False
    wk.mark[:] = 0
    for f in range(4):
        i, j, k, o = (0, 1, 2, 3) if f == 0 else (0, 3, 1, 2) if f == 1 else (0, 2, 3, 1) if f == 2 else (1, 3, 2, 0)
        nx = (W[j, 1] - W[i, 1]) * (W[k, 2] - W[i, 2]) - (W[j, 2] - W[i, 2]) * (W[k, 1] - W[i, 1])
        ny = (W[j, 2] - W[i, 2]) * (W[k, 0] - W[i, 0]) - (W[j, 0] - W[i, 0]) * (W[k, 2] - W[i, 2])
        nz = (W[j, 0] - W[i, 0]) * (W[k, 1] - W[i, 1]) - (W[j, 1] - W[i, 1]) * (W[k, 0] - W[i, 0])
        if nx * (W[o, 0] - W[i, 0]) + ny * (W[o, 1] - W[i, 1]) + nz * (W[o, 2] - W[i, 2]) > 0.0:
            j, k = k, j  # wind outward (away from the opposite vertex)
        _set_face(wk, f, i, j, k)
    for f in range(4):  # each edge of the tetrahedron is the reverse of one edge of another face
        for e in range(4 * 3):
            g, eg = e // 3, e % 3
            for c in range(3):
                if g != f and wk.face[g, eg] == wk.face[f, (c + 1) % 3] and wk.face[g, (eg + 1) % 3] == wk.face[f, c]:
                    wk.adj[f, c] = g
    nf, nv = 4, 4
    # the polytope's own size (GJK's first support point alone may lie near the origin)
    for k in range(4):
        scale = max(scale, np.sqrt(W[k, 0] ** 2 + W[k, 1] ** 2 + W[k, 2] ** 2))
    tol = EPA_TOLERANCE * scale
    for it in range(4 * EPA_VERTICES):
        best, bd = -1, np.inf
        for f in range(nf):
            if wk.alive[f] and wk.fd[f] < bd:
                best, bd = f, wk.fd[f]
        if best < 0 or nv >= EPA_VERTICES:
            break
        minkowski_support(kA, dA, vA, RA, pA, kB, dB, vB, RB, pB, wk, wk.fn[best, 0], wk.fn[best, 1], wk.fn[best, 2], nv)
        gain = wk.fn[best, 0] * W[nv, 0] + wk.fn[best, 1] * W[nv, 1] + wk.fn[best, 2] * W[nv, 2] - bd
        if gain <= tol:
            break
        ne = _horizon(wk, best, nv, it + 1, 1e-14 * scale)
        grown = _stitch(wk, ne, nv, nf, it + 1, 1e-14 * scale) if ne >= 3 else -1
        if grown < 0:
            break  # round-off left no simple horizon: the polytope is kept as it was (its closest face the answer)
        nf = grown
        nv += 1
    # the deepest points: the origin's projection onto the closest face, in barycentric weights
    best, bd = 0, np.inf
    for f in range(nf):
        if wk.alive[f] and wk.fd[f] < bd:
            best, bd = f, wk.fd[f]
    i, j, k = wk.face[best, 0], wk.face[best, 1], wk.face[best, 2]
    px, py, pz = wk.fn[best, 0] * bd, wk.fn[best, 1] * bd, wk.fn[best, 2] * bd
    v0x, v0y, v0z = W[j, 0] - W[i, 0], W[j, 1] - W[i, 1], W[j, 2] - W[i, 2]
    v1x, v1y, v1z = W[k, 0] - W[i, 0], W[k, 1] - W[i, 1], W[k, 2] - W[i, 2]
    v2x, v2y, v2z = px - W[i, 0], py - W[i, 1], pz - W[i, 2]
    d00 = v0x * v0x + v0y * v0y + v0z * v0z
    d01 = v0x * v1x + v0y * v1y + v0z * v1z
    d11 = v1x * v1x + v1y * v1y + v1z * v1z
    d20 = v2x * v0x + v2y * v0y + v2z * v0z
    d21 = v2x * v1x + v2y * v1y + v2z * v1z
    den = d00 * d11 - d01 * d01
    lv = (d11 * d20 - d01 * d21) / den if den > 0.0 else 0.0
    lw = (d00 * d21 - d01 * d20) / den if den > 0.0 else 0.0
    lu = 1.0 - lv - lw
    for c in range(3):
        normal[c] = -wk.fn[best, c]
        a[c] = lu * wk.A[i, c] + lv * wk.A[j, c] + lw * wk.A[k, c]
        b[c] = lu * wk.B[i, c] + lv * wk.B[j, c] + lw * wk.B[k, c]
    return max(bd, 0.0)
