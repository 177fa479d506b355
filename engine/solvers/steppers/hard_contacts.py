"""The hard-constraints solver's contacts (paper 003, Appendix C): impulses on the factored joint system.

Contacts come from the detection every solver shares (``engine.contact.handler.scene_detector``: the
ground, static colliders, bodies among themselves). After the step's external impulses and the joints'
velocity projection, each penetrating or approaching contact in turn gets an impulse that brings its normal
velocity to the shared target (speculative for an open gap, Baumgarte push-out, restitution;
``normal_targets``) and, within the friction cone, stops its sliding, while the joints keep their
velocities: its 3 rows (on one body, or on two: the relative velocity) are appended to the factored joint
system with Appendix C (``factor_augment``), symmetric for sticking, asymmetric (λ_t = −μ λ_n ŝ) for
sliding. A few sweeps over the contacts make them consistent.
"""
from __future__ import annotations

import numpy as np

from ...contact.handler import ContactMemory, normal_targets, scene_detector
from ...contact.jacobian import tangent_basis
from ...spatial import rotation_exp


class ImpulseContacts:
    """The contacts of one hard-constraints stepper: ``resolve`` returns the stacked body velocities u
    (n·6: v, ω per body) after the contact impulses. system: its ``HardConstraintSystem``; margin: the
    detection margin (m); sweeps: passes over the contacts."""

    def __init__(self, scene, system, dt: float, margin: float, sweeps: int):
        self.system, self.dt, self.sweeps = system, float(dt), int(sweeps)
        self.margin = float(margin)
        self.detector = scene_detector(scene, self.margin)
        self.memory = ContactMemory()

    def resolve(self, R, x, J, Minv, factor, u):
        """Contacts one at a time on the factored joint system (Appendix C); returns new u."""
        h, sys = self.dt, self.system
        R_l, p_l = sys.link_poses_of(R, x)
        w = u.reshape(-1, 6)
        R_end, x_end = rotation_exp(h * w[:, 3:]) @ R, x + h * w[:, :3]  # where the free motion goes: the sweep
        found = self.detector.detect(R_l, p_l, *sys.link_poses_of(R_end, x_end))
        if len(found) == 0:
            self.memory.clear()
            return u
        rows = _contact_rows(found, x, u.shape[0])
        u_free = np.array([Jc[0] @ u for Jc in rows])
        _, came_in = self.memory.recall(found.feature)
        target, speed = normal_targets(found.depth, u_free, found.restitution, came_in, h, 0.2, 2e-4, 0.1)
        JMinv = J @ Minv
        total = np.zeros((len(found), 3))
        for _ in range(self.sweeps):
            for c in range(len(found)):
                Jc = rows[c]
                uc = Jc @ u
                if uc[0] >= target[c] - 1e-12:
                    continue  # not approaching faster than the target allows: no impulse
                A12 = np.asarray(JMinv @ Jc.T)          # J M⁻¹ J_cᵀ (joint rows × 3)
                A22 = Jc @ (Minv @ Jc.T)
                if A22[0, 0] <= 1e-12 * max(1.0, np.abs(A22).max()):
                    continue  # nothing can move along this contact (both sides welded)
                b2 = np.array([target[c] - uc[0], -uc[1], -uc[2]])
                lam_j, lam_c = factor.augment(A12, A12.T, A22).solve(np.zeros(J.shape[0]), b2)  # sticking
                mu = found.friction[c]
                if np.hypot(lam_c[1], lam_c[2]) > mu * lam_c[0]:  # sliding: λ_t = −μ λ_n ŝ (asymmetric rows)
                    slip = uc[1:] / max(np.linalg.norm(uc[1:]), 1e-12)
                    A21 = np.vstack([A12.T[0], np.zeros((2, J.shape[0]))])
                    A22s = np.array([A22[0], [mu * slip[0], 1.0, 0.0], [mu * slip[1], 0.0, 1.0]])
                    lam_j, lam_c = factor.augment(A12, A21, A22s).solve(np.zeros(J.shape[0]),
                                                                        np.array([target[c] - uc[0], 0.0, 0.0]))
                if lam_c[0] <= 0.0:
                    continue
                total[c] += lam_c
                u = u + Minv @ (J.T @ lam_j + Jc.T @ lam_c)
        self.memory.keep(found.feature, total, speed)
        return u


def _contact_rows(found, x, n6: int) -> list:
    """Per contact, its 3 rows (normal, two tangents) on the stacked body velocities: on its body, minus
    on the other body of a body–body contact (the relative velocity)."""
    tangents = tangent_basis(found.normal)
    other = found.other_bodies()
    rows = []
    for c in range(len(found)):
        Jc = np.zeros((3, n6))
        for body, sign in ((int(found.body[c]), 1.0), (int(other[c]), -1.0)):
            if body < 0:
                continue
            r = found.point[c] - x[body]
            for k, d in enumerate((found.normal[c], tangents[c, 0], tangents[c, 1])):
                Jc[k, 6 * body:6 * body + 3] += sign * d
                Jc[k, 6 * body + 3:6 * body + 6] += sign * np.cross(r, d)
        rows.append(Jc)
    return rows
