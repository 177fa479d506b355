"""Θ(n²) inverse of the joint-space inertia matrix by impulse propagation.

Drumwright (seed 004), Algorithm 1 (fixed base) and Algorithm 2 (floating
base): column k of M⁻¹ is the velocity change Δq̇ caused by a unit impulse on
dof k (Eq. 9–10). Everything is computed in the world frame, as the seed
recommends, so the per-column passes need no spatial transforms:

* once per configuration (O(n)): articulated inertias I^A, world spatial axes
  s, and — the Section 5.2 savings — U = I^A s and D⁻¹ = (sᵀ I^A s)⁻¹;
* per column k of joint j: the impulse pass (lines 4–5) starts at j and only
  walks j's ancestors, since Y is zero elsewhere; the velocity pass (lines
  7–10) visits every body.

Multi-dof joints use the block form (D is nv×nv). A floating base is the root
with a 6-dof free joint, for which s = I₆ in the root frame, D = I^A_0 and the
velocity pass starts with Δv₀ = −(I^A_0)⁻¹ (Y_0 + e_k) — exactly Algorithm 2,
lines 6–10.
"""
from __future__ import annotations

import numpy as np

from .._jit import kernel, prange
from ..spatial import add_transformed_inertia, transform_motion_inverse
from ._checks import as_q
from .aba import articulated_inertia_pass
from .kinematics import joint_pass, world_pass


@kernel
def world_articulated_quantities(tree, ws, s_w, U_w):
    """s_w (nv, 6) world spatial axes and U_w = I^A s (world) for every dof; fills ws.Dinv."""
    n = tree.parent.shape[0]
    IAw = ws.tmp66
    for i in range(n):
        nv = tree.joint_nv[i]
        if nv == 0:
            continue
        vs = tree.v_start[i]
        for r in range(6):
            for c in range(6):
                IAw[r, c] = 0.0
        add_transformed_inertia(ws.X0_E[i], ws.X0_r[i], ws.IA[i], IAw)
        for d in range(nv):
            transform_motion_inverse(ws.X0_E[i], ws.X0_r[i], ws.S[vs + d], s_w[vs + d])
            for r in range(6):
                t = 0.0
                for c in range(6):
                    t += IAw[r, c] * s_w[vs + d, c]
                U_w[vs + d, r] = t


@kernel
def minv_column(tree, s_w, U_w, Dinv, k, dof_body, Y, dv, u, out_row):
    """out_row = column k of M⁻¹ (Algorithm 1 / 2 for one unit impulse).

    Y (n, 6) must be zero on entry and is left zero; dv (n, 6) and u (nv,)
    are scratch.
    """
    n = tree.parent.shape[0]
    j = dof_body[k]
    # impulse pass (lines 4–5), only along the path j → root
    i = j
    while i >= 0:
        nv = tree.joint_nv[i]
        vs = tree.v_start[i]
        for d in range(nv):
            t = 1.0 if vs + d == k else 0.0
            for c in range(6):
                t -= s_w[vs + d, c] * Y[i, c]
            u[vs + d] = t
        p = tree.parent[i]
        if p >= 0:
            for c in range(6):
                Y[p, c] += Y[i, c]
            for d in range(nv):
                g = 0.0
                for e in range(nv):
                    g += Dinv[i, d, e] * u[vs + e]
                for c in range(6):
                    Y[p, c] += U_w[vs + d, c] * g
        i = p
    # velocity pass (lines 7–10)
    for i in range(n):
        p = tree.parent[i]
        nv = tree.joint_nv[i]
        vs = tree.v_start[i]
        for c in range(6):
            dv[i, c] = dv[p, c] if p >= 0 else 0.0
        for d in range(nv):
            t = 1.0 if vs + d == k else 0.0
            for c in range(6):
                t -= U_w[vs + d, c] * dv[i, c] + s_w[vs + d, c] * Y[i, c]
            u[vs + d] = t
        for d in range(nv):
            g = 0.0
            for e in range(nv):
                g += Dinv[i, d, e] * u[vs + e]
            out_row[vs + d] = g
        for d in range(nv):
            g = out_row[vs + d]
            for c in range(6):
                dv[i, c] += s_w[vs + d, c] * g
    i = j
    while i >= 0:
        for c in range(6):
            Y[i, c] = 0.0
        i = tree.parent[i]


@kernel
def _prepare(tree, q, ws, s_w, U_w):
    joint_pass(tree, q, ws)
    world_pass(tree, ws)
    articulated_inertia_pass(tree, ws)
    world_articulated_quantities(tree, ws, s_w, U_w)


@kernel
def minv_kernel(tree, q, ws, dof_body, s_w, U_w, Minv):
    """Minv (nv, nv) = M(q)⁻¹ in Θ(n²), one column at a time (single thread)."""
    _prepare(tree, q, ws, s_w, U_w)
    n = tree.parent.shape[0]
    nv = Minv.shape[0]
    Y = np.zeros((n, 6))
    dv = np.zeros((n, 6))
    u = np.zeros(nv)
    for k in range(nv):
        minv_column(tree, s_w, U_w, ws.Dinv, k, dof_body, Y, dv, u, Minv[k])


@kernel(parallel=True)
def minv_parallel_kernel(tree, q, ws, dof_body, s_w, U_w, Minv, n_chunks):
    """Like minv_kernel, with the columns split over ``n_chunks`` threads (seed §5.2, §6.2)."""
    _prepare(tree, q, ws, s_w, U_w)
    n = tree.parent.shape[0]
    nv = Minv.shape[0]
    for t in prange(n_chunks):
        Y = np.zeros((n, 6))
        dv = np.zeros((n, 6))
        u = np.zeros(nv)
        for k in range(t, nv, n_chunks):
            minv_column(tree, s_w, U_w, ws.Dinv, k, dof_body, Y, dv, u, Minv[k])


def minv(model, q, *, threads: int = 1) -> np.ndarray:
    """M(q)⁻¹ (nv, nv) by Drumwright's Θ(n²) impulse propagation (seed 004, Alg. 1–2).

    q: (nq,). threads > 1 splits the columns over that many numba threads.
    Since M⁻¹ is symmetric, row k is written with column k.
    """
    q = as_q(model, q)
    nv = model.nv
    Minv = np.empty((nv, nv))
    s_w = np.empty((nv, 6))
    U_w = np.empty((nv, 6))
    if threads > 1:
        minv_parallel_kernel(model.tree, q, model.data, model.dof_body, s_w, U_w, Minv, int(threads))
    else:
        minv_kernel(model.tree, q, model.data, model.dof_body, s_w, U_w, Minv)
    return Minv
