"""Block LDLᵀ of a symmetric matrix whose block graph is a forest, in O(n) (Baraff 1996, Sec. 7.3).

Baraff's KKT matrix H = [[M, Jᵀ], [J, 0]] has one node per body (its mass block)
and one per primary constraint (a zero block); a block H_ij is nonzero only
between a constraint and the bodies it connects. When the constraints form a
tree, ordering the nodes so that every node comes before its parent (children
first, the root last; seed 002 Sec. 3.1) leaves each row with a single block
right of the diagonal, the one to its parent, and the factorization creates no
fill-in (seed 002 Sec. 3.3):

    factor:  for i in order:  D_i ← H_ii − Σ_children L_jᵀ H_j,i;  L_i ← D_i⁻¹ H_i,parent(i)
    solve:   forward  x_i ← b_i,  x_parent −= L_iᵀ x_i   (i in order)
             diagonal x_i ← D_i⁻¹ x_i
             backward x_i −= L_i x_parent(i)            (i in reverse order)

Nodes are numbered in that order (``parent[i] > i`` or −1), with sizes ``dim``
(≤ 6) and offsets ``offset`` into the vector; blocks are padded to 6 × 6:
``diag[i]`` = H_ii, ``up[i]`` = H_i,parent(i) (dim_i × dim_parent).
Constraint nodes have indefinite pivots (−J M⁻¹ Jᵀ Schur complements), so D_i is
inverted by a pivoted LU of at most 6 × 6, not by Cholesky.
"""
from __future__ import annotations

import numpy as np

from ..._jit import kernel


@kernel(inline="llvm")
def _invert_block(A, n, out, work):
    """out[:n, :n] = A[:n, :n]⁻¹ by Gauss–Jordan with partial pivoting; returns False if singular."""
    for i in range(n):
        for j in range(n):
            work[i, j] = A[i, j]
            out[i, j] = 1.0 if i == j else 0.0
    scale = 0.0
    for i in range(n):
        for j in range(n):
            scale = max(scale, abs(A[i, j]))
    for c in range(n):
        p = c
        best = abs(work[c, c])
        for r in range(c + 1, n):
            if abs(work[r, c]) > best:
                best = abs(work[r, c])
                p = r
        if best <= 1e-13 * max(scale, 1e-300):
            return False
        if p != c:
            for j in range(n):
                t = work[c, j]
                work[c, j] = work[p, j]
                work[p, j] = t
                t = out[c, j]
                out[c, j] = out[p, j]
                out[p, j] = t
        inv = 1.0 / work[c, c]
        for j in range(n):
            work[c, j] *= inv
            out[c, j] *= inv
        for r in range(n):
            if r != c:
                f = work[r, c]
                if f != 0.0:
                    for j in range(n):
                        work[r, j] -= f * work[c, j]
                        out[r, j] -= f * out[c, j]
    return True


@kernel
def tree_ldl_factor(parent, dim, diag, up, D, Dinv, L):
    """Factor H = L D Lᵀ in node order (children before parents).

    Fills D (pivots), Dinv and L[i] = D_i⁻¹ H_i,parent. Returns −1 on success,
    else the index of the first node whose pivot is singular (a redundant constraint).
    """
    n = parent.shape[0]
    work = np.empty((6, 6))
    for i in range(n):
        for a in range(6):
            for b in range(6):
                D[i, a, b] = diag[i, a, b]
    for i in range(n):
        di = dim[i]
        if di == 0:
            continue
        if not _invert_block(D[i], di, Dinv[i], work):
            return i
        p = parent[i]
        if p >= 0:
            dp = dim[p]
            for a in range(di):  # L_i = D_i⁻¹ H_i,p
                for b in range(dp):
                    s = 0.0
                    for k in range(di):
                        s += Dinv[i, a, k] * up[i, k, b]
                    L[i, a, b] = s
            for a in range(dp):  # D_p −= H_i,pᵀ L_i
                for b in range(dp):
                    s = 0.0
                    for k in range(di):
                        s += up[i, k, a] * L[i, k, b]
                    D[p, a, b] -= s
    return -1


@kernel
def tree_ldl_solve(parent, dim, offset, Dinv, L, b, x, tmp):
    """x = H⁻¹ b with the factors of ``tree_ldl_factor`` (x may alias b; tmp: (6,) scratch)."""
    n = parent.shape[0]
    if x is not b:
        for k in range(b.shape[0]):
            x[k] = b[k]
    for i in range(n):  # L y = b
        p = parent[i]
        if p >= 0:
            oi, op = offset[i], offset[p]
            for a in range(dim[p]):
                s = 0.0
                for k in range(dim[i]):
                    s += L[i, k, a] * x[oi + k]
                x[op + a] -= s
    for i in range(n):  # D z = y
        oi = offset[i]
        for a in range(dim[i]):
            s = 0.0
            for k in range(dim[i]):
                s += Dinv[i, a, k] * x[oi + k]
            tmp[a] = s
        for a in range(dim[i]):
            x[oi + a] = tmp[a]
    for i in range(n - 1, -1, -1):  # Lᵀ x = z
        p = parent[i]
        if p >= 0:
            oi, op = offset[i], offset[p]
            for a in range(dim[i]):
                s = 0.0
                for k in range(dim[p]):
                    s += L[i, a, k] * x[op + k]
                x[oi + a] -= s


def dense_from_blocks(parent, dim, offset, diag, up) -> np.ndarray:
    """The full symmetric matrix of the block tree (tests and the dense method)."""
    N = int(offset[-1] + dim[-1]) if len(dim) else 0
    H = np.zeros((N, N))
    for i in range(len(dim)):
        oi, di = offset[i], dim[i]
        H[oi:oi + di, oi:oi + di] = diag[i, :di, :di]
        p = parent[i]
        if p >= 0:
            op, dp = offset[p], dim[p]
            H[oi:oi + di, op:op + dp] = up[i, :di, :dp]
            H[op:op + dp, oi:oi + di] = up[i, :di, :dp].T
    return H
