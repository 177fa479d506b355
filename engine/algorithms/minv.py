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


BLOCK = 4  # columns propagated together: independent recursions hide each other's latency


@kernel
def impulse_pass(tree, s_w, U_w, Dinv, k, dof_body, Y, u):
    """Lines 4–5: articulated impulses Y (n, 6) for a unit impulse on dof k.

    Only the path from k's body to the root is visited: Y is zero elsewhere.
    """
    i = dof_body[k]
    while i >= 0:
        nv = tree.joint_nv[i]
        vs = tree.v_start[i]
        p = tree.parent[i]
        if nv == 1:  # scalar fast path (revolute, prismatic)
            t = 1.0 if vs == k else 0.0
            for c in range(6):
                t -= s_w[vs, c] * Y[i, c]
            g = Dinv[i, 0, 0] * t
            if p >= 0:
                for c in range(6):
                    Y[p, c] += Y[i, c] + U_w[vs, c] * g
            i = p
            continue
        for d in range(nv):
            t = 1.0 if vs + d == k else 0.0
            for c in range(6):
                t -= s_w[vs + d, c] * Y[i, c]
            u[vs + d] = t
        if p >= 0:
            pass_impulse_to_parent(U_w, Dinv, i, p, vs, nv, u[vs:], Y)
        i = p


@kernel(inline=True)
def pass_impulse_to_parent(U_w, Dinv, i, p, vs, nv, t, Y):
    """Line 5: Y_p += Y_i + U_i D_i⁻¹ t, body i's articulated bias impulse as its parent p sees it;
    t (≥ nv,): the joint's bias impulse τ − Sᵀ Y_i."""
    for c in range(6):
        Y[p, c] += Y[i, c]
    for d in range(nv):
        g = 0.0
        for e in range(nv):
            g += Dinv[i, d, e] * t[e]
        for c in range(6):
            Y[p, c] += U_w[vs + d, c] * g


@kernel
def minv_columns(tree, s_w, U_w, Dinv, k0, nb, dof_body, Y, dv, u, Minv):
    """Rows k0 … k0+nb−1 of M⁻¹ (= those columns, by symmetry), nb ≤ BLOCK.

    Y (BLOCK, n, 6) must be zero on entry and is left zero; dv (n, BLOCK, 6)
    and u (nv,) are scratch. The velocity pass (lines 7–10) walks the bodies
    once for all nb columns.
    """
    n = tree.parent.shape[0]
    for b in range(nb):
        impulse_pass(tree, s_w, U_w, Dinv, k0 + b, dof_body, Y[b], u)
    for i in range(n):
        p = tree.parent[i]
        nv = tree.joint_nv[i]
        vs = tree.v_start[i]
        if nv == 1:  # scalar fast path
            for b in range(nb):
                t = 1.0 if vs == k0 + b else 0.0
                if p >= 0:
                    for c in range(6):
                        t -= U_w[vs, c] * dv[p, b, c] + s_w[vs, c] * Y[b, i, c]
                else:
                    for c in range(6):
                        t -= s_w[vs, c] * Y[b, i, c]
                g = Dinv[i, 0, 0] * t
                Minv[k0 + b, vs] = g
                if p >= 0:
                    for c in range(6):
                        dv[i, b, c] = dv[p, b, c] + s_w[vs, c] * g
                else:
                    for c in range(6):
                        dv[i, b, c] = s_w[vs, c] * g
            continue
        for b in range(nb):
            k = k0 + b
            for c in range(6):
                dv[i, b, c] = dv[p, b, c] if p >= 0 else 0.0
            for d in range(nv):
                t = 1.0 if vs + d == k else 0.0
                for c in range(6):
                    t -= U_w[vs + d, c] * dv[i, b, c] + s_w[vs + d, c] * Y[b, i, c]
                u[vs + d] = t
            for d in range(nv):
                g = 0.0
                for e in range(nv):
                    g += Dinv[i, d, e] * u[vs + e]
                Minv[k, vs + d] = g
            for d in range(nv):
                g = Minv[k, vs + d]
                for c in range(6):
                    dv[i, b, c] += s_w[vs + d, c] * g
    for b in range(nb):  # leave Y zero for the next block
        i = dof_body[k0 + b]
        while i >= 0:
            for c in range(6):
                Y[b, i, c] = 0.0
            i = tree.parent[i]


def prepare_minv(tree, q, ws, s_w, U_w, inertia=None, joint_diag=None):
    """The O(n) part: kinematics, articulated inertias, world axes s, U = I^A s and D⁻¹.

    Separate kernel launches on purpose: numba re-optimizes every callee inside
    each caller, so one wrapper kernel would double the compile time.
    """
    joint_pass(tree, q, ws)
    world_pass(tree, ws)
    articulated_inertia_pass(tree, ws, tree.link_inertia if inertia is None else inertia,
                             ws.zero_nv if joint_diag is None else joint_diag)
    world_articulated_quantities(tree, ws, s_w, U_w)


@kernel
def read_point_rows(dv, k0, nb, body, other, F, W):
    """W[k0:k0+nb] = M⁻¹ Jᵀ on those rows, read off the velocity pass: column k's Δv of every body
    (dv) is the motion M⁻¹ e_k, and (J M⁻¹ e_k)[3c+r] = F[c, r] · (Δv_body − Δv_other) (other < 0:
    the world) — the contact point's velocity along its direction; M⁻¹ symmetric makes that row k
    of M⁻¹ Jᵀ. 18 k flops per column, written along W's rows."""
    for b in range(nb):
        for c in range(body.shape[0]):
            i, o = body[c], other[c]
            for r in range(3):
                s = 0.0
                for e in range(6):
                    s += F[c, r, e] * dv[i, b, e]
                if o >= 0:
                    for e in range(6):
                        s -= F[c, r, e] * dv[o, b, e]
                W[k0 + b, 3 * c + r] = s


@kernel
def minv_kernel(tree, Dinv, dof_body, s_w, U_w, Minv, body, other, F, W):
    """Minv (nv, nv) = M(q)⁻¹ in Θ(n²), BLOCK columns at a time (single thread); needs prepare_minv.
    With contact rows (body, other, F, see ``read_point_rows``; empty for none) also W = M⁻¹ Jᵀ."""
    n = tree.parent.shape[0]
    nv = Minv.shape[0]
    Y = np.zeros((BLOCK, n, 6))
    dv = np.zeros((n, BLOCK, 6))
    u = np.zeros(nv)
    for k0 in range(0, nv, BLOCK):
        nb = min(BLOCK, nv - k0)
        minv_columns(tree, s_w, U_w, Dinv, k0, nb, dof_body, Y, dv, u, Minv)
        read_point_rows(dv, k0, nb, body, other, F, W)


@kernel(parallel=True)
def minv_parallel_kernel(tree, Dinv, dof_body, s_w, U_w, Minv, body, other, F, W, n_chunks):
    """Like minv_kernel, with the column blocks split over ``n_chunks`` threads (seed §5.2, §6.2)."""
    n = tree.parent.shape[0]
    nv = Minv.shape[0]
    n_blocks = (nv + BLOCK - 1) // BLOCK
    for t in prange(n_chunks):
        Y = np.zeros((BLOCK, n, 6))
        dv = np.zeros((n, BLOCK, 6))
        u = np.zeros(nv)
        for blk in range(t, n_blocks, n_chunks):
            k0 = blk * BLOCK
            nb = min(BLOCK, nv - k0)
            minv_columns(tree, s_w, U_w, Dinv, k0, nb, dof_body, Y, dv, u, Minv)
            read_point_rows(dv, k0, nb, body, other, F, W)


_NO_BODIES = np.zeros(0, dtype=np.int64)
_NO_MAPS = np.zeros((0, 3, 6))


def minv(model, q, *, threads: int = 1, inertia=None, joint_diag=None, ws=None) -> np.ndarray:
    """M(q)⁻¹ (nv, nv) by Drumwright's Θ(n²) impulse propagation (seed 004, Alg. 1–2).

    q: (nq,). threads > 1 splits the columns over that many numba threads.
    Since M⁻¹ is symmetric, row k is written with column k. Optional inertia (n, 6, 6)
    link-frame blocks replacing the bodies' inertias and joint_diag (nv,) added to the joint
    space (an armature: D = Sᵀ Iᴬ S + diag) give (M' + diag)⁻¹ the same way, M' = crba(inertia).
    ws: the workspace to compute in (default ``model.data``; a stepper passes its own).
    """
    return minv_and_point_rows(model, q, _NO_BODIES, _NO_BODIES, _NO_MAPS, threads=threads, inertia=inertia,
                               joint_diag=joint_diag, ws=ws)[0]


def minv_and_point_rows(model, q, body, other, F, *, threads: int = 1, inertia=None, joint_diag=None, ws=None):
    """(M⁻¹ (nv, nv), W = M⁻¹ Jᵀ (nv, 3k), s_w (nv, 6)) in one Θ(n² + n k) propagation.

    J: the rows F[c, r] · (velocity of body[c] − of other[c]) (``contact.jacobian.point_maps``), which
    the velocity pass of every column hands over for free; s_w: the world dof axes at q.
    ws: the workspace to compute in (default ``model.data``).
    """
    q = as_q(model, q)
    nv = model.nv
    Minv = np.empty((nv, nv))
    W = np.empty((nv, 3 * body.shape[0]))
    s_w = np.empty((nv, 6))
    U_w = np.empty((nv, 6))
    ws = model.data if ws is None else ws
    if inertia is not None:
        inertia = np.ascontiguousarray(inertia, dtype=float)
    if joint_diag is not None:
        joint_diag = np.ascontiguousarray(joint_diag, dtype=float)
    prepare_minv(model.tree, q, ws, s_w, U_w, inertia, joint_diag)
    if threads > 1:
        minv_parallel_kernel(model.tree, ws.Dinv, model.dof_body, s_w, U_w, Minv, body, other, F, W, int(threads))
    else:
        minv_kernel(model.tree, ws.Dinv, model.dof_body, s_w, U_w, Minv, body, other, F, W)
    return Minv, W, s_w
