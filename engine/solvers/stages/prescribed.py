"""Prescribed joints (``Scene.prescribe``) as velocity rows of the step: RedMax's prescribed joints.

A joint j prescribed to follow q̄_j(t) gets, for the step from t to t + h, the rows

    q̇⁺_d = ((q̄_j(t + h) ⊖ q_j) / h)_d        for each of its dofs d,

i.e. G_p q̇⁺ = b_p with G_p the unit rows of its dofs: the known motion enters the step as bilateral
constraints beside the loop closures (the RedMax steppers append them to the closures' G of Eq. 2.42 and to
the post-stabilization; the explicit stepper projects ABA's q̇ with M⁻¹). With q⁺ = q ⊕ h q̇⁺ the joint is
then exactly on q̄ at the end of every step, whatever forces the rest of the tree puts on it; the row
impulses are what the world must apply to move it so. After ``until`` the joint moves freely, from the
velocity of its last prescribed step.

``project(v, W, ...)`` imposes the rows on a velocity in the metric W (W = M̃⁻¹ or M⁻¹): the exact
solution of the step's linear system with these equality rows (Gauss's principle for impulses), used by the
explicit stepper and to put the rows back after a stage that changed them (contact).

*BDF2* (``integrator="bdf2"``) solves from the extrapolated start q̃ = q ⊕ (q ⊖ q⁻)/3 over h_m = 2h/3; the rows
then aim at q̄(t + h) from q̃ (``rows(q̃, t, h_m)``), so the joint still ends every step on q̄, at BDF2's own rate
(3 q̄(t + h) − 4 q̄(t) + q̄(t − h)) / 2h — the slope at t + h of the parabola through the three points. That
parabola is wrong across a jump of the motion (a discontinuous key, a kink: the end of a trajectory, a
linear key's corner, a prescription's ``until``): the rate would overshoot by half the change of velocity and
the rest of the tree would extrapolate the kick it got. ``steady(t)`` tells BDF2's history whether it may
extrapolate the step that starts at t: no prescription ends between t − h and t, and each motion meets that
parabola at t ± h/2 to within ``JUMP_TOLERANCE`` of its step's own change (a smooth motion sampled at the
step misses it by ~(ωh)/16 of it, a kink by 1/8); otherwise the step is an Euler step and BDF2 restarts
from it (``BDF2History``).
"""
from __future__ import annotations

import numpy as np

from ... import joints as J
from ...errors import SimulatorOptionError

JUMP_TOLERANCE = 0.05  # a motion's miss of BDF2's parabola at t ± h/2, per dof, over its step's own change
JUMP_FLOOR = 1e-12  # (joint units) a miss this small is round-off, whatever the change


class PrescribedMotion:
    """The prescribed joints of one scene for steps of ``dt``."""

    def __init__(self, scene, dt: float):
        model = scene.model
        self.model, self.dt = model, float(dt)
        self.items = []  # (joint, q slice, v slice, type, motion, until)
        for p in scene.prescribed:
            j = p.index
            qs, vs = model.q_slice(p.joint), model.v_slice(p.joint)
            self.items.append((j, qs, vs, int(model.joint_type[j]), p.motion, float(p.until)))

    def __bool__(self) -> bool:
        return bool(self.items)

    def _active(self, t):
        return [it for it in self.items if t < it[5] - 1e-12]

    def rows(self, q, t: float, h_move: float | None = None):
        """(dofs (k,), rates (k,)): the rows of the step from t to t + dt (s) whose solve starts from configuration
        q (nq,) and moves it by h_move q̇⁺ (default dt): rates (q̄(t + dt) ⊖ q) / h_move, so the joint ends the step
        on q̄ — BDF2 solves from its extrapolated start q̃ over h_move = 2 dt / 3 (``steppers/redmax_schemes.py``),
        and these rates are then BDF2's own, (3 q̄(t + dt) − 4 q̄(t) + q̄(t − dt)) / 2dt on a smooth motion."""
        h = self.dt if h_move is None else float(h_move)
        dofs, rates = [], []
        for j, qs, vs, jt, motion, _ in self._active(t):
            target = np.asarray(motion(t + self.dt), float)
            dofs.extend(range(vs.start, vs.stop))
            rates.extend(J.difference(jt, q[qs], target) / h)
        return np.array(dofs, np.int64), np.array(rates, float)

    def still(self, t: float, rates) -> bool:
        """True when no prescribed joint moves in the step from t: each active motion is at the same q̄ at t and
        t + dt and the step's ``rates`` (k,) move it by no more than round-off (its rows then do no work)."""
        if float(np.max(np.abs(rates), initial=0.0)) * self.dt > JUMP_FLOOR:
            return False
        return all(np.array_equal(np.asarray(motion(t), float), np.asarray(motion(t + self.dt), float))
                   for _, _, _, _, motion, _ in self._active(t))

    def steady(self, t: float) -> bool:
        """True when BDF2 may extrapolate the step that starts at t (s) from the one before (module doc, *BDF2*):
        no prescription starts or ends between them, and every active motion is smooth over [t − dt, t + dt]."""
        dt = self.dt
        if len(self._active(t - dt)) != len(self._active(t)):
            return False
        return all(_smooth(motion, jt, t, dt) for _, _, _, jt, motion, _ in self._active(t))
    def errors(self, q, t: float):
        """(dofs, C): the position error q ⊖ q̄(t) of the joints prescribed at t, per dof (for the
        post-stabilization, whose Newton steps then keep them on q̄)."""
        dofs, errs = [], []
        start = t - self.dt
        for j, qs, vs, jt, motion, _ in self._active(start):
            target = np.asarray(motion(t), float)
            dofs.extend(range(vs.start, vs.stop))
            errs.extend(-J.difference(jt, q[qs], target))
        return np.array(dofs, np.int64), np.array(errs, float)

    def unit_rows(self, dofs) -> np.ndarray:
        """G_p (k, nv): the unit rows of ``dofs``."""
        G = np.zeros((len(dofs), self.model.nv))
        G[np.arange(len(dofs)), dofs] = 1.0
        return G


def _smooth(motion, joint_type, t, h):
    """True when q̄ = ``motion`` meets the parabola through q̄(t − h), q̄(t), q̄(t + h) at t ± h/2 (tangent space at
    q̄(t)) to within JUMP_TOLERANCE × the largest of |q̄(t ± h) ⊖ q̄(t)| and their difference, per dof."""
    at = [np.asarray(motion(t + s * h), float) for s in (-1.0, -0.5, 0.0, 0.5, 1.0)]
    before, now = J.difference(joint_type, at[0], at[2]), J.difference(joint_type, at[2], at[4])
    miss = np.maximum(np.abs(J.difference(joint_type, at[2], at[3]) - (3.0 * now + before) / 8.0),
                      np.abs(J.difference(joint_type, at[2], at[1]) + (now + 3.0 * before) / 8.0))
    change = np.maximum(np.maximum(np.abs(now), np.abs(before)), np.abs(now - before))
    return bool(np.all(miss <= JUMP_TOLERANCE * change + JUMP_FLOOR))


class BDF2History:
    """BDF2's history (``steppers.redmax_schemes.History``: ``extrapolation``, ``record``, ``reset``) on a scene
    with prescribed joints: no extrapolation into a step the prescribed motions jump over (``steady``), whose
    Euler step restarts BDF2."""

    def __init__(self, history, prescribed: PrescribedMotion):
        self.history, self.prescribed = history, prescribed

    def extrapolation(self, state):
        """(q⁻, q̇⁻) of the history, or None when it has none or the motions are not steady at state.t."""
        prev = self.history.extrapolation(state)
        return prev if prev is not None and self.prescribed.steady(float(state.t)) else None

    def record(self, start, q_new, qd_new, smooth: bool):
        self.history.record(start, q_new, qd_new, smooth)

    def reset(self):
        self.history.reset()


def project(v, W, dofs, rates, fixed=None):
    """v⁺ = v + W Gᵀ (G W Gᵀ)⁻¹ (b − G v) for the unit rows G of ``dofs`` with targets ``rates`` (b), in the
    metric W (nv, nv); ``fixed`` (m, nv) rows whose G v must not change (the loop closures) are kept too."""
    if len(dofs) == 0:
        return v
    G = np.zeros((len(dofs), len(v)))
    G[np.arange(len(dofs)), dofs] = 1.0
    b = np.asarray(rates, float) - G @ v
    if fixed is not None and len(fixed):
        G = np.vstack([G, fixed])
        b = np.concatenate([b, np.zeros(len(fixed))])
    WG = W @ G.T
    lam = np.linalg.lstsq(G @ WG, b, rcond=1e-12)[0]
    return v + WG @ lam


def refuse_drives(scene, solver: str) -> None:
    """For steppers without these stages (baraff, hard-constraints): SimulatorOptionError naming what the scene
    drives (prescribed joints, motors, breakable joints, force fields, velocity decay)."""
    drives = getattr(scene, "drives", None)
    if drives is None or not drives.any:
        return
    raise SimulatorOptionError(f"the '{solver}' solver does not simulate {', '.join(drives.names())} of scene "
                               f"'{scene.name}'; use 'pcg', 'direct', 'dense' or 'explicit'")
