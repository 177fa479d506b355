"""Time integrators of the RedMax step: the ``integrator=`` option (issue #31, docs/redmax.md *Time integrators*).

Every scheme is built from one operation of the stepper, ``solve(q, q̇, control, h_solve, h_move)``: the
linearly implicit solve of Eq. 2.13–2.15 with step h_solve from (q, q̇) — M̃ = M + h_s D + h_s² K, right-hand
side M q̇ + h_s f — its loop closures aiming at positions that move by h_move q̇⁺, then contact and joint limits
(``RedMaxStepper.solve``). K holds the joints' geometric stiffness (the tension along chains, with the
centres of mass' inertial forces) and the springs' material stiffness.

* ``"euler"`` — linearly implicit Euler, the thesis's Eq. 2.13: one solve, h_s = h_move = h. With the joints'
  geometric stiffness it damps every swing (a 1 m pendulum from 60° keeps 8.8° after 10 s at 24 fps): the
  tension term is treated implicitly, and implicit Euler's damping of a mode grows as (ωh)² per step.
* ``"bdf2"`` — linearly implicit BDF2: (3 q̇⁺ − 4 q̇ + q̇⁻)/(2h) = M⁻¹ f(q⁺, q̇⁺), q⁺ = (4q − q⁻)/3 + (2h/3) q̇⁺.
  That is the same solve from the extrapolated state q̃ = q ⊕ (q ⊖ q⁻)/3, q̇̃ = (4 q̇ − q̇⁻)/3 with h_s = h_move
  = 2h/3: one solve per step, second order, L-stable (stiff modes are damped, 0.15 per step at ωh = 33), a
  slow mode loses only ~(ωh)⁴/4 of its amplitude per step. It starts with an Euler step, and takes one after a
  step whose contact or limit impulses stopped an approach or made a bounce (an impact's history would bounce
  the body) or whose approach the next extrapolated start would carry past a surface or a bound
  (``redmax_impacts.py``); across rows that only hold the bodies (resting, sliding) it goes on.
* ``"tr-bdf2"`` — TR-BDF2 (Bank et al. 1985; γ = 2 − √2): a trapezoidal step over γh (the solve at γh/2, rates
  extrapolated), then BDF2 over the rest from the two points; two solves per step, self-starting, L-stable.
* ``"blend"`` — the energy-budget blend of Dinev, Liu and Kavan ("Stabilizing Integrators for Real-Time
  Physics", ACM TOG 37(1), 2018): the linearly implicit midpoint step (the solve at h/2, q⁺ = q ⊕ h q̇̄, rates
  extrapolated, q̇⁺ = 2 q̇̄ − q̇), and when it ends above the energy budget, also the implicit Euler step, with
  the result blended from the first towards the second until the energy meets the budget (bisection).

The energy budget (``stages/energy_guard.py``) is the step's last stage: ``"cap"`` (the issue #22 guard) is
implicit Euler's default, ``"hold"`` the others' (it also gives back what the step's numerical damping took).
Contact and limit impulses are applied once, never extrapolated (an inelastic stop stays inelastic).
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import SimulatorOptionError
from ..._jit import compiled_for
from ...integrators import configuration_difference, integrate
from .redmax_step import bdf2_start_flat

INTEGRATORS = ("euler", "bdf2", "tr-bdf2", "blend")
DEFAULT_POLICY = {"euler": "cap", "bdf2": "hold", "tr-bdf2": "hold", "blend": "hold"}
GUARD_POLICIES = ("cap", "hold")
GAMMA = 2.0 - math.sqrt(2.0)  # TR-BDF2's trapezoidal fraction of the step
BLEND_BISECTIONS = 20


def parse_integrator(integrator, energy_guard):
    """(integrator, energy-budget policy or None) from the options ``integrator`` (one of INTEGRATORS) and
    ``energy_guard`` (True: the integrator's own policy, False/None: none, or "cap"/"hold")."""
    if not isinstance(integrator, str) or integrator not in INTEGRATORS:
        raise SimulatorOptionError(f"Simulator option 'integrator' must be one of {', '.join(INTEGRATORS)}, "
                                   f"got {integrator!r}")
    if energy_guard is True:
        return integrator, DEFAULT_POLICY[integrator]
    if energy_guard is False or energy_guard is None:
        return integrator, None
    if isinstance(energy_guard, str) and energy_guard in GUARD_POLICIES:
        return integrator, energy_guard
    raise SimulatorOptionError(f"Simulator option 'energy_guard' must be True, False or one of "
                               f"{', '.join(GUARD_POLICIES)}, got {energy_guard!r}")


class History:
    """BDF2's previous step: (q⁻, q̇⁻), valid while a run goes on smoothly — the state handed to ``start`` is the
    very one the last step returned (bytewise) and that step had no impact (``redmax_impacts.py``)."""

    def __init__(self):
        self._prev = None   # (q⁻, q̇⁻): the start of the last step
        self._end = None    # bytes of the last step's (q, q̇)

    def reset(self):
        self._prev = self._end = None

    def extrapolation(self, state):
        """(q⁻, q̇⁻) when ``state`` continues the last step smoothly, else None (a first or restarted step)."""
        if self._prev is None or self._end != (state.q.tobytes(), state.qd.tobytes()):
            return None
        return self._prev

    def record(self, start, q_new, qd_new, smooth: bool):
        """After a step from ``start`` to (q_new, qd_new); smooth: no impact changed its rates."""
        if smooth:
            self._prev = (np.array(start.q, float), np.array(start.qd, float))
            self._end = (q_new.tobytes(), qd_new.tobytes())
        else:
            self.reset()


def bdf2_solve_state(st, q, qd, q_prev, qd_prev):
    """(q̃, q̇̃) = (q ⊕ (q ⊖ q⁻)/3, (4 q̇ − q̇⁻)/3): BDF2's step as an Euler step of 2h/3 from there
    (``redmax_step.bdf2_start`` on the stepper's FlatModel, through its compiled entry point)."""
    q_solve, v_solve = np.empty(st.model.nq), np.empty(st.model.nv)
    args = (st._flat.ints, st._flat.floats, np.ascontiguousarray(q, float), np.ascontiguousarray(qd, float),
            np.ascontiguousarray(q_prev, float), np.ascontiguousarray(qd_prev, float), st._zero_v, q_solve, v_solve)
    entry = getattr(st, "_bdf2_start", None)
    if entry is None:
        entry = st._bdf2_start = compiled_for(bdf2_start_flat, args)
    entry(*args)
    return q_solve, v_solve


def extrapolate(qd, smooth, after, factor):
    """The rates at the end of a trapezoidal stage: q̇ + factor (q̇̄* − q̇) + (q̇̄ − q̇̄*) — the solve's average rates
    q̇̄* extrapolated (factor 1/θ = 2), its impulses (contact, limits: q̇̄ − q̇̄*) applied once."""
    return qd + factor * (smooth - qd) + (after - smooth)


def step_euler_bdf2(st, state, control):
    """``"euler"`` and ``"bdf2"``: one solve. Every scheme returns ((q⁺, closure error), q̇⁺, the energy impulses took,
    the solve report, whether no impulse acted)."""
    h = st.dt
    q, qd, hs = state.q, state.qd, h
    if st._bdf2:
        prev = st._history.extrapolation(state)
        if prev is not None:
            q, qd = bdf2_solve_state(st, state.q, state.qd, *prev)
            hs = 2.0 * h / 3.0
        elif getattr(st, "_bdf2_start", None) is None:  # a first step (Euler): BDF2's start kernel loaded now (some
            bdf2_solve_state(st, q, qd, q, qd)  # ms), with the first step's compilation, not within the run
    smooth, v, loss, report = st.solve(q, qd, control, hs, hs)
    return st.onto_closures(integrate(st.model, q, v, hs)), v, loss, report, smooth is v


def step_tr_bdf2(st, state, control):
    """``"tr-bdf2"``: the trapezoidal stage over γh, then BDF2 over (1 − γ)h from the two points."""
    model, h, q0, qd0 = st.model, st.dt, state.q, state.qd
    g = GAMMA
    smooth, v, loss, report = st.solve(q0, qd0, control, 0.5 * g * h, g * h)
    q_g = st.onto_closures(integrate(model, q0, v, g * h))[0]
    qd_g = extrapolate(qd0, smooth, v, 2.0)
    c1, c2 = 1.0 / (g * (2.0 - g)), (1.0 - g) ** 2 / (g * (2.0 - g))
    h2 = (1.0 - g) / (2.0 - g) * h
    q_t = integrate(model, q_g, configuration_difference(model, q0, q_g), c1 - 1.0)  # c1 q_γ − c2 q, on the manifold
    smooth2, v2, loss2, report2 = st.solve(q_t, c1 * qd_g - c2 * qd0, control, h2, h2)
    return (st.onto_closures(integrate(model, q_t, v2, h2)), v2, loss + loss2, _sum(report, report2),
            smooth is v and smooth2 is v2)


def step_blend(st, state, control):
    """``"blend"`` (Dinev et al. 2018): the midpoint step, blended towards implicit Euler's when over budget."""
    model, h, q0, qd0 = st.model, st.dt, state.q, state.qd
    smooth, v, loss, report = st.solve(q0, qd0, control, 0.5 * h, h)
    q_m, error = st.onto_closures(integrate(model, q0, v, h))
    qd_m = extrapolate(qd0, smooth, v, 2.0)
    guard = st._energy_guard
    if guard is None:
        return (q_m, error), qd_m, loss, report, smooth is v
    budget = guard.preview_budget(state, control, q_m, qd_m, loss)
    kin, pot = guard.kinetic_and_potential(q_m, qd_m, control)
    if kin + pot <= budget:
        return (q_m, error), qd_m, loss, report, smooth is v
    smooth_e, v_e, loss_e, report_e = st.solve(q0, qd0, control, h, h)
    q_e, error_e = st.onto_closures(integrate(model, q0, v_e, h))
    report = _sum(report, report_e)
    kin_e, pot_e = guard.kinetic_and_potential(q_e, v_e, control)
    if kin_e + pot_e >= budget:  # implicit Euler is over it too: its step, and the budget's cap
        return (q_e, error_e), v_e, loss_e, report, smooth_e is v_e
    toward = configuration_difference(model, q_m, q_e)
    lo, hi = 0.0, 1.0  # the least blend α that meets the budget
    for _ in range(BLEND_BISECTIONS):
        a = 0.5 * (lo + hi)
        kin, pot = guard.kinetic_and_potential(integrate(model, q_m, toward, a), (1 - a) * qd_m + a * v_e, control)
        lo, hi = (a, hi) if kin + pot > budget else (lo, a)
    q_b = integrate(model, q_m, toward, hi)
    return (st.onto_closures(q_b)), (1 - hi) * qd_m + hi * v_e, (1 - hi) * loss + hi * loss_e, report, \
        smooth is v and smooth_e is v_e


def _sum(a, b):
    """Two solve reports (total iterations, most of one solve, solves, seconds) as one."""
    return a[0] + b[0], max(a[1], b[1]), a[2] + b[2], a[3] + b[3]


SCHEMES = {"euler": step_euler_bdf2, "bdf2": step_euler_bdf2, "tr-bdf2": step_tr_bdf2, "blend": step_blend}
