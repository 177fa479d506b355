"""Contacts and joint limits in one problem, on the dense contact space (a character lying on its legs).

Applied one after the other the two stages fight: the contact solve pushes a leg out of the ground, the limit
stage — blind to contact — pushes the joint at its bound back, and the leg goes back in, step after step; on
positions the contact projection moves a limb past its bound and ``JointLimits.within`` moves it back into the
ground. Here the rows the limit stage would solve join the contact problem instead (W = M̃⁻¹, J the contact rows,
L the limit rows):

    A = [[J W Jᵀ, J W Lᵀ], [L W Jᵀ, L W Lᵀ]],

the limit rows one-sided single rows after the contacts' three-row blocks in the contact PGS
(``contact.pgs.solve_contacts``, ``singles``); a pushed contact then lifts the body instead of bending the
joint past its bound. ``velocities``: the step's contact and limit impulses (the limit stage's targets, rows and
Euler bend passes, ``joint_limits.py``); ``positions``: the post-stabilization's projection with the joints kept
inside their bounds. The contact space must be formed by method "minv" (its M̃⁻¹ and W = M̃⁻¹ Jᵀ are read).
"""
from __future__ import annotations

import numpy as np

from ...contact.pgs import solve_contacts

# PGS sweeps at most in a joined solve (warm-started from the last step's impulses, contacts and rows alike)
JOINED_MAX_ITER = 50


def joined(space, L):
    """(A (3k + m, 3k + m), W Lᵀ (nv, m), the limit rows' indices in A (m,)) for the contact space ``space``
    ("minv") and limit rows L (m, nv)."""
    k3, m = space.A.shape[0], L.shape[0]
    WLt = space.Minv @ L.T
    A = np.empty((k3 + m, k3 + m))
    A[:k3, :k3] = space.A
    Alc = L @ space.W
    A[k3:, :k3] = Alc
    A[:k3, k3:] = Alc.T
    All = L @ WLt
    A[k3:, k3:] = 0.5 * (All + All.T)
    return A, WLt, k3 + np.arange(m)


def _solve(space, system, u_c, rate, target_c, target_l, mu, lam_c, lam_l, max_iter, tol):
    """(Δv from the contacts (nv,), from the limits (nv,), λ (3k + m,), sweeps) for ``joined(space, L)`` = system."""
    A, WLt, r = system
    k = len(target_c)
    u0 = np.zeros(A.shape[0])
    u0[:3 * k] = u_c
    u0[r] = rate
    lam0 = np.zeros(A.shape[0])
    lam0[:3 * k] = lam_c
    lam0[r] = lam_l
    lam, _, sweeps = solve_contacts(A, u0, np.concatenate([target_c, target_l]), np.concatenate([mu, np.zeros(len(r))]),
                                    lam0, max_iter=min(max_iter, JOINED_MAX_ITER), tol=tol, singles=len(r))
    return space.W @ lam[:3 * k], WLt @ lam[r], lam, sweeps


def velocities(limits, q, v, space, u_free, target_c, mu, lam0, max_iter, tol, bend_passes):
    """(v⁺ (nv,), contact impulses (3k,), sweeps): the contact problem of ``space`` at q (free contact velocities
    u_free (3k,), normal targets target_c (k,), friction mu (k,), warm start lam0 (3k,)) and the joint limits'
    rows (``JointLimits.one_sided``: those near, and any v⁺ would pass) solved together from v* = v (nv,);
    ``limits`` keeps its step's outcome as ``apply`` would (``JointLimits.record``), and its ``apply`` has nothing
    left. At most ``JOINED_MAX_ITER`` sweeps, more (up to max_iter) while a bound would end past its target by more
    than the limit stage's slop; contacts and bounds that cannot all hold (a Baumgarte push-out against a joint at
    its bound, the body blocked) leave a bound short: no limit stage runs after this, which would push the limb back
    into the ground (the fight this solve ends), and the step's end moves a joint past it by more than
    ``LATE_SLOPS`` × slop back onto it (``JointLimits.within``)."""
    coef, idx, gap, finite, rate, near, arrival = limits.one_sided(q, v)
    euler = np.concatenate([limits._order, limits._order]) > 0
    bend = np.zeros_like(gap)
    lam_c, warm = lam0, limits.warm_impulses(len(gap))
    for _ in range(bend_passes if euler.any() else 1):
        for _ in range(len(gap) + 1):
            act = np.flatnonzero(near)
            L = limits._dense_rows(coef[act], idx[act])
            target_l = limits._targets(gap[act], rate[act], arrival[act], bend[act])
            system = joined(space, L)
            r = system[2]
            sweeps, cap = 0, min(max_iter, JOINED_MAX_ITER)
            while True:  # at most JOINED_MAX_ITER sweeps, up to max_iter while a bound is short of its target
                dv_c, dv_l, lam, done = _solve(space, system, u_free, rate[act], target_c, target_l, mu, lam_c,
                                                  warm[act], cap, tol)
                v_new = v + dv_c + dv_l
                lam_c, warm[act] = lam[:len(u_free)], lam[r]
                sweeps += done
                short = target_l - (coef[act] * v_new[idx[act]]).sum(axis=1)
                held = limits.dt * float(short.max(initial=0.0)) <= limits.slop
                if held or done < cap or sweeps >= max_iter:
                    break
                cap = max_iter - sweeps
            passed = finite & ~near & (gap + bend + limits.dt * (coef * v_new[idx]).sum(axis=1) < 0.0)
            if not passed.any():
                break
            near = near | passed
        if not euler[near].any():
            break
        bend, done = limits.bend_again(q, v_new, gap, coef, idx, euler & finite, bend)
        if done:
            break
    limits.record(coef, idx, v_new, act, lam[r])
    limits.last_sweeps = sweeps
    warm[~near] = 0.0
    limits.keep_impulses(warm)
    return v_new, lam[:len(u_free)], sweeps


def positions(limits, q, space, target_c, max_iter, tol):
    """Δq (nv,) = W Jᵀ δ_c + W Lᵀ δ_l, δ ≥ 0 frictionless: the contacts of ``space`` at q reach their targets
    (J_n Δq ≥ target_c, the post-stabilization's) while every bound within ``margin`` holds (L Δq ≥ −gap: a joint
    past one is moved back onto it), and any bound Δq would pass is added (W = M⁻¹, the space's)."""
    x, (coef, idx) = limits.coordinates(q)
    coef, idx = np.concatenate([coef, -coef]), np.concatenate([idx, idx])
    gap = np.concatenate([x - limits.lower, limits.upper - x])
    finite = np.isfinite(gap)
    near = finite & (gap < limits.margin)
    k = len(target_c)
    none = np.zeros(k)
    lam_c = np.zeros(3 * k)
    for _ in range(len(gap) + 1):
        act = np.flatnonzero(near)
        dq_c, dq_l, lam, _ = _solve(space, joined(space, limits._dense_rows(coef[act], idx[act])), np.zeros(3 * k),
                                       np.zeros(len(act)), target_c, -gap[act], none, lam_c, np.zeros(len(act)),
                                       max_iter, tol)
        dq = dq_c + dq_l
        passed = finite & ~near & (gap + (coef * dq[idx]).sum(axis=1) < 0.0)
        if not passed.any():
            return dq
        near = near | passed
        lam_c = lam[:3 * k]
    return dq
