"""Spatial (6D) algebra on plain arrays, Featherstone's conventions.

* A spatial motion vector is ``[angular; linear]`` (ω, v), a force is
  ``[moment; force]`` (n, f); both are ``(6,)`` float arrays.
* A Plücker transform ``X`` from frame A to frame B is stored as the pair
  ``(E, r)``: ``E`` (3, 3) rotates A-coordinates into B-coordinates and
  ``r`` (3,) is the origin of B expressed in A (Featherstone's ``plux(E, r)``),
  so ``X m = [E ω; E (v − r × ω)]``.
* Spatial inertias are symmetric (6, 6) arrays in the same order.

Every function here is a small kernel: it writes into an ``out`` array the
caller owns and never allocates, so the recursive algorithms stay
allocation-free. Vectors inside kernels are rows of larger arrays (views).
"""
from __future__ import annotations

import numpy as np

from ._jit import kernel


# ----------------------------------------------------------------- vectors
@kernel
def cross_motion(v, m, out):
    """out = v ×ₘ m (spatial motion cross product), all (6,)."""
    w0, w1, w2, u0, u1, u2 = v[0], v[1], v[2], v[3], v[4], v[5]
    a0, a1, a2, b0, b1, b2 = m[0], m[1], m[2], m[3], m[4], m[5]
    out[0] = w1 * a2 - w2 * a1
    out[1] = w2 * a0 - w0 * a2
    out[2] = w0 * a1 - w1 * a0
    out[3] = w1 * b2 - w2 * b1 + u1 * a2 - u2 * a1
    out[4] = w2 * b0 - w0 * b2 + u2 * a0 - u0 * a2
    out[5] = w0 * b1 - w1 * b0 + u0 * a1 - u1 * a0


@kernel
def cross_force(v, f, out):
    """out = v ×* f (spatial force cross product), all (6,)."""
    w0, w1, w2, u0, u1, u2 = v[0], v[1], v[2], v[3], v[4], v[5]
    n0, n1, n2, f0, f1, f2 = f[0], f[1], f[2], f[3], f[4], f[5]
    out[0] = w1 * n2 - w2 * n1 + u1 * f2 - u2 * f1
    out[1] = w2 * n0 - w0 * n2 + u2 * f0 - u0 * f2
    out[2] = w0 * n1 - w1 * n0 + u0 * f1 - u1 * f0
    out[3] = w1 * f2 - w2 * f1
    out[4] = w2 * f0 - w0 * f2
    out[5] = w0 * f1 - w1 * f0


@kernel
def inertia_times(I, v, out):
    """out = I v for a (6, 6) inertia and a (6,) vector."""
    for r in range(6):
        s = 0.0
        for c in range(6):
            s += I[r, c] * v[c]
        out[r] = s


# -------------------------------------------------------------- transforms
@kernel
def transform_motion(E, r, m, out):
    """out = X m with X = (E, r): [E ω; E (v − r × ω)]."""
    w0, w1, w2 = m[0], m[1], m[2]
    t0 = m[3] - (r[1] * w2 - r[2] * w1)
    t1 = m[4] - (r[2] * w0 - r[0] * w2)
    t2 = m[5] - (r[0] * w1 - r[1] * w0)
    for k in range(3):
        out[k] = E[k, 0] * w0 + E[k, 1] * w1 + E[k, 2] * w2
        out[3 + k] = E[k, 0] * t0 + E[k, 1] * t1 + E[k, 2] * t2


@kernel
def transform_motion_inverse(E, r, m, out):
    """out = X⁻¹ m: [Eᵀ ω; Eᵀ v + r × Eᵀ ω]."""
    w0 = E[0, 0] * m[0] + E[1, 0] * m[1] + E[2, 0] * m[2]
    w1 = E[0, 1] * m[0] + E[1, 1] * m[1] + E[2, 1] * m[2]
    w2 = E[0, 2] * m[0] + E[1, 2] * m[1] + E[2, 2] * m[2]
    v0 = E[0, 0] * m[3] + E[1, 0] * m[4] + E[2, 0] * m[5]
    v1 = E[0, 1] * m[3] + E[1, 1] * m[4] + E[2, 1] * m[5]
    v2 = E[0, 2] * m[3] + E[1, 2] * m[4] + E[2, 2] * m[5]
    out[0] = w0
    out[1] = w1
    out[2] = w2
    out[3] = v0 + r[1] * w2 - r[2] * w1
    out[4] = v1 + r[2] * w0 - r[0] * w2
    out[5] = v2 + r[0] * w1 - r[1] * w0


@kernel
def transform_force_transpose(E, r, f, out):
    """out = Xᵀ f: carries a force from frame B back to frame A, [Eᵀn + r × Eᵀf; Eᵀf]."""
    n0 = E[0, 0] * f[0] + E[1, 0] * f[1] + E[2, 0] * f[2]
    n1 = E[0, 1] * f[0] + E[1, 1] * f[1] + E[2, 1] * f[2]
    n2 = E[0, 2] * f[0] + E[1, 2] * f[1] + E[2, 2] * f[2]
    g0 = E[0, 0] * f[3] + E[1, 0] * f[4] + E[2, 0] * f[5]
    g1 = E[0, 1] * f[3] + E[1, 1] * f[4] + E[2, 1] * f[5]
    g2 = E[0, 2] * f[3] + E[1, 2] * f[4] + E[2, 2] * f[5]
    out[0] = n0 + r[1] * g2 - r[2] * g1
    out[1] = n1 + r[2] * g0 - r[0] * g2
    out[2] = n2 + r[0] * g1 - r[1] * g0
    out[3] = g0
    out[4] = g1
    out[5] = g2


@kernel
def add_transformed_inertia(E, r, I, scratch, out):
    """out += Xᵀ I X for a symmetric (6, 6) I, X = (E, r); scratch is (4, 3, 3).

    Rotate the 3×3 blocks first (A = Eᵀ I₁₁ E, B = Eᵀ I₁₂ E, C = Eᵀ I₂₂ E), then
    shift by r: Xᵀ I X = [A + r̃Bᵀ − (B + r̃C) r̃,  B + r̃C;  (B + r̃C)ᵀ,  C].
    """
    A = scratch[0]
    B = scratch[1]
    C = scratch[2]
    T = scratch[3]
    _rotate_block(E, I, 0, 0, T, A)
    _rotate_block(E, I, 0, 3, T, B)
    _rotate_block(E, I, 3, 3, T, C)
    r0, r1, r2 = r[0], r[1], r[2]
    # T = B + r̃ C
    for j in range(3):
        T[0, j] = B[0, j] + r1 * C[2, j] - r2 * C[1, j]
        T[1, j] = B[1, j] + r2 * C[0, j] - r0 * C[2, j]
        T[2, j] = B[2, j] + r0 * C[1, j] - r1 * C[0, j]
    for i in range(3):
        for j in range(3):
            out[i, 3 + j] += T[i, j]
            out[3 + j, i] += T[i, j]
            out[3 + i, 3 + j] += C[i, j]
    # upper-left: A + r̃ Bᵀ − T r̃ ; (r̃Bᵀ)[i, j] = (r × B[j, :])_i, (T r̃)[:, j] = T (r̃ e_j)
    for j in range(3):
        out[0, j] += A[0, j] + (r1 * B[j, 2] - r2 * B[j, 1])
        out[1, j] += A[1, j] + (r2 * B[j, 0] - r0 * B[j, 2])
        out[2, j] += A[2, j] + (r0 * B[j, 1] - r1 * B[j, 0])
    for i in range(3):
        out[i, 0] -= T[i, 1] * r2 - T[i, 2] * r1
        out[i, 1] -= -T[i, 0] * r2 + T[i, 2] * r0
        out[i, 2] -= T[i, 0] * r1 - T[i, 1] * r0


@kernel
def _rotate_block(E, I, r0, c0, T, out):
    """out = Eᵀ I[r0:r0+3, c0:c0+3] E (T is 3×3 scratch)."""
    for i in range(3):
        for j in range(3):
            T[i, j] = I[r0 + i, c0] * E[0, j] + I[r0 + i, c0 + 1] * E[1, j] + I[r0 + i, c0 + 2] * E[2, j]
    for i in range(3):
        for j in range(3):
            out[i, j] = E[0, i] * T[0, j] + E[1, i] * T[1, j] + E[2, i] * T[2, j]


@kernel
def compose_transforms(E2, r2, E1, r1, E_out, r_out):
    """(E_out, r_out) = X2 · X1, where X1: A→B and X2: B→C, so the result maps A→C."""
    for i in range(3):
        for j in range(3):
            E_out[i, j] = E2[i, 0] * E1[0, j] + E2[i, 1] * E1[1, j] + E2[i, 2] * E1[2, j]
    for i in range(3):
        r_out[i] = r1[i] + E1[0, i] * r2[0] + E1[1, i] * r2[1] + E1[2, i] * r2[2]


# ------------------------------------------------------- numpy-level helpers
def skew(v) -> np.ndarray:
    """3×3 matrix with skew(v) @ w = v × w."""
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def spatial_inertia(mass: float, com, inertia_com) -> np.ndarray:
    """(6, 6) spatial inertia about a frame's origin (Featherstone's ``mcI``).

    mass: kg; com: (3,) centre of mass in that frame (m); inertia_com: (3, 3)
    rotational inertia about the COM, in that frame's axes (kg·m²).
    """
    c = skew(np.asarray(com, dtype=float))
    I = np.zeros((6, 6))
    I[:3, :3] = np.asarray(inertia_com, dtype=float) + mass * c @ c.T
    I[:3, 3:] = mass * c
    I[3:, :3] = mass * c.T
    I[3:, 3:] = mass * np.eye(3)
    return I


def transform_matrix(E, r) -> np.ndarray:
    """Dense (6, 6) motion transform for (E, r) — for tests and dense baselines."""
    X = np.zeros((6, 6))
    X[:3, :3] = E
    X[3:, 3:] = E
    X[3:, :3] = -np.asarray(E) @ skew(r)
    return X


def cross_motion_matrix(v) -> np.ndarray:
    """Dense (6, 6) matrix of v ×ₘ."""
    X = np.zeros((6, 6))
    X[:3, :3] = skew(v[:3])
    X[3:, 3:] = skew(v[:3])
    X[3:, :3] = skew(v[3:])
    return X
