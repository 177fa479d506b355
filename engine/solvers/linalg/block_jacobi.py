"""Projected block Jacobi preconditioner and PCG (thesis 000, Eq. 3.1, Alg. 4, Sec. 3.3).

P = Jᵀ (M_m + blkdiag(hD_m + h²K_m)) J + hD_r + h²K_r keeps only each
body's own 6 × 6 block of the maximal terms, so P⁻¹x is one articulated-body
recursion: ``articulated_inertia_pass`` with the augmented blocks A and the
reduced diagonal r (Alg. 4 lines 1–8), then ``block_jacobi_solve`` (lines
10–18). Without couplings P = M̃ and PCG converges in one iteration.
"""
from __future__ import annotations

from ..._jit import kernel
from ...conjugate_gradient import CG_DONE, CG_PRODUCT, CG_PROJECT, cg_begin, cg_iterations, cg_next
from ...spatial import transform_force_transpose, transform_motion
from .reduced_operators import system_product


@kernel(inline="llvm", refcounts=False)
def block_jacobi_solve(tree, ws, x, out):
    """out = P⁻¹ x (Alg. 4 lines 11–17); needs articulated_inertia_pass(tree, ws, A, r)."""
    n = tree.parent.shape[0]
    B = ws.pA  # B̂ then β per body (force, link coordinates)
    dV = ws.a
    t = ws.tmp6
    for i in range(n):
        for k in range(6):
            B[i, k] = 0.0
    for i in range(n - 1, -1, -1):  # lines 11–14: β_j = B̂_j + M̂ S Ψ (x_j − Sᵀ B̂_j)
        vs = tree.v_start[i]
        nv = tree.joint_nv[i]
        for d in range(nv):
            s = x[vs + d]
            for k in range(6):
                s -= ws.S[vs + d, k] * B[i, k]
            ws.u[vs + d] = s
        for d in range(nv):
            g = 0.0
            for e in range(nv):
                g += ws.Dinv[i, d, e] * ws.u[vs + e]
            for k in range(6):
                B[i, k] += ws.U[vs + d, k] * g
        p = tree.parent[i]
        if p >= 0:
            transform_force_transpose(ws.Xup_E[i], ws.Xup_r[i], B[i], t)
            for k in range(6):
                B[p, k] += t[k]
    for i in range(n):  # lines 15–18: y_j = Ψ (u_j − Uᵀ Ad V̇_p), V̇_j = Ad V̇_p + S y_j
        p = tree.parent[i]
        if p >= 0:
            transform_motion(ws.Xup_E[i], ws.Xup_r[i], dV[p], dV[i])
        else:
            for k in range(6):
                dV[i, k] = 0.0
        vs = tree.v_start[i]
        nv = tree.joint_nv[i]
        for d in range(nv):
            s = ws.u[vs + d]
            for k in range(6):
                s -= ws.U[vs + d, k] * dV[i, k]
            t[d] = s
        for d in range(nv):
            g = 0.0
            for e in range(nv):
                g += ws.Dinv[i, d, e] * t[e]
            out[vs + d] = g
        for d in range(nv):
            for k in range(6):
                dV[i, k] += ws.S[vs + d, k] * out[vs + d]


@kernel(refcounts=False)
def block_jacobi_solve_rows(tree, ws, X, out):
    """out[k] = P⁻¹ X[k] for every row k (e.g. the constraint rows: Y = (P⁻¹Gᵀ)ᵀ)."""
    for k in range(X.shape[0]):
        block_jacobi_solve(tree, ws, X[k], out[k])


@kernel(inline="llvm", refcounts=False)
def project_residual(r, G, Y, Sinv, lam):
    """r ← r − Gᵀ (G P⁻¹ Gᵀ)⁺ G P⁻¹ r with G (l, nv) and Y = (P⁻¹Gᵀ)ᵀ (a no-op for l = 0).

    Afterwards G P⁻¹ r = 0, so the next search direction P⁻¹r keeps G x fixed; r
    itself becomes b − M̃x − Gᵀλ for the current multiplier estimate
    (the residual-update form of projected CG, Gould, Hribar & Nocedal 2001)."""
    l = G.shape[0]
    if l == 0:
        return
    for a in range(l):
        s = 0.0
        for k in range(r.shape[0]):
            s += Y[a, k] * r[k]
        lam[a] = s
    for a in range(l):
        s = 0.0
        for c in range(l):
            s += Sinv[a, c] * lam[c]
        for k in range(r.shape[0]):
            r[k] -= G[a, k] * s


@kernel(refcounts=False)
def pcg_solve(tree, ws, A, pair_a, pair_b, coupling, reduced_diag, b, x, tol, max_iter, r, z, p, Ap, y, w,
              G, Y, Sinv, lam):
    """Preconditioned CG for M̃ x = b, warm-started from x (overwritten with the solution).

    With constraint rows G (l, nv), l > 0, this is projected CG for
    M̃ x = b − Gᵀλ, G x = G x₀: x must enter feasible, every residual is
    projected by ``project_residual`` (Y = (P⁻¹Gᵀ)ᵀ, Sinv = (G P⁻¹ Gᵀ)⁺), and the
    iterates stay on the constraint plane. One CG run then replaces the l + 1
    solves of Eq. 3.2. Pass G, Y of shape (0, nv) for plain PCG.

    The CG recurrences are ``engine.conjugate_gradient``'s; this supplies M̃ (``system_product``), P⁻¹
    (``block_jacobi_solve``) and the projection. Stops when the (projected) residual ‖r‖ ≤ tol·‖b‖
    after at least one update; returns the number of iterations (preconditioner applications after
    the first). Needs joint_pass and articulated_inertia_pass(tree, ws, A, r) done.
    """
    request, state = cg_begin(x, p)
    while request != CG_DONE:
        if request == CG_PRODUCT:
            system_product(tree, ws, A, pair_a, pair_b, coupling, reduced_diag, p, y, w, Ap)
        elif request == CG_PROJECT:
            project_residual(r, G, Y, Sinv, lam)
        else:
            block_jacobi_solve(tree, ws, r, z)
        request, state = cg_next(state, tol, max_iter, x, b, r, z, p, Ap)
    return cg_iterations(state)
