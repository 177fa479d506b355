"""Small dense kernels (joint-sized blocks) and the dense O(n³) baselines."""
from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from .._jit import kernel


@kernel(inline="llvm", refcounts=False)
def invert_spd_block(D, nv, out):
    """out[:nv, :nv] = D[:nv, :nv]⁻¹ for a small SPD block (Cholesky, nv ≤ 6).

    D is overwritten with its Cholesky factor. A non-positive pivot (a joint
    whose subtree has no inertia about its axis) yields inf, which the
    launchers report as a singular model.
    """
    if nv == 1:
        out[0, 0] = 1.0 / D[0, 0]
        return
    for j in range(nv):  # in-place lower Cholesky
        s = D[j, j]
        for k in range(j):
            s -= D[j, k] * D[j, k]
        if s <= 0.0:
            for a in range(nv):
                for b in range(nv):
                    out[a, b] = math.inf
            return
        D[j, j] = math.sqrt(s)
        for i in range(j + 1, nv):
            t = D[i, j]
            for k in range(j):
                t -= D[i, k] * D[j, k]
            D[i, j] = t / D[j, j]
    for c in range(nv):  # solve L Lᵀ x = e_c
        for i in range(nv):
            t = 1.0 if i == c else 0.0
            for k in range(i):
                t -= D[i, k] * out[k, c]
            out[i, c] = t / D[i, i]
        for i in range(nv - 1, -1, -1):
            t = out[i, c]
            for k in range(i + 1, nv):
                t -= D[k, i] * out[k, c]
            out[i, c] = t / D[i, i]


def cholesky_solve(M: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Dense baseline: solve M x = b with LAPACK Cholesky (potrf/potrs)."""
    c = scipy.linalg.cho_factor(M, lower=True, check_finite=False)
    return scipy.linalg.cho_solve(c, b, check_finite=False)


def cholesky_inverse(M: np.ndarray) -> np.ndarray:
    """Dense baseline: M⁻¹ by LAPACK Cholesky (dpotrf + dpotri), symmetrised."""
    L, info = scipy.linalg.lapack.dpotrf(M, lower=1, clean=0)
    if info != 0:
        raise np.linalg.LinAlgError(f"mass matrix is not positive definite (dpotrf info={info})")
    Minv, info = scipy.linalg.lapack.dpotri(L, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"dpotri failed (info={info})")
    return np.tril(Minv) + np.tril(Minv, -1).T
