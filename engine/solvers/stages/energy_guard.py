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

from ..._jit import compiled_for, kernel
from ...algorithms._flat import unpack_tree, unpack_workspace
from ...algorithms.kinematics import joint_pass, velocity_pass, world_pass
from ...integrators import position_error


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


@kernel
def pair_energy(X0_E, X0_r, pairs):
    """Σ ½ k (ℓ − L)² (J) over the springs and taut cables of ``pairs`` (``Scene.pair_arrays``), with the
    arithmetic of ``point_pair_kernel``'s energy but none of its wrenches and 12 × 12 blocks."""
    energy = 0.0
    x1 = np.empty(3)
    x2 = np.empty(3)
    for s in range(pairs.body_a.shape[0]):
        for x, body, l in ((x1, pairs.body_a[s], pairs.point_a[s]), (x2, pairs.body_b[s], pairs.point_b[s])):
            if body < 0:
                for k in range(3):
                    x[k] = l[k]
            else:
                for k in range(3):  # x = p + Eᵀ l
                    x[k] = X0_r[body, k] + X0_E[body, 0, k] * l[0] + X0_E[body, 1, k] * l[1] + X0_E[body, 2, k] * l[2]
        ell = 0.0
        for k in range(3):
            ell += (x2[k] - x1[k]) * (x2[k] - x1[k])
        ell = np.sqrt(ell)
        L = pairs.rest_length[s]
        if ell < 1e-12 or (pairs.tension_only[s] and ell <= L):
            continue
        stretch = ell - L
        energy += 0.5 * pairs.stiffness[s] * stretch * stretch
    return energy


@kernel
def point_force_energy(X0_E, X0_r, body, point, force):
    """−Σ f·x (J): the potential of constant world forces f on link points (body (k,), point (k, 3) in the
    link frame, force (k, 3) world), with the arithmetic of ``point_force_kernel``'s energy."""
    energy = 0.0
    for s in range(body.shape[0]):
        b = body[s]
        if b < 0:
            continue
        l = point[s]
        x0 = X0_r[b, 0] + X0_E[b, 0, 0] * l[0] + X0_E[b, 1, 0] * l[1] + X0_E[b, 2, 0] * l[2]
        x1 = X0_r[b, 1] + X0_E[b, 0, 1] * l[0] + X0_E[b, 1, 1] * l[1] + X0_E[b, 2, 1] * l[2]
        x2 = X0_r[b, 2] + X0_E[b, 0, 2] * l[0] + X0_E[b, 1, 2] * l[1] + X0_E[b, 2, 2] * l[2]
        energy -= force[s, 0] * x0 + force[s, 1] * x1 + force[s, 2] * x2
    return energy


@kernel
def passive_energy(ints, floats, work, q, qd, mass, com, gravity, rest, spring_v, joint_stiffness, zero_v, difference,
                   pairs):
    """E(q, q̇) = T + V_gravity + V_springs + ½ Σ K_r (q ⊖ q_rest)² (J) in one call, for scenes without point
    forces or moving loads, from the kinematics at (q, q̇) (into the workspace). ints, floats, work: the
    stepper's ``FlatModel`` buffers (tree and workspace: three arguments to unbox instead of ~30 arrays,
    which cost more than the passes on a small model); pairs: ``Scene.pair_arrays``; difference (nv,) is
    scratch; spring_v: the dofs with joint springs."""
    tree = unpack_tree(ints, floats)
    ws = unpack_workspace(ints, work)
    joint_pass(tree, q, ws)
    world_pass(tree, ws)
    velocity_pass(tree, q, qd, ws)
    spring = pair_energy(ws.X0_E, ws.X0_r, pairs)
    kin, pot = kinetic_and_gravity(tree, ws, mass, com, gravity, True)
    joint = 0.0
    if spring_v.shape[0] > 0:
        position_error(tree, q, zero_v, rest, 0.0, difference)
        for j in range(spring_v.shape[0]):
            d = spring_v[j]
            joint += joint_stiffness[d] * (difference[d] * difference[d])
    return kin + pot + spring + 0.5 * joint


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
        # no point forces (nor moving loads), a stepper whose workspace is a FlatModel's (RedMax): the energy
        # is one kernel call (passive_energy)
        scene = stepper.scene
        self._fast = (not len(scene.point_forces) and not len(scene.moving_loads)
                      and getattr(stepper, "_flat", None) is not None and stepper.ws is stepper._flat.ws)
        self._spring_v = np.flatnonzero(fe.joint_stiffness).astype(np.int64)
        self._stiffness = np.ascontiguousarray(fe.joint_stiffness, float)
        self._zero_v, self._difference = np.zeros(model.nv), np.zeros(model.nv)
        self._passive_energy = None  # passive_energy's entry point for these argument types (on first use)
        self.budget = None  # J: the most energy the scene may have now
        # (bytes of q⁺, q̇⁺ and the control's arrays, the arrays (for dtype and shape), E⁺) of the last step:
        # the next step's start if nothing changed (bytes: a copy that compares in one go)
        self._last = None

    def _energy(self, q, qd, control):
        """E(q, q̇) (J), as ``ForceEvaluator.energy``: one kernel without point forces and moving loads (a
        chain, the thesis trees), else the evaluator's forces pass for the springs' and point forces'
        potentials (plus the joint springs')."""
        s = self.s
        tree, ws, fe = s.model.tree, s.ws, s.forces
        if self._fast:  # one kernel call: the evaluator's Python passes cost 1.4× a direct step on the thesis trees
            flat = s._flat
            args = (flat.ints, flat.floats, flat.work, np.ascontiguousarray(q, float), np.ascontiguousarray(qd, float),
                    self._mass, self._com, self._gravity, np.ascontiguousarray(control.joint_rest, float),
                    self._spring_v, self._stiffness, self._zero_v, self._difference, fe.pairs)
            if self._passive_energy is None:
                self._passive_energy = compiled_for(passive_energy, args)
            return float(self._passive_energy(*args))
        fe.evaluate(q, qd, control, ws)  # the same three passes, then the springs and point forces
        extra = fe.spring_energy + fe.point_force_energy + fe.joint_spring_energy(q, control.joint_rest)
        kin, pot = kinetic_and_gravity(tree, ws, self._mass, self._com, self._gravity, True)
        return kin + pot + extra

    def last_energy(self, state, control):
        """E(q⁺, q̇⁺) (J) of the last step when ``state`` and ``control`` are its arrays unchanged (compared
        bytewise, as ``apply`` does); None otherwise (no step yet, another state or control, lists)."""
        if self._last is None:
            return None
        try:
            now = [a.tobytes() for a in (state.q, state.qd, control.joint_rest, *control.point_forces)]
        except AttributeError:  # a control built from lists
            return None
        return self._last[2] if now == self._last[0] else None

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
    contact, joint limits, prescribed joints, motors, force fields)."""
    if not enabled:
        return None
    if len(stepper.scene.loop_closures) or stepper.contact is not None or stepper.limits is not None:
        return None
    scene = stepper.scene
    if getattr(scene, "prescribed", ()) or getattr(scene, "motors", ()) or getattr(scene, "force_fields", ()):
        return None  # a prescribed joint, a motor and a field put energy in: that is their job
    return EnergyGuard(stepper)
