"""Finding contacts: the broad phase, then the narrow phase of every candidate, in compiled kernels.

``CollisionDetector(model, body_shapes, statics, …).detect(R, p, R_end, p_end)`` takes the link poses at
the step's start (n, 3, 3), (n, 3) — and, for the speculative distance, where the unconstrained step
would take them — and returns the ``Contacts`` whose gap is below each pair's threshold: the
detection ``margin`` plus how far the pair may close in the step (``broadphase.pair_sweep``: their relative
motion, or both their motions, whichever bound is smaller). Gaps still open
are contacts too (depth < 0): the contact stage lets them close within the step but no further, which
is how a fast small body cannot pass through a thin passive object between two steps (speculative
contacts; Catto, "Contact Manifolds", GDC 2007; the approach of Box2D and PhysX).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._jit import kernel
from .box_box import box_pair_depth_bound
from .broadphase import BVH_STACK, bvh_query, pair_sweep, shape_boxes, shape_poses, shape_sweeps, sweep_and_prune
from .convex import FACE_COS, RIM_POINTS, support
from .gjk import gjk_work
from .manifold import REFERENCE_COS, add_candidate, manifold_work, reduce_manifold
from .narrowphase import MAX_FRICTION, combine, contact_out, convex_pair, emit, plane_pair, triangle_pair
from .shapes import Contacts
from ..geometry import BOX, MAX_HULL_VERTICES

KEY_SHIFT_A, KEY_SHIFT_B = 40, 16  # key = shape << 40 | other element << 16 | manifold code


class DetectWork(NamedTuple):
    normal: np.ndarray
    a: np.ndarray
    b: np.ndarray
    eye: np.ndarray
    zero: np.ndarray
    pts: np.ndarray
    tmp: np.ndarray
    tmp2: np.ndarray
    stack: np.ndarray
    found: np.ndarray
    acc_pts: np.ndarray   # (ACCUMULATED, 3) a shape's contacts with one mesh, over its triangles
    acc_n: np.ndarray
    acc_d: np.ndarray
    acc_key: np.ndarray
    acc_col: np.ndarray
    acc_used: np.ndarray


ACCUMULATED = 64


def detect_work(n_triangles: int) -> DetectWork:
    A = ACCUMULATED
    return DetectWork(np.zeros(3), np.zeros(3), np.zeros(3), np.eye(3), np.zeros(3),
                      np.zeros((MAX_HULL_VERTICES + 2 * RIM_POINTS + 2, 3)), np.zeros(3), np.zeros(3),
                      np.zeros(BVH_STACK, np.int64), np.zeros(max(n_triangles, 1), np.int64), np.zeros((A, 3)),
                      np.zeros((A, 3)), np.zeros(A), np.zeros(A, np.int64), np.zeros(A, np.int64), np.zeros(A, np.bool_))


@kernel(refcounts=False)
def accumulate(dw, na, mw, count, key_base, collider):
    """Reduce a triangle's candidates in mw to a manifold and append it to the accumulated ones; returns na."""
    m = reduce_manifold(mw, count)
    for k in range(m):
        if na >= dw.acc_d.shape[0]:
            break
        c = mw.keep[k]
        for i in range(3):
            dw.acc_pts[na, i] = mw.pts[c, i]
            dw.acc_n[na, i] = mw.normal[c, i]
        dw.acc_d[na], dw.acc_key[na], dw.acc_col[na] = mw.depth[c], key_base + mw.code[c], collider
        na += 1
    return na


@kernel(refcounts=False)
def flush(dw, na, mw, out, body, mu, e, T):
    """Emit the accumulated contacts of a shape with the meshes: one manifold per collider and normal (a box
    over the seam of two floor triangles gets four points, not eight; one in a stair's corner keeps both
    faces')."""
    for j in range(na):
        dw.acc_used[j] = False
    for g in range(na):
        if dw.acc_used[g]:
            continue
        count = 0
        for j in range(g, na):
            if dw.acc_used[j] or dw.acc_col[j] != dw.acc_col[g] or count >= mw.depth.shape[0]:
                continue
            if dw.acc_n[j, 0] * dw.acc_n[g, 0] + dw.acc_n[j, 1] * dw.acc_n[g, 1] + dw.acc_n[j, 2] * dw.acc_n[g, 2] < 0.999:
                continue
            dw.acc_used[j] = True
            count = add_candidate(mw, count, dw.acc_pts[j, 0], dw.acc_pts[j, 1], dw.acc_pts[j, 2], dw.acc_n[j, 0],
                                  dw.acc_n[j, 1], dw.acc_n[j, 2], dw.acc_d[j], dw.acc_key[j])
        c = dw.acc_col[g]
        emit(mw, count, out, body, -1, 0, combine(mu, T.friction[c], T.friction[c], MAX_FRICTION),
             combine(e, T.restitution[c], T.restitution[c], 1.0))


@kernel(refcounts=False)
def find_contacts(S, T, Rw, pw, Rw1, pw1, lo, hi, sweep, pairs, npairs, margin, pair_mu, out, mw, wk, dw, active):
    """Contacts of the candidate pairs (``sweep_and_prune``), of every body shape with the planes and
    with the triangles its box reaches, into out (``ContactOut``). Rw1, pw1: the shapes' poses at the step's
    unconstrained end (a pair's threshold is the margin plus ``pair_sweep``). active (m,): the shapes looked
    at (a pair when either is)."""
    out.count[0] = 0
    m = S.kind.shape[0]
    P = T.plane_n.shape[0]
    nofaces = (S.fnorm[0:0], S.ffirst[0:0], S.fsize[0:0], S.findex)
    for k in range(npairs):
        i, j = pairs[k, 0], pairs[k, 1]
        if not (active[i] or active[j]):
            continue
        threshold = margin + pair_sweep(S, i, j, sweep, Rw, pw, Rw1, pw1)
        apart = np.sqrt((pw[i, 0] - pw[j, 0]) ** 2 + (pw[i, 1] - pw[j, 1]) ** 2 + (pw[i, 2] - pw[j, 2]) ** 2)
        if apart - S.reach[i] - S.reach[j] > threshold:  # their bounding spheres are farther apart: no GJK
            continue
        vi = S.hverts[S.vstart[i]:S.vstart[i] + S.vcount[i]]
        vj = S.hverts[S.vstart[j]:S.vstart[j] + S.vcount[j]]
        fi = (S.fnorm[S.fstart[i]:S.fstart[i] + S.fcount[i]], S.ffirst[S.fstart[i]:S.fstart[i] + S.fcount[i]],
              S.fsize[S.fstart[i]:S.fstart[i] + S.fcount[i]], S.findex)
        fj = (S.fnorm[S.fstart[j]:S.fstart[j] + S.fcount[j]], S.ffirst[S.fstart[j]:S.fstart[j] + S.fcount[j]],
              S.fsize[S.fstart[j]:S.fstart[j] + S.fcount[j]], S.findex)
        count = convex_pair(mw, wk, S.kind[i], S.dims[i], vi, fi, Rw[i], pw[i], S.rho[i], S.kind[j], S.dims[j], vj, fj,
                            Rw[j], pw[j], S.rho[j], threshold, dw.normal, dw.a, dw.b)
        if count > 0:
            emit(mw, count, out, S.body[i], S.body[j], (i << KEY_SHIFT_A) | (j << KEY_SHIFT_B),
                 combine(S.friction[i], S.friction[j], pair_mu, MAX_FRICTION),
                 combine(S.restitution[i], S.restitution[j], 0.0, 1.0))
    for i in range(m):
        b = S.body[i]
        if b < 0 or not active[i]:
            continue
        vi = S.hverts[S.vstart[i]:S.vstart[i] + S.vcount[i]]
        fi = (S.fnorm[S.fstart[i]:S.fstart[i] + S.fcount[i]], S.ffirst[S.fstart[i]:S.fstart[i] + S.fcount[i]],
              S.fsize[S.fstart[i]:S.fstart[i] + S.fcount[i]], S.findex)
        threshold = margin + sweep[i]
        for q in range(P):
            c = T.plane_collider[q]
            if not T.allowed[c, b] or (T.groups[c] & S.groups[i]) == 0:
                continue
            count = plane_pair(mw, dw.pts, S.kind[i], S.dims[i], vi, Rw[i], pw[i], S.rho[i], T.plane_n[q], T.plane_d[q],
                               threshold, dw.tmp, dw.tmp2)
            if count > 0:
                emit(mw, count, out, b, -1, (i << KEY_SHIFT_A) | ((m + q) << KEY_SHIFT_B),
                     combine(S.friction[i], T.friction[c], T.friction[c], MAX_FRICTION),
                     combine(S.restitution[i], T.restitution[c], T.restitution[c], 1.0))
        nt = bvh_query(T, lo[i], hi[i], dw.stack, dw.found)
        na = 0
        for f in range(nt):
            t = dw.found[f]
            c = T.tri_collider[t]
            if not T.allowed[c, b] or (T.groups[c] & S.groups[i]) == 0:
                continue
            tri = T.tri_v[t]
            grow = T.rho[c]
            outside = False
            for r in range(3):  # the triangle's own box against the shape's
                tlo = min(tri[0, r], min(tri[1, r], tri[2, r])) - grow
                thi = max(tri[0, r], max(tri[1, r], tri[2, r])) + grow
                if tlo > hi[i, r] or thi < lo[i, r]:
                    outside = True
            if outside:
                continue
            count = triangle_pair(mw, wk, S.kind[i], S.dims[i], vi, fi, Rw[i], pw[i], S.rho[i], tri, T.tri_n[t],
                                  T.tri_sharp[t], T.rho[c], threshold, dw.normal, dw.a, dw.b, dw.eye, dw.zero, dw.zero,
                                  nofaces)
            if count > 0:
                if na > ACCUMULATED - 4:
                    flush(dw, na, mw, out, b, S.friction[i], S.restitution[i], T)
                    na = 0
                na = accumulate(dw, na, mw, count, (i << KEY_SHIFT_A) | ((m + P + t) << KEY_SHIFT_B), c)
        if na > 0:
            flush(dw, na, mw, out, b, S.friction[i], S.restitution[i], T)


@kernel(refcounts=False)
def depth_bounds(S, T, Rw, pw, key, normal, out, scratch):
    """out (k,) ← for each contact found before (its key and normal (k, 3)), a bound on the depth the narrow phase
    can report for its pair with the shapes at Rw, pw (m; inf: none known, for a pair kind not covered): two
    boxes, ``box_pair_depth_bound``; a shape on a plane, its exact depth; a shape on a mesh triangle whose contact
    had the triangle's face normal, the overlap along that normal (GJK/EPA's depth is the least overlap, and a
    manifold measures along the triangle's face or one of the shape's faces within the face tolerance). The
    contacts of one pair are consecutive: its bound is computed once. scratch (3, 3)."""
    m = S.kind.shape[0]
    P = T.plane_n.shape[0]
    element = (1 << (KEY_SHIFT_A - KEY_SHIFT_B)) - 1
    u, a, tmp = scratch[0], scratch[1], scratch[2]
    previous, bound = -1, np.inf
    for c in range(key.shape[0]):
        pair = key[c] >> KEY_SHIFT_B
        if pair == previous:
            out[c] = bound
            continue
        previous, bound = pair, np.inf
        i, e = key[c] >> KEY_SHIFT_A, pair & element
        vi = S.hverts[S.vstart[i]:S.vstart[i] + S.vcount[i]]
        if e < m:
            if S.kind[i] == BOX and S.kind[e] == BOX:
                bound = box_pair_depth_bound(S.dims[i], Rw[i], pw[i], S.dims[e], Rw[e], pw[e], u,
                                             REFERENCE_COS) + S.rho[i] + S.rho[e]
        elif e < m + P:
            q = e - m
            for r in range(3):
                u[r] = -T.plane_n[q, r]
            support(S.kind[i], S.dims[i], vi, Rw[i], pw[i], u, a, tmp)
            bound = T.plane_d[q] + u[0] * a[0] + u[1] * a[1] + u[2] * a[2] + S.rho[i]
        else:
            t = e - m - P
            along = normal[c, 0] * T.tri_n[t, 0] + normal[c, 1] * T.tri_n[t, 1] + normal[c, 2] * T.tri_n[t, 2]
            if abs(along) >= FACE_COS:
                s = -1.0 if along > 0.0 else 1.0
                for r in range(3):
                    u[r] = s * T.tri_n[t, r]  # (into the triangle)
                support(S.kind[i], S.dims[i], vi, Rw[i], pw[i], u, a, tmp)
                top = -np.inf
                for v in range(3):
                    top = max(top, -(u[0] * T.tri_v[t, v, 0] + u[1] * T.tri_v[t, v, 1] + u[2] * T.tri_v[t, v, 2]))
                bound = top + u[0] * a[0] + u[1] * a[1] + u[2] * a[2] + S.rho[i] + T.rho[T.tri_collider[t]]
        out[c] = bound


class CollisionDetector:
    """Contacts among the shapes of a model's bodies and a scene's static colliders.

    body_shapes: [(body, ContactShape)] (``colliders.body_shape_list``); statics: [StaticCollider];
    body_pairs: (n,) bool, the bodies that collide with each other (``Scene.set_body_contacts``);
    exclude: body pairs that never collide (joined by a joint, a loop closure, or told so); margin (m):
    how far apart a pair still counts (beyond its sweep); pair_friction: μ of two shapes without their own.
    """

    def __init__(self, model, body_shapes: list, statics: list, body_pairs, exclude, *, margin: float = 0.02,
                 pair_friction: float = 0.5):
        from .colliders import shape_arrays, static_arrays

        n = model.n_bodies
        self.model, self.statics = model, list(statics)
        self.shapes = shape_arrays(body_shapes, self.statics)
        shaped = sorted({b for b, _ in body_shapes})
        self.static = static_arrays(self.statics, n, shaped)
        self.body_pairs = np.zeros(n, bool)
        self.body_pairs[list(body_pairs)] = True
        keys = {min(a, b) * n + max(a, b) for a, b in exclude if a >= 0 and b >= 0 and a != b}
        self.exclude = np.array(sorted(keys), np.int64)
        self.margin, self.pair_friction = float(margin), float(pair_friction)
        m = self.shapes.kind.shape[0]
        self._Rw, self._pw = np.zeros((m, 3, 3)), np.zeros((m, 3))
        self._Rw1, self._pw1 = np.zeros((m, 3, 3)), np.zeros((m, 3))
        self._lo, self._hi, self._sweep = np.zeros((m, 3)), np.zeros((m, 3)), np.zeros(m)
        self._pairs = np.zeros((max(4 * m, 16), 2), np.int64)
        self._out = contact_out(max(8 * m, 64))
        self._mw, self._wk = manifold_work(), gjk_work()
        self._dw = detect_work(self.static.tri_v.shape[0])
        self._all = np.ones(m, np.bool_)

    def body_moves(self, R0, p0, R1, p1) -> np.ndarray:
        """(n,) how far any point of each body's shapes moves between link poses 0 and 1 (a bound, m; 0 for a
        body without shapes)."""
        S = self.shapes
        out = np.zeros(self.model.n_bodies)
        if S.kind.shape[0] == 0:
            return out
        shape_poses(S, np.ascontiguousarray(R1), np.ascontiguousarray(p1), self._Rw1, self._pw1)
        shape_poses(S, np.ascontiguousarray(R0), np.ascontiguousarray(p0), self._Rw, self._pw)
        moved = np.empty(S.kind.shape[0])
        shape_sweeps(S, self._Rw, self._pw, self._Rw1, self._pw1, moved)
        mine = S.body >= 0
        np.maximum.at(out, S.body[mine], moved[mine])
        return out

    def depth_bounds(self, contacts: Contacts, R_link, p_link) -> np.ndarray:
        """(k,) for each of ``contacts`` (found by this detector), a bound on the depth its pair can have at link
        poses R_link, p_link (``depth_bounds``; m, inf where none is known)."""
        out = np.full(len(contacts), np.inf)
        if len(contacts) == 0:
            return out
        shape_poses(self.shapes, np.ascontiguousarray(R_link), np.ascontiguousarray(p_link), self._Rw1, self._pw1)
        depth_bounds(self.shapes, self.static, self._Rw1, self._pw1, np.ascontiguousarray(contacts.feature),
                     np.ascontiguousarray(contacts.normal, dtype=float), out, np.zeros((3, 3)))
        return out

    def farthest_move(self, R0, p0, R1, p1) -> float:
        """How far any point of any shape moves between link poses 0 and 1 (a bound, m)."""
        return float(self.body_moves(R0, p0, R1, p1).max(initial=0.0))

    @property
    def n_shapes(self) -> int:
        return int(self.shapes.kind.shape[0])

    def detect(self, R_link, p_link, R_end=None, p_end=None, bodies=None) -> Contacts:
        """Contacts at link poses R_link (n, 3, 3), p_link (n, 3); R_end, p_end: the poses the step would reach
        without contact (their difference widens each shape's threshold), or None. bodies (n,) bool: only the
        contacts of these bodies (all when None)."""
        S, T = self.shapes, self.static
        if S.kind.shape[0] == 0:
            return Contacts.empty()
        if bodies is None:
            active = self._all
        else:
            active = (S.body >= 0) & np.asarray(bodies, bool)[np.maximum(S.body, 0)]
            if not active.any():
                return Contacts.empty()
        shape_poses(S, np.ascontiguousarray(R_link), np.ascontiguousarray(p_link), self._Rw, self._pw)
        if R_end is None:
            self._sweep[:] = 0.0
            self._Rw1[:], self._pw1[:] = self._Rw, self._pw
        else:
            shape_poses(S, np.ascontiguousarray(R_end), np.ascontiguousarray(p_end), self._Rw1, self._pw1)
            shape_sweeps(S, self._Rw, self._pw, self._Rw1, self._pw1, self._sweep)
        grow = self._sweep + self.margin
        shape_boxes(S, self._Rw, self._pw, grow, self._lo, self._hi)
        while True:
            n = sweep_and_prune(S, T, self.body_pairs, self.exclude, self._lo, self._hi, self._pairs)
            if n <= self._pairs.shape[0]:
                break
            self._pairs = np.zeros((2 * n, 2), np.int64)
        while True:
            out = self._out
            find_contacts(S, T, self._Rw, self._pw, self._Rw1, self._pw1, self._lo, self._hi, self._sweep, self._pairs, n, self.margin,
                          self.pair_friction, out, self._mw, self._wk, self._dw, active)
            k = int(out.count[0])
            if k <= out.depth.shape[0]:
                break
            self._out = contact_out(2 * k)
        return Contacts(out.body[:k].copy(), out.point[:k].copy(), out.normal[:k].copy(), out.depth[:k].copy(),
                        out.key[:k].copy(), out.friction[:k].copy(), out.other[:k].copy(), out.restitution[:k].copy())


def pair_distance(shape_a: dict, pose_a, shape_b: dict, pose_b):
    """Signed distance (m; < 0: penetration depth) between two convex shape dicts placed by 4 × 4 world poses
    (their ``center``/``rotation`` taken within those frames), by the narrow phase's own GJK/EPA on the cores
    less the rounding radii (``narrowphase.core_distance``); returns (distance, unit normal (3,) from B to A,
    point on A (3,), point on B (3,))."""
    from ..geometry import parse_shape
    from .colliders import shape_arrays
    from .narrowphase import core_distance

    rows = []
    for k, (shape, pose) in enumerate(((shape_a, pose_a), (shape_b, pose_b))):
        T = np.asarray(pose, float).reshape(4, 4)
        rows.append((-1, parse_shape(shape, np.zeros(3), f"shape {'AB'[k]}"), T))
    S = shape_arrays([(0, s) for _, s, _ in rows], [])
    R = np.array([T[:3, :3] @ S.local_R[k] for k, (_, _, T) in enumerate(rows)])
    p = np.array([T[:3, :3] @ S.local_p[k] + T[:3, 3] for k, (_, _, T) in enumerate(rows)])
    verts = [S.hverts[S.vstart[k]:S.vstart[k] + S.vcount[k]] for k in range(2)]
    normal, a, b = np.zeros(3), np.zeros(3), np.zeros(3)
    d = core_distance(S.kind[0], S.dims[0], verts[0], R[0], p[0], S.kind[1], S.dims[1], verts[1], R[1], p[1],
                      gjk_work(), normal, a, b)
    return d - S.rho[0] - S.rho[1], normal, a - S.rho[0] * normal, b + S.rho[1] * normal
