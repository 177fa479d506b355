"""The energy budget of a step (issues #22 and #31): a step may not create energy, and with
``policy="hold"`` it may not lose any the physics does not take either.

Why a budget: over one step the control is held (joint rest values, point forces and moving loads at the
step's start; each has a potential), so the scene is passive during the step and its energy E = T + V can
only fall by what the dampers take. The budget is that energy: the state's energy at the start of a run,
minus what the dampers remove each step, plus what a change of the control between steps adds (a
controller, a moving load), minus what contact and joint-limit impulses take (inelastic stops, friction).

Two policies act on the end of a step, (q⁺, q̇⁺); q⁺ is never touched, only the rates are scaled (all of
q̇⁺, so the direction of motion and every velocity constraint G q̇⁺ = 0 are kept):

* ``"cap"`` — the guard of issue #22, on the implicit Euler step: when E(q⁺, q̇⁺) is above the budget, q̇⁺ is
  scaled so that E equals it (q̇⁺ = 0 if V(q⁺) alone exceeds it). Why: a long chain (512 links at 1/30 s,
  docs/results/chains.md) goes into compression and whips; implicit Euler, linearly or fully implicit, is
  dissipative only for convex potentials: in a concave direction with rate λ (s⁻²) a step gains about
  ½ λ h² |v|², and at hλ ≫ 1 that compounds into divergence. Its budget takes off the joint dampers only
  (h Σ c q̇⁺²); it leaves the step's own numerical dissipation alone (a first version that compared each step
  with the one before removed the per-step oscillation of the energy too and damped the 512-link chain to
  rest in 2 s), and it is off on scenes with loop closures, contact or joint limits.
* ``"hold"`` — the lively steps' budget (``integrator="bdf2"``, the default; after the energy-targeted
  implicit Euler of You, Zheng and Li, "Energy-Controllable Time Integration for Elastodynamic Contact", 2026,
  and the energy tracking of Dinev, Liu and Kavan, "Stabilizing Integrators for Real-Time Physics", ACM TOG
  37(1), 2018): the budget takes off what every damper removes, h q̇⁺ᵀ D q̇⁺ with D the joint dampers, the
  bodies' damping and the springs' and taut cables' dampers (``damping_power``), and what the step's contact
  and limit impulses took (their kinetic energy change, measured by the stepper); the rates are scaled down
  as with "cap" when above it and *up* when below it — by at most ``MAX_BOOST`` per step, so the energy a
  step's numerical damping took goes back into the motion it was taken from (the scaling favours the slow,
  large motion: the stiff modes the implicit step damped have small rates and get little back). Physical
  damping then removes exactly what it should (the budget's rate), and numerical damping removes nothing.
  On every scene, closures, contact and limits included.

``clamped_steps`` counts the steps scaled down, ``boosted_steps`` those scaled up.
"""
from __future__ import annotations

import math

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


@kernel(inline="llvm", refcounts=False)
def _point_velocity(X0_E, X0_r, v_link, body, l, out):
    """World velocity of link point l of ``body``: R (ω × l + v) from its link twist [ω; v] (0 for the world)."""
    if body < 0:
        for k in range(3):
            out[k] = 0.0
        return
    w = v_link[body]
    a0 = w[1] * l[2] - w[2] * l[1] + w[3]
    a1 = w[2] * l[0] - w[0] * l[2] + w[4]
    a2 = w[0] * l[1] - w[1] * l[0] + w[5]
    E = X0_E[body]
    for k in range(3):  # R = Eᵀ
        out[k] = E[0, k] * a0 + E[1, k] * a1 + E[2, k] * a2


@kernel
def damping_power(tree, ws, body_damping_blocks, pairs, joint_damping, qd):
    """q̇ᵀ D q̇ (W) at the workspace's kinematics (joint, world and velocity passes at (q, q̇)): the joint dampers
    Σ c q̇², the bodies' damping Σ φᵀ D_m φ (link twists φ, ``body_damping_blocks`` (n, 6, 6) link frames) and the
    dampers along every spring and taut cable of ``pairs``, c (u·(ẋ_b − ẋ_a))² (a slack cable's damper is off,
    as in ``point_pair_kernel``)."""
    power = 0.0
    for d in range(qd.shape[0]):
        power += joint_damping[d] * qd[d] * qd[d]
    for i in range(tree.parent.shape[0]):
        D = body_damping_blocks[i]
        if D[0, 0] == 0.0 and D[3, 3] == 0.0:
            continue
        v = ws.v[i]
        for r in range(6):
            t = 0.0
            for c in range(6):
                t += D[r, c] * v[c]
            power += v[r] * t
    xa = np.empty(3)
    xb = np.empty(3)
    va = np.empty(3)
    vb = np.empty(3)
    for s in range(pairs.body_a.shape[0]):
        c = pairs.damping[s]
        if c == 0.0:
            continue
        for x, body, l in ((xa, pairs.body_a[s], pairs.point_a[s]), (xb, pairs.body_b[s], pairs.point_b[s])):
            if body < 0:
                for k in range(3):
                    x[k] = l[k]
            else:
                for k in range(3):
                    x[k] = ws.X0_r[body, k] + ws.X0_E[body, 0, k] * l[0] + ws.X0_E[body, 1, k] * l[1] \
                        + ws.X0_E[body, 2, k] * l[2]
        ell = math.sqrt((xb[0] - xa[0]) ** 2 + (xb[1] - xa[1]) ** 2 + (xb[2] - xa[2]) ** 2)
        if ell < 1e-12 or (pairs.tension_only[s] and ell <= pairs.rest_length[s]):
            continue
        _point_velocity(ws.X0_E, ws.X0_r, ws.v, pairs.body_a[s], pairs.point_a[s], va)
        _point_velocity(ws.X0_E, ws.X0_r, ws.v, pairs.body_b[s], pairs.point_b[s], vb)
        rate = 0.0
        for k in range(3):
            rate += (xb[k] - xa[k]) * (vb[k] - va[k])
        rate /= ell
        power += c * rate * rate
    return power


@kernel
def energy_terms(ints, floats, work, q, qd, mass, com, gravity, rest, spring_v, joint_stiffness, zero_v, difference,
                 pairs, pf_body, pf_point, pf_force, body_damping_blocks, joint_damping, with_power):
    """(T, V, q̇ᵀ D q̇) at (q, q̇) in one call: T the kinetic energy (J), V = V_gravity + V_springs + V_point forces +
    ½ Σ K_r (q ⊖ q_rest)² (J), and, when ``with_power``, the dampers' power (W, ``damping_power``; else 0), from
    the kinematics at (q, q̇) (into the workspace). ints, floats, work: the stepper's ``FlatModel`` buffers (tree
    and workspace: three arguments to unbox instead of ~30 arrays, which cost more than the passes on a small
    model); pairs: ``Scene.pair_arrays``; point forces (body (k,), point (k, 3) link frame, force (k, 3) world);
    difference (nv,) is scratch; spring_v: the dofs with joint springs."""
    tree = unpack_tree(ints, floats)
    ws = unpack_workspace(ints, work)
    joint_pass(tree, q, ws)
    world_pass(tree, ws)
    velocity_pass(tree, q, qd, ws)
    spring = pair_energy(ws.X0_E, ws.X0_r, pairs) + point_force_energy(ws.X0_E, ws.X0_r, pf_body, pf_point, pf_force)
    kin, pot = kinetic_and_gravity(tree, ws, mass, com, gravity, True)
    joint = 0.0
    if spring_v.shape[0] > 0:
        position_error(tree, q, zero_v, rest, 0.0, difference)
        for j in range(spring_v.shape[0]):
            d = spring_v[j]
            joint += joint_stiffness[d] * (difference[d] * difference[d])
    power = damping_power(tree, ws, body_damping_blocks, pairs, joint_damping, qd) if with_power else 0.0
    return kin, pot + spring + 0.5 * joint, power


POLICIES = ("cap", "hold")
MAX_BOOST = 1.5  # "hold": the most the rates may be scaled up in one step (the energy: 2.25×)


class EnergyGuard:
    """``apply(state, q_new, qd_new, control) -> qd_new`` for one stepper (module doc): RedMax, or the explicit
    one (``energy_guard=True``; off by default there). policy: ``"cap"`` or ``"hold"``."""

    def __init__(self, stepper, rtol: float = 1e-9, policy: str = "cap"):
        if policy not in POLICIES:
            raise ValueError(f"energy guard policy must be one of {', '.join(POLICIES)}, got {policy!r}")
        self.s = stepper
        self.rtol = float(rtol)
        self.policy = policy
        self.clamped_steps = 0
        self.boosted_steps = 0
        model, fe = stepper.model, stepper.forces
        self._mass = np.ascontiguousarray(model.body_mass, float)
        self._com = np.ascontiguousarray(model.body_com, float)
        self._gravity = np.ascontiguousarray(model.gravity, float)
        # a stepper whose workspace is a FlatModel's (RedMax): the energy is one kernel call (energy_terms)
        self._fast = getattr(stepper, "_flat", None) is not None and stepper.ws is stepper._flat.ws
        self._spring_v = np.flatnonzero(fe.joint_stiffness).astype(np.int64)
        self._stiffness = np.ascontiguousarray(fe.joint_stiffness, float)
        self._damping = np.ascontiguousarray(fe.joint_damping, float)
        self._zero_v, self._difference = np.zeros(model.nv), np.zeros(model.nv)
        self._energy_terms = {}  # energy_terms' entry points by the point forces' count (0 or more: two types)
        self._power = 0.0  # the dampers' power at the last (q, q̇) ``kinetic_and_potential`` was asked for
        self._kinematics = None  # (X0_E, X0_r) at the last step's q⁺ (RedMax)
        self._point_force_energy = {}  # point_force_energy's entry points (no point forces / some)
        self.budget = None  # J: the most energy the scene may have now ("hold": the energy it should have)
        self.start_energy = None  # J: E(q, q̇) at the start of the last step
        # (bytes of q⁺, q̇⁺ and the control's arrays, the arrays (for dtype and shape), E⁺) of the last step:
        # the next step's start if nothing changed (bytes: a copy that compares in one go)
        self._last = None

    def kinetic_and_potential(self, q, qd, control, with_power=False):
        """(T, V) (J) at (q, q̇), as ``ForceEvaluator.energy`` sums them: one kernel (``energy_terms``) for RedMax,
        else the evaluator's forces pass for the springs' and point forces' potentials (plus the joint springs').
        with_power: also the dampers' power there, for ``damping_power`` (RedMax). Leaves the stepper's workspace
        at (q, q̇)."""
        s = self.s
        tree, ws, fe = s.model.tree, s.ws, s.forces
        if self._fast:  # one kernel call: the evaluator's Python passes cost 1.4× a direct step on the thesis trees
            flat = s._flat
            body, point, force = control.point_forces
            args = (flat.ints, flat.floats, flat.work, np.ascontiguousarray(q, float), np.ascontiguousarray(qd, float),
                    self._mass, self._com, self._gravity, np.ascontiguousarray(control.joint_rest, float),
                    self._spring_v, self._stiffness, self._zero_v, self._difference, fe.pairs,
                    np.ascontiguousarray(body, dtype=np.int64).reshape(-1),
                    np.ascontiguousarray(point, dtype=float).reshape(-1, 3),
                    np.ascontiguousarray(force, dtype=float).reshape(-1, 3), fe.body_damping_blocks, self._damping,
                    bool(with_power))
            kernel_ = self._energy_terms.get(len(body) > 0)
            if kernel_ is None:
                kernel_ = self._energy_terms[len(body) > 0] = compiled_for(energy_terms, args)
            kin, pot, self._power = kernel_(*args)
            return float(kin), float(pot)
        fe.evaluate(q, qd, control, ws)  # the same three passes, then the springs and point forces
        extra = fe.spring_energy + fe.point_force_energy + fe.joint_spring_energy(q, control.joint_rest)
        kin, pot = kinetic_and_gravity(tree, ws, self._mass, self._com, self._gravity, True)
        self._power = float(damping_power(tree, ws, fe.body_damping_blocks, fe.pairs, self._damping,
                                          np.ascontiguousarray(qd, float))) if with_power else 0.0
        return float(kin), float(pot + extra)

    def _energy(self, q, qd, control):
        """E(q, q̇) = T + V (J)."""
        kin, pot = self.kinetic_and_potential(q, qd, control)
        return kin + pot

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

    def _start(self, state, control, energies):
        """(E(q, q̇), the budget at the step's start, the step's input arrays) — no state changes here."""
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
        elif same_state and self._kinematics is not None:  # only the control's potentials changed (the last step's
            # control rebuilt from its bytes: a scene hands out its rest pose and loads in arrays it may reuse)
            old = [np.frombuffer(b, a.dtype).reshape(a.shape) for b, a in zip(last[0], last[1])]
            e0 = last[2] + self._control_change(arrays, old, now, last[0])
        elif energies is not None and np.isfinite(energies[0]):
            e0 = float(energies[0])
        else:
            e0 = self._energy(state.q, state.qd, control)
        budget = self.budget
        if budget is None or not same_state:  # a new start: the budget is the state's energy
            budget = e0
        elif e0 != last[2]:  # the control changed between steps (a controller, a moving load)
            budget += e0 - last[2]
        return e0, budget, arrays

    def _control_change(self, arrays, old, now, before):
        """V(new control) − V(old control) at the last step's end (J): the point forces' −Σ f·x on that state's link
        poses (kept by ``apply``) where they changed, the joint springs' ½ Σ K_r (q ⊖ q_rest)² where the rest pose
        changed (arrays, old: [q, q̇, joint_rest, point forces' body, point, force]; now, before: their bytes)."""
        change = 0.0
        if now[3:] != before[3:]:
            X0_E, X0_r = self._kinematics
            for sign, a in ((1.0, arrays), (-1.0, old)):
                body = np.asarray(a[3], dtype=np.int64).reshape(-1)
                args = (X0_E, X0_r, body, np.asarray(a[4], dtype=float).reshape(-1, 3),
                        np.asarray(a[5], dtype=float).reshape(-1, 3))
                key = len(body) > 0
                if key not in self._point_force_energy:
                    self._point_force_energy[key] = compiled_for(point_force_energy, args)
                change += sign * self._point_force_energy[key](*args)
        if now[2] != before[2] and self._spring_v.shape[0]:
            for sign, a in ((1.0, arrays), (-1.0, old)):
                position_error(self.s.model.tree, np.ascontiguousarray(a[0], float), self._zero_v,
                               np.ascontiguousarray(a[2], float), 0.0, self._difference)
                d = self._difference[self._spring_v]
                change += sign * 0.5 * float(self._stiffness[self._spring_v] @ (d * d))
        return float(change)

    def _spent(self, qd_new, power, impulse_loss):
        """What the step's physics takes from the budget (J): "hold" every damper at the step's rates, h q̇⁺ᵀ D q̇⁺,
        and the impulses; "cap" the joint dampers, h Σ c q̇⁺² (the issue #22 guard)."""
        if self.policy == "hold":
            return self.s.dt * power + max(float(impulse_loss), 0.0)
        return self.s.dt * float(self.s.forces.joint_damping @ (qd_new * qd_new))

    def preview_budget(self, state, control, q_new, qd_new, impulse_loss=0.0):
        """The budget a step from ``state`` ending at (q_new, qd_new) would have (J), without taking the step."""
        _, budget, _ = self._start(state, control, None)
        self.kinetic_and_potential(q_new, qd_new, control, with_power=self.policy == "hold")
        return budget - self._spent(qd_new, self._power, impulse_loss)

    def apply(self, state, q_new, qd_new, control, energies=None, impulse_loss=0.0, impulsive=False):
        """qd_new, or its rates scaled (module doc). energies: what the step already has — (E(q, q̇) or NaN,
        E(q⁺, q̇⁺), T(q⁺, q̇⁺), q̇⁺ᵀ D q̇⁺) (``redmax_step.pcg_step``) — else computed here; impulse_loss: the
        energy the step's contact and limit impulses took (J, "hold"); impulsive: they acted — the rates are then
        not scaled up (a contact's or a limit's rows allow an approach that just reaches the surface or the bound
        within the step, which rates scaled up would overshoot), and the budget falls to the step's energy if it is
        above it (what numerical damping took before an impact is not given to the motion after it)."""
        self.start_energy, self.budget, arrays = self._start(state, control, energies)
        hold = self.policy == "hold"
        if energies is None:
            kin, pot = self.kinetic_and_potential(q_new, qd_new, control, with_power=hold)
            power = self._power
        else:
            kin, pot, power = float(energies[2]), float(energies[1]) - float(energies[2]), float(energies[3])
        e1 = kin + pot
        if hold:
            # the dampers' power at the rates the step ends with: scaling q̇⁺ by s scales it by s², so the budget
            # after the step, B − h s² P, and the energy, V + s² T, meet at s² = (B − V) / (T + h P)
            available = self.budget - max(float(impulse_loss), 0.0)
            h_power = self.s.dt * power
            tol = self.rtol * (abs(available) + 1.0)
            if abs(e1 - (available - h_power)) <= tol or kin <= 0.0:
                scale2 = 1.0
            else:
                scale2 = max(available - pot, 0.0) / (kin + h_power)
                if scale2 < 1.0:
                    self.clamped_steps += 1
                elif impulsive:
                    scale2 = 1.0
                else:
                    scale2 = min(scale2, MAX_BOOST * MAX_BOOST)
                    self.boosted_steps += 1
            self.budget = available - scale2 * h_power
            if impulsive:  # what the step's damping took before an impact belongs to the motion the impact ended:
                self.budget = min(self.budget, pot + scale2 * kin)  # nothing of it is owed to what follows
            scale = math.sqrt(scale2)
        else:
            self.budget -= self._spent(qd_new, power, impulse_loss)
            if e1 > self.budget + self.rtol * (abs(self.budget) + 1.0):
                scale = np.sqrt(max(self.budget - pot, 0.0) / kin) if kin > 0 else 0.0
                self.clamped_steps += 1
            else:
                scale = 1.0
        if scale != 1.0:
            qd_new = qd_new * scale
            e1 = pot + kin * scale * scale
        if self._fast:  # the link poses at q⁺ (the workspace's, from the energy just taken): a control change next
            ws = self.s.ws  # step needs only its own potentials on them (_control_potential)
            self._kinematics = (ws.X0_E.copy(), ws.X0_r.copy())
        arrays[:2] = q_new, qd_new
        self._last = ([a.tobytes() for a in arrays], arrays, e1)
        return qd_new


def make_energy_guard(stepper, enabled, policy: str = "cap"):
    """The budget for a stepper, or None: off; a scene whose drives put energy in that the budget does not count
    (prescribed joints, motors, force fields: that is their job); or (policy "cap") a scene the issue #22 guard
    does not apply to (loop closures, contact, joint limits)."""
    if not enabled:
        return None
    scene = stepper.scene
    if getattr(scene, "prescribed", ()) or getattr(scene, "motors", ()) or getattr(scene, "force_fields", ()):
        return None
    if policy == "cap" and (len(scene.loop_closures) or stepper.contact is not None or stepper.limits is not None):
        return None
    return EnergyGuard(stepper, policy=policy)
