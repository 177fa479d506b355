"""Sparse LDLᵀ with the symbolic analysis done once (the up-looking method of Davis's LDL).

The RedMax system matrix keeps one sparsity pattern for a whole simulation
(the tree's ancestor pairs plus every spring's coupling blocks), so the
elimination tree and column counts are computed once (``symbolic``) and each
step only refactors numerically (``numeric``) and solves. With the rows
ordered leaf-to-root the tree part causes no fill-in (Featherstone's
branch-induced sparsity); springs between branches add fill where they must.

A is given in compressed-column form (full symmetric pattern, indices sorted
is not required); only entries with row ≤ column (after permutation) are read.
"""
from __future__ import annotations

import numpy as np

from .._jit import kernel


@kernel
def ldl_symbolic(n, Ap, Ai, P, Pinv, Parent, Lnz, Flag, Lp):
    """Elimination tree (Parent) and column counts of L; fills Lp (n + 1)."""
    for k in range(n):
        Parent[k] = -1
        Flag[k] = k
        Lnz[k] = 0
        kk = P[k]
        for p in range(Ap[kk], Ap[kk + 1]):
            i = Pinv[Ai[p]]
            if i < k:
                while Flag[i] != k:
                    if Parent[i] == -1:
                        Parent[i] = k
                    Lnz[i] += 1
                    Flag[i] = k
                    i = Parent[i]
    Lp[0] = 0
    for k in range(n):
        Lp[k + 1] = Lp[k] + Lnz[k]


@kernel
def ldl_numeric(n, Ap, Ai, Ax, P, Pinv, Lp, Parent, Lnz, Li, Lx, D, Y, Pattern, Flag):
    """Numeric LDLᵀ of P A Pᵀ into (Li, Lx, D); returns n on success, else the failing column."""
    for k in range(n):
        Y[k] = 0.0
        top = n
        Flag[k] = k
        Lnz[k] = 0
        kk = P[k]
        for p in range(Ap[kk], Ap[kk + 1]):
            i = Pinv[Ai[p]]
            if i <= k:
                Y[i] += Ax[p]
                length = 0
                while Flag[i] != k:
                    Pattern[length] = i
                    length += 1
                    Flag[i] = k
                    i = Parent[i]
                while length > 0:
                    top -= 1
                    length -= 1
                    Pattern[top] = Pattern[length]
        D[k] = Y[k]
        Y[k] = 0.0
        while top < n:
            i = Pattern[top]
            yi = Y[i]
            Y[i] = 0.0
            p2 = Lp[i] + Lnz[i]
            for p in range(Lp[i], p2):
                Y[Li[p]] -= Lx[p] * yi
            l_ki = yi / D[i]
            D[k] -= l_ki * yi
            Li[p2] = k
            Lx[p2] = l_ki
            Lnz[i] += 1
            top += 1
        if D[k] == 0.0:
            return k
    return n


@kernel
def ldl_solve(n, Lp, Li, Lx, D, P, b, work, x):
    """x = A⁻¹ b with the factor of P A Pᵀ (work: n scratch)."""
    for k in range(n):
        work[k] = b[P[k]]
    for j in range(n):  # L y = b
        yj = work[j]
        for p in range(Lp[j], Lp[j + 1]):
            work[Li[p]] -= Lx[p] * yj
    for j in range(n):
        work[j] /= D[j]
    for j in range(n - 1, -1, -1):  # Lᵀ x = y
        s = work[j]
        for p in range(Lp[j], Lp[j + 1]):
            s -= Lx[p] * work[Li[p]]
        work[j] = s
    for k in range(n):
        x[P[k]] = work[k]


class SparseLDL:
    """A fixed pattern (CSC indptr/indices, n × n) analysed once; ``factor(values)``, ``solve(b)``."""

    def __init__(self, indptr, indices, n: int, perm=None):
        self.n = n
        self.Ap = np.ascontiguousarray(indptr, dtype=np.int64)
        self.Ai = np.ascontiguousarray(indices, dtype=np.int64)
        self.P = np.arange(n, dtype=np.int64) if perm is None else np.ascontiguousarray(perm, dtype=np.int64)
        self.Pinv = np.empty(n, dtype=np.int64)
        self.Pinv[self.P] = np.arange(n)
        self.Parent = np.empty(n, dtype=np.int64)
        self.Lnz = np.empty(n, dtype=np.int64)
        self.Flag = np.empty(n, dtype=np.int64)
        self.Lp = np.empty(n + 1, dtype=np.int64)
        ldl_symbolic(n, self.Ap, self.Ai, self.P, self.Pinv, self.Parent, self.Lnz, self.Flag, self.Lp)
        nnz = int(self.Lp[n])
        self.Li = np.empty(nnz, dtype=np.int64)
        self.Lx = np.empty(nnz)
        self.D = np.empty(n)
        self.Y = np.empty(n)
        self.Pattern = np.empty(n, dtype=np.int64)
        self.work = np.empty(n)

    @property
    def factor_nnz(self) -> int:
        return int(self.Lp[self.n])

    def factor(self, values) -> None:
        ok = ldl_numeric(self.n, self.Ap, self.Ai, np.ascontiguousarray(values, dtype=float), self.P, self.Pinv,
                         self.Lp, self.Parent, self.Lnz, self.Li, self.Lx, self.D, self.Y, self.Pattern, self.Flag)
        if ok != self.n:
            raise np.linalg.LinAlgError(f"sparse LDLᵀ: zero pivot at column {ok}")

    def solve(self, b) -> np.ndarray:
        x = np.empty(self.n)
        ldl_solve(self.n, self.Lp, self.Li, self.Lx, self.D, self.P, np.ascontiguousarray(b, dtype=float), self.work, x)
        return x
