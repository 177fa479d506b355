"""Support mappings and support features of the convex shapes, compiled (the narrow phase's vocabulary).

Every convex collider is a *core* C and a rounding radius ρ: the shape is C ⊕ ball(ρ) (Minkowski
sum). The cores, in the shape's own frame (origin at its centre; the axis of a capsule, cylinder or
cone is the frame's z):

| kind     | core                                   | ``dims``                         | ρ               |
|----------|----------------------------------------|----------------------------------|-----------------|
| sphere   | the point 0                            | —                                | radius          |
| capsule  | the segment z ∈ [−h, h]                | (0, 0, h)                        | radius          |
| box      | the box |x_k| ≤ a_k                    | a = half size − margin           | margin          |
| cylinder | the cylinder ρ_xy ≤ r, |z| ≤ h          | (r, 0, h), shrunk by the margin  | margin          |
| cone     | apex (0, 0, z_a), base disc z_b, r     | (r, z_a, z_b), shrunk (see below)| margin          |
| convex   | the hull of ``verts``                  | —                                | margin          |
| triangle | the triangle ``verts`` (world)         | —                                | 0               |

A cone's core is its inner parallel body: the same half-angle, base raised by the margin and apex
lowered by margin / sin(half-angle), so core ⊕ ball(margin) has the given flat base and height.

The support point s(d) = argmax_{x ∈ C} d·x is all GJK and EPA need (``gjk``); the *support feature*
(``support_feature``) is the face, edge or vertex of C facing d, which the contact manifold clips
(``manifold``). Conventions here: d need not be unit; ties go to the +z cap, the +x rim point.
"""
from __future__ import annotations

import numpy as np

from .._jit import kernel
from ..geometry import BOX, CAPSULE, CONE, CONVEX, CYLINDER, SPHERE

TRIANGLE = 6            # a static mesh's triangle (``verts`` in world coordinates)
RIM_POINTS = 8          # a cylinder cap or cone base as a polygon of this many rim points (manifolds only)
MAX_FEATURE = 16        # most points a support feature (or a clipped polygon) holds
FACE_COS = 0.9986       # cos 3°: a cap, side line or segment counts as facing d within this


@kernel(inline="llvm", refcounts=False)
def local_support(kind, dims, verts, dx, dy, dz, out):
    """out (3,) ← the core's support point in direction (dx, dy, dz), shape frame (convex, triangle:
    the frame of ``verts``)."""
    if kind == SPHERE:
        out[0] = 0.0
        out[1] = 0.0
        out[2] = 0.0
    elif kind == CAPSULE:
        out[0] = 0.0
        out[1] = 0.0
        out[2] = dims[2] if dz >= 0.0 else -dims[2]
    elif kind == BOX:
        out[0] = dims[0] if dx >= 0.0 else -dims[0]
        out[1] = dims[1] if dy >= 0.0 else -dims[1]
        out[2] = dims[2] if dz >= 0.0 else -dims[2]
    elif kind == CYLINDER:
        rxy = np.sqrt(dx * dx + dy * dy)
        if rxy > 1e-300:
            out[0] = dims[0] * dx / rxy
            out[1] = dims[0] * dy / rxy
        else:  # straight up or down: the cap's centre (a stable choice for GJK)
            out[0] = 0.0
            out[1] = 0.0
        out[2] = dims[2] if dz >= 0.0 else -dims[2]
    elif kind == CONE:
        rxy = np.sqrt(dx * dx + dy * dy)
        rim = dims[0] * rxy + dz * dims[2]
        if dz * dims[1] >= rim:
            out[0] = 0.0
            out[1] = 0.0
            out[2] = dims[1]
        else:
            if rxy > 1e-300:
                out[0] = dims[0] * dx / rxy
                out[1] = dims[0] * dy / rxy
            else:
                out[0] = 0.0
                out[1] = 0.0
            out[2] = dims[2]
    else:  # CONVEX, TRIANGLE: the farthest vertex
        best, arg = -np.inf, 0
        for k in range(verts.shape[0]):
            s = verts[k, 0] * dx + verts[k, 1] * dy + verts[k, 2] * dz
            if s > best:
                best, arg = s, k
        out[0] = verts[arg, 0]
        out[1] = verts[arg, 1]
        out[2] = verts[arg, 2]


@kernel(inline="llvm", refcounts=False)
def support(kind, dims, verts, R, p, d, out, tmp):
    """out (3,) ← the core's support point (world) in world direction d (3,), for a shape at rotation R
    (3, 3) and position p (3,); tmp (3,) scratch."""
    dx = R[0, 0] * d[0] + R[1, 0] * d[1] + R[2, 0] * d[2]
    dy = R[0, 1] * d[0] + R[1, 1] * d[1] + R[2, 1] * d[2]
    dz = R[0, 2] * d[0] + R[1, 2] * d[1] + R[2, 2] * d[2]
    local_support(kind, dims, verts, dx, dy, dz, tmp)
    for i in range(3):
        out[i] = p[i] + R[i, 0] * tmp[0] + R[i, 1] * tmp[1] + R[i, 2] * tmp[2]


@kernel(inline="llvm", refcounts=False)
def to_world(R, p, x, y, z, pts, k):
    for i in range(3):
        pts[k, i] = p[i] + R[i, 0] * x + R[i, 1] * y + R[i, 2] * z


@kernel(inline="llvm", refcounts=False)
def rim_polygon(R, p, r, z, reverse, pts):
    """RIM_POINTS points of the circle of radius r at height z (shape frame) into pts, world; counter-
    clockwise about +z, or clockwise when ``reverse`` (so the polygon winds counter-clockwise seen from
    outside the cap it bounds)."""
    for k in range(RIM_POINTS):
        a = 2.0 * np.pi * k / RIM_POINTS
        if reverse:
            a = -a
        to_world(R, p, r * np.cos(a), r * np.sin(a), z, pts, k)


@kernel(inline="llvm", refcounts=False)
def support_feature(kind, dims, verts, faces, R, p, d, pts, normal):
    """The core's feature facing world direction d (3,): its points into pts (MAX_FEATURE, 3) (world; a
    polygon counter-clockwise seen from outside), and returns (count, is_face): count 1 (a vertex), 2 (an
    edge or side line) or ≥ 3 (a face, whose outward unit normal goes to normal (3,)). is_face is True for
    a face only. ``faces`` = (face normals (F, 3), first (F,), size (F,), vertex index (K,)) of a convex
    hull, its face range already selected; unused otherwise."""
    dn = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
    dx = (R[0, 0] * d[0] + R[1, 0] * d[1] + R[2, 0] * d[2]) / dn
    dy = (R[0, 1] * d[0] + R[1, 1] * d[1] + R[2, 1] * d[2]) / dn
    dz = (R[0, 2] * d[0] + R[1, 2] * d[1] + R[2, 2] * d[2]) / dn
    if kind == SPHERE:
        to_world(R, p, 0.0, 0.0, 0.0, pts, 0)
        return 1, False
    if kind == CAPSULE:
        if abs(dz) < np.sqrt(1.0 - FACE_COS * FACE_COS):
            to_world(R, p, 0.0, 0.0, -dims[2], pts, 0)
            to_world(R, p, 0.0, 0.0, dims[2], pts, 1)
            return 2, False
        to_world(R, p, 0.0, 0.0, dims[2] if dz > 0.0 else -dims[2], pts, 0)
        return 1, False
    if kind == BOX:
        ax = 0
        if abs(dy) > abs(dx):
            ax = 1
        if abs(dz) > max(abs(dx), abs(dy)):
            ax = 2
        s = 1.0 if (dx, dy, dz)[ax] >= 0.0 else -1.0
        u, v = (ax + 1) % 3, (ax + 2) % 3
        for k in range(4):  # (u, v) corners counter-clockwise about +axis; reversed on the − face
            cu = (1.0, -1.0, -1.0, 1.0)[k]
            cv = (1.0, 1.0, -1.0, -1.0)[k]
            if s < 0.0:
                cv = -cv
            x = s * dims[0] if ax == 0 else (cu * dims[0] if u == 0 else cv * dims[0])
            y = s * dims[1] if ax == 1 else (cu * dims[1] if u == 1 else cv * dims[1])
            z = s * dims[2] if ax == 2 else (cu * dims[2] if u == 2 else cv * dims[2])
            to_world(R, p, x, y, z, pts, k)
        for i in range(3):
            normal[i] = s * R[i, ax]
        return 4, True
    if kind == CYLINDER:
        rxy = np.sqrt(dx * dx + dy * dy)
        if abs(dz) >= FACE_COS:
            s = 1.0 if dz > 0.0 else -1.0
            rim_polygon(R, p, dims[0], s * dims[2], s < 0.0, pts)
            for i in range(3):
                normal[i] = s * R[i, 2]
            return RIM_POINTS, True
        ux, uy = (dx / rxy, dy / rxy) if rxy > 1e-300 else (1.0, 0.0)
        if abs(dz) < np.sqrt(1.0 - FACE_COS * FACE_COS):
            to_world(R, p, dims[0] * ux, dims[0] * uy, -dims[2], pts, 0)
            to_world(R, p, dims[0] * ux, dims[0] * uy, dims[2], pts, 1)
            return 2, False
        to_world(R, p, dims[0] * ux, dims[0] * uy, dims[2] if dz > 0.0 else -dims[2], pts, 0)
        return 1, False
    if kind == CONE:
        r, za, zb = dims[0], dims[1], dims[2]
        if dz <= -FACE_COS:
            rim_polygon(R, p, r, zb, True, pts)
            for i in range(3):
                normal[i] = -R[i, 2]
            return RIM_POINTS, True
        rxy = np.sqrt(dx * dx + dy * dy)
        ux, uy = (dx / rxy, dy / rxy) if rxy > 1e-300 else (1.0, 0.0)
        H = za - zb
        L = np.sqrt(H * H + r * r)
        side = (H * rxy + r * dz) / L  # cos of the angle between d and the side line's outward normal
        if side >= FACE_COS:
            to_world(R, p, 0.0, 0.0, za, pts, 0)
            to_world(R, p, r * ux, r * uy, zb, pts, 1)
            return 2, False
        if dz * za >= r * rxy + dz * zb:
            to_world(R, p, 0.0, 0.0, za, pts, 0)
        else:
            to_world(R, p, r * ux, r * uy, zb, pts, 0)
        return 1, False
    if kind == TRIANGLE:
        e1x, e1y, e1z = verts[1, 0] - verts[0, 0], verts[1, 1] - verts[0, 1], verts[1, 2] - verts[0, 2]
        e2x, e2y, e2z = verts[2, 0] - verts[0, 0], verts[2, 1] - verts[0, 1], verts[2, 2] - verts[0, 2]
        nx, ny, nz = e1y * e2z - e1z * e2y, e1z * e2x - e1x * e2z, e1x * e2y - e1y * e2x
        nn = np.sqrt(nx * nx + ny * ny + nz * nz)
        flip = nx * d[0] + ny * d[1] + nz * d[2] < 0.0
        for k in range(3):
            src = (2 - k) if flip else k  # counter-clockwise seen from the side d points to
            for i in range(3):
                pts[k, i] = verts[src, i]
        s = -1.0 if flip else 1.0
        normal[0], normal[1], normal[2] = s * nx / nn, s * ny / nn, s * nz / nn
        return 3, True
    # CONVEX: the face whose normal is closest to d
    fn, first, size, index = faces
    best, arg = -np.inf, 0
    for f in range(fn.shape[0]):
        c = fn[f, 0] * dx + fn[f, 1] * dy + fn[f, 2] * dz
        if c > best:
            best, arg = c, f
    m = min(size[arg], MAX_FEATURE)
    for k in range(m):
        v = index[first[arg] + k]
        to_world(R, p, verts[v, 0], verts[v, 1], verts[v, 2], pts, k)
    for i in range(3):
        normal[i] = R[i, 0] * fn[arg, 0] + R[i, 1] * fn[arg, 1] + R[i, 2] * fn[arg, 2]
    return m, True


@kernel(inline="llvm", refcounts=False)
def core_points(kind, dims, verts, R, p, pts):
    """Every vertex of the core (world) into pts (≥ 2 RIM_POINTS + 1 or the hull's vertex count, 3): the
    candidates a plane touches. Sphere: its centre; capsule: 2 ends; box: 8 corners; cylinder: both rims;
    cone: apex and base rim; convex: its vertices. Returns the count."""
    if kind == SPHERE:
        to_world(R, p, 0.0, 0.0, 0.0, pts, 0)
        return 1
    if kind == CAPSULE:
        to_world(R, p, 0.0, 0.0, -dims[2], pts, 0)
        to_world(R, p, 0.0, 0.0, dims[2], pts, 1)
        return 2
    if kind == BOX:
        for k in range(8):
            to_world(R, p, dims[0] if k & 1 else -dims[0], dims[1] if k & 2 else -dims[1],
                     dims[2] if k & 4 else -dims[2], pts, k)
        return 8
    if kind == CYLINDER:
        for k in range(RIM_POINTS):
            a = 2.0 * np.pi * k / RIM_POINTS
            to_world(R, p, dims[0] * np.cos(a), dims[0] * np.sin(a), -dims[2], pts, k)
            to_world(R, p, dims[0] * np.cos(a), dims[0] * np.sin(a), dims[2], pts, RIM_POINTS + k)
        return 2 * RIM_POINTS
    if kind == CONE:
        for k in range(RIM_POINTS):
            a = 2.0 * np.pi * k / RIM_POINTS
            to_world(R, p, dims[0] * np.cos(a), dims[0] * np.sin(a), dims[2], pts, k)
        to_world(R, p, 0.0, 0.0, dims[1], pts, RIM_POINTS)
        return RIM_POINTS + 1
    for k in range(verts.shape[0]):
        to_world(R, p, verts[k, 0], verts[k, 1], verts[k, 2], pts, k)
    return verts.shape[0]
