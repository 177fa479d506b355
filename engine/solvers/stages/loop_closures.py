"""Loop-closure constraint rows G (thesis 000, Sec. 2.2.5) in link-twist coordinates.

Each closure contributes rows g (12,) over [φ_a; φ_b] (the two bodies' link
twists) with G q̇ = Σ g·[J_a q̇; J_b q̇], and the position errors C whose
rates those rows are. Point rows: ẋ_b − ẋ_a = 0; rotational rows act on the
relative angular velocity ω_b − ω_a (world). The closures are packed once
into arrays (``ClosureArrays``) and evaluated by a kernel every step, as the
post-stabilization evaluates them several times per step.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..._jit import kernel
from ...scene import WORLD
from ..linalg.reduced_operators import jacobian_transpose_product


class ClosureArrays(NamedTuple):
    """m closures: rotational row count (0 point/ball, 1 universal, 2 hinge, 3 fixed), bodies
    (m, 2) with −1 for the world, points and axes (m, 2, 3) in link frames, rest rotations R_aᵀR_b."""

    n_rot: np.ndarray
    bodies: np.ndarray
    points: np.ndarray
    axes: np.ndarray
    rest: np.ndarray

    @property
    def n_rows(self) -> int:
        return int(3 * len(self.n_rot) + self.n_rot.sum())


def closure_arrays(closures) -> ClosureArrays:
    m = len(closures)
    return ClosureArrays(
        np.array([lc.rotation_rows for lc in closures], dtype=np.int64),
        np.array([(lc.body_a, lc.body_b) for lc in closures], dtype=np.int64).reshape(m, 2),
        np.array([(lc.point_a, lc.point_b) for lc in closures], float).reshape(m, 2, 3),
        np.array([(lc.axis_a, lc.axis_b) for lc in closures], float).reshape(m, 2, 3),
        np.array([lc.rest_rotation for lc in closures], float).reshape(m, 3, 3))


@kernel(inline="llvm", refcounts=False)
def _link_pose(X0_E, X0_r, body, R, p):
    """R = world rotation of the link (X0_Eᵀ), p its origin; identity for the world."""
    for i in range(3):
        p[i] = X0_r[body, i] if body != WORLD else 0.0
        for j in range(3):
            if body != WORLD:
                R[i, j] = X0_E[body, j, i]
            else:
                R[i, j] = 1.0 if i == j else 0.0


@kernel(inline="llvm", refcounts=False)
def _angular_row(Ra, Rb, e, row):
    """e·(ω_b − ω_a) over link twists (ω_world = R ω_link): [−Raᵀe, 0, Rbᵀe, 0]."""
    for j in range(3):
        sa = 0.0
        sb = 0.0
        for i in range(3):
            sa += Ra[i, j] * e[i]
            sb += Rb[i, j] * e[i]
        row[j] = -sa
        row[3 + j] = 0.0
        row[6 + j] = sb
        row[9 + j] = 0.0


@kernel
def constraint_rows_kernel(n_rot, bodies, points, axes, rest, X0_E, X0_r, row_bodies, rows, errs):
    """Fills the l rows of all closures (l = ClosureArrays.n_rows) at the link poses of ``ws``."""
    Ra = np.empty((3, 3))
    Rb = np.empty((3, 3))
    pa = np.empty(3)
    pb = np.empty(3)
    Rerr = np.empty((3, 3))
    v = np.empty((6, 3))  # scratch vectors: n_a, n_b, e, misalignment, two perpendiculars
    k = 0
    for c in range(n_rot.shape[0]):
        a = bodies[c, 0]
        b = bodies[c, 1]
        _link_pose(X0_E, X0_r, a, Ra, pa)
        _link_pose(X0_E, X0_r, b, Rb, pb)
        la = points[c, 0]
        lb = points[c, 1]
        for i in range(3):  # ẋ = R (ω × p + v) per body: row i of R Γ is [p × R_i, R_i]
            xa = pa[i]
            xb = pb[i]
            for j in range(3):
                xa += Ra[i, j] * la[j]
                xb += Rb[i, j] * lb[j]
            row = rows[k]
            for j in range(3):
                j1 = (j + 1) % 3
                j2 = (j + 2) % 3
                row[j] = -(la[j1] * Ra[i, j2] - la[j2] * Ra[i, j1])
                row[3 + j] = -Ra[i, j]
                row[6 + j] = lb[j1] * Rb[i, j2] - lb[j2] * Rb[i, j1]
                row[9 + j] = Rb[i, j]
            errs[k] = xb - xa
            row_bodies[k, 0] = a
            row_bodies[k, 1] = b
            k += 1
        nr = n_rot[c]
        if nr == 0:
            continue
        na = v[0]
        nb = v[1]
        e = v[2]
        w = v[3]
        if nr == 3:  # fixed: small rotation vector of R_err = R_b (R_a R_rest)ᵀ
            for i in range(3):
                for j in range(3):
                    s = 0.0
                    for m in range(3):
                        t = 0.0
                        for q in range(3):
                            t += Ra[j, q] * rest[c, q, m]
                        s += Rb[i, m] * t
                    Rerr[i, j] = s
            w[0] = Rerr[2, 1] - Rerr[1, 2]
            w[1] = Rerr[0, 2] - Rerr[2, 0]
            w[2] = Rerr[1, 0] - Rerr[0, 1]
            for m in range(3):
                for i in range(3):
                    e[i] = 1.0 if i == m else 0.0
                _angular_row(Ra, Rb, e, rows[k])
                errs[k] = 0.5 * w[m]
                row_bodies[k, 0] = a
                row_bodies[k, 1] = b
                k += 1
        elif nr == 2:  # hinge: the axes stay parallel, rows along two perpendiculars of n_a
            for i in range(3):
                na[i] = 0.0
                e[i] = 0.0
                for j in range(3):
                    na[i] += Ra[i, j] * axes[c, 0, j]
                    e[i] += rest[c, j, i] * axes[c, 0, j]  # R_restᵀ axis_a, then rotated by R_b
            for i in range(3):
                nb[i] = Rb[i, 0] * e[0] + Rb[i, 1] * e[1] + Rb[i, 2] * e[2]
            _cross(na, nb, w)  # misalignment (small angle)
            for i in range(3):
                e[i] = 0.0
            if abs(na[0]) < 0.9:
                e[0] = 1.0
            else:
                e[1] = 1.0
            e1 = v[4]
            e2 = v[5]
            _cross(na, e, e1)
            s = math.sqrt(e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2])
            for i in range(3):
                e1[i] /= s
            _cross(na, e1, e2)
            for perp in (e1, e2):
                _angular_row(Ra, Rb, perp, rows[k])
                errs[k] = perp[0] * w[0] + perp[1] * w[1] + perp[2] * w[2]
                row_bodies[k, 0] = a
                row_bodies[k, 1] = b
                k += 1
        else:  # universal: the two axes stay perpendicular
            for i in range(3):
                na[i] = 0.0
                nb[i] = 0.0
                for j in range(3):
                    na[i] += Ra[i, j] * axes[c, 0, j]
                    nb[i] += Rb[i, j] * axes[c, 1, j]
            _cross(na, nb, e)
            for i in range(3):
                e[i] = -e[i]
            _angular_row(Ra, Rb, e, rows[k])
            errs[k] = na[0] * nb[0] + na[1] * nb[1] + na[2] * nb[2]
            row_bodies[k, 0] = a
            row_bodies[k, 1] = b
            k += 1


@kernel(inline="llvm", refcounts=False)
def _cross(a, b, out):
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@kernel(refcounts=False)
def constraint_jacobian(tree, ws, row_bodies, rows, w, G):
    """G (l, nv): row k = (Jᵀ w_k)ᵀ, w_k the row's wrenches on its two bodies; w (n, 6) scratch."""
    for k in range(rows.shape[0]):
        for i in range(w.shape[0]):
            for m in range(6):
                w[i, m] = 0.0
        a = row_bodies[k, 0]
        b = row_bodies[k, 1]
        for m in range(6):
            if a >= 0:
                w[a, m] += rows[k, m]
            if b >= 0:
                w[b, m] += rows[k, 6 + m]
        jacobian_transpose_product(tree, ws, w, G[k])


@kernel(refcounts=False)
def contact_normal_rows_kernel(bodies, points, normals, X0_E, rows):
    """Row k = n_k·(ẋ_b − ẋ_a) over [φ_a; φ_b] (bodies[k] = (a, b), −1 the world) at the body points
    points[k, side] (link coordinates) along the world normal normals[k]: [l × E n, E n] per body, E its
    world-to-link rotation (``X0_E``), −1 × that for a; zeros for the world."""
    for k in range(bodies.shape[0]):
        for side in range(2):
            body = bodies[k, side]
            sign = -1.0 if side == 0 else 1.0
            n0 = n1 = n2 = 0.0
            if body >= 0:
                E = X0_E[body]
                n = normals[k]
                n0 = sign * (E[0, 0] * n[0] + E[0, 1] * n[1] + E[0, 2] * n[2])
                n1 = sign * (E[1, 0] * n[0] + E[1, 1] * n[1] + E[1, 2] * n[2])
                n2 = sign * (E[2, 0] * n[0] + E[2, 1] * n[1] + E[2, 2] * n[2])
            lp = points[k, side]
            o = 6 * side
            rows[k, o] = lp[1] * n2 - lp[2] * n1
            rows[k, o + 1] = lp[2] * n0 - lp[0] * n2
            rows[k, o + 2] = lp[0] * n1 - lp[1] * n0
            rows[k, o + 3] = n0
            rows[k, o + 4] = n1
            rows[k, o + 5] = n2


def pressed_contacts(step, ws):
    """The contacts a contact stage pressed in its last step (``ContactStep``: normal impulse > 0) as
    (bodies (k, 2) = (other, body), −1 the world; their points (k, 2, 3) in each body's link frame at the link
    poses in ``ws``; world normals (k, 3), pushing ``body`` away from ``other``); None when there are none."""
    if step is None or len(step.contacts) == 0:
        return None
    c = step.contacts
    on = np.asarray(step.impulses).reshape(-1, 3)[:, 0] > 0.0
    if not on.any():
        return None
    bodies = np.stack([c.other_bodies()[on], np.asarray(c.body)[on]], axis=1).astype(np.int64)
    x = np.asarray(c.point, float)[on]
    points = np.zeros((len(x), 2, 3))
    for side in range(2):
        b = bodies[:, side]
        moving = b >= 0
        E, p = ws.X0_E[b[moving]], ws.X0_r[b[moving]]
        points[moving, side] = np.einsum("kij,kj->ki", E, x[moving] - p)
    return bodies, points, np.ascontiguousarray(np.asarray(c.normal, float)[on])


def contact_normal_rows(contacts, ws):
    """(bodies (k, 2), rows (k, 12)) of ``pressed_contacts`` at the link poses in ``ws``, in the closures' row
    form (``constraint_jacobian`` turns them into rows of G)."""
    bodies, points, normals = contacts
    rows = np.empty((len(bodies), 12))
    contact_normal_rows_kernel(bodies, points, normals, ws.X0_E, rows)
    return bodies, rows


def constraint_rows(closures: ClosureArrays, ws):
    """(bodies (l, 2), rows (l, 12), errors (l,)) for all closures at the link poses in ``ws``."""
    l = closures.n_rows
    row_bodies, rows, errs = np.empty((l, 2), np.int64), np.empty((l, 12)), np.empty(l)
    constraint_rows_kernel(*closures, ws.X0_E, ws.X0_r, row_bodies, rows, errs)
    return row_bodies, rows, errs
