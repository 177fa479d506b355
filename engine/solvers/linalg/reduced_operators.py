"""O(n) products with the RedMax Jacobian and system matrix (thesis 000, Alg. 2–3).

Maximal velocities are link twists (link coordinates, see docs/conventions.md):
``J x`` is the velocity pass with x in place of q̇ (Alg. 2), ``Jᵀ w`` the
inward force pass (Alg. 3), and ``J̇ x`` its time derivative along q̇. J itself
is formed only by ``fill_jacobian`` (Alg. 1), for tests and the direct solvers.

The system matrix of Eq. 2.14 is kept as
``M̃ = Jᵀ (blkdiag(A) + couplings) J + diag(r)`` where
A (n, 6, 6) holds each body's inertia plus its own h D + h² K blocks, the
couplings are the off-diagonal 6 × 6 blocks C_ab = (hD + h²K)_ab of the
maximal forces that join two bodies, and r = h D_r + h² K_r.
"""
from __future__ import annotations

import numpy as np

from ..._jit import kernel
from ...joints import joint_bias_acceleration
from ...spatial import cross_motion, transform_force_transpose, transform_motion


@kernel(inline="llvm", refcounts=False)
def joint_velocity(tree, ws, i, qd, vJ):
    """vJ (6,) = S_i q̇_i: body i's velocity relative to its parent (link coordinates)."""
    vs = tree.v_start[i]
    for k in range(6):
        vJ[k] = 0.0
        for d in range(tree.joint_nv[i]):
            vJ[k] += ws.S[vs + d, k] * qd[vs + d]


@kernel(inline="llvm", refcounts=False)
def jacobian_product(tree, ws, x, y):
    """y (n, 6) = J x: link twists for joint velocities x (nv,) (Alg. 2, first line)."""
    n = tree.parent.shape[0]
    for i in range(n):
        p = tree.parent[i]
        if p >= 0:
            transform_motion(ws.Xup_E[i], ws.Xup_r[i], y[p], y[i])
        else:
            for k in range(6):
                y[i, k] = 0.0
        vs = tree.v_start[i]
        for d in range(tree.joint_nv[i]):
            for k in range(6):
                y[i, k] += ws.S[vs + d, k] * x[vs + d]


@kernel(refcounts=False)
def jacobian_dot_product(tree, ws, q, qd, x, y, z):
    """z (n, 6) = J̇(q, q̇) x and y = J x (Alg. 2): z_i = Xup z_p + (Xup y_p) × v_J + Ṡ x."""
    n = tree.parent.shape[0]
    vJ = ws.tmp6
    t = ws.tmp6b
    for i in range(n):
        p = tree.parent[i]
        vs = tree.v_start[i]
        nv = tree.joint_nv[i]
        joint_velocity(tree, ws, i, qd, vJ)
        if p >= 0:
            transform_motion(ws.Xup_E[i], ws.Xup_r[i], y[p], y[i])
            transform_motion(ws.Xup_E[i], ws.Xup_r[i], z[p], z[i])
            cross_motion(y[i], vJ, t)  # (Xup y_p) × v_J, before y_i gets its own term
            for k in range(6):
                z[i, k] += t[k]
        else:
            for k in range(6):
                y[i, k] = 0.0
                z[i, k] = 0.0
        if nv > 0:
            joint_bias_acceleration(tree.joint_type[i], tree.joint_axis[i], q, tree.q_start[i], qd, x, vs, t)
            for k in range(6):
                z[i, k] += t[k]
        for d in range(nv):
            for k in range(6):
                y[i, k] += ws.S[vs + d, k] * x[vs + d]


@kernel(inline="llvm", refcounts=False)
def jacobian_transpose_product(tree, ws, w, out):
    """out (nv,) = Jᵀ w for link wrenches w (n, 6); w is overwritten (Alg. 3)."""
    n = tree.parent.shape[0]
    t = ws.tmp6
    for i in range(n - 1, -1, -1):
        vs = tree.v_start[i]
        for d in range(tree.joint_nv[i]):
            s = 0.0
            for k in range(6):
                s += ws.S[vs + d, k] * w[i, k]
            out[vs + d] = s
        p = tree.parent[i]
        if p >= 0:
            transform_force_transpose(ws.Xup_E[i], ws.Xup_r[i], w[i], t)
            for k in range(6):
                w[p, k] += t[k]


@kernel(refcounts=False)
def system_product(tree, ws, A, pair_a, pair_b, coupling, reduced_diag, x, y, w, out):
    """out = M̃ x = Jᵀ (blkdiag(A) + couplings) J x + r ⊙ x in O(n + pairs); y, w (n, 6) scratch."""
    jacobian_product(tree, ws, x, y)
    n = tree.parent.shape[0]
    for i in range(n):
        for r in range(6):
            s = 0.0
            for c in range(6):
                s += A[i, r, c] * y[i, c]
            w[i, r] = s
    for s_ in range(pair_a.shape[0]):
        a = pair_a[s_]
        b = pair_b[s_]
        C = coupling[s_]
        for r in range(6):
            ta = 0.0
            tb = 0.0
            for c in range(6):
                ta += C[r, c] * y[b, c]
                tb += C[c, r] * y[a, c]
            w[a, r] += ta
            w[b, r] += tb
    jacobian_transpose_product(tree, ws, w, out)
    for k in range(out.shape[0]):
        out[k] += reduced_diag[k] * x[k]


@kernel
def fill_jacobian(tree, ws, J):
    """J (6n, nv) dense, filled by Alg. 1: J(i, own) = S, J(i, a) = Xup_i J(p, a)."""
    n = tree.parent.shape[0]
    nv = J.shape[1]
    col = ws.tmp6
    out = ws.tmp6b
    for i in range(n):
        p = tree.parent[i]
        if p >= 0:
            for d in range(nv):
                for k in range(6):
                    col[k] = J[6 * p + k, d]
                transform_motion(ws.Xup_E[i], ws.Xup_r[i], col, out)
                for k in range(6):
                    J[6 * i + k, d] = out[k]
        vs = tree.v_start[i]
        for d in range(tree.joint_nv[i]):
            for k in range(6):
                J[6 * i + k, vs + d] = ws.S[vs + d, k]


@kernel
def fill_jacobian_dot(tree, ws, q, qd, J, Jdot):
    """J̇ (6n, nv) by Alg. 1 line 7: J̇(i, own) = Ṡ, J̇(i, a) = Ẋup J(p, a) + Xup J̇(p, a).

    Ẋup m = (Xup m) × v_J (the child frame moves with v_J relative to the parent).
    J must already be filled by fill_jacobian.
    """
    n = tree.parent.shape[0]
    nv = J.shape[1]
    col = ws.tmp6
    out = ws.tmp6b
    vJ = np.zeros(6)
    t = np.zeros(6)
    e = np.zeros(nv)
    for i in range(n):
        p = tree.parent[i]
        vs = tree.v_start[i]
        nvi = tree.joint_nv[i]
        joint_velocity(tree, ws, i, qd, vJ)
        if p >= 0:
            for d in range(nv):
                for k in range(6):
                    col[k] = J[6 * p + k, d]
                transform_motion(ws.Xup_E[i], ws.Xup_r[i], col, out)
                cross_motion(out, vJ, t)
                for k in range(6):
                    col[k] = Jdot[6 * p + k, d]
                transform_motion(ws.Xup_E[i], ws.Xup_r[i], col, out)
                for k in range(6):
                    Jdot[6 * i + k, d] = out[k] + t[k]
        for d in range(nvi):  # own columns: Ṡ e_d
            e[vs + d] = 1.0
            joint_bias_acceleration(tree.joint_type[i], tree.joint_axis[i], q, tree.q_start[i], qd, e, vs, t)
            e[vs + d] = 0.0
            for k in range(6):
                Jdot[6 * i + k, vs + d] = t[k]
