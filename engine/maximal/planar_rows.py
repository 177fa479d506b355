"""Planar (2D) maximal coordinates for Baraff's solver, as in the seed's experiments (seed 002 Sec. 2.1).

Each body has 3 DoF: its centre of mass (x, y) and angle θ, velocity
v = (ẋ, ẏ, ω) in world coordinates, and a constant mass matrix diag(m, m, I)
(no gyroscopic term in 2D). Joints tie a point r_a of body a (or a world point)
to a point r_b of body b:

* ``PIN`` (revolute about z): C = x_a + R_a r_a − x_b − R_b r_b = 0 (2 rows),
  J_a = [I, R_a r_a⊥], J_b = −[I, R_b r_b⊥], c = −ω_a² R_a r_a + ω_b² R_b r_b;
* ``WELD`` (fixed): the pin rows plus θ_b − θ_a − θ₀ = 0 (3 rows);
* ``SLIDER`` (prismatic along u, fixed in a): θ_b − θ_a − θ₀ = 0 and n_a·d = 0
  with n_a = R_a u⊥, d = (x_b + R_b r_b) − (x_a + R_a r_a) (2 rows).

Rows are written as J v̇ = rhs with rhs = −c − 2α Ċ − β² C (Baumgarte), the same
convention as the 3D ``engine.maximal.rows``.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._jit import kernel

PIN, SLIDER, WELD = 0, 1, 2
ROWS = np.array([2, 2, 3], dtype=np.int64)


class PlanarConstraints(NamedTuple):
    """m planar joints: kind, bodies (m, 2) = (a, b) with −1 for the world, points (m, 2, 2) in each
    body's COM frame (world coordinates for the world), slider axis (m, 2) in a's frame, rest angle
    θ_b − θ_a (m,), rows and row offsets."""

    kind: np.ndarray
    bodies: np.ndarray
    points: np.ndarray
    axis: np.ndarray
    angle0: np.ndarray
    rows: np.ndarray
    row_start: np.ndarray

    @property
    def n_rows(self) -> int:
        return int(self.rows.sum())


def planar_constraints(kind, bodies, points, axis, angle0) -> PlanarConstraints:
    kind = np.asarray(kind, dtype=np.int64).reshape(-1)
    m = kind.shape[0]
    rows = ROWS[kind] if m else np.zeros(0, dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(rows)[:-1]]).astype(np.int64) if m else np.zeros(0, dtype=np.int64)
    return PlanarConstraints(kind, np.ascontiguousarray(np.asarray(bodies, np.int64).reshape(m, 2)),
                             np.ascontiguousarray(np.asarray(points, float).reshape(m, 2, 2)),
                             np.ascontiguousarray(np.asarray(axis, float).reshape(m, 2)),
                             np.ascontiguousarray(np.asarray(angle0, float).reshape(m)), rows, start)


@kernel(inline="llvm")
def _arm(q, v, body, r, out):
    """out = (world point x + R r (2), R r (2), rate of R r: ω (R r)⊥ (2)); the world: r itself, at rest."""
    if body < 0:
        out[0], out[1], out[2], out[3], out[4], out[5] = r[0], r[1], 0.0, 0.0, 0.0, 0.0
        return 0.0, 0.0
    th = q[3 * body + 2]
    c, s = math.cos(th), math.sin(th)
    rx = c * r[0] - s * r[1]
    ry = s * r[0] + c * r[1]
    w = v[3 * body + 2]
    out[0] = q[3 * body] + rx
    out[1] = q[3 * body + 1] + ry
    out[2], out[3] = rx, ry
    out[4], out[5] = -w * ry, w * rx
    return th, w


@kernel
def planar_constraint_rows(c, q, v, alpha, beta, JA, JB, rhs, err, verr):
    """Rows of all planar constraints at positions q (3n) and velocities v (3n); same outputs as
    ``rows.joint_constraint_rows`` with 3 columns per body ([ẋ, ẏ, ω])."""
    pa = np.empty(6)
    pb = np.empty(6)
    for k in range(c.kind.shape[0]):
        a = c.bodies[k, 0]
        b = c.bodies[k, 1]
        tha, wa = _arm(q, v, a, c.points[k, 0], pa)
        thb, wb = _arm(q, v, b, c.points[k, 1], pb)
        va0 = v[3 * a] if a >= 0 else 0.0
        va1 = v[3 * a + 1] if a >= 0 else 0.0
        vb0 = v[3 * b] if b >= 0 else 0.0
        vb1 = v[3 * b + 1] if b >= 0 else 0.0
        r0 = c.row_start[k]
        kind = c.kind[k]
        nrow = c.rows[k]
        for t in range(nrow):
            for i in range(3):
                JA[r0 + t, i] = 0.0
                JB[r0 + t, i] = 0.0
        if kind == PIN or kind == WELD:
            for d in range(2):  # C = p_a − p_b
                C = pa[d] - pb[d]
                Cd = (va0 if d == 0 else va1) + pa[4 + d] - (vb0 if d == 0 else vb1) - pb[4 + d]
                cc = -wa * wa * pa[2 + d] + wb * wb * pb[2 + d]
                JA[r0 + d, d] = 1.0
                JA[r0 + d, 2] = -pa[3] if d == 0 else pa[2]  # (R r)⊥ = (−y, x)
                JB[r0 + d, d] = -1.0
                JB[r0 + d, 2] = pb[3] if d == 0 else -pb[2]
                rhs[r0 + d] = -cc - 2.0 * alpha * Cd - beta * beta * C
                err[r0 + d] = C
                verr[r0 + d] = Cd
            if a < 0:
                for i in range(3):
                    JA[r0, i] = 0.0
                    JA[r0 + 1, i] = 0.0
            if b < 0:
                for i in range(3):
                    JB[r0, i] = 0.0
                    JB[r0 + 1, i] = 0.0
            if kind == WELD:
                _angle_row(c, k, r0 + 2, a, b, tha, thb, wa, wb, alpha, beta, JA, JB, rhs, err, verr)
        else:  # SLIDER: angle lock, then n_a·d = 0
            _angle_row(c, k, r0, a, b, tha, thb, wa, wb, alpha, beta, JA, JB, rhs, err, verr)
            ca, sa = math.cos(tha), math.sin(tha)
            ux = ca * c.axis[k, 0] - sa * c.axis[k, 1]
            uy = sa * c.axis[k, 0] + ca * c.axis[k, 1]
            nx, ny = -uy, ux
            dx, dy = pb[0] - pa[0], pb[1] - pa[1]
            ddx = vb0 + pb[4] - va0 - pa[4]
            ddy = vb1 + pb[5] - va1 - pa[5]
            C = nx * dx + ny * dy
            pnx, pny = -ny, nx  # n⊥
            Cd = wa * (pnx * dx + pny * dy) + nx * ddx + ny * ddy
            cc = (-wa * wa * C + 2.0 * wa * (pnx * ddx + pny * ddy)
                  + nx * (wa * wa * pa[2] - wb * wb * pb[2]) + ny * (wa * wa * pa[3] - wb * wb * pb[3]))
            t = r0 + 1
            if b >= 0:
                JB[t, 0], JB[t, 1] = nx, ny
                JB[t, 2] = nx * (-pb[3]) + ny * pb[2]
            if a >= 0:
                JA[t, 0], JA[t, 1] = -nx, -ny
                JA[t, 2] = -(nx * (-pa[3]) + ny * pa[2]) + (pnx * dx + pny * dy)
            rhs[t] = -cc - 2.0 * alpha * Cd - beta * beta * C
            err[t] = C
            verr[t] = Cd


@kernel(inline="llvm")
def _angle_row(c, k, t, a, b, tha, thb, wa, wb, alpha, beta, JA, JB, rhs, err, verr):
    """θ_b − θ_a − θ₀ = 0."""
    C = thb - tha - c.angle0[k]
    C = math.atan2(math.sin(C), math.cos(C))
    Cd = wb - wa
    if a >= 0:
        JA[t, 2] = -1.0
    if b >= 0:
        JB[t, 2] = 1.0
    rhs[t] = -2.0 * alpha * Cd - beta * beta * C
    err[t] = C
    verr[t] = Cd


@kernel
def planar_body_forces(mass, g, f):
    """f_i = (m g_x, m g_y, 0): gravity at the centre of mass (no gyroscopic term in 2D)."""
    for i in range(mass.shape[0]):
        f[i, 0] = mass[i] * g[0]
        f[i, 1] = mass[i] * g[1]
        f[i, 2] = 0.0
