"""The forces stage of a step: every force of a scene at (q, q̇, control), with its K and D blocks.

One evaluator serves every reduced-coordinate stepper (explicit and RedMax):
it runs the kinematics passes into the caller's workspace and fills

* ``wrench`` (n, 6): link-frame body wrenches f_m of springs, cables, dampers and point
  forces (stiffness part), ``wrench_damping`` (n, 6) their damping part;
* ``K``, ``D`` (m, 12, 12): per pair, −∂f/∂x and −∂f/∂v over [body a; body b]
  (Gauss–Newton part, plus the geometric part with ``geometric_stiffness``);
  ``point_force_K`` (k, 6, 6) for the point forces;
* ``body_damping_blocks`` (n, 6, 6): D_m = d·I₆ on each body twist plus the velocity decay's
  mass-proportional drag (``Scene.set_velocity_decay``), in link coordinates;
* joint springs: f_r = −K_r (q ⊖ q_rest) (nv,), with K_r, D_r diagonal (``joint_stiffness``,
  ``joint_damping``, copied from the scene at construction);
* the springs' and point forces' potentials (J) as by-products of their wrenches; the scene's energy
  itself is ``energy`` (``forces/energy.py``, the one implementation).

Springs, dampers and body damping are copied when the evaluator is built; the
joint rest configuration and the point forces come with each step's ``Control``.
"""
from __future__ import annotations

import numpy as np

from ..algorithms.kinematics import joint_pass, velocity_pass, world_pass
from ..integrators import configuration_difference
from ..spatial import add_transformed_inertia
from .energy import SceneEnergy
from .point_force import point_force_kernel
from .point_pair import point_pair_kernel


def body_damping_blocks(model, d, decay=None):
    """D_m on each body twist, moved from the body frame (COM, principal axes) to link frames: X_blᵀ D X_bl with
    D = d·I₆ (``Scene.set_body_damping``) plus, for ``decay`` (n, 2) rates (1/s) of ``Scene.set_velocity_decay``,
    diag(c_ω I_principal, c_v m 1₃): the COM velocity and the angular velocity decaying at those rates."""
    out = np.zeros((model.n_bodies, 6, 6))
    for i in range(model.n_bodies):
        D = d[i] * np.eye(6)
        if decay is not None and np.any(decay[i]):
            D[:3, :3] += decay[i, 1] * np.diag(model.body_principal_inertia[i])
            D[3:, 3:] += decay[i, 0] * model.body_mass[i] * np.eye(3)
        if np.any(D):
            E = np.ascontiguousarray(model.body_rotation[i].T)
            add_transformed_inertia(E, np.ascontiguousarray(model.body_com[i]), D, out[i])
    return out


class ForceEvaluator:
    """f, K and D of a scene's forces (see the module docstring); ``evaluate`` fills them."""

    def __init__(self, scene, geometric_stiffness: bool = False):
        self.model = model = scene.model
        self.geometric_stiffness = bool(geometric_stiffness)
        n, nv = model.n_bodies, model.nv
        self.pairs = scene.pair_arrays()
        m = len(self.pairs[0])
        self.K, self.D = np.zeros((m, 12, 12)), np.zeros((m, 12, 12))
        self.active = np.zeros(m, dtype=np.int64)
        self.wrench, self.wrench_damping = np.zeros((n, 6)), np.zeros((n, 6))
        self.body_damping_blocks = body_damping_blocks(model, scene.body_damping, getattr(scene, "velocity_decay", None))
        self.joint_stiffness = scene.joint_stiffness.copy()
        self.joint_damping = scene.joint_damping.copy()
        # the dofs of joints with springs (the displacement is computed for every joint, then masked)
        # (vectorized: a Python loop over joints here was half of a Simulator's construction)
        dof_joint = np.repeat(np.arange(n), model.joint_nv)  # v_start is the running sum of joint_nv
        stiff = np.zeros(n, dtype=bool)
        stiff[dof_joint[self.joint_stiffness != 0]] = True
        self._spring_v = np.flatnonzero(stiff[dof_joint]).astype(np.int64)
        self._difference = np.zeros(nv)
        self.point_force_body = np.zeros(0, dtype=np.int64)
        self.point_force_K = np.zeros((0, 6, 6))
        self.spring_energy = 0.0
        self.point_force_energy = 0.0
        self.scene_energy = SceneEnergy(model, self)  # T, V of a state (the calling thread's scratch workspace)

    # ------------------------------------------------------------ joint springs
    def joint_displacement(self, q, rest) -> np.ndarray:
        """q ⊖ q_rest (nv,) on the dofs with joint springs, 0 elsewhere, joint by joint on its manifold
        (coordinates subtract; spherical and free joints take the rotation/twist difference)."""
        d = np.zeros(self.model.nv)
        if self._spring_v.size:
            iv = self._spring_v
            d[iv] = configuration_difference(self.model, rest, q, self._difference)[iv]
        return d

    def joint_forces(self, q, rest) -> np.ndarray:
        """f_r = −K_r (q ⊖ q_rest) (nv,)."""
        return -self.joint_stiffness * self.joint_displacement(q, rest)

    # ------------------------------------------------------------ all forces
    def evaluate(self, q, qd, control, ws) -> None:
        """Kinematics at (q, q̇) into workspace ``ws`` and the body forces: fills wrench,
        wrench_damping, K, D, point_force_body/K and the spring and point-force potentials."""
        model = self.model
        joint_pass(model.tree, q, ws)
        world_pass(model.tree, ws)
        velocity_pass(model.tree, q, qd, ws)
        self.wrench[:] = 0.0
        self.wrench_damping[:] = 0.0
        self.spring_energy = point_pair_kernel(ws.X0_E, ws.X0_r, ws.v, self.pairs, self.geometric_stiffness,
                                               self.wrench, self.wrench_damping, self.K, self.D, self.active)
        pf_body, pf_point, pf_force = control.point_forces
        pf_K = np.zeros((len(pf_body), 6, 6))
        self.point_force_energy = point_force_kernel(ws.X0_E, ws.X0_r, pf_body, pf_point, pf_force,
                                                     self.geometric_stiffness, self.wrench, pf_K)
        self.point_force_body, self.point_force_K = pf_body, pf_K

    def body_wrenches(self, ws) -> np.ndarray:
        """(n, 6) total link-frame body wrench at the evaluated state, body damping included
        (what an explicit step feeds to ABA: f_m − D_m φ)."""
        return self.wrench + self.wrench_damping - np.einsum("nij,nj->ni", self.body_damping_blocks, ws.v)

    def energy(self, state, control) -> float:
        """Kinetic + gravitational + spring + point-force + joint-spring energy (J) at ``state`` under ``control``
        (``forces/energy.py``; computed in scratch: no output array of ``evaluate`` and no stepper workspace is
        touched)."""
        kin, pot, _ = self.scene_energy(state.q, state.qd, control)
        return kin + pot
