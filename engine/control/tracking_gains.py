"""Gains and rest poses for joints that track a reference with joint springs in an implicit step (the add-on's
Follow Animation; the RedMax step treats joint springs like stable PD, seed 001).

``tracking_gains(model, q, frequency)``: per joint j, with I_j the largest diagonal entry of the joint's block
of M(q) — the inertia of everything the joint carries, about its own axes —

    K_p = I_j ω²,   K_d = 2 ζ I_j ω,   ω = 2π · frequency,

the same natural frequency and damping ratio for a tail's base joint, which moves the whole tail, as for its
tip, which moves one bone. Fixed gains tuned for one of them leave the other sagging or oscillating. One value
for all dofs of a joint: a ball joint's twist dof carries almost no inertia, and its own diagonal entry would
leave the twist loose.

``tracking_rest(model, q̄, q̄̇, q̄̈, kp, kd)``: the rest configuration that makes the spring's force at q = q̄,
q̇ = q̄̇ equal to what following q̄ exactly takes (inverse dynamics, RNEA) and damps toward q̄̇ instead of 0:

    −K_p (q̄ ⊖ rest) − K_d q̄̇ = τ_ff(q̄, q̄̇, q̄̈)   ⇒   rest = q̄ ⊕ K_p⁻¹ (τ_ff + K_d q̄̇)

on every dof with K_p > 0 (others keep q̄). Gravity then does not make the joints sag and the damping does
not make them lag; the springs only correct what the reference did not foresee (cables, contact, the
reference's own inconsistencies).
"""
from __future__ import annotations

import math

import numpy as np

from .. import joints as J
from ..algorithms.crba import crba
from ..algorithms.rnea import rnea
from ..integrators import integrate


def tracking_gains(model, q, frequency: float, damping_ratio: float = 1.0, joints=None):
    """(kp (nv,), kd (nv,)) of the module docstring at configuration q (nq,), for the joints named in ``joints``
    (default all; free joints never: they take no stiffness). frequency in Hz (> 0)."""
    if not (math.isfinite(frequency) and frequency > 0 and math.isfinite(damping_ratio) and damping_ratio >= 0):
        raise ValueError(f"tracking gains need a frequency > 0 Hz and a damping ratio ≥ 0, got {frequency}, "
                         f"{damping_ratio}")
    omega = 2.0 * math.pi * frequency
    M = crba(model, q)
    kp, kd = np.zeros(model.nv), np.zeros(model.nv)
    names = model.joint_names if joints is None else joints
    for name in names:
        j = model.joint_index(name)
        vs = model.v_slice(name)
        if vs.stop == vs.start or J.JOINT_FLOATS[model.joint_type[j]]:  # fixed joints have no dofs; free ones no stiffness
            continue
        inertia = float(np.diag(M)[vs].max())
        kp[vs] = inertia * omega * omega
        kd[vs] = 2.0 * damping_ratio * inertia * omega
    return kp, kd


def tracking_rest(model, q_ref, qd_ref, qdd_ref, kp, kd, f_ext=None) -> np.ndarray:
    """rest (nq,) of the module docstring; q_ref (nq,), qd_ref, qdd_ref, kp, kd (nv,); f_ext: (n, 6) link-frame
    wrenches the reference should hold against besides gravity (default none)."""
    tau = rnea(model, q_ref, qd_ref, qdd_ref, f_ext)
    shift = np.zeros(model.nv)
    on = kp > 0
    shift[on] = (tau[on] + kd[on] * qd_ref[on]) / kp[on]
    return integrate(model, q_ref, shift, 1.0)
