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

from typing import NamedTuple

import numpy as np

from ..._jit import kernel


class LDLPattern(NamedTuple):
    """What the symbolic analysis fixes: n, A's CSC pattern (Ap (n + 1), Ai), the ordering P and its
    inverse Pinv (n,), the elimination tree Parent (n,) and L's column pointers Lp (n + 1)."""

    n: int
    Ap: np.ndarray
    Ai: np.ndarray
    P: np.ndarray
    Pinv: np.ndarray
    Parent: np.ndarray
    Lp: np.ndarray


class LDLValues(NamedTuple):
    """The numeric factor: Lnz (n,) entries per column, Li/Lx (nnz,) rows and values of L, D (n,)."""

    Lnz: np.ndarray
    Li: np.ndarray
    Lx: np.ndarray
    D: np.ndarray


class LDLScratch(NamedTuple):
    """Work arrays of the numeric factorization: Y (n,) floats, Pattern and Flag (n,) ints."""

    Y: np.ndarray
    Pattern: np.ndarray
    Flag: np.ndarray


@kernel
def ldl_symbolic(pat, Lnz, Flag):
    """Elimination tree (pat.Parent) and column counts of L; fills pat.Lp (n + 1)."""
    n, Ap, Ai, P, Pinv, Parent, Lp = pat.n, pat.Ap, pat.Ai, pat.P, pat.Pinv, pat.Parent, pat.Lp
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
def ldl_numeric(pat, Ax, fac, scratch):
    """Numeric LDLᵀ of P A Pᵀ (values Ax on ``pat``) into ``fac``; returns n on success, else the failing column."""
    n, Ap, Ai, P, Pinv, Parent, Lp = pat.n, pat.Ap, pat.Ai, pat.P, pat.Pinv, pat.Parent, pat.Lp
    Lnz, Li, Lx, D = fac.Lnz, fac.Li, fac.Lx, fac.D
    Y, Pattern, Flag = scratch.Y, scratch.Pattern, scratch.Flag
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
def ldl_solve(pat, fac, b, work, x):
    """x = A⁻¹ b with the factor of P A Pᵀ (work: n scratch)."""
    n, Lp, P, Li, Lx, D = pat.n, pat.Lp, pat.P, fac.Li, fac.Lx, fac.D
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
        self.pattern = LDLPattern(int(n), self.Ap, self.Ai, self.P, self.Pinv, self.Parent, self.Lp)
        ldl_symbolic(self.pattern, self.Lnz, self.Flag)
        nnz = int(self.Lp[n])
        self.Li = np.empty(nnz, dtype=np.int64)
        self.Lx = np.empty(nnz)
        self.D = np.empty(n)
        self.values = LDLValues(self.Lnz, self.Li, self.Lx, self.D)
        self.scratch = LDLScratch(np.empty(n), np.empty(n, dtype=np.int64), self.Flag)
        self.work = np.empty(n)

    @property
    def factor_nnz(self) -> int:
        return int(self.Lp[self.n])

    def factor(self, values) -> None:
        ok = ldl_numeric(self.pattern, np.ascontiguousarray(values, dtype=float), self.values, self.scratch)
        if ok != self.n:
            raise np.linalg.LinAlgError(f"sparse LDLᵀ: zero pivot at column {ok}")

    def solve(self, b) -> np.ndarray:
        x = np.empty(self.n)
        ldl_solve(self.pattern, self.values, np.ascontiguousarray(b, dtype=float), self.work, x)
        return x
