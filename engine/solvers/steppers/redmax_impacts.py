"""Did a step's contact or limit impulses *hold* the bodies, or stop (or start) a motion? BDF2's history decides
by it (``redmax_schemes.History``, issue #30).

BDF2 (``redmax_schemes``) starts each solve from the extrapolated state q̃ = q ⊕ (q ⊖ q⁻)/3,
q̇̃ = q̇ + (q̇ − q̇⁻)/3 with h_s = 2h/3. Along one contact's normal, with u the normal velocity and φ the gap:

* resting or sliding contact: φ = φ⁻ ≈ 0 and u = u⁻ ≈ 0, so φ̃ ≈ 0 and ũ ≈ 0: the extrapolated start is on the
  surface; the contact row is active only because of the step's own acceleration, its impulse λ = h_s f_n is
  the normal force over the solve's step — a force like any other of the scheme, which BDF2 integrates to
  second order (a frictionless slide then leads ½ a t² by O(h²), where implicit Euler leads it by 1/N);
* an impact: the impulse stops an approach u < 0 within one step, so the next extrapolation has
  ũ = 0 + (0 − u)/3 > 0 — the body would leave the surface at a third of its impact speed — and φ̃ past the
  surface; after a bounce likewise ũ = 4/3 of the rebound. Such a step restarts BDF2 with an Euler step.

So a row counts as an impact when it is active (λ > 0) and the rates the solve started from approach it faster
than its open gap allows within the solve (−u_in − max(φ, 0)/h_s > tol), or it leaves the row separating faster
than it came (u⁺ − max(u_in, 0) > tol); tol is half the step's own change of that row's rate (|u_in − u*|: what a
row that only holds must cancel) plus a floor. Any row, active or not, whose next extrapolated start would be
past its surface (φ⁺ + (h/3) u⁺ < min(φ⁺, 0) − slop, φ⁺ = φ + h_s u⁺) restarts too: an approach that the next
step's speculative rows must see from a start that is not yet past the surface. A ball joint's bound (on the
Euler angles of its quaternion) is curved in q: a joint held against it restarts too.
"""
from __future__ import annotations

import numpy as np

TOL_FLOOR = 1e-3  # m/s: the least approach or rebound speed taken for an impact (PGS leaves ~1e-7)


def rows_impacted(gap, u_in, u_free, u_new, active, h_solve, h, slop) -> bool:
    """True when a row's impulse stopped or started a motion (module doc): one-sided rows with gap φ (k,) (m, > 0
    open) at the solve's start, normal rates (k,) of the solve's start rates u_in, of its free end rates u*, of its
    end rates u⁺ (m/s or rad/s, > 0 separating), active (k,) bool (λ > 0); h_solve the solve's step, h the step."""
    if len(gap) == 0:
        return False
    tol = 0.5 * np.abs(u_in - u_free) + TOL_FLOOR
    approach = -u_in - np.maximum(gap, 0.0) / h_solve
    rebound = u_new - np.maximum(u_in, 0.0)
    if np.any(active & ((approach > tol) | (rebound > tol))):
        return True
    end_gap = gap + h_solve * u_new
    return bool(np.any(end_gap + (h / 3.0) * u_new < np.minimum(end_gap, 0.0) - slop))


class ImpactCheck:
    """``impacted(q, qd_in, v_free, v_new, h_solve) -> bool`` for one stepper's contact and limit stages, after they
    acted in a solve from (q (nq,), q̇_in (nv,)) with free end rates v_free — the velocity the contact stage was
    given — and end rates v_new (nv,)."""

    def __init__(self, stepper):
        self.s = stepper

    def impacted(self, q, qd_in, v_free, v_new, h_solve) -> bool:
        return self._contact(qd_in, v_new, h_solve) or self._limits(q, qd_in, v_free, v_new, h_solve)

    def _contact(self, qd_in, v_new, h_solve) -> bool:
        """The contact rows' rates from the contact stage's own space at the solve's q (``ContactStep.solved_on``:
        J q̇_in and J v⁺ by its velocity pass, J v* as the stage computed it): no kinematics or J formed again."""
        stage = self.s.contact
        last = None if stage is None else stage.last
        if last is None or len(last.contacts) == 0:
            return False
        J = last.solved_on
        u_in, u_new = J.velocity(qd_in)[0::3], J.velocity(v_new)[0::3]  # the normal rows
        return rows_impacted(-np.asarray(last.contacts.depth, float), u_in, last.u_free[0::3], u_new,
                             last.impulses[0::3] > 0.0, h_solve, self.s.dt, stage.slop)

    def _limits(self, q, qd_in, v_free, v_new, h_solve) -> bool:
        stage = self.s.limits
        if stage is None or len(stage.dof) == 0:
            return False
        x, (coef, idx) = stage.coordinates(q)
        gap = np.concatenate([x - stage.lower, stage.upper - x])
        finite = np.isfinite(gap)
        if not finite.any():
            return False
        coef, idx = np.concatenate([coef, -coef]), np.concatenate([idx, idx])  # lower, then upper rows

        def rate(v):
            return (coef * v[idx]).sum(axis=1)

        n = len(stage.dof)
        active = np.zeros(2 * n, bool)
        rows = stage.last_active[stage.last_impulses > 0.0]
        active[np.where(rows >= 0, rows, n - 1 - rows)] = True
        if np.any(active & (np.concatenate([stage._order, stage._order]) >= 0)):
            return True  # a ball joint's bound (Euler angles of its quaternion): curved in q, so the extrapolated
            # start of a joint sliding along it is past it by the curvature (0.4 mrad on a ±15° ball bone)
        f = finite
        return rows_impacted(gap[f], rate(qd_in)[f], rate(v_free)[f], rate(v_new)[f], active[f], h_solve, self.s.dt,
                             stage.slop)
