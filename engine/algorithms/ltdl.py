"""Featherstone's LTDL factorization exploiting branch-induced sparsity (RBDA §6.5).

M = Lᵀ D L with L unit lower triangular whose nonzeros lie only where the
column dof is an ancestor of the row dof (``model.dof_parent`` = λ). Cost is
O(n d²) for depth d instead of O(n³): linear for bushy trees, cubic only for
a single chain.
"""
from __future__ import annotations

import numpy as np

from .._jit import kernel
from ..errors import ModelError


@kernel
def ltdl_factor_kernel(H, lam):
    """In place: H → (L below the diagonal, D on it); returns 0 or the failing dof + 1."""
    n = H.shape[0]
    for k in range(n - 1, -1, -1):
        if H[k, k] <= 0.0:
            return k + 1
        i = lam[k]
        while i >= 0:
            a = H[k, i] / H[k, k]
            j = i
            while j >= 0:
                H[i, j] -= a * H[k, j]
                j = lam[j]
            H[k, i] = a
            i = lam[i]
    return 0


@kernel
def ltdl_solve_kernel(LD, lam, x):
    """In place: x ← (Lᵀ D L)⁻¹ x using the factor from ltdl_factor_kernel."""
    n = LD.shape[0]
    for i in range(n - 1, -1, -1):  # Lᵀ z = b
        j = lam[i]
        while j >= 0:
            x[j] -= LD[i, j] * x[i]
            j = lam[j]
    for i in range(n):  # D y = z
        x[i] /= LD[i, i]
    for i in range(n):  # L x = y
        j = lam[i]
        while j >= 0:
            x[i] -= LD[i, j] * x[j]
            j = lam[j]


def ltdl(model, M) -> np.ndarray:
    """LTDL factor of M (nv, nv) as one array: D on the diagonal, L strictly below.

    Entries of M outside the branch-induced pattern are ignored (they are zero).
    """
    H = np.array(M, dtype=np.float64, order="C", copy=True)
    if H.shape != (model.nv, model.nv):
        raise ModelError(f"M: expected shape ({model.nv}, {model.nv}), got {H.shape}")
    bad = ltdl_factor_kernel(H, model.dof_parent)
    if bad:
        d = bad - 1
        raise np.linalg.LinAlgError(f"mass matrix not positive definite at dof {d} (joint '{model.joint_names[model.dof_body[d]]}')")
    return H


def ltdl_solve(model, factor, b) -> np.ndarray:
    """Solve M x = b with the factor from ``ltdl``; b: (nv,) or (nv, k)."""
    b = np.array(b, dtype=np.float64, copy=True)
    if b.ndim == 1:
        ltdl_solve_kernel(factor, model.dof_parent, b)
        return b
    out = np.ascontiguousarray(b.T)
    for col in out:
        ltdl_solve_kernel(factor, model.dof_parent, col)
    return out.T.copy()
