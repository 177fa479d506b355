"""Preconditioned conjugate gradients, written once, by reverse communication.

The CG recurrences live here; the caller owns the operator A, the preconditioner P⁻¹ and (for
projected CG) the projection of the residual, and applies whichever one ``cg_next`` asks for::

    request, state = cg_begin(x, p)           # p ← x: the first product gives r₀ = b − A x₀
    while request != CG_DONE:
        if request == CG_PRODUCT:             # Ap ← A p
            ...
        elif request == CG_PROJECT:           # r ← its projection (projected CG; plain CG does nothing)
            ...
        elif request == CG_PRECONDITION:      # z ← P⁻¹ r
            ...
        request, state = cg_next(state, tol, max_iter, x, b, r, z, p, Ap)
    iterations = cg_iterations(state)

(MKL's ``dcg`` works the same way.) The RedMax step's PCG with the projected block Jacobi preconditioner
(``solvers/linalg/block_jacobi.py``, thesis 000 Sec. 3.3) and stable PD's PCG with the Jacobi
preconditioner (``control/spd.py``, seed 001's baseline) are the two callers.

Warm start from x; stops when the (projected) residual ‖r‖ ≤ tol·‖b‖ (‖b‖ = 0 counts as 1) after at least
one update, when pᵀAp ≤ 0 (a NaN passes and poisons x, so a broken system is seen), or after max_iter
iterations (operator applications after the first). A start that is already exact (rᵀP⁻¹r = 0) takes none.
"""
from __future__ import annotations

import math

from ._jit import kernel

CG_DONE, CG_PRODUCT, CG_PROJECT, CG_PRECONDITION = 0, 1, 2, 3

# where the iteration stands: what the caller was last asked for
_R0_PRODUCT, _R0_PROJECTED, _Z0, _STEP_PRODUCT, _STEP_PROJECTED, _Z, _FINISHED = 0, 1, 2, 3, 4, 5, 6


@kernel(inline="llvm", refcounts=False)
def cg_begin(x, p):
    """p ← x; returns (CG_PRODUCT, state): the caller's first product A p = A x₀ gives r₀ = b − A x₀.
    state = (phase, iterations, rᵀz, ‖b‖)."""
    for k in range(x.shape[0]):
        p[k] = x[k]
    return CG_PRODUCT, (_R0_PRODUCT, 0, 0.0, 0.0)


@kernel(inline="llvm", refcounts=False)
def cg_iterations(state) -> int:
    return state[1]


@kernel(inline="llvm", refcounts=False)
def cg_next(state, tol, max_iter, x, b, r, z, p, Ap):
    """One more stretch of PCG after the caller did what the last request asked; returns (request, state).
    x (n,) the iterate (updated in place), b (n,) the right-hand side, r, z, p, Ap (n,) the work vectors."""
    phase, it, rz, bnorm = state
    n = b.shape[0]
    if phase == _R0_PRODUCT:  # Ap = A x₀
        bb = 0.0
        for k in range(n):
            r[k] = b[k] - Ap[k]
            bb += b[k] * b[k]
        bnorm = math.sqrt(bb)
        if bnorm == 0.0:
            bnorm = 1.0
        return CG_PROJECT, (_R0_PROJECTED, it, rz, bnorm)
    if phase == _R0_PROJECTED:
        return CG_PRECONDITION, (_Z0, it, rz, bnorm)
    if phase == _Z0:  # z₀ = P⁻¹ r₀: the first direction
        rz = 0.0
        for k in range(n):
            p[k] = z[k]
            rz += r[k] * z[k]
        if rz == 0.0:  # r₀ = 0: x₀ solves it
            return CG_DONE, (_FINISHED, it, rz, bnorm)
    elif phase == _STEP_PRODUCT:  # Ap = A p: step along p
        pAp = 0.0
        for k in range(n):
            pAp += p[k] * Ap[k]
        if pAp <= 0.0:
            return CG_DONE, (_FINISHED, it, rz, bnorm)
        alpha = rz / pAp
        for k in range(n):
            x[k] += alpha * p[k]
            r[k] -= alpha * Ap[k]
        return CG_PROJECT, (_STEP_PROJECTED, it, rz, bnorm)
    elif phase == _STEP_PROJECTED:
        rr = 0.0
        for k in range(n):
            rr += r[k] * r[k]
        if math.sqrt(rr) <= tol * bnorm:
            return CG_DONE, (_FINISHED, it, rz, bnorm)
        return CG_PRECONDITION, (_Z, it, rz, bnorm)
    elif phase == _Z:  # z = P⁻¹ r: the next direction
        rz_new = 0.0
        for k in range(n):
            rz_new += r[k] * z[k]
        beta = rz_new / rz
        rz = rz_new
        for k in range(n):
            p[k] = z[k] + beta * p[k]
    else:
        return CG_DONE, (_FINISHED, it, rz, bnorm)
    if it >= max_iter:
        return CG_DONE, (_FINISHED, it, rz, bnorm)
    return CG_PRODUCT, (_STEP_PRODUCT, it + 1, rz, bnorm)
