"""Velocity motors (``Scene.add_motor``) as bounded rows of the step, solved in the step's own metric.

A motor is one row g (12,) on the link twists of its two bodies — e·(ω_b − ω_a) for an angular motor about
the world axis e (carried by body a), e·(ẋ_b − ẋ_a) between its two points for a linear one — mapped to
joint space by Jᵀ (``loop_closures.constraint_jacobian``). After the step's velocity solve v* (and its
closures and prescribed rows), the stage finds impulses λ with

    v⁺ = v* + W' Gᵀ λ,   |λ_i| ≤ F_i h,   and row i of G v⁺ = target_i wherever |λ_i| < F_i h,

by the engine's projected Gauss–Seidel (``contact.pgs.pgs_kernel``, bounded rows) on G W' Gᵀ (a box LCP, as a
friction row). W = M̃⁻¹ is the step's own metric
(M + h D + h² K of the RedMax step, M for the explicit one, by the Θ(n²) inverse); W' = W − W Cᵀ (C W Cᵀ)⁺ C W
keeps the rows C of the loop closures and prescribed joints as their solve left them. Since the RedMax step
is linear in q̇⁺, adding the motor impulse after its solve is the same as solving the motor row with it: the
motor is implicit in every spring and damper of the step, the way stable PD is, and holds its speed at
frame-rate steps. With ``max_force`` = inf it is a velocity constraint. h is the step of the solve: dt for
implicit Euler and the explicit step, 2dt/3 for BDF2's solve from its extrapolated start, whose velocity change
is (2dt/3) M⁻¹ f — so a saturated motor accelerates at F / inertia under either (``apply(..., h=)``).
"""
from __future__ import annotations

import numpy as np

from ...algorithms.kinematics import joint_pass, world_pass
from ...algorithms.minv import minv
from ...contact.pgs import pgs_kernel
from .loop_closures import constraint_jacobian

SWEEPS = 200


class Servos:
    """The motors of one scene; ``apply(q, v, inertia, joint_diag, fixed) -> v⁺``."""

    def __init__(self, scene, dt: float):
        self.model, self.dt = scene.model, float(dt)
        self.motors = list(scene.motors)
        self.ws = self.model.make_workspace()
        self.last_impulses = np.zeros(len(self.motors))  # each motor's impulse over the last step (N·m·s or N·s)

    def __bool__(self) -> bool:
        return bool(self.motors)

    def rows(self, q) -> np.ndarray:
        """G (k, nv) of the motors at configuration q."""
        model, ws = self.model, self.ws
        joint_pass(model.tree, np.ascontiguousarray(q, float), ws)
        world_pass(model.tree, ws)
        k = len(self.motors)
        bodies = np.empty((k, 2), np.int64)
        rows = np.zeros((k, 12))
        for i, m in enumerate(self.motors):
            Ra = np.eye(3) if m.body_a < 0 else ws.X0_E[m.body_a].T
            e = Ra @ m.axis_a  # the world axis, turning with body a
            bodies[i] = (m.body_a, m.body_b)
            for side, body, point, sign in ((0, m.body_a, m.point_a, -1.0), (1, m.body_b, m.point_b, 1.0)):
                if body < 0:
                    continue
                e_link = ws.X0_E[body] @ e  # Rᵀ e
                if m.kind == "angular":
                    rows[i, 6 * side:6 * side + 3] = sign * e_link
                else:  # e·ẋ of a link point p: ẋ = R (ω × p + v), so the row is [p × Rᵀe, Rᵀe]
                    rows[i, 6 * side:6 * side + 3] = sign * np.cross(point, e_link)
                    rows[i, 6 * side + 3:6 * side + 6] = sign * e_link
        G = np.empty((k, model.nv))
        constraint_jacobian(model.tree, ws, bodies, rows, np.empty((model.n_bodies, 6)), G)
        return G

    def apply(self, q, v, inertia=None, joint_diag=None, fixed=None, h=None):
        """v⁺ (nv,) from v* (nv,) at q; inertia, joint_diag: the RedMax step's A and r (None: M, explicit);
        fixed (m, nv): rows to keep (closures, prescribed joints); h: the step of the solve v* came from (s;
        default dt) — BDF2's solve is over 2dt/3, and a force F acting over it is the impulse F h there."""
        h = self.dt if h is None else float(h)
        G = self.rows(q)
        W = minv(self.model, q, inertia=inertia, joint_diag=joint_diag, ws=self.ws)
        if fixed is not None and len(fixed):
            WC = W @ fixed.T
            W = W - WC @ np.linalg.pinv(fixed @ WC, rcond=1e-12, hermitian=True) @ WC.T
        WGt = W @ G.T
        A = 0.5 * (G @ WGt + (G @ WGt).T)
        bound = np.array([m.max_force * h for m in self.motors])
        target = np.array([m.target_velocity for m in self.motors])
        lam = np.zeros(len(target))
        pgs_kernel(np.ascontiguousarray(A), G @ v, target, bound, lam, SWEEPS, 1e-12, 0.0, 1)  # (the one PGS)
        self.last_impulses = lam * (self.dt / h)  # the force's impulse over the whole step
        return v + WGt @ lam
