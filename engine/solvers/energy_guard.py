"""Energy guard of the RedMax step on passive scenes (issue #22): a step may not create energy.

Why: on a long chain (512 links at 1/30 s, docs/results/chains.md) parts of the chain go into
compression — it buckles, the potential is locally concave — and whipping waves reach hundreds of
rad/s at the free end. Implicit Euler, linearly implicit (Eq. 2.13) or fully implicit
(``incremental_potential.py``), is energy-dissipative only for convex potentials: in a concave
direction with rate λ (s⁻²) a step gains about ½ λ h² |v|², and at hλ ≫ 1 that gain compounds
into divergence. Over one step the control is held (joint rest values, point forces and moving
loads at the step's start; each has a potential), so the scene is passive during the step and
its energy E = T + V cannot grow; after the step, if
E(q⁺, q̇⁺) > E(q, q̇), the step's rates are scaled so that E(q⁺, q̇⁺) = E(q, q̇) (all of q̇⁺, so
the direction of motion is kept; q⁺ is not touched: if V(q⁺) alone exceeds the budget, q̇⁺ = 0). The dissipation the step already had is
left alone: the guard removes only energy the discretization created.

Applies only to scenes without loop closures, contact and joint limits (their velocity
projections come after the solve); ``clamped_steps`` counts the steps it changed. Controllers
and moving loads may add energy between steps (the energy is recomputed under each step's control).
"""
from __future__ import annotations

import numpy as np

from .._jit import kernel
from ..algorithms.kinematics import joint_pass, velocity_pass, world_pass


@kernel(inline="llvm", refcounts=False)
def kinetic_and_gravity(tree, ws, mass, com, gravity, with_velocity):
    """(½ Σ vᵀ I v, −Σ m g·c) (J) from the workspace's kinematics (joint_pass, world_pass and, if
    ``with_velocity``, velocity_pass): link twists and link spatial inertias, centres of mass in world."""
    n = tree.parent.shape[0]
    kin = 0.0
    pot = 0.0
    for i in range(n):
        E = ws.X0_E[i]
        for a in range(3):
            c = ws.X0_r[i, a] + E[0, a] * com[i, 0] + E[1, a] * com[i, 1] + E[2, a] * com[i, 2]
            pot -= mass[i] * gravity[a] * c
        if with_velocity:
            v = ws.v[i]
            I = tree.link_inertia[i]
            for r in range(6):
                t = 0.0
                for k in range(6):
                    t += I[r, k] * v[k]
                kin += 0.5 * v[r] * t
    return kin, pot


class EnergyGuard:
    """``apply(state, q_new, qd_new, control) -> qd_new`` for one stepper (module doc): RedMax, or the
    explicit one (``energy_guard=True``; off by default there)."""

    def __init__(self, stepper, rtol: float = 1e-9):
        self.s = stepper
        self.rtol = float(rtol)
        self.clamped_steps = 0
        model, fe = stepper.model, stepper.forces
        self._mass = np.ascontiguousarray(model.body_mass, float)
        self._com = np.ascontiguousarray(model.body_com, float)
        self._gravity = np.ascontiguousarray(model.gravity, float)
        # nothing but gravity stores energy: no springs/cables, point forces (nor moving loads), joint springs
        scene = stepper.scene
        self._fast = (len(fe.pairs[0]) == 0 and not len(scene.point_forces) and not len(scene.moving_loads)
                      and not np.any(fe.joint_stiffness))
        self.budget = None  # J: the most energy the scene may have now
        # (bytes of q⁺, q̇⁺ and the control's arrays, the arrays (for dtype and shape), E⁺) of the last step:
        # the next step's start if nothing changed (bytes: a copy that compares in one go)
        self._last = None

    def _energy(self, q, qd, control):
        """E(q, q̇) (J), as ``ForceEvaluator.energy``: one kinematics pass and one kernel when only gravity
        stores energy (a chain), else the evaluator's forces pass for the springs' and point forces'
        potentials (plus the joint springs')."""
        s = self.s
        tree, ws, fe = s.model.tree, s.ws, s.forces
        if self._fast:
            joint_pass(tree, q, ws)
            world_pass(tree, ws)
            velocity_pass(tree, q, qd, ws)
            extra = 0.0
        else:
            fe.evaluate(q, qd, control, ws)  # the same three passes, then the springs and point forces
            extra = fe.spring_energy + fe.point_force_energy + fe.joint_spring_energy(q, control.joint_rest)
        kin, pot = kinetic_and_gravity(tree, ws, self._mass, self._com, self._gravity, True)
        return kin + pot + extra

    def apply(self, state, q_new, qd_new, control, energies=None):
        """qd_new, or its rates scaled down (module doc). energies: (E(q, q̇), E(q⁺, q̇⁺)) when the step
        already has them (``redmax_step.pcg_step``), else computed here."""
        last, arrays = self._last, [state.q, state.qd, control.joint_rest, *control.point_forces]
        try:
            now = [a.tobytes() for a in arrays]
        except AttributeError:  # a control built from lists
            arrays = [np.asarray(a) for a in arrays]
            now = [a.tobytes() for a in arrays]
        if last is not None and now == last[0]:  # the usual case: the very arrays of the last step, unchanged
            same_state = same_control = True
        else:  # np.array_equal against the last step's arrays, rebuilt from their bytes
            before = None if last is None else [np.frombuffer(b, a.dtype).reshape(a.shape) for b, a in
                                                zip(last[0], last[1])]
            same_state = (before is not None and np.array_equal(before[0], arrays[0])
                          and np.array_equal(before[1], arrays[1]))
            same_control = same_state and len(before) == len(arrays) and all(
                np.array_equal(a, b) for a, b in zip(before[2:], arrays[2:]))
        if same_control:
            e0 = last[2]
        else:
            e0 = self._energy(state.q, state.qd, control) if energies is None else float(energies[0])
        if self.budget is None or not same_state:  # a new start: the budget is the state's energy
            self.budget = e0
        elif e0 != last[2]:  # the control changed between steps (a controller, a moving load)
            self.budget += e0 - last[2]
        # the joint dampers remove h Σ c q̇⁺² (the step's own rates)
        self.budget -= self.s.dt * float(self.s.forces.joint_damping @ (qd_new * qd_new))
        e1 = self._energy(q_new, qd_new, control) if energies is None else float(energies[1])
        if e1 > self.budget + self.rtol * (abs(self.budget) + 1.0):
            v1 = self._energy(q_new, np.zeros_like(qd_new), control)  # the potential at q⁺
            t1 = e1 - v1
            qd_new = qd_new * (np.sqrt(max(self.budget - v1, 0.0) / t1) if t1 > 0 else 0.0)
            e1 = self._energy(q_new, qd_new, control)
            self.clamped_steps += 1
        arrays[:2] = q_new, qd_new
        self._last = ([a.tobytes() for a in arrays], arrays, e1)
        return qd_new


def make_energy_guard(stepper, enabled):
    """The guard for a RedMax stepper, or None: off, or a scene it does not apply to (loop closures,
    contact, joint limits)."""
    if not enabled:
        return None
    if len(stepper.scene.loop_closures) or stepper.contact is not None or stepper.limits is not None:
        return None
    return EnergyGuard(stepper)
