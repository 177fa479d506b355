"""Contact that keeps the loop closures: impulses that leave every closure's velocity G v as it was.

A contact pushing on a rope bridge whose far end is held by a loop closure must feel the closure: with
the tree's response W = M⁻¹ alone the deck would seem free at that end, give way under a crate, and the
closure would pull it back only in the next step (the crate sinks in meanwhile). As the joint-limit
stage does (``solvers.joint_limits``), the contact works with the response restricted to velocities
that keep the closures,

    W' = W − W Gᵀ (G W Gᵀ)⁺ G W,

on each *closure group* (trees joined by closures, ``sparse_space.model_trees``): per group, W Gᵀ by
the impulse propagation of every closure row (the rows are wrenches on two bodies; ``solvers.constraints``
gives them in link coordinates, carried here to world ones), S = G W Gᵀ and its pseudo-inverse (a
closure may repeat a tree joint's rows), then each contact block's W_c ← W_c − W Gᵀ S⁺ (G W_c).
"""
from __future__ import annotations

import numpy as np

from .._jit import kernel
from ..spatial import transform_force_transpose
from .sparse_space import _tree_response


def closure_layout(trees, row_bodies):
    """(order (l,) of the rows grouped by tree, row_start (R+1,), offsets (R,) into the G and W Gᵀ data, size)."""
    l = row_bodies.shape[0]
    R = trees.body_start.shape[0] - 1
    group = np.array([trees.tree_of[a if a >= 0 else b] for a, b in row_bodies], np.int64).reshape(l)
    order = np.argsort(group, kind="stable").astype(np.int64)
    row_start = np.searchsorted(group[order], np.arange(R + 1)).astype(np.int64)
    sizes = np.diff(row_start) * np.diff(trees.dof_start)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    return order, row_start, offsets, int(sizes.sum())


@kernel
def closure_responses(tree, trees, s_w, U_w, Dinv, X0_E, X0_r, row_bodies, rows, order, row_start, offsets, G, WG):
    """Per group t: G_t (l_t, nd_t) the closure rows on the group's dofs and W G_tᵀ (nd_t, l_t), flat at
    offsets[t]; rows (l, 12) link-frame wrenches on row_bodies (l, 2) (−1: the world), kinematics in X0."""
    n = tree.parent.shape[0]
    Y = np.zeros((n, 6))
    dv = np.zeros((n, 6))
    g = np.zeros(12)
    w = np.zeros(6)
    ww = np.zeros(6)
    for t in range(row_start.shape[0] - 1):
        l = row_start[t + 1] - row_start[t]
        if l == 0:
            continue
        nd = trees.dof_start[t + 1] - trees.dof_start[t]
        Gt = G[offsets[t]:offsets[t] + l * nd].reshape(l, nd)
        WGt = WG[offsets[t]:offsets[t] + l * nd].reshape(nd, l)
        Gt[:, :] = 0.0
        for kk in range(l):
            k = order[row_start[t] + kk]
            for side in range(2):
                body = row_bodies[k, side]
                if body < 0:
                    continue
                for m in range(6):
                    w[m] = rows[k, 6 * side + m]
                transform_force_transpose(X0_E[body], X0_r[body], w, ww)  # link → world at the origin
                for m in range(6):
                    Y[body, m] -= ww[m]  # bias impulse: minus the applied one
                i = body
                while i >= 0:
                    vs = tree.v_start[i]
                    for d in range(tree.joint_nv[i]):
                        x = 0.0
                        for m in range(6):
                            x += ww[m] * s_w[vs + d, m]
                        Gt[kk, trees.dof_slot[vs + d]] += x
                    i = tree.parent[i]
            _tree_response(tree, trees, s_w, U_w, Dinv, t, Y, dv, g, WGt, kk)


@kernel
def project_blocks(trees, block_start, block_tree, offset, J, W, Acc, row_start, offsets, G, WG, p_offsets, P):
    """W_c ← W_c − W Gᵀ S⁺ (G W_c) on every contact block of a group with closures (S⁺ flat in P at
    p_offsets), and the diagonal blocks A_cc = J_c W_c again."""
    tmp = np.zeros((64, 3))
    tmp2 = np.zeros((64, 3))
    for c in range(block_start.shape[0] - 1):
        for r in range(3):
            for s in range(3):
                Acc[c, r, s] = 0.0
        for blk in range(block_start[c], block_start[c + 1]):
            t = block_tree[blk]
            nd = trees.dof_start[t + 1] - trees.dof_start[t]
            Jb = J[offset[blk]:offset[blk] + 3 * nd].reshape(nd, 3)
            Wb = W[offset[blk]:offset[blk] + 3 * nd].reshape(nd, 3)
            l = row_start[t + 1] - row_start[t]
            if l > 0:
                if l > tmp.shape[0]:
                    tmp = np.zeros((l, 3))
                    tmp2 = np.zeros((l, 3))
                Gt = G[offsets[t]:offsets[t] + l * nd].reshape(l, nd)
                WGt = WG[offsets[t]:offsets[t] + l * nd].reshape(nd, l)
                Pt = P[p_offsets[t]:p_offsets[t] + l * l].reshape(l, l)
                for a in range(l):
                    for s in range(3):
                        x = 0.0
                        for d in range(nd):
                            x += Gt[a, d] * Wb[d, s]
                        tmp[a, s] = x
                for a in range(l):
                    for s in range(3):
                        x = 0.0
                        for e in range(l):
                            x += Pt[a, e] * tmp[e, s]
                        tmp2[a, s] = x
                for d in range(nd):
                    for s in range(3):
                        x = 0.0
                        for a in range(l):
                            x += WGt[d, a] * tmp2[a, s]
                        Wb[d, s] -= x
            for r in range(3):
                for s in range(3):
                    x = 0.0
                    for d in range(nd):
                        x += Jb[d, r] * Wb[d, s]
                    Acc[c, r, s] += x


def project_onto_closures(space, closure, X0_E, X0_r) -> None:
    """Restrict a ``SparseContactSpace``'s responses to the closures (module docstring). closure: (row_bodies
    (l, 2), link-frame rows (l, 12)) at the space's configuration; X0_E, X0_r its kinematics."""
    row_bodies, rows = (np.ascontiguousarray(a) for a in closure)
    if row_bodies.shape[0] == 0:
        return
    trees = space.trees
    order, row_start, offsets, size = closure_layout(trees, row_bodies)
    G, WG = np.zeros(size), np.zeros(size)
    model = space.model
    closure_responses(model.tree, trees, space._s_w, space._U_w, space._Dinv, X0_E, X0_r,
                      row_bodies.astype(np.int64), rows.astype(float), order, row_start, offsets, G, WG)
    R = row_start.shape[0] - 1
    p_parts, p_offsets, at = [], np.zeros(R, np.int64), 0
    for t in range(R):
        l = int(row_start[t + 1] - row_start[t])
        p_offsets[t] = at
        if l == 0:
            continue
        nd = int(trees.dof_start[t + 1] - trees.dof_start[t])
        Gt = G[offsets[t]:offsets[t] + l * nd].reshape(l, nd)
        WGt = WG[offsets[t]:offsets[t] + l * nd].reshape(nd, l)
        p_parts.append(np.linalg.pinv(Gt @ WGt, rcond=1e-12, hermitian=True).ravel())
        at += l * l
    r = space.rows
    project_blocks(trees, r.block_start, r.block_tree, r.offset, r.J, r.W, r.Acc, row_start, offsets, G, WG, p_offsets,
                   np.concatenate(p_parts) if p_parts else np.zeros(0))
