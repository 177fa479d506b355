"""The contact-space inertia A = J M⁻¹ Jᵀ (= [N D]ᵀ M⁻¹ [N D]) and the impulse response M⁻¹ Jᵀ λ.

Two ways to get there, selectable and equal to round-off (seed 004, §6.3):

* ``"minv"``     — M⁻¹ by Drumwright's Θ(n²) impulse propagation (``engine.minv``,
  columns split over ``threads`` numba threads, §6.2), then W = M⁻¹ Jᵀ and A = J W;
* ``"cholesky"`` — M by CRBA, M = L Lᵀ by LAPACK, X = L⁻¹ Jᵀ, A = Xᵀ X, and the
  response L⁻ᵀ (X λ): O(n³) for the factor.

Both give A exactly symmetric (symmetrized) so the solver sees the same problem.

The metric need not be M: a linearly implicit step moves with M̃ = M + h D + h² K, and
contact impulses must use the same operator or a resting contact settles where the
springs and the contact disagree. ``inertia`` (n, 6, 6) link-frame blocks and
``joint_diag`` (nv,) give M̃ for everything the tree can carry (joint springs and
damping, body damping, springs' own blocks); both methods accept them.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg

from ..algorithms.crba import crba
from ..algorithms.minv import minv

METHODS = ("minv", "cholesky")


class ContactSpace:
    """A (3k, 3k) and ``response(λ) -> M⁻¹ Jᵀ λ`` (nv,) for contact Jacobian J (3k, nv) at q."""

    def __init__(self, model, q, J: np.ndarray, method: str = "minv", threads: int = 1, inertia=None,
                 joint_diag=None):
        if method not in METHODS:
            raise ValueError(f"contact method must be one of {', '.join(METHODS)}, got {method!r}")
        self.method = method
        if method == "minv":
            self._W = minv(model, q, threads=threads, inertia=inertia, joint_diag=joint_diag) @ J.T  # M⁻¹ Jᵀ
            A = J @ self._W
        else:
            M = crba(model, q, inertia=inertia)
            if joint_diag is not None:
                M[np.diag_indices_from(M)] += joint_diag
            try:
                self._L = scipy.linalg.cholesky(M, lower=True, check_finite=False)
            except np.linalg.LinAlgError:
                raise ValueError("contact: the mass matrix is not positive definite (a massless moving body?)") from None
            self._X = scipy.linalg.solve_triangular(self._L, J.T, lower=True, check_finite=False)  # L⁻¹ Jᵀ
            A = self._X.T @ self._X
        self.A = 0.5 * (A + A.T)

    def response(self, lam: np.ndarray) -> np.ndarray:
        """Δv = M⁻¹ Jᵀ λ: the change of generalized velocity the contact impulses λ cause."""
        if self.method == "minv":
            return self._W @ lam
        return scipy.linalg.solve_triangular(self._L, self._X @ lam, lower=True, trans="T", check_finite=False)
