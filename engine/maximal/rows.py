"""Acceleration-level joint constraints between bodies in maximal coordinates (seed 002, Sec. 2.1).

Every body keeps its link frame's pose and its spatial velocity φ = [ω; v] in
link coordinates. A joint (primary or auxiliary) ties a frame F_a fixed in
body a (or the world) to a frame F_b fixed in body b: F_b may move relative to
F_a only along the joint's motion subspace S (``engine.joints``). With
v_J = X_{Fb←b} φ_b − X_{Fb←a} φ_a the relative velocity in F_b coordinates and
T the directions complementary to S, the constraint is Tᵀ v_J = 0 and its time
derivative (the ``j`` rows and ``c`` terms of seed 002, Eq. 3)

    Tᵀ (X_{Fb←b} φ̇_b − X_{Fb←a} φ̇_a) = Tᵀ (v_b' × v_J + c_J)          (Featherstone's a = X a_λ + S q̈ + c_J + v × v_J)

so a constraint's rows are J_b = Tᵀ X_{Fb←b}, J_a = −Tᵀ X_{Fb←a}. Baumgarte
feedback adds −2α Tᵀ v_J − β² Tᵀ e, e the pose error of F_b from the nearest pose
the joint can reach (``joints.joint_coordinates``), in F_b coordinates. The
joint types are the engine's own, so the same kernel serves the tree's joints
(primary constraints) and loop closures or fixed points (auxiliary ones).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._jit import kernel
from ..joints import (
    joint_bias_acceleration, joint_coordinates_kernel, joint_motion_subspace, joint_transform, matrix_to_quat_kernel,
)
from ..spatial import compose_transforms, cross_motion, transform_force_transpose, transform_motion

ROWS = np.array([6, 5, 5, 4, 3, 0], dtype=np.int64)  # constrained directions per joint type id (6 − nv)


class JointConstraints(NamedTuple):
    """m joint constraints: type and axis (joint frame), bodies (m, 2) = (a, b) with −1 for the world,
    X_{Fa←a} = (Ea, ra) and X_{Fb←b} = (Eb, rb) as Plücker pairs, rows per constraint and row offsets."""

    jtype: np.ndarray
    axis: np.ndarray
    bodies: np.ndarray
    Ea: np.ndarray
    ra: np.ndarray
    Eb: np.ndarray
    rb: np.ndarray
    rows: np.ndarray
    row_start: np.ndarray

    @property
    def n_rows(self) -> int:
        return int(self.rows.sum())


def joint_constraints(jtype, axis, bodies, Ea, ra, Eb, rb) -> JointConstraints:
    jtype = np.asarray(jtype, dtype=np.int64).reshape(-1)
    m = jtype.shape[0]
    rows = ROWS[jtype] if m else np.zeros(0, dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(rows)[:-1]]).astype(np.int64) if m else np.zeros(0, dtype=np.int64)
    f = lambda a, shape: np.ascontiguousarray(np.asarray(a, float).reshape(shape))  # noqa: E731
    return JointConstraints(jtype, f(axis, (m, 3)), np.ascontiguousarray(np.asarray(bodies, np.int64).reshape(m, 2)),
                            f(Ea, (m, 3, 3)), f(ra, (m, 3)), f(Eb, (m, 3, 3)), f(rb, (m, 3)), rows, start)


@kernel(inline="llvm")
def _complement(vecs, k, T, r0, c0):
    """Rows r0… of T, columns c0…c0+2: 3 − k unit vectors spanning the complement of the k
    orthonormal rows of vecs (3-vectors). Returns 3 − k."""
    if k == 0:
        for d in range(3):
            for e in range(3):
                T[r0 + d, c0 + e] = 1.0 if d == e else 0.0
    elif k == 1:
        a0, a1, a2 = vecs[0, 0], vecs[0, 1], vecs[0, 2]
        if abs(a0) < 0.9:  # u = a × x̂, then w = a × u
            u0, u1, u2 = 0.0, a2, -a1
        else:  # u = a × ŷ
            u0, u1, u2 = -a2, 0.0, a0
        n = math.sqrt(u0 * u0 + u1 * u1 + u2 * u2)
        u0, u1, u2 = u0 / n, u1 / n, u2 / n
        T[r0, c0], T[r0, c0 + 1], T[r0, c0 + 2] = u0, u1, u2
        T[r0 + 1, c0] = a1 * u2 - a2 * u1
        T[r0 + 1, c0 + 1] = a2 * u0 - a0 * u2
        T[r0 + 1, c0 + 2] = a0 * u1 - a1 * u0
    elif k == 2:
        x0 = vecs[0, 1] * vecs[1, 2] - vecs[0, 2] * vecs[1, 1]
        x1 = vecs[0, 2] * vecs[1, 0] - vecs[0, 0] * vecs[1, 2]
        x2 = vecs[0, 0] * vecs[1, 1] - vecs[0, 1] * vecs[1, 0]
        n = math.sqrt(x0 * x0 + x1 * x1 + x2 * x2)
        T[r0, c0], T[r0, c0 + 1], T[r0, c0 + 2] = x0 / n, x1 / n, x2 / n
    return 3 - k


@kernel(inline="llvm")
def constraint_directions(S, nv, T, ang, lin):
    """T (rows, 6): the directions complementary to the nv rows of S (each purely angular or purely
    linear, orthonormal, as every engine joint type has). Returns the number of rows."""
    na = 0
    nl = 0
    for d in range(nv):
        if S[d, 0] * S[d, 0] + S[d, 1] * S[d, 1] + S[d, 2] * S[d, 2] > 0.5:
            for e in range(3):
                ang[na, e] = S[d, e]
            na += 1
        else:
            for e in range(3):
                lin[nl, e] = S[d, 3 + e]
            nl += 1
    for r in range(6):
        for e in range(6):
            T[r, e] = 0.0
    n_ang = _complement(ang, na, T, 0, 0)
    return n_ang + _complement(lin, nl, T, n_ang, 3)


@kernel(inline="llvm")
def _frame_pose(R, p, body, E, r, Rf, pf):
    """World pose (Rf, pf) of a frame fixed in ``body`` with X_{F←body} = (E, r); world if body = −1."""
    for i in range(3):
        s = 0.0
        for j in range(3):
            t = 0.0
            for k in range(3):
                t += (R[body, i, k] if body >= 0 else (1.0 if i == k else 0.0)) * E[j, k]
            Rf[i, j] = t
        if body >= 0:
            for k in range(3):
                s += R[body, i, k] * r[k]
            pf[i] = p[body, i] + s
        else:
            pf[i] = r[i]


@kernel
def joint_constraint_rows(c, R, p, phi, alpha, beta, JA, JB, rhs, err, verr):
    """Rows of all m constraints at the body poses (R (n,3,3) link→world, p (n,3)) and link twists phi.

    JA, JB (l, 6): each row on body a's and body b's φ̇ (zero rows for the world);
    rhs (l,): J φ̇ = rhs (Tᵀ(v_b' × v_J + c_J) − 2α Tᵀ v_J − β² Tᵀ e); err: Tᵀ e; verr: Tᵀ v_J.
    """
    m = c.jtype.shape[0]
    Rfa = np.empty((3, 3))
    pfa = np.empty(3)
    Rfb = np.empty((3, 3))
    pfb = np.empty(3)
    Rrel = np.empty((3, 3))
    rrel = np.empty(3)
    Erel = np.empty((3, 3))
    EJ = np.empty((3, 3))
    rJ = np.empty(3)
    EaF = np.empty((3, 3))
    raF = np.empty(3)
    qj = np.empty(7)
    qd = np.empty(6)
    S = np.empty((6, 6))
    T = np.empty((6, 6))
    ang = np.empty((3, 3))
    lin = np.empty((3, 3))
    vb = np.empty(6)
    va = np.empty(6)
    vJ = np.empty(6)
    bias = np.empty(6)
    cJ = np.empty(6)
    e = np.empty(6)
    Re = np.empty((3, 3))
    quat = np.empty(4)
    row = np.empty(6)
    zero6 = np.zeros(6)
    for k in range(m):
        a = c.bodies[k, 0]
        b = c.bodies[k, 1]
        jt = c.jtype[k]
        ax = c.axis[k]
        _frame_pose(R, p, a, c.Ea[k], c.ra[k], Rfa, pfa)
        _frame_pose(R, p, b, c.Eb[k], c.rb[k], Rfb, pfb)
        for i in range(3):  # F_b in F_a: R_rel = R_Faᵀ R_Fb, r_rel = R_Faᵀ (p_Fb − p_Fa)
            s = 0.0
            for j in range(3):
                t = 0.0
                for kk in range(3):
                    t += Rfa[kk, i] * Rfb[kk, j]
                Rrel[i, j] = t
                Erel[j, i] = t
                s += Rfa[j, i] * (pfb[j] - pfa[j])
            rrel[i] = s
        joint_coordinates_kernel(jt, ax, Rrel, rrel, qj, 0)
        joint_transform(jt, ax, qj, 0, EJ, rJ)
        # pose error of F_b from the reachable pose X_J(q*), in F_b coordinates: [log(R_Jᵀ R_rel); E_J (r_rel − r_J)]
        for i in range(3):
            for j in range(3):
                s = 0.0
                for kk in range(3):
                    s += EJ[i, kk] * Rrel[kk, j]
                Re[i, j] = s
        matrix_to_quat_kernel(Re, quat, 0)
        sn = math.sqrt(quat[1] * quat[1] + quat[2] * quat[2] + quat[3] * quat[3])
        scale = 2.0 * math.atan2(sn, quat[0]) / sn if sn > 1e-12 else 2.0
        for i in range(3):
            e[i] = scale * quat[1 + i]
            s = 0.0
            for kk in range(3):
                s += EJ[i, kk] * (rrel[kk] - rJ[kk])
            e[3 + i] = s
        nv = 6 - c.rows[k]
        joint_motion_subspace(jt, ax, qj, 0, S, 0)
        nr = constraint_directions(S, nv, T, ang, lin)
        # velocities in F_b coordinates
        if b >= 0:
            transform_motion(c.Eb[k], c.rb[k], phi[b], vb)
        else:
            for i in range(6):
                vb[i] = 0.0
        compose_transforms(Erel, rrel, c.Ea[k], c.ra[k], EaF, raF)  # X_{Fb←a} = X_{Fb←Fa} X_{Fa←a}
        if a >= 0:
            transform_motion(EaF, raF, phi[a], va)
        else:
            for i in range(6):
                va[i] = 0.0
        for i in range(6):
            vJ[i] = vb[i] - va[i]
        for d in range(nv):
            s = 0.0
            for i in range(6):
                s += S[d, i] * vJ[i]
            qd[d] = s
        joint_bias_acceleration(jt, ax, qj, 0, qd, qd, 0, cJ)
        cross_motion(vb, vJ, bias)
        for i in range(6):
            bias[i] += cJ[i]
        r0 = c.row_start[k]
        for t in range(nr):
            tv = T[t]
            sb = 0.0
            sv = 0.0
            se = 0.0
            for i in range(6):
                sb += tv[i] * bias[i]
                sv += tv[i] * vJ[i]
                se += tv[i] * e[i]
            rhs[r0 + t] = sb - 2.0 * alpha * sv - beta * beta * se
            err[r0 + t] = se
            verr[r0 + t] = sv
            if b >= 0:
                transform_force_transpose(c.Eb[k], c.rb[k], tv, row)
            else:
                for i in range(6):
                    row[i] = zero6[i]
            for i in range(6):
                JB[r0 + t, i] = row[i]
            if a >= 0:
                transform_force_transpose(EaF, raF, tv, row)
                for i in range(6):
                    JA[r0 + t, i] = -row[i]
            else:
                for i in range(6):
                    JA[r0 + t, i] = 0.0
