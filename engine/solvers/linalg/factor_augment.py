"""Adding a few rows and columns to an existing factorization without refactoring (seed 003, Appendix C).

An SPD matrix A (n_C × n_C) is factored once, either as A = G Gᵀ (Eq. 15,
``CholeskyFactor``) or as A = L D Lᵀ (Eq. 16, ``LDLFactor``), possibly of a
fill-reducing reordering A = P A* Pᵀ. A contact adds n_a ≤ 3 rows and columns,
asymmetric in general (Coulomb's dynamic friction):

    Ā = [[A*,  A12],          A12: (n_C, n_a), A21: (n_a, n_C), A22: (n_a, n_a)
         [A21, A22]]

Because the new rows and columns go to the bottom and right, the factor itself
does not change; the change is emulated in the solve (a block LU step on top of
the Cholesky / LDLᵀ factor). With the appendix's Ā₂,₁ = A21ᵀ (n_C × n_a):

Cholesky (Eq. 17–20):  G Ū₁₂ = Ā₁₂,  G Ḡ₂₁ = Ā₂₁,  D̄₂₂ = Ā₂₂ − Ḡ₂₁ᵀ Ū₁₂;
    solve: G y₁ = b₁;  x₂ = D̄₂₂⁻¹ (b₂ − Ḡ₂₁ᵀ y₁);  Gᵀ x₁ = y₁ − Ū₁₂ x₂.
LDLᵀ:  L D Ū₁₂ = Ā₁₂,  L D L̄₂₁ = Ā₂₁,  D̄₂₂ = Ā₂₂ − L̄₂₁ᵀ D Ū₁₂;
    solve: L y₁ = b₁;  x₂ = D̄₂₂⁻¹ (b₂ − L̄₂₁ᵀ y₁);  Lᵀ x₁ = D⁻¹ y₁ − Ū₁₂ x₂.

D̄₂₂ (n_a × n_a) is neither diagonal nor symmetric in general. ``augment`` costs
2 n_a triangular solves (forward substitutions); each augmented solve costs
one forward and one back substitution, as the plain solve does.

Permutation bookkeeping (the appendix's last paragraph): with the factor of
A = P A* Pᵀ stored as the index array ``perm`` (A[i, j] = A*[perm[i], perm[j]]),
Ā₁₂ = P Ā*₁₂ and b₁ = P b*₁ are read in ``perm`` order and x*₁ = Pᵀ x₁ is written
back through it — by indexing, no permutation matrix is formed.

Factors are dense (numpy, LAPACK) or sparse (the project's ``SparseLDL``: CSC
strictly-lower part + diagonal), chosen by the type of A.
"""
from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg
import scipy.sparse

from ..._jit import kernel
from .sparse_ldl import SparseLDL


@kernel
def lower_solve(Lp, Li, Lx, diag, y):
    """In place y ← T⁻¹ y, T lower triangular: CSC strictly-lower part (Lp, Li, Lx) + diagonal."""
    for j in range(y.shape[0]):
        y[j] /= diag[j]
        yj = y[j]
        for p in range(Lp[j], Lp[j + 1]):
            y[Li[p]] -= Lx[p] * yj


@kernel
def lower_transpose_solve(Lp, Li, Lx, diag, x):
    """In place x ← T⁻ᵀ x for the T of ``lower_solve``."""
    for j in range(x.shape[0] - 1, -1, -1):
        s = x[j]
        for p in range(Lp[j], Lp[j + 1]):
            s -= Lx[p] * x[Li[p]]
        x[j] = s / diag[j]


class _Triangle:
    """A lower-triangular T, dense or sparse, with T⁻¹ and T⁻ᵀ applied to vectors or column blocks."""

    def __init__(self, dense=None, sparse=None):
        self.dense, self.sparse = dense, sparse  # sparse: (Lp, Li, Lx, diag)

    @property
    def n(self) -> int:
        return self.dense.shape[0] if self.dense is not None else self.sparse[3].shape[0]

    def solve(self, b: np.ndarray, transpose: bool = False) -> np.ndarray:
        if self.dense is not None:
            return scipy.linalg.solve_triangular(self.dense, b, lower=True, trans="T" if transpose else "N",
                                                 check_finite=False)
        run = lower_transpose_solve if transpose else lower_solve
        out = np.array(b, dtype=float, order="F", copy=True)
        for col in (out.reshape(out.shape[0], -1).T):
            c = np.ascontiguousarray(col)
            run(*self.sparse, c)
            col[:] = c
        return out


def _perm(perm, n: int) -> np.ndarray:
    if perm is None:
        return np.arange(n)
    p = np.asarray(perm, dtype=np.int64)
    if p.shape != (n,) or not np.array_equal(np.sort(p), np.arange(n)):
        raise ValueError(f"perm must be a permutation of 0 … {n - 1}")
    return p


def _as_matrix(A, what: str):
    if scipy.sparse.issparse(A):
        A = scipy.sparse.csc_matrix(A)
    else:
        A = np.asarray(A, dtype=float)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"{what} must be a square matrix, got shape {A.shape}")
    return A


def _sparse_ldl(A, perm):
    """SparseLDL of the CSC matrix A in the order perm (A_factored = P A Pᵀ)."""
    A = scipy.sparse.csc_matrix(A)
    A.sort_indices()
    f = SparseLDL(A.indptr, A.indices, A.shape[0], perm)
    f.factor(A.data)
    return f


class _Factor:
    """Shared bookkeeping: ``perm``, ``solve``, ``augment``."""

    kind = ""

    def __init__(self, tri: _Triangle, d: np.ndarray | None, perm: np.ndarray):
        self.tri, self.d, self.perm = tri, d, perm  # d: LDLᵀ's diagonal (None for Cholesky)

    @property
    def n(self) -> int:
        return self.tri.n

    def _forward(self, b):   # y = T⁻¹ P b
        return self.tri.solve(np.asarray(b, dtype=float)[self.perm])

    def _backward(self, y):  # Pᵀ T⁻ᵀ D⁻¹ y
        z = y / (self.d if y.ndim == 1 else self.d[:, None]) if self.d is not None else y
        x = np.empty_like(z)
        x[self.perm] = self.tri.solve(z, transpose=True)
        return x

    def solve(self, b) -> np.ndarray:
        """x with A* x = b (b: (n,) or (n, k))."""
        b = np.asarray(b, dtype=float)
        if b.shape[0] != self.n:
            raise ValueError(f"right-hand side has {b.shape[0]} rows, the factor {self.n}")
        return self._backward(self._forward(b))

    def augment(self, A12, A21, A22) -> "AugmentedSolve":
        """Solver of [[A*, A12], [A21, A22]] from this factor, without refactoring (Eq. 17–20)."""
        n = self.n
        A22 = np.asarray(A22, dtype=float)
        na = A22.shape[0] if A22.ndim == 2 else int(round(np.sqrt(A22.size)))
        # (n_a from the added block, not from A12: with no joint rows, n = 0, A12 is empty and says nothing)
        A12 = np.asarray(A12, dtype=float).reshape(n, na) if np.size(A12) == n * na else np.asarray(A12, dtype=float)
        if A12.shape != (n, na):
            raise ValueError(f"augment: expected A12 ({n}, {na}) for a {na}×{na} A22, got {np.shape(A12)}")
        A21 = np.asarray(A21, dtype=float).reshape(na, n) if np.size(A21) == na * n else None
        A22 = np.asarray(A22, dtype=float).reshape(na, na) if np.size(A22) == na * na else None
        if A21 is None or A22 is None:
            raise ValueError(f"augment: expected A12 ({n}, n_a), A21 (n_a, {n}), A22 (n_a, n_a); got n_a = {na} "
                             f"and sizes {np.size(A21)}, {np.size(A22)}")
        U12 = self._forward(A12)           # G Ū₁₂ = Ā₁₂   (LDLᵀ: L (D Ū₁₂) = Ā₁₂)
        L21 = self._forward(A21.T)         # G Ḡ₂₁ = Ā₂₁   (LDLᵀ: L (D L̄₂₁) = Ā₂₁)
        if self.d is not None:             # LDLᵀ: Ā₂₂ − L̄₂₁ᵀ D Ū₁₂ = Ā₂₂ − (D L̄₂₁)ᵀ D⁻¹ (D Ū₁₂)
            D22 = A22 - L21.T @ (U12 / self.d[:, None])
        else:
            D22 = A22 - L21.T @ U12
        return AugmentedSolve(self, U12, L21, D22)


class AugmentedSolve:
    """Solves the augmented system; ``solve(b1, b2) -> (x1, x2)`` (the appendix's 3-step procedure)."""

    def __init__(self, factor: _Factor, U12, L21, D22):
        self.factor, self.U12, self.L21 = factor, U12, L21
        self.n_a = D22.shape[0]
        try:
            with warnings.catch_warnings():  # a zero pivot is reported below, with the reason
                warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
                self._D22 = scipy.linalg.lu_factor(D22, check_finite=False)
        except (ValueError, np.linalg.LinAlgError):
            raise ValueError("augment: the added block's Schur complement D̄₂₂ is not finite") from None
        if not np.all(np.isfinite(D22)) or np.abs(np.diag(self._D22[0])).min(initial=1.0) <= 1e-14 * max(
                1.0, np.abs(D22).max(initial=0.0)):
            raise ValueError("augment: the augmented matrix is singular (its Schur complement D̄₂₂ has a zero pivot)")
        self.D22 = D22

    def solve(self, b1, b2):
        f = self.factor
        b1, b2 = np.asarray(b1, dtype=float), np.asarray(b2, dtype=float).reshape(self.n_a)
        if b1.shape != (f.n,):
            raise ValueError(f"b1 must have {f.n} entries, got shape {b1.shape}")
        y1 = f._forward(b1)                                  # 1. forward substitution
        if f.d is not None:                                  # L̄₂₁ᵀ y₁ with L̄₂₁ = D⁻¹ (stored D L̄₂₁)
            x2 = scipy.linalg.lu_solve(self._D22, b2 - self.L21.T @ (y1 / f.d), check_finite=False)
            # 3. Lᵀ x₁ = D⁻¹ y₁ − Ū₁₂ x₂, with Ū₁₂ = D⁻¹ (stored D Ū₁₂)
            x1 = f._backward(y1 - self.U12 @ x2)
        else:
            x2 = scipy.linalg.lu_solve(self._D22, b2 - self.L21.T @ y1, check_finite=False)  # 2.
            x1 = f._backward(y1 - self.U12 @ x2)             # 3. Gᵀ x₁ = y₁ − Ū₁₂ x₂
        return x1, x2


class CholeskyFactor(_Factor):
    """A* = Pᵀ G Gᵀ P (Eq. 15): dense G from LAPACK, or sparse G = L √D from ``SparseLDL``."""

    kind = "cholesky"

    @classmethod
    def factor(cls, A, perm=None) -> "CholeskyFactor":
        A = _as_matrix(A, "A")
        p = _perm(perm, A.shape[0])
        if scipy.sparse.issparse(A):
            f = _sparse_ldl(A, p)
            if np.any(f.D <= 0):
                raise np.linalg.LinAlgError("CholeskyFactor: matrix is not positive definite")
            s = np.sqrt(f.D)
            Lx = f.Lx * np.repeat(s, np.diff(f.Lp))  # column j of L scaled by √D_j
            return cls(_Triangle(sparse=(f.Lp, f.Li, Lx, s)), None, p)
        G = scipy.linalg.cholesky(A[np.ix_(p, p)], lower=True, check_finite=False)
        return cls(_Triangle(dense=G), None, p)


class LDLFactor(_Factor):
    """A* = Pᵀ L D Lᵀ P (Eq. 16), unit lower L: dense (from the Cholesky factor) or ``SparseLDL``'s."""

    kind = "ldl"

    @classmethod
    def factor(cls, A, perm=None) -> "LDLFactor":
        A = _as_matrix(A, "A")
        p = _perm(perm, A.shape[0])
        if scipy.sparse.issparse(A):
            f = _sparse_ldl(A, p)
            return cls.from_sparse(f)
        G = scipy.linalg.cholesky(A[np.ix_(p, p)], lower=True, check_finite=False)
        s = np.diag(G).copy()
        return cls(_Triangle(dense=G / s[None, :] ), s * s, p)

    @classmethod
    def from_sparse(cls, f: SparseLDL) -> "LDLFactor":
        """Wrap an existing ``SparseLDL`` factor (its permutation included) without copying the work."""
        return cls(_Triangle(sparse=(f.Lp, f.Li, f.Lx, np.ones(f.n))), f.D.copy(), f.P.copy())
