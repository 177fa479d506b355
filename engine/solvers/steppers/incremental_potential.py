"""Backward Euler as incremental potential minimization: the globalized RedMax step (issue #22).

The linearly implicit step (Eq. 2.13) is one Newton iteration of backward Euler with the
velocity-product forces (centrifugal, Coriolis) taken at the start of the step. A 512-link chain
whips (joint rates of 600 rad/s at its free end, docs/results/chains.md) and that step diverged
there at any frame-rate dt (1/240 s included). Here the step is instead the minimizer of

    Φ(u) = Σ_b [ ½ m_b |c_b(q⁺) − c̃_b|² + ½ tr((R_b(q⁺) − R̃_b) D_b (R_b(q⁺) − R̃_b)ᵀ) ] / h²
           + V(q⁺) + ½ h uᵀ C_r u,          q⁺ = q ⊕ h u,

over the joint rates u of the step (Gast et al. 2015, "Optimization Integrator for Large Time
Steps", in reduced coordinates): c_b, R_b the body's centre of mass and rotation (link → world),
c̃ and R̃ their predictions from the start of the step (below), D_b = ∫ρ r rᵀ its second
moment about the centre of mass (½ tr(I) 1 − I; the kinetic energy of a rigid body is
½ m |ċ|² + ½ tr(Ṙ D Ṙᵀ) exactly), V the potentials of the scene (gravity, springs, joint springs,
point forces) and C_r the joint damping. Its stationarity is backward Euler for the particles
that make up the bodies, constrained to the articulation; the centrifugal forces come from the
geometry of q⁺, not from a linearization at q.

Newton on Φ with the step's own system matrix M̃ = Jᵀ(M + hD + h²K)J + hD_r + h²K_r (with the
joints' geometric stiffness) as the Hessian — symmetric positive definite, so every direction is
a descent direction — and a backtracking (Armijo) line search on Φ. It starts from the linearly
implicit solution; a step where that already satisfies backward Euler costs one gradient and one
solve (the decrement) more. ∂Φ/∂q⁺ is one RNEA pass with the bodies' inertial residual forces as
external wrenches: O(n), as every other product of the step. The prediction is
x̃ = x + h ẋ − ½ h² ẍ(q̈ = 0), what the previous step's secant 2xⁿ − xⁿ⁻¹ predicts: with x + h ẋ
alone the minimizer carries half the centrifugal force and gains energy on a swinging chain.

Measured (docs/redmax.md): it converges quadratically (3 iterations on the 512-link chain), but
converged backward Euler still gains energy where the chain is in compression (a concave
potential) and diverges there too; ``energy_guard.py`` is what keeps that chain bounded. With
the guard it follows a converged reference somewhat better at 1/30 s, at ~13× the cost, so it is
an option (``newton_iterations``, default 0), not the default.

Scope: the forces with a potential (gravity, springs and cables, joint springs, point forces)
and the joint damping enter Φ; body damping and the springs' damping enter the gradient (the
backward Euler residual) but have no potential, so with them the line search is on an
approximate merit (it stops when it finds no decrease). Loop closures, contact and joint limits
keep the linearly implicit step (they are velocity-level projections after the solve).
"""
from __future__ import annotations

import numpy as np

from ..._jit import kernel
from ...algorithms.kinematics import joint_pass, velocity_pass, world_pass
from ...algorithms.rnea import rnea_kernel
from ...integrators import integrate
from ..stages.geometric_stiffness import JointGeometricStiffness, body_velocity_product
from .redmax_step import assemble_blocks


@kernel
def predict_bodies(tree, ws, com, c_pred, R_pred):
    """c_pred (n, 3) = each centre of mass in world, R_pred (n, 3, 3) = each rotation R (link → world), at
    the workspace's kinematics (the start of the prediction; ``predict`` adds the velocity terms)."""
    n = tree.parent.shape[0]
    for i in range(n):
        E = ws.X0_E[i]
        for a in range(3):
            c_pred[i, a] = ws.X0_r[i, a] + E[0, a] * com[i, 0] + E[1, a] * com[i, 1] + E[2, a] * com[i, 2]
            for b in range(3):
                R_pred[i, a, b] = E[b, a]


@kernel
def body_velocities(tree, ws, com, c_vel, R_vel):
    """ċ (n, 3) world velocity of each centre of mass and Ṙ = [ω]× R (n, 3, 3) from the twists ws.v
    (link coordinates, needs velocity_pass)."""
    n = tree.parent.shape[0]
    vl = np.empty(3)
    wl = np.empty(3)
    for i in range(n):
        E = ws.X0_E[i]
        w = ws.v[i]
        vl[0] = w[3] + w[1] * com[i, 2] - w[2] * com[i, 1]
        vl[1] = w[4] + w[2] * com[i, 0] - w[0] * com[i, 2]
        vl[2] = w[5] + w[0] * com[i, 1] - w[1] * com[i, 0]
        for a in range(3):
            c_vel[i, a] = E[0, a] * vl[0] + E[1, a] * vl[1] + E[2, a] * vl[2]
            wl[a] = E[0, a] * w[0] + E[1, a] * w[1] + E[2, a] * w[2]  # ω in world
        for a in range(3):  # Ṙ = [ω]× R, R[:, b] = E[b, :]
            for b in range(3):
                if a == 0:
                    R_vel[i, a, b] = wl[1] * E[b, 2] - wl[2] * E[b, 1]
                elif a == 1:
                    R_vel[i, a, b] = wl[2] * E[b, 0] - wl[0] * E[b, 2]
                else:
                    R_vel[i, a, b] = wl[0] * E[b, 1] - wl[1] * E[b, 0]


@kernel
def body_accelerations(tree, ws, com, acc6, c_acc, R_acc):
    """The velocity-product accelerations (q̈ = 0) of each body, world coordinates: c̈ (n, 3) of the
    centre of mass and R̈ = ([α]× + [ω]×[ω]×) R (n, 3, 3); acc6 (n, 6) scratch (link spatial
    accelerations). Needs joint_pass, world_pass and velocity_pass."""
    n = tree.parent.shape[0]
    a = np.empty(3)
    al = np.empty(3)
    wl = np.empty(3)
    W = np.empty((3, 3))
    for i in range(n):
        body_velocity_product(tree, ws, i, com[i], acc6, a)
        E = ws.X0_E[i]
        for r in range(3):
            c_acc[i, r] = E[0, r] * a[0] + E[1, r] * a[1] + E[2, r] * a[2]
            al[r] = E[0, r] * acc6[i, 0] + E[1, r] * acc6[i, 1] + E[2, r] * acc6[i, 2]
            wl[r] = E[0, r] * ws.v[i, 0] + E[1, r] * ws.v[i, 1] + E[2, r] * ws.v[i, 2]
        # W = [α]× + [ω]×[ω]× = [α]× + ω ωᵀ − |ω|² 1
        w2 = wl[0] * wl[0] + wl[1] * wl[1] + wl[2] * wl[2]
        for r in range(3):
            for k in range(3):
                W[r, k] = wl[r] * wl[k] - (w2 if r == k else 0.0)
        W[0, 1] -= al[2]
        W[0, 2] += al[1]
        W[1, 0] += al[2]
        W[1, 2] -= al[0]
        W[2, 0] -= al[1]
        W[2, 1] += al[0]
        for r in range(3):  # R[k, b] = E[b, k]
            for b in range(3):
                R_acc[i, r, b] = W[r, 0] * E[b, 0] + W[r, 1] * E[b, 1] + W[r, 2] * E[b, 2]


@kernel
def inertial_residual(tree, ws, mass, com, second_moment, gravity, c_pred, R_pred, inv_h2, wrench_out):
    """Inertia and gravity part of Φ at the current kinematics (needs joint_pass, world_pass), returned (J),
    and the inertia part's
    gradient as link-frame wrenches at the link origins (n, 6) [n; f]: the force m (c − c̃)/h² at the
    centre of mass and the torque of the rotation term, so that ∂Φ_inertia/∂q = Σ J_bᵀ wrench_out[b]."""
    n = tree.parent.shape[0]
    dR = np.empty((3, 3))
    S = np.empty((3, 3))
    fw = np.empty(3)
    tw = np.empty(3)
    total = 0.0
    for i in range(n):
        E = ws.X0_E[i]
        e = 0.0
        for a in range(3):
            c = ws.X0_r[i, a] + E[0, a] * com[i, 0] + E[1, a] * com[i, 1] + E[2, a] * com[i, 2]
            d = c - c_pred[i, a]
            fw[a] = mass[i] * d * inv_h2
            total -= mass[i] * gravity[a] * c
            e += mass[i] * d * d
            for b in range(3):
                dR[a, b] = E[b, a] - R_pred[i, a, b]
        D = second_moment[i]
        for a in range(3):  # S = R D dRᵀ (R[a, k] = E[k, a]); energy tr(dR D dRᵀ)
            for b in range(3):
                s = 0.0
                t = 0.0
                for k in range(3):
                    rk = 0.0
                    dk = 0.0
                    for m in range(3):
                        rk += E[m, a] * D[m, k]
                        dk += dR[a, m] * D[m, k]
                    s += rk * dR[b, k]
                    t += dk * dR[b, k]
                S[a, b] = s
                if a == b:
                    e += t
        total += 0.5 * e * inv_h2
        tw[0] = (S[1, 2] - S[2, 1]) * inv_h2
        tw[1] = (S[2, 0] - S[0, 2]) * inv_h2
        tw[2] = (S[0, 1] - S[1, 0]) * inv_h2
        for a in range(3):  # to link coordinates, about the link origin
            fl = E[a, 0] * fw[0] + E[a, 1] * fw[1] + E[a, 2] * fw[2]
            wrench_out[i, 3 + a] = fl
            wrench_out[i, a] = E[a, 0] * tw[0] + E[a, 1] * tw[1] + E[a, 2] * tw[2]
        f0, f1, f2 = wrench_out[i, 3], wrench_out[i, 4], wrench_out[i, 5]
        wrench_out[i, 0] += com[i, 1] * f2 - com[i, 2] * f1
        wrench_out[i, 1] += com[i, 2] * f0 - com[i, 0] * f2
        wrench_out[i, 2] += com[i, 0] * f1 - com[i, 1] * f0
    return total


def second_moments(model) -> np.ndarray:
    """D_b = ∫ρ r rᵀ (n, 3, 3) about each centre of mass, link coordinates: ½ tr(I_c) 1 − I_c."""
    out = np.empty((model.n_bodies, 3, 3))
    for i in range(model.n_bodies):
        m, c = model.body_mass[i], model.body_com[i]
        Ic = model.tree.link_inertia[i][:3, :3] - m * (np.dot(c, c) * np.eye(3) - np.outer(c, c))
        out[i] = 0.5 * np.trace(Ic) * np.eye(3) - Ic
    return out


class IncrementalPotentialStep:
    """Newton with line search on Φ (module doc) for one RedMax stepper; ``refine(...)`` after its
    linear solve. max_iter: Newton iterations per step; etol (J): stop when the Newton decrement
    −∇Φ·Δu (twice the decrease Newton predicts) is below it."""

    def __init__(self, stepper, max_iter: int = 8, etol: float = 1e-9):
        self.s = stepper
        model = stepper.model
        n, nv = model.n_bodies, model.nv
        self.max_iter, self.etol = int(max_iter), float(etol)
        self.refresh_first = False  # the first Newton iteration with M̃ at q⁺ (False: the step's M̃ at q)
        self._mass = np.ascontiguousarray(model.body_mass, float)
        self._com = np.ascontiguousarray(model.body_com, float)
        self._D = second_moments(model)
        self._gravity = np.ascontiguousarray(model.gravity, float)
        self.c_pred, self.R_pred = np.zeros((n, 3)), np.zeros((n, 3, 3))
        self.c_vel, self.R_vel = np.zeros((n, 3)), np.zeros((n, 3, 3))
        self.c_acc, self.R_acc, self._acc6 = np.zeros((n, 3)), np.zeros((n, 3, 3)), np.zeros((n, 6))
        self.g_wrench = np.zeros((n, 6))
        self._zero = np.zeros(nv)
        self._tension = JointGeometricStiffness(model, inertial=False)
        self.iterations = 0  # Newton iterations of the last step (0: the linear step was kept as is)
        self.line_search_failed = False

    def predict(self, q, qd):
        """c̃, R̃ from the start of the step (q, q̇)."""
        tree, ws, h = self.s.model.tree, self.s.ws, self.s.dt
        joint_pass(tree, q, ws)
        world_pass(tree, ws)
        velocity_pass(tree, q, qd, ws)
        predict_bodies(tree, ws, self._com, self.c_pred, self.R_pred)
        body_velocities(tree, ws, self._com, self.c_vel, self.R_vel)
        body_accelerations(tree, ws, self._com, self._acc6, self.c_acc, self.R_acc)
        # x̃ = x + h ẋ − ½ h² ẍ(q̈ = 0): what the previous step's secant would predict, 2 xⁿ − xⁿ⁻¹ (to
        # O(h³)); with x + h ẋ alone the minimizer carries half the centrifugal force and gains energy
        self.c_pred += h * self.c_vel - 0.5 * h * h * self.c_acc
        self.R_pred += h * self.R_vel - 0.5 * h * h * self.R_acc

    def merit(self, q, u, control, gradient=True):
        """(Φ (J), ∂Φ/∂q⁺ (nv,) or None, q⁺) at the rates u."""
        s = self.s
        model, tree, ws, h, fe = s.model, s.model.tree, s.ws, s.dt, s.forces
        qp = integrate(model, q, u, h)
        fe.evaluate(qp, u, control, ws)  # kinematics at q⁺ and the forces
        phi = inertial_residual(tree, ws, self._mass, self._com, self._D, self._gravity, self.c_pred, self.R_pred,
                                1.0 / (h * h), self.g_wrench)
        # V of the springs (a by-product of their forces) and of the control's loads and joint springs, on the
        # link poses at q⁺ (forces/energy.py: the scene's one energy)
        pot = fe.spring_energy + fe.scene_energy.control_potential(qp, control.joint_rest, control.point_forces,
                                                                   ws.X0_E, ws.X0_r)
        phi += pot + 0.5 * h * float(fe.joint_damping @ (u * u))
        if not gradient:
            return phi, None, qp
        ext = fe.body_wrenches(ws) - self.g_wrench
        grad = np.empty(model.nv)
        rnea_kernel(tree, qp, self._zero, self._zero, ext, 1.0, ws, grad)  # g − Jᵀ f + Jᵀ G
        grad += fe.joint_damping * u - fe.joint_forces(qp, control.joint_rest)
        return phi, grad, qp

    def prepare_hessian(self, control):
        """M̃ at the iterate whose merit (with gradient) was evaluated last: the body blocks at q⁺, the
        tension of the joints under gravity, springs and the inertial forces −m (c − c̃)/h² of this
        iterate (their geometric stiffness, ``geometric_stiffness.py``), then the solver's preparation."""
        s = self.s
        model, fe, h, ws = s.model, s.forces, s.dt, s.ws
        assemble_blocks(model.tree.link_inertia, fe.body_damping_blocks, h, s.pairs[0], s.pairs[1], s.K, s.D,
                              fe.point_force_body, fe.point_force_K, s.A, s.coupling)
        if s._joint_gs is not None:
            force = fe.wrench.copy()
            force[:, 3:] -= self.g_wrench[:, 3:]
            self._tension.add(model, force, h, s.A, ws)
        s._prepare_solver(h * fe.joint_damping + h * h * fe.joint_stiffness)

    def refine(self, q, qd, u, control, total_its, solves):
        """Backward Euler rates from the linear step's rates u (nv,) at the start (q, q̇). The first
        Newton direction uses the step's M̃ at q as factored; later ones M̃ at the iterate
        (``prepare_hessian``). Stops when the Newton decrement −∇Φ·Δu ≤ etol (J), or when the line
        search finds no decrease (``line_search_failed``). Returns (u, total linear-solver
        iterations, solves) with this refinement's added."""
        s, h = self.s, self.s.dt
        self.predict(q, qd)
        phi, grad, _ = self.merit(q, u, control)
        self.iterations = 0
        self.line_search_failed = False
        self.decrement = 0.0
        for it in range(self.max_iter):
            if it > 0 or self.refresh_first:
                self.prepare_hessian(control)
            du, its = s._solve(-h * grad, np.zeros_like(u))
            total_its += its
            solves += 1
            slope = h * float(grad @ du)  # dΦ/dα at α = 0 (< 0: M̃ is SPD)
            self.decrement = -slope
            if not slope < -self.etol:
                break
            alpha = 1.0
            while True:
                trial = u + alpha * du
                phi_t, _, _ = self.merit(q, trial, control, gradient=False)
                if phi_t <= phi + 1e-4 * alpha * slope:
                    break
                alpha *= 0.5
                if alpha < 1e-6:
                    self.line_search_failed = True
                    break
            if self.line_search_failed:
                break
            u = trial
            self.iterations = it + 1
            phi, grad, _ = self.merit(q, u, control)
        return u, total_its, solves


def make_refinement(stepper, newton_iterations):
    """The refinement for a RedMax stepper, or None (newton_iterations 0, or a scene with loop
    closures, contact or joint limits: those keep the linearly implicit step)."""
    k = int(newton_iterations)
    if k < 0:
        raise ValueError(f"newton_iterations must be >= 0, got {newton_iterations!r}")
    if k == 0 or len(stepper._closures.n_rot) or stepper.contact is not None or stepper.limits is not None:
        return None
    return IncrementalPotentialStep(stepper, max_iter=k)
