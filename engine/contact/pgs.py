"""Projected Gauss–Seidel for velocity-level impulses: contacts with Coulomb friction, one-sided and bounded rows.

The one PGS of the engine: contacts (three rows each), the joint limits' unilateral rows
(``solvers/stages/joint_limits.py``: one row each, no friction) and the motors' bounded rows
(``solvers/stages/servos.py``) all run ``pgs_kernel``.

Unknowns per contact c: λ_c = (λ_n, λ_t1, λ_t2) (N·s). The contact velocity is
u = u_free + A λ with A the contact-space inertia. Each sweep visits the
contacts in turn and, holding the others fixed,

* normal:   λ_n ← max(0, λ_n − (u_n − target_n) / A_nn)   (no pull, u_n ≥ target_n),
* friction: λ_t ← Π_{|λ_t| ≤ μ λ_n}(λ_t − u_t / g), g the largest eigenvalue of the 2×2
  block A_tt (projection onto the friction disk: the exact Coulomb cone, not a pyramid; the
  isotropic step makes sliding friction oppose the slip exactly).

Why PGS rather than a pivoting LCP solver (Lemke): it handles the disk-shaped
cone directly, is O(k²) per sweep on the dense A, warm-starts from the previous
step's impulses (resting contact converges in a few sweeps) and degrades
gracefully on the redundant contact sets a box on the ground produces (A is
only semidefinite there; a pivoting method needs regularization). Its cost is
linear convergence, which a tolerance and an iteration cap bound.
"""
from __future__ import annotations

import numpy as np

from .._jit import kernel


@kernel
def tangent_gain(a11, a12, a22):
    """g: the largest eigenvalue of a contact's 2×2 tangent block A_tt (``friction_step``'s step is 1/g)."""
    return 0.5 * (a11 + a22) + np.sqrt(0.25 * (a11 - a22) ** 2 + a12 * a12)


@kernel
def disk_step(lam1, lam2, ut1, ut2, g, bound):
    """(λ_t1, λ_t2): the tangential impulse moved by −u_t / g and projected onto the disk |λ_t| ≤ bound."""
    t1 = lam1 - ut1 / max(g, 1e-300)
    t2 = lam2 - ut2 / max(g, 1e-300)
    norm = np.sqrt(t1 * t1 + t2 * t2)
    if norm > bound:
        f = bound / norm if norm > 0.0 else 0.0
        t1 *= f
        t2 *= f
    return t1, t2


@kernel
def friction_step(lam1, lam2, ut1, ut2, a11, a12, a22, bound):
    """One contact's friction update in a Gauss–Seidel sweep: (λ_t1, λ_t2, g), the tangential impulse moved
    against the slip u_t and projected onto the disk |λ_t| ≤ bound (μ λ_n). Isotropic step 1/g with g the
    tangent block's largest eigenvalue: the fixed point then has λ_t opposite u_t (Coulomb's maximal
    dissipation); a full 2×2 solve followed by the disk projection would make λ_t oppose A_tt⁻¹ u_t instead.
    Both sweeps use it: this module's on the Delassus matrix, sparse_space's on the velocities (with g
    computed once per solve: ``tangent_gain``, then ``disk_step``)."""
    g = tangent_gain(a11, a12, a22)
    t1, t2 = disk_step(lam1, lam2, ut1, ut2, g, bound)
    return t1, t2, g


@kernel
def pgs_kernel(A, u, target_n, mu, lam, max_iter, tol, floor, rows=3, singles=0):
    """Solve in place (A symmetric, as the contact-space inertia is): lam (n,) impulses from warm
    start; u (n,) = u_free + A lam on entry, updated to the final velocities; a block whose
    A_nn ≤ floor is skipped. rows = 3: contacts (normal, two friction rows, friction bound mu[c] λ_n),
    the last ``singles`` of the k blocks one-sided single rows (λ ≥ 0, u ≥ target; rows 3(k − singles) + j:
    joint limits solved with the contacts, ``solvers/stages/limits_contact.py``);
    rows = 1: one-sided rows (λ ≥ 0, u ≥ target) when mu is empty, else two-sided rows bounded by
    |λ_c| ≤ mu[c] (u = target unless at the bound: the motors of ``solvers/stages/servos.py``).
    Returns the number of sweeps."""
    k = target_n.shape[0]
    n = u.shape[0]
    blocks = k - singles if rows == 3 else k  # three-row blocks first
    d = np.zeros(3)
    sweeps = 0
    for it in range(max_iter):
        sweeps = it + 1
        change = 0.0
        scale = 1e-300
        for c in range(k):
            single = rows == 1 or c >= blocks
            r = rows * c if c < blocks else 3 * blocks + (c - blocks)
            if A[r, r] <= floor:  # nothing can move this contact (λ was zeroed): leave it out
                continue
            ln = lam[r] - (u[r] - target_n[c]) / A[r, r]
            ln = min(mu[c], max(-mu[c], ln)) if rows == 1 and mu.shape[0] > 0 else max(0.0, ln)
            d[0] = ln - lam[r]
            lam[r] = ln
            if single:
                if d[0] != 0.0:
                    d0 = d[0]
                    for i in range(n):
                        u[i] += A[r, i] * d0
                change = max(change, abs(d[0]))
                scale = max(scale, abs(ln))
                continue
            # friction block with the normal update applied
            ut1 = u[r + 1] + A[r + 1, r] * d[0]
            ut2 = u[r + 2] + A[r + 2, r] * d[0]
            t1, t2, g = friction_step(lam[r + 1], lam[r + 2], ut1, ut2, A[r + 1, r + 1], A[r + 1, r + 2],
                                      A[r + 2, r + 2], mu[c] * ln)
            d[1] = t1 - lam[r + 1]
            d[2] = t2 - lam[r + 2]
            lam[r + 1] = t1
            lam[r + 2] = t2
            if d[0] != 0.0 or d[1] != 0.0 or d[2] != 0.0:
                # u += A[:, r:r+3] d, read along rows r…r+2 (A is symmetric): contiguous, one pass
                d0, d1, d2 = d[0], d[1], d[2]
                for i in range(n):
                    u[i] += A[r, i] * d0 + A[r + 1, i] * d1 + A[r + 2, i] * d2
            for j in range(3):
                change = max(change, abs(d[j]))
                scale = max(scale, abs(lam[r + j]))
        if change <= tol * scale:
            break
    return sweeps


def solve_contacts(A, u_free, target_n, mu, lam0=None, *, max_iter: int = 200, tol: float = 1e-10, singles: int = 0):
    """Impulses λ (n,), final contact velocities u (n,) and sweeps for the contact problem above;
    A (n, n) symmetric (``ContactSpace.A`` is symmetrized), n = 3k, or 3(k − singles) + singles with the last
    ``singles`` blocks one-sided single rows (``pgs_kernel``)."""
    k = target_n.shape[0]
    n = len(u_free)
    lam = np.zeros(n) if lam0 is None else np.array(lam0, dtype=float)
    # A contact whose bodies cannot move along its normal (both welded to the world, or to each
    # other) has A_nn ≈ 0; it gets no impulse instead of 0/0. Floor: an effective mass of 1e12 kg.
    diag = np.diag(A)
    floor = 1e-12 * max(1.0, float(np.max(diag, initial=0.0)))
    c3 = 3 * (k - singles)
    frozen = np.zeros(n, bool)
    frozen[:c3] = np.repeat(diag[:c3:3] <= floor, 3)
    frozen[c3:] = diag[c3:] <= floor
    lam[frozen] = 0.0
    u = u_free + A @ lam
    sweeps = pgs_kernel(np.ascontiguousarray(A), u, np.ascontiguousarray(target_n, dtype=float),
                        np.ascontiguousarray(mu, dtype=float), lam, int(max_iter), float(tol), floor, 3,
                        int(singles)) if k else 0
    return lam, u, sweeps
