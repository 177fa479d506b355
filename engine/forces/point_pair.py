"""Point-to-point springs, tension-only cables and dampers (thesis 000, Eq. 2.39–2.41).

All quantities live in *link frames* (a body-fixed frame; the thesis's
formulas hold for any body-fixed frame, not only the COM frame). A body's
maximal velocity is its link twist φ = [ω; v] in link coordinates, and a
perturbation δ moves its pose E → E exp(δ). For an attachment point l (link
coordinates) on a body with rotation R: δx = R Γ δ with Γ = [−[l], I]
(the thesis's Γ), and the wrench of a world force f at that point is
Γᵀ Rᵀ f = [l × Rᵀf; Rᵀf].

For a pair with Δx = x₂ − x₁, length ℓ, unit u, rest length L, stiffness k:

* force on point 1: f₁ = k (ℓ − L) u (body 2 gets −f₁), Eq. 2.39;
* potential V = ½ k (ℓ − L)², Eq. 2.40;
* stiffness K = −∂w/∂δ (12 × 12, Eq. 2.41), split as
  K = Ĝᵀ H Ĝ + geometric terms, with Ĝ = [R₁Γ₁, −R₂Γ₂] and
  H = k [(1 − L/ℓ) I + (L/ℓ) u uᵀ]. The geometric terms −Γ₁ᵀ[[Rᵀ₁f₁], 0]
  and +Γ₂ᵀ[[Rᵀ₂f₁], 0] are not symmetric: **K is symmetrized, (K + Kᵀ)/2**.
  The symmetrized geometric part can be indefinite, so the implicit solvers
  use only the material (Gauss–Newton) part Ĝᵀ H Ĝ by default, which keeps
  M̃ symmetric positive definite (``geometric=False``); ``geometric=True``
  gives the full symmetrized K of Eq. 2.41. Under compression (ℓ < L) the
  factor (1 − L/ℓ) is **clamped to 0** so that H stays positive
  semi-definite (a compressed plain spring is unstable along the normal);
  the finite-difference tests check K in tension, where nothing is clamped.
* A tension-only cable exerts nothing when ℓ ≤ L; its force k (ℓ − L) is
  continuous, so it switches on smoothly.
* A damper (coefficient c) along the line: f₁ = c u uᵀ (ẋ₂ − ẋ₁), linear in
  the twists, so it enters only through D = c Ĝᵀ u uᵀ Ĝ on the implicit
  side (Baraff–Witkin: no right-hand-side term). A cable's damper is off
  while the cable is slack.

A body index of −1 means the world; that end's point is in world coordinates.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._jit import kernel


class PairArrays(NamedTuple):
    """m springs, cables and dampers as arrays: bodies (m,) (−1: the world), points (m, 3) in link frames (m),
    stiffness (m,) N/m, damping (m,) N·s/m, rest_length (m,) m, tension_only (m,) bool (cables)."""

    body_a: np.ndarray
    body_b: np.ndarray
    point_a: np.ndarray
    point_b: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray
    rest_length: np.ndarray
    tension_only: np.ndarray


@kernel(inline="llvm", refcounts=False)
def _point_world(X0_E, X0_r, body, l, out_x, out_G):
    """World position of link point l, and G = R Γ (3 × 6) (zero for the world)."""
    if body < 0:
        for k in range(3):
            out_x[k] = l[k]
            for c in range(6):
                out_G[k, c] = 0.0
        return
    E = X0_E[body]
    for k in range(3):  # R = Eᵀ, x = p + R l
        out_x[k] = X0_r[body, k] + E[0, k] * l[0] + E[1, k] * l[1] + E[2, k] * l[2]
    # R Γ = [−R[l], R]; R[l] columns: R (e_c × l)
    for k in range(3):
        r0, r1, r2 = E[0, k], E[1, k], E[2, k]  # row k of R
        # (R [l])[k, c] = Σ_j R[k, j] [l][j, c]
        out_G[k, 0] = -(r1 * l[2] - r2 * l[1])
        out_G[k, 1] = -(r2 * l[0] - r0 * l[2])
        out_G[k, 2] = -(r0 * l[1] - r1 * l[0])
        out_G[k, 3] = r0
        out_G[k, 4] = r1
        out_G[k, 5] = r2


@kernel(inline="llvm", refcounts=False)
def _add_point_wrench(X0_E, body, l, f_world, sign, wrench):
    """wrench[body] += sign · [l × Rᵀf; Rᵀf] (link coordinates)."""
    if body < 0:
        return
    E = X0_E[body]
    F0 = sign * (E[0, 0] * f_world[0] + E[0, 1] * f_world[1] + E[0, 2] * f_world[2])
    F1 = sign * (E[1, 0] * f_world[0] + E[1, 1] * f_world[1] + E[1, 2] * f_world[2])
    F2 = sign * (E[2, 0] * f_world[0] + E[2, 1] * f_world[1] + E[2, 2] * f_world[2])
    wrench[body, 0] += l[1] * F2 - l[2] * F1
    wrench[body, 1] += l[2] * F0 - l[0] * F2
    wrench[body, 2] += l[0] * F1 - l[1] * F0
    wrench[body, 3] += F0
    wrench[body, 4] += F1
    wrench[body, 5] += F2


@kernel(inline="llvm")
def _add_geometric_term(X0_E, body, l, f_world, sign, K):
    """K (6, 6) += sign · sym(Γᵀ [[Rᵀf], 0]) = sign · sym([[l][F], 0; [F], 0]) (K: a body's diagonal block,
    a view, so that every call site has one signature: an offset argument was typed as a literal per value)."""
    if body < 0:
        return
    E = X0_E[body]
    F = np.empty(3)
    for k in range(3):
        F[k] = E[k, 0] * f_world[0] + E[k, 1] * f_world[1] + E[k, 2] * f_world[2]
    # [l][F] = F lᵀ − (l·F) I
    lf = l[0] * F[0] + l[1] * F[1] + l[2] * F[2]
    for i in range(3):
        for j in range(3):
            a = F[i] * l[j] + F[j] * l[i]  # sym part of F lᵀ, times 2
            K[i, j] += sign * (0.5 * a - (lf if i == j else 0.0))
    # [F] block in the lower-left; symmetrized: ½[F] below, ½[F]ᵀ = −½[F] above
    Fx = np.empty((3, 3))
    Fx[0, 0] = 0.0
    Fx[0, 1] = -F[2]
    Fx[0, 2] = F[1]
    Fx[1, 0] = F[2]
    Fx[1, 1] = 0.0
    Fx[1, 2] = -F[0]
    Fx[2, 0] = -F[1]
    Fx[2, 1] = F[0]
    Fx[2, 2] = 0.0
    for i in range(3):
        for j in range(3):
            K[3 + i, j] += sign * 0.5 * Fx[i, j]
            K[j, 3 + i] += sign * 0.5 * Fx[i, j]


@kernel(inline="llvm")
def point_pair_kernel(X0_E, X0_r, v_link, pairs, geometric, wrench, wrench_damping, K, D, active):
    """Evaluate every pair of ``pairs`` (``PairArrays``): wrenches (n, 6) += spring forces, wrench_damping += damper forces,
    K, D (m, 12, 12) per pair (rows/cols 0–5 body a, 6–11 body b); active[s] = 0 when slack.
    geometric: include the symmetrized geometric stiffness terms in K.

    Returns the total potential energy (J).
    """
    body_a, body_b, point_a, point_b = pairs.body_a, pairs.body_b, pairs.point_a, pairs.point_b
    stiffness, damping, rest_length, tension_only = pairs.stiffness, pairs.damping, pairs.rest_length, pairs.tension_only
    m = body_a.shape[0]
    x1 = np.empty(3)
    x2 = np.empty(3)
    G = np.empty((3, 12))
    u = np.empty(3)
    f = np.empty(3)
    energy = 0.0
    for s in range(m):
        a = body_a[s]
        b = body_b[s]
        _point_world(X0_E, X0_r, a, point_a[s], x1, G[:, 0:6])
        _point_world(X0_E, X0_r, b, point_b[s], x2, G[:, 6:12])
        for k in range(3):
            for c in range(6, 12):
                G[k, c] = -G[k, c]  # Ĝ = [R₁Γ₁, −R₂Γ₂]
        ell = 0.0
        for k in range(3):
            u[k] = x2[k] - x1[k]
            ell += u[k] * u[k]
        ell = math.sqrt(ell)
        for r in range(12):
            for c in range(12):
                K[s, r, c] = 0.0
                D[s, r, c] = 0.0
        L = rest_length[s]
        if ell < 1e-12 or (tension_only[s] and ell <= L):
            active[s] = 0
            continue
        active[s] = 1
        for k in range(3):
            u[k] /= ell
        k_s = stiffness[s]
        stretch = ell - L
        energy += 0.5 * k_s * stretch * stretch
        for k in range(3):
            f[k] = k_s * stretch * u[k]
        _add_point_wrench(X0_E, a, point_a[s], f, 1.0, wrench)
        _add_point_wrench(X0_E, b, point_b[s], f, -1.0, wrench)
        # material stiffness Ĝᵀ H Ĝ, H = k[(1 − L/ℓ)⁺ I + (L/ℓ) u uᵀ]
        alpha = k_s * max(0.0, 1.0 - L / ell)
        beta = k_s * (L / ell)
        for r in range(12):
            gu_r = G[0, r] * u[0] + G[1, r] * u[1] + G[2, r] * u[2]
            for c in range(r, 12):
                gu_c = G[0, c] * u[0] + G[1, c] * u[1] + G[2, c] * u[2]
                val = alpha * (G[0, r] * G[0, c] + G[1, r] * G[1, c] + G[2, r] * G[2, c]) + beta * gu_r * gu_c
                K[s, r, c] = val
                K[s, c, r] = val
        if geometric:
            _add_geometric_term(X0_E, a, point_a[s], f, -1.0, K[s, 0:6, 0:6])
            _add_geometric_term(X0_E, b, point_b[s], f, 1.0, K[s, 6:12, 6:12])
        c_s = damping[s]
        if c_s > 0.0:
            # D = c Ĝᵀ u uᵀ Ĝ ; damper force on point 1: c u uᵀ (ẋ₂ − ẋ₁) = −c u uᵀ Ĝ φ
            rate = 0.0
            for r in range(12):
                gu_r = G[0, r] * u[0] + G[1, r] * u[1] + G[2, r] * u[2]
                body = a if r < 6 else b
                if body >= 0:
                    rate += gu_r * v_link[body, r % 6]
                for c in range(r, 12):
                    gu_c = G[0, c] * u[0] + G[1, c] * u[1] + G[2, c] * u[2]
                    D[s, r, c] = c_s * gu_r * gu_c
                    D[s, c, r] = c_s * gu_r * gu_c
            for k in range(3):
                f[k] = -c_s * rate * u[k]
            _add_point_wrench(X0_E, a, point_a[s], f, 1.0, wrench_damping)
            _add_point_wrench(X0_E, b, point_b[s], f, -1.0, wrench_damping)
    return energy
