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
@kernel(inline="llvm", refcounts=False)
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


@kernel(inline="llvm", refcounts=False)
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


@kernel(inline="llvm", refcounts=False)
def inertia_times(I, v, out):
    """out = I v for a (6, 6) inertia and a (6,) vector."""
    for r in range(6):
        s = 0.0
        for c in range(6):
            s += I[r, c] * v[c]
        out[r] = s


@kernel(inline="llvm", refcounts=False)
def copy_inertia(src, i, dst):
    """dst[i] = src[i] for stacks of (6, 6) inertias (explicit loop: no view copies)."""
    for r in range(6):
        for c in range(6):
            dst[i, r, c] = src[i, r, c]


# -------------------------------------------------------------- transforms
@kernel(inline="llvm", refcounts=False)
def transform_motion(E, r, m, out):
    """out = X m with X = (E, r): [E ω; E (v − r × ω)]."""
    w0, w1, w2 = m[0], m[1], m[2]
    t0 = m[3] - (r[1] * w2 - r[2] * w1)
    t1 = m[4] - (r[2] * w0 - r[0] * w2)
    t2 = m[5] - (r[0] * w1 - r[1] * w0)
    for k in range(3):
        out[k] = E[k, 0] * w0 + E[k, 1] * w1 + E[k, 2] * w2
        out[3 + k] = E[k, 0] * t0 + E[k, 1] * t1 + E[k, 2] * t2


@kernel(inline="llvm", refcounts=False)
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


@kernel(inline="llvm", refcounts=False)
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


@kernel(inline="llvm", refcounts=False)
def rotated_block(E, B):
    """Eᵀ B E as 9 scalars (row-major) for a 3×3 block B (of a spatial inertia: add_transformed_inertia)."""
    e00, e01, e02 = E[0, 0], E[0, 1], E[0, 2]
    e10, e11, e12 = E[1, 0], E[1, 1], E[1, 2]
    e20, e21, e22 = E[2, 0], E[2, 1], E[2, 2]
    m00, m01, m02 = B[0, 0], B[0, 1], B[0, 2]
    m10, m11, m12 = B[1, 0], B[1, 1], B[1, 2]
    m20, m21, m22 = B[2, 0], B[2, 1], B[2, 2]
    t00 = m00 * e00 + m01 * e10 + m02 * e20
    t01 = m00 * e01 + m01 * e11 + m02 * e21
    t02 = m00 * e02 + m01 * e12 + m02 * e22
    t10 = m10 * e00 + m11 * e10 + m12 * e20
    t11 = m10 * e01 + m11 * e11 + m12 * e21
    t12 = m10 * e02 + m11 * e12 + m12 * e22
    t20 = m20 * e00 + m21 * e10 + m22 * e20
    t21 = m20 * e01 + m21 * e11 + m22 * e21
    t22 = m20 * e02 + m21 * e12 + m22 * e22
    return (e00 * t00 + e10 * t10 + e20 * t20, e00 * t01 + e10 * t11 + e20 * t21, e00 * t02 + e10 * t12 + e20 * t22,
            e01 * t00 + e11 * t10 + e21 * t20, e01 * t01 + e11 * t11 + e21 * t21, e01 * t02 + e11 * t12 + e21 * t22,
            e02 * t00 + e12 * t10 + e22 * t20, e02 * t01 + e12 * t11 + e22 * t21, e02 * t02 + e12 * t12 + e22 * t22)


@kernel(inline="llvm", refcounts=False)
def add_transformed_inertia(E, r, I, out):
    """out += Xᵀ I X for a symmetric (6, 6) I and X = (E, r), in straight-line code.

    With I = [I₁₁ I₁₂; I₁₂ᵀ I₂₂], rotate the blocks first (a = Eᵀ I₁₁ E,
    b = Eᵀ I₁₂ E, c = Eᵀ I₂₂ E; a and c symmetric), then shift by r:
    Xᵀ I X = [a + r̃bᵀ − d r̃,  d;  dᵀ,  c] with d = b + r̃ c.
    Everything lives in scalars so LLVM keeps it in registers: this is the
    innermost cost of ABA, CRBA and the preconditioners.
    """
    r0, r1, r2 = r[0], r[1], r[2]
    a00, a01, a02, _, a11, a12, _, _, a22 = rotated_block(E, I[:3, :3])
    b00, b01, b02, b10, b11, b12, b20, b21, b22 = rotated_block(E, I[:3, 3:])
    c00, c01, c02, _, c11, c12, _, _, c22 = rotated_block(E, I[3:, 3:])
    c10 = c01
    c20 = c02
    c21 = c12
    d00 = b00 + (-r2) * c10 + r1 * c20
    d01 = b01 + (-r2) * c11 + r1 * c21
    d02 = b02 + (-r2) * c12 + r1 * c22
    d10 = b10 + r2 * c00 + (-r0) * c20
    d11 = b11 + r2 * c01 + (-r0) * c21
    d12 = b12 + r2 * c02 + (-r0) * c22
    d20 = b20 + (-r1) * c00 + r0 * c10
    d21 = b21 + (-r1) * c01 + r0 * c11
    d22 = b22 + (-r1) * c02 + r0 * c12
    u00 = a00 + (-r2) * b01 + r1 * b02 - (d01 * (r2) + d02 * (-r1))
    u01 = a01 + (-r2) * b11 + r1 * b12 - (d00 * (-r2) + d02 * (r0))
    u02 = a02 + (-r2) * b21 + r1 * b22 - (d00 * (r1) + d01 * (-r0))
    u11 = a11 + r2 * b10 + (-r0) * b12 - (d10 * (-r2) + d12 * (r0))
    u12 = a12 + r2 * b20 + (-r0) * b22 - (d10 * (r1) + d11 * (-r0))
    u22 = a22 + (-r1) * b20 + r0 * b21 - (d20 * (r1) + d21 * (-r0))
    out[0, 0] += u00
    out[3, 3] += c00
    out[0, 1] += u01
    out[1, 0] += u01
    out[3, 4] += c01
    out[4, 3] += c01
    out[0, 2] += u02
    out[2, 0] += u02
    out[3, 5] += c02
    out[5, 3] += c02
    out[1, 1] += u11
    out[4, 4] += c11
    out[1, 2] += u12
    out[2, 1] += u12
    out[4, 5] += c12
    out[5, 4] += c12
    out[2, 2] += u22
    out[5, 5] += c22
    out[0, 3] += d00
    out[3, 0] += d00
    out[0, 4] += d01
    out[4, 0] += d01
    out[0, 5] += d02
    out[5, 0] += d02
    out[1, 3] += d10
    out[3, 1] += d10
    out[1, 4] += d11
    out[4, 1] += d11
    out[1, 5] += d12
    out[5, 1] += d12
    out[2, 3] += d20
    out[3, 2] += d20
    out[2, 4] += d21
    out[4, 2] += d21
    out[2, 5] += d22
    out[5, 2] += d22



@kernel(inline="llvm", refcounts=False)
def compose_transforms(E2, r2, E1, r1, E_out, r_out):
    """(E_out, r_out) = X2 · X1, where X1: A→B and X2: B→C, so the result maps A→C."""
    for i in range(3):
        for j in range(3):
            E_out[i, j] = E2[i, 0] * E1[0, j] + E2[i, 1] * E1[1, j] + E2[i, 2] * E1[2, j]
    for i in range(3):
        r_out[i] = r1[i] + E1[0, i] * r2[0] + E1[1, i] * r2[1] + E1[2, i] * r2[2]


# ------------------------------------------------------- numpy-level helpers
def skew(v) -> np.ndarray:
    """Cross-product matrices: skew(v) @ w = v × w; v (..., 3) → (..., 3, 3)."""
    v = np.asarray(v, dtype=float)
    S = np.zeros(v.shape[:-1] + (3, 3))
    S[..., 0, 1], S[..., 0, 2], S[..., 1, 2] = -v[..., 2], v[..., 1], -v[..., 0]
    S[..., 1, 0], S[..., 2, 0], S[..., 2, 1] = v[..., 2], -v[..., 1], v[..., 0]
    return S


def rotation_exp(w) -> np.ndarray:
    """Rotation matrices exp([w]×) (..., 3, 3) of rotation vectors w (..., 3) (Rodrigues)."""
    theta = np.linalg.norm(w, axis=-1)[..., None, None]
    K = skew(w)
    small = theta < 1e-8
    t = np.where(small, 1.0, theta)
    a = np.where(small, 1.0 - theta**2 / 6.0, np.sin(t) / t)
    b = np.where(small, 0.5 - theta**2 / 24.0, (1.0 - np.cos(t)) / t**2)
    return np.eye(3) + a * K + b * (K @ K)


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
