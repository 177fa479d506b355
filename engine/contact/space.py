"""The contact-space inertia A = J M⁻¹ Jᵀ (= [N D]ᵀ M⁻¹ [N D]) and the impulse response M⁻¹ Jᵀ λ.

Three ways there, selectable and equal to round-off (seed 004, §6.3); ``"auto"`` (the contact stage's
default) picks one per contact set by its size (``pick_method``):

* ``"minv"``     — M⁻¹ by Drumwright's Θ(n²) impulse propagation (``engine.minv``,
  columns split over ``threads`` numba threads, §6.2). Its velocity pass gives every
  body's Δv for each unit joint impulse, so W = M⁻¹ Jᵀ is read off on the way (Θ(n k));
  A = J W then by ``jacobian.jacobian_times``, one tree velocity pass per column of W,
  Θ(n k + k²). A dense J would cost Θ(n² k) in the products;
* ``"cholesky"`` — M by CRBA, M = L Lᵀ by LAPACK, X = L⁻¹ Jᵀ, A = Xᵀ X, and the
  response L⁻ᵀ (X λ): O(n³) for the factor and Θ(n² k) for the triangular solve;
* ``"impulse"``  — the same propagation as ``minv`` started from the contacts' own
  test impulses instead of unit joint impulses (``algorithms.impulse_response``):
  M⁻¹ Jᵀ column by column in Θ(n) each, Θ(n k + k²) in all, no M⁻¹.

A is symmetrized so the solver sees the same problem whichever way it came.

The metric need not be M: a linearly implicit step moves with M̃ = M + h D + h² K, and
contact impulses must use the same operator or a resting contact settles where the
springs and the contact disagree. ``inertia`` (n, 6, 6) link-frame blocks and
``joint_diag`` (nv,) give M̃ for everything the tree can carry (joint springs and
damping, body damping, springs' own blocks); every method accepts them.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg

from ..algorithms.crba import crba
from ..algorithms.impulse_response import contact_impulses_response, contact_space_columns
from ..algorithms.minv import minv_and_point_rows, prepare_minv
from .jacobian import contact_point_maps, fill_jacobian, jacobian_times, world_axes_at

METHODS = ("minv", "cholesky", "impulse")
CHOICES = METHODS + ("auto",)  # "auto": ``pick_method`` per contact set (the handler's default)
IMPULSE_DOFS_PER_CONTACT = 25  # "auto" takes "impulse" with fewer contacts than nv / this (or ≤ IMPULSE_ALWAYS)
IMPULSE_ALWAYS = 4


def pick_method(nv: int, k: int) -> str:
    """"impulse" for a few contacts on a large tree (Θ(n k + k²) against M⁻¹'s Θ(n²): a 1000-link chain with 2
    contacts builds A in 0.7 ms instead of 6.9 ms), "minv" for many (its Θ(n² + n k) wins from k ≈ n / 25: at
    n = 200, k = 32 it takes 0.64 ms against 0.96 ms; measured on hinge chains of 50–1000 links, 2–128 contacts)."""
    return "impulse" if k <= IMPULSE_ALWAYS or k * IMPULSE_DOFS_PER_CONTACT < nv else "minv"


class ContactSpace:
    """A (3k, 3k), ``velocity(v) -> J v`` and ``response(λ) -> M⁻¹ Jᵀ λ`` for ``contacts`` at q
    (kinematics computed in the workspace ``ws``, default ``model.data``). Method "minv" also keeps ``Minv``
    (nv, nv) and ``W`` = M⁻¹ Jᵀ (nv, 3k), which the joint limits' solve with contacts reads
    (``stages/limits_contact.py``)."""

    def __init__(self, model, q, contacts, method: str = "minv", threads: int = 1, inertia=None, joint_diag=None,
                 ws=None):
        if method not in METHODS:
            raise ValueError(f"contact method must be one of {', '.join(METHODS)}, got {method!r}")
        self.method, self.model = method, model
        q = np.ascontiguousarray(q, dtype=float)
        if inertia is not None:
            inertia = np.ascontiguousarray(inertia, dtype=float)
        if joint_diag is not None:
            joint_diag = np.ascontiguousarray(joint_diag, dtype=float)
        self._body = np.ascontiguousarray(contacts.body, dtype=np.int64)
        self._other = np.ascontiguousarray(contacts.other_bodies())
        self._point = np.ascontiguousarray(contacts.point, dtype=float)
        self._F = F = np.empty((len(contacts), 3, 6))  # rows [x × d; d] of the directions d = (n, t₁, t₂)
        contact_point_maps(self._point, np.ascontiguousarray(contacts.normal, dtype=float), F)  # (compiled: numpy's
        self._dirs = np.ascontiguousarray(F[:, :, 3:])  # cross products took ~65 µs a space on a 20-contact dog)
        k3 = 3 * len(contacts)
        A = np.empty((k3, k3))
        if method == "impulse":
            self._s_w, U_w = np.empty((model.nv, 6)), np.empty((model.nv, 6))
            ws = model.data if ws is None else ws
            prepare_minv(model.tree, q, ws, self._s_w, U_w, inertia, joint_diag)
            self._U_w, self._Dinv = U_w, ws.Dinv.copy()
            contact_space_columns(model.tree, self._s_w, U_w, self._Dinv, self._body, self._other, self._point,
                                  self._dirs, A)
        elif method == "minv":
            # W = M⁻¹ Jᵀ comes out of the inverse's own velocity pass (M⁻¹ kept: the joint limits' solve with contacts)
            self.Minv, self.W, self._s_w = minv_and_point_rows(model, q, self._body, self._other, F, threads=threads,
                                                         inertia=inertia, joint_diag=joint_diag, ws=ws)
            jacobian_times(model.tree, self._s_w, self.W, self._body, self._other, F, A)
        else:
            self._s_w = world_axes_at(model, q, ws)
            self.J = J = np.zeros((k3, model.nv))
            fill_jacobian(model.tree, self._s_w, self._body, self._other, F, J)
            M = crba(model, q, inertia=inertia, ws=ws)
            if joint_diag is not None:
                M[np.diag_indices_from(M)] += joint_diag
            try:
                self._L = scipy.linalg.cholesky(M, lower=True, check_finite=False)
            except np.linalg.LinAlgError:
                raise ValueError("contact: the mass matrix is not positive definite (a massless moving body?)") from None
            self._X = scipy.linalg.solve_triangular(self._L, J.T, lower=True, check_finite=False)  # L⁻¹ Jᵀ
            A = self._X.T @ self._X
        self.A = 0.5 * (A + A.T)

    def velocity(self, v: np.ndarray) -> np.ndarray:
        """u = J v (3k,): the contact points' velocities along (n, t₁, t₂)."""
        if self.method == "cholesky":
            return self.J @ v
        u = np.empty((3 * self._body.shape[0], 1))
        jacobian_times(self.model.tree, self._s_w, np.ascontiguousarray(v, dtype=float).reshape(-1, 1), self._body,
                       self._other, self._F, u)
        return u[:, 0]

    def response(self, lam: np.ndarray) -> np.ndarray:
        """Δv = M⁻¹ Jᵀ λ: the change of generalized velocity the contact impulses λ cause."""
        if self.method == "minv":
            return self.W @ lam
        if self.method == "cholesky":
            return scipy.linalg.solve_triangular(self._L, self._X @ lam, lower=True, trans="T", check_finite=False)
        dq = np.empty(self.model.nv)
        contact_impulses_response(self.model.tree, self._s_w, self._U_w, self._Dinv, self._body, self._other,
                                  self._point, self._dirs, np.ascontiguousarray(lam, dtype=float), dq)
        return dq
