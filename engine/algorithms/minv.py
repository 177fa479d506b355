"""Θ(n²) inverse of the joint-space inertia matrix by impulse propagation.

Drumwright (seed 004), Algorithm 1 (fixed base) and Algorithm 2 (floating
base): column k of M⁻¹ is the velocity change Δq̇ caused by a unit impulse on
dof k (Eq. 9–10). Everything is computed in the world frame, as the seed
recommends, so the per-column passes need no spatial transforms:

* once per configuration (O(n)): articulated inertias I^A, world spatial axes
  s, and — the Section 5.2 savings — U = I^A s and D⁻¹ = (sᵀ I^A s)⁻¹;
* per column k of joint j: the impulse pass (lines 4–5) starts at j and only
  walks j's ancestors, since Y is zero elsewhere; the velocity pass (lines
  7–10) visits the bodies up to j only: a body's Δv needs only its ancestors',
  and rows ≤ k of every column k (the upper triangle) are all of M⁻¹ there is
  (symmetric: each entry is written to both triangles).

Columns go BLOCK at a time, each column one lane of the innermost axis of the
per-body arrays (Y, Δv: (6n, BLOCK), six rows a body), so one body visit updates all lanes
with SIMD and the lanes' independent recursions hide each other's latency;
the impulse pass visits the union of the block's root paths once.

Multi-dof joints use the block form (D is nv×nv). A floating base is the root
with a 6-dof free joint, for which s = I₆ in the root frame, D = I^A_0 and the
velocity pass starts with Δv₀ = −(I^A_0)⁻¹ (Y_0 + e_k) — exactly Algorithm 2,
lines 6–10.
"""
from __future__ import annotations

import threading

import numpy as np

from .._jit import kernel, prange
from ..errors import ModelError
from ..spatial import transform_force_transpose, transform_motion_inverse
from . import _lanes as lanes
from ._checks import BAD_INPUT, DONE, F8, OVERFLOW, all_finite_2d, as_q, configuration_ok, overflow_error
from ._flat import flat_model, unpack_dof_body, unpack_tree, unpack_workspace
from ._lanes import LANES
from .aba import articulated_inertia_pass
from .kinematics import joint_pass, world_pass


@kernel
def world_articulated_quantities(tree, ws, s_w, U_w):
    """s_w (nv, 6) world spatial axes and U_w = I^A s (world) for every dof (needs
    articulated_inertia_pass, which leaves U = I^A S in link coordinates: U_w = X₀ᵀ U)."""
    n = tree.parent.shape[0]
    for i in range(n):
        vs = tree.v_start[i]
        for d in range(tree.joint_nv[i]):
            transform_motion_inverse(ws.X0_E[i], ws.X0_r[i], ws.S[vs + d], s_w[vs + d])
            transform_force_transpose(ws.X0_E[i], ws.X0_r[i], ws.U[vs + d], U_w[vs + d])


BLOCK = LANES  # columns propagated together, one lane each: the innermost axis of Y, u and Δv


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
def impulse_pass(tree, s_w, U_w, Dinv, k0, nb, dof_body, mark, Y, u):
    """Lines 4–5 for the unit impulses on dofs k0 … k0+nb−1 at once (lane b: dof k0+b).

    Visits the union of the columns' root paths, children first, and marks it (mark[i] = 1).
    A body off column b's path has no impulse in lane b and no unit impulse there, so the lane
    stays zero: the union is exact for every lane. Y (6n, BLOCK): rows 6i … 6i+5 body i's bias
    impulse, zero on entry and left zero; u (nv, BLOCK) ← e_k − s_dᵀ Y_i (the joint's bias
    impulse) on the marked dofs, for the velocity pass. Returns the block's deepest body.
    """
    top = -1
    for b in range(nb):
        i = dof_body[k0 + b]
        top = max(top, i)
        while i >= 0 and mark[i] == 0:
            mark[i] = 1
            i = tree.parent[i]
    for i in range(top, -1, -1):
        if mark[i] == 0:
            continue
        nv = tree.joint_nv[i]
        vs = tree.v_start[i]
        p = tree.parent[i]
        for d in range(nv):
            lanes.store(u, vs + d, lanes.scale(-1.0, lanes.dot6(s_w[vs + d], Y, 6 * i)))
            j = vs + d - k0
            if 0 <= j < nb:
                u[vs + d, j] += 1.0
        if p >= 0:
            if nv == 1:
                g = lanes.scale(Dinv[i, 0, 0], lanes.load(u, vs))
                for c in range(6):
                    lanes.store(Y, 6 * p + c, lanes.add(lanes.load(Y, 6 * p + c),
                                                       lanes.axpy(lanes.load(Y, 6 * i + c), U_w[vs, c], g)))
            else:
                for c in range(6):
                    lanes.store(Y, 6 * p + c, lanes.add(lanes.load(Y, 6 * p + c), lanes.load(Y, 6 * i + c)))
                for d in range(nv):
                    g = lanes.zeros()
                    for e in range(nv):
                        g = lanes.axpy(g, Dinv[i, d, e], lanes.load(u, vs + e))
                    for c in range(6):
                        lanes.store(Y, 6 * p + c, lanes.axpy(lanes.load(Y, 6 * p + c), U_w[vs + d, c], g))
        for c in range(6):
            lanes.zero(Y, 6 * i + c)
    return top


@kernel
def velocity_change_pass(tree, s_w, U_w, Dinv, k0, nb, last, mark, u, dv, t, Minv):
    """Lines 7–10 for the block's lanes, bodies 0 … last: Δv (6n, BLOCK) of every body and
    Minv[dof, k0 + b] = Δq̇_dof for the unit impulse on dof k0+b.

    Δv of a body needs only its ancestors', so stopping at ``last`` ≥ the block's deepest body
    still gives every row ≤ k of column k, and by symmetry row k ≤ the diagonal: all of M⁻¹ over
    the blocks. Consumes u and mark (left zero).
    """
    for i in range(last + 1):
        nv = tree.joint_nv[i]
        vs = tree.v_start[i]
        p = tree.parent[i]
        if nv == 1:  # revolute, prismatic: D⁻¹ is a scalar
            if p >= 0:
                g = lanes.scale(Dinv[i, 0, 0], lanes.sub(lanes.load(u, vs), lanes.dot6(U_w[vs], dv, 6 * p)))
            else:
                g = lanes.scale(Dinv[i, 0, 0], lanes.load(u, vs))
            lanes.store(t, 0, g)
            for c in range(6):
                if p >= 0:
                    lanes.store(dv, 6 * i + c, lanes.axpy(lanes.load(dv, 6 * p + c), s_w[vs, c], g))
                else:
                    lanes.store(dv, 6 * i + c, lanes.scale(s_w[vs, c], g))
        else:
            for d in range(nv):  # t = u − Uᵀ Δv_parent, then D⁻¹ t in rows 6 …
                if p >= 0:
                    lanes.store(t, d, lanes.sub(lanes.load(u, vs + d), lanes.dot6(U_w[vs + d], dv, 6 * p)))
                else:
                    lanes.store(t, d, lanes.load(u, vs + d))
            for d in range(nv):
                g = lanes.zeros()
                for e in range(nv):
                    g = lanes.axpy(g, Dinv[i, d, e], lanes.load(t, e))
                lanes.store(t, 6 + d, g)
            for d in range(nv):
                lanes.store(t, d, lanes.load(t, 6 + d))
            for c in range(6):
                x = lanes.load(dv, 6 * p + c) if p >= 0 else lanes.zeros()
                for d in range(nv):
                    x = lanes.axpy(x, s_w[vs + d, c], lanes.load(t, d))
                lanes.store(dv, 6 * i + c, x)
        for d in range(nv):
            for b in range(nb):  # both triangles: the block's nb rows stay in cache along the pass
                Minv[vs + d, k0 + b] = t[d, b]
                Minv[k0 + b, vs + d] = t[d, b]
            if mark[i] != 0:
                lanes.zero(u, vs + d)
        mark[i] = 0


@kernel
def minv_columns(tree, s_w, U_w, Dinv, k0, nb, reach, dof_body, mark, Y, u, dv, t, Minv):
    """Columns k0 … k0+nb−1 (nb ≤ BLOCK) of M⁻¹ on rows ≤ k (and Δv of bodies up to ``reach`` or
    the block's deepest body, whichever is further)."""
    top = impulse_pass(tree, s_w, U_w, Dinv, k0, nb, dof_body, mark, Y, u)
    velocity_change_pass(tree, s_w, U_w, Dinv, k0, nb, max(top, reach), mark, u, dv, t, Minv)


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
    (dv, lane k − k0) is the motion M⁻¹ e_k, and (J M⁻¹ e_k)[3c+r] = F[c, r] · (Δv_body − Δv_other)
    (other < 0: the world) — the contact point's velocity along its direction; M⁻¹ symmetric
    makes that row k of M⁻¹ Jᵀ. 18 k flops per column."""
    for c in range(body.shape[0]):
        o = 6 * other[c] if other[c] >= 0 else -1
        for r in range(3):
            x = lanes.dot6_relative(F[c, r], dv, 6 * body[c], o)
            for b in range(nb):
                W[k0 + b, 3 * c + r] = x[b]


@kernel(simd_lanes=True)
def minv_kernel(tree, Dinv, dof_body, s_w, U_w, Minv, body, other, F, W, reach):
    """Minv (nv, nv) = M(q)⁻¹ in Θ(n²), BLOCK columns at a time (single thread); needs prepare_minv.
    With contact rows (body, other, F, see ``read_point_rows``; empty for none) also W = M⁻¹ Jᵀ,
    which needs Δv up to ``reach`` (the deepest contact body; −1 for none)."""
    n = tree.parent.shape[0]
    nv = Minv.shape[0]
    Y = np.zeros((6 * n, BLOCK))
    dv = np.zeros((6 * n, BLOCK))
    u = np.zeros((nv, BLOCK))
    t = np.zeros((12, BLOCK))
    mark = np.zeros(n, dtype=np.int8)
    for k0 in range(0, nv, BLOCK):
        nb = min(BLOCK, nv - k0)
        minv_columns(tree, s_w, U_w, Dinv, k0, nb, reach, dof_body, mark, Y, u, dv, t, Minv)
        read_point_rows(dv, k0, nb, body, other, F, W)


@kernel(parallel=True, simd_lanes=True)
def minv_parallel_kernel(tree, Dinv, dof_body, s_w, U_w, Minv, body, other, F, W, reach, n_chunks):
    """Like minv_kernel, with the column blocks split over ``n_chunks`` threads (seed §5.2, §6.2)."""
    n = tree.parent.shape[0]
    nv = Minv.shape[0]
    n_blocks = (nv + BLOCK - 1) // BLOCK
    for c in prange(n_chunks):
        Y = np.zeros((6 * n, BLOCK))
        dv = np.zeros((6 * n, BLOCK))
        u = np.zeros((nv, BLOCK))
        t = np.zeros((12, BLOCK))
        mark = np.zeros(n, dtype=np.int8)
        for blk in range(c, n_blocks, n_chunks):
            k0 = blk * BLOCK
            nb = min(BLOCK, nv - k0)
            minv_columns(tree, s_w, U_w, Dinv, k0, nb, reach, dof_body, mark, Y, u, dv, t, Minv)
            read_point_rows(dv, k0, nb, body, other, F, W)


# one parallel launch at a time: it takes every numba thread anyway, and numba's fallback threading layer
# (workqueue, where neither OpenMP nor TBB is installed) aborts the process on concurrent launches
_PARALLEL_LAUNCH = threading.Lock()
_NO_BODIES = np.zeros(0, dtype=np.int64)
_NO_MAPS = np.zeros((0, 3, 6))


def minv(model, q, *, threads: int = 1, inertia=None, joint_diag=None, ws=None) -> np.ndarray:
    """M(q)⁻¹ (nv, nv) by Drumwright's Θ(n²) impulse propagation (seed 004, Alg. 1–2).

    q: (nq,). threads > 1 splits the columns over that many numba threads.
    Since M⁻¹ is symmetric, row k is written with column k. Optional inertia (n, 6, 6)
    link-frame blocks replacing the bodies' inertias and joint_diag (nv,) added to the joint
    space (an armature: D = Sᵀ Iᴬ S + diag) give (M' + diag)⁻¹ the same way, M' = crba(inertia).
    ws: the workspace to compute in (default: the model's flat workspace, ``algorithms._flat``, for
    the plain single-thread inverse — one launch —, else ``model.data``).
    """
    if threads <= 1 and inertia is None and joint_diag is None and ws is None:
        flat = model._per_thread.flat or flat_model(model)
        if not (type(q) is np.ndarray and q.dtype is F8 and q.strides == (8,)):
            q = as_q(model, q)
        Minv = np.empty((model.nv, model.nv))
        code = minv_flat(flat.ints, flat.floats, flat.work, q, Minv)
        if code:
            if code == OVERFLOW:
                raise overflow_error("minv", "M⁻¹", (("q", q),))
            as_q(model, q)  # raises the error that names the joint
            raise ModelError("minv: q failed the kernel's checks")  # (the two checks disagree: a bug)
        return Minv
    return minv_and_point_rows(model, q, _NO_BODIES, _NO_BODIES, _NO_MAPS, threads=threads, inertia=inertia,
                               joint_diag=joint_diag, ws=ws)[0]


@kernel(simd_lanes=True)
def minv_flat(ints, floats, work, q, Minv):
    """prepare_minv and minv_kernel in one launch on a FlatModel's buffers, after checking q (size,
    finite values, unit quaternions): DONE, BAD_INPUT (Minv untouched) or OVERFLOW."""
    tree = unpack_tree(ints, floats)
    if not (q.shape[0] == ints[2] and configuration_ok(tree, q)):
        return BAD_INPUT
    ws = unpack_workspace(ints, work)
    nv = ints[1]
    s_w = np.empty((nv, 6))
    U_w = np.empty((nv, 6))
    joint_pass(tree, q, ws)
    world_pass(tree, ws)
    articulated_inertia_pass(tree, ws, tree.link_inertia, ws.zero_nv)
    world_articulated_quantities(tree, ws, s_w, U_w)
    minv_kernel(tree, ws.Dinv, unpack_dof_body(ints), s_w, U_w, Minv, np.zeros(0, dtype=np.int64),
                np.zeros(0, dtype=np.int64), np.zeros((0, 3, 6)), np.empty((nv, 0)), -1)
    return DONE if all_finite_2d(Minv) else OVERFLOW


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
    reach = int(max(body.max(), other.max())) if body.shape[0] else -1
    prepare_minv(model.tree, q, ws, s_w, U_w, inertia, joint_diag)
    if threads > 1:
        with _PARALLEL_LAUNCH:
            minv_parallel_kernel(model.tree, ws.Dinv, model.dof_body, s_w, U_w, Minv, body, other, F, W, reach,
                                 int(threads))
    else:
        minv_kernel(model.tree, ws.Dinv, model.dof_body, s_w, U_w, Minv, body, other, F, W, reach)
    return Minv, W, s_w
