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
"""
from __future__ import annotations

import numpy as np

from ... import joints as J
from ...errors import SimulatorOptionError


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

    def rows(self, q, t: float):
        """(dofs (k,), rates (k,)): the rows of the step that starts at t (s) from configuration q (nq,)."""
        dofs, rates = [], []
        for j, qs, vs, jt, motion, _ in self._active(t):
            target = np.asarray(motion(t + self.dt), float)
            dofs.extend(range(vs.start, vs.stop))
            rates.extend(J.difference(jt, q[qs], target) / self.dt)
        return np.array(dofs, np.int64), np.array(rates, float)

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
