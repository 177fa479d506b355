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
  and limit impulses took (their energy change, measured by the stepper; a contact deeper at the step's start
  than the post-stabilization leaves any — joint limits undid its projection — is pushed out by its rates, and the
  energy that push adds is given, not charged: ``RedMaxStepper._pushing_back``); the rates are scaled down
  as with "cap" when above it and *up* when below it — by at most ``MAX_BOOST`` per step, so the energy a
  step's numerical damping took goes back into the motion it was taken from (the scaling favours the slow,
  large motion: the stiff modes the implicit step damped have small rates and get little back). Physical
  damping then removes exactly what it should (the budget's rate), and numerical damping removes nothing.
  On every scene, closures, contact and limits included.

Drives put energy in by design. With prescribed joints (``stages/prescribed.py``) the budget "hold" holds
while every prescribed joint holds still over the step (an anchor at rest: its rows do no work, so the budget
is exact and the swing below it keeps its energy); a step in which one moves re-bases the budget at the step's
end energy, unscaled (``RedMaxStepper.prescribed_moved``): the rows' work is not measured. (Tried and dropped,
docs/redmax.md *Drives under BDF2*: the rows' impulses over the solve's step times the joint's displacement,
Σ (λ_d / h_s) Δq̄_d, is within 2 % of the exact work under an anchor gliding at a constant velocity, but the
budget's own scalings enter BDF2's memory and that sum with them — +21 % of the swing's energy in 10 s at 1/48 s
— and under a cart swaying hard, 0.3 m at 1 Hz, the held energy took the swing 1e-2 rad off the analytic one at
1/960 s, where BDF2 alone is 2e-3 rad off.) A moving anchor's swing then keeps what BDF2 alone keeps. Scenes
with motors or force fields have no budget: a motor's impulse is applied after the solve, as contact's, and
what the budget measures of such an impulse (the end energy with it less without it) is counted only when it
takes energy (``RedMaxStepper.solve``); a field's force has no potential. Policy "cap" stays off with
prescribed joints (as with closures).

``clamped_steps`` counts the steps scaled down, ``boosted_steps`` those scaled up.
"""
from __future__ import annotations

import math

import numpy as np

from ...algorithms._flat import FlatModel
from ...forces.energy import SceneEnergy


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
        # the scene's energy (forces/energy.py), in the stepper's own FlatModel workspace (RedMax: the one-call step
        # leaves its kinematics at q⁺ there too) or one of the guard's own (the explicit stepper)
        flat = getattr(stepper, "_flat", None)
        self._scene_energy = SceneEnergy(stepper.model, stepper.forces,
                                         flat if flat is not None else FlatModel(stepper.model))
        self._power = 0.0  # the dampers' power at the last (q, q̇) ``kinetic_and_potential`` was asked for
        self._kinematics = None  # (X0_E, X0_r) at the last step's q⁺
        self.budget = None  # J: the most energy the scene may have now ("hold": the energy it should have)
        self.start_energy = None  # J: E(q, q̇) at the start of the last step
        # (bytes of q⁺, q̇⁺ and the control's arrays, the arrays (for dtype and shape), E⁺) of the last step:
        # the next step's start if nothing changed (bytes: a copy that compares in one go)
        self._last = None

    def kinetic_and_potential(self, q, qd, control, with_power=False):
        """(T, V) (J) at (q, q̇): the scene's one energy (``forces/energy.py``, one kernel call). with_power: also the
        dampers' power there, for ``_spent`` ("hold"). Leaves the kinematics at (q, q̇) in the guard's workspace (the
        stepper's own for RedMax)."""
        kin, pot, self._power = self._scene_energy(q, qd, control, with_power)
        return kin, pot

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
        elif last is None:
            same_state = same_control = False
        else:  # bytes first (a moving load changes only the control's), else np.array_equal against the last
            # step's arrays rebuilt from their bytes (equal values in other bytes: −0.0, another dtype)
            def same(k):
                if now[k] == last[0][k]:
                    return True
                b, a = last[0][k], last[1][k]
                return np.array_equal(np.frombuffer(b, a.dtype).reshape(a.shape), arrays[k])

            same_state = same(0) and same(1)
            # the control by its bytes alone (a moving load's point changes every step): equal values in other
            # bytes (−0.0) count as a change, whose potentials' difference (_control_change) is then exactly 0
            same_control = same_state and now[2:] == last[0][2:]
        if same_control:
            e0 = last[2]
        elif same_state and self._kinematics is not None:  # only the control's potentials changed (the last step's
            # control rebuilt from its bytes: a scene hands out its rest pose and loads in arrays it may reuse)
            old = [np.frombuffer(b, a.dtype).reshape(a.shape) for b, a in zip(last[0][2:], last[1][2:])]
            e0 = last[2] + self._control_change(arrays, old)
        elif energies is not None and np.isfinite(energies[0]):
            e0 = float(energies[0])
        else:
            e0 = self._energy(state.q, state.qd, control)
        budget = self.budget
        if budget is None or not same_state:  # a new start: the budget is the state's energy
            budget = e0
        elif e0 != last[2]:  # the control changed between steps (a controller, a moving load)
            budget += e0 - last[2]
        return e0, budget, arrays, now

    def _control_change(self, arrays, old):
        """V(new control) − V(old control) (J) at the last step's end: the potentials a control sets (point forces,
        joint springs' rest pose: ``SceneEnergy.control_potential``) on that state's link poses, kept by ``apply``
        (arrays: [q, q̇, joint_rest, point forces' body, point, force] of this step's start; old: [joint_rest, body,
        point, force] of the last step's control)."""
        X0_E, X0_r = self._kinematics
        energy = self._scene_energy
        return (energy.control_potential(arrays[0], arrays[2], arrays[3:6], X0_E, X0_r)
                - energy.control_potential(arrays[0], old[0], old[1:4], X0_E, X0_r))

    def _spent(self, qd_new, power, impulse_loss):
        """What the step's physics takes from the budget (J): "hold" every damper at the step's rates, h q̇⁺ᵀ D q̇⁺,
        and the impulses; "cap" the joint dampers, h Σ c q̇⁺² (the issue #22 guard)."""
        if self.policy == "hold":
            return self.s.dt * power + float(impulse_loss)
        return self.s.dt * float(self.s.forces.joint_damping @ (qd_new * qd_new))

    def preview_budget(self, state, control, q_new, qd_new, impulse_loss=0.0):
        """The budget a step from ``state`` ending at (q_new, qd_new) would have (J), without taking the step."""
        _, budget, _, _ = self._start(state, control, None)
        self.kinetic_and_potential(q_new, qd_new, control, with_power=self.policy == "hold")
        return budget - self._spent(qd_new, self._power, impulse_loss)

    def apply(self, state, q_new, qd_new, control, energies=None, impulse_loss=0.0, impulsive=False):
        """qd_new, or its rates scaled (module doc). energies: what the step already has — (E(q, q̇) or NaN,
        T(q⁺, q̇⁺), V(q⁺), q̇⁺ᵀ D q̇⁺) (``redmax_step.pcg_step``) — else computed here; impulse_loss: the
        energy the step's contact and limit impulses took (J, "hold"; negative: what a bounce gave back of the
        approach energy the step that closed its gap was charged, ``RedMaxStepper.solve``); impulsive: they
        acted — the rates are then not scaled up (a contact's or a limit's rows allow an approach that just reaches the surface or the bound
        within the step, which rates scaled up would overshoot), and the budget falls to the step's energy if it is
        above it (what numerical damping took before an impact is not given to the motion after it)."""
        self.start_energy, self.budget, arrays, now = self._start(state, control, energies)
        hold = self.policy == "hold"
        if energies is None:
            kin, pot = self.kinetic_and_potential(q_new, qd_new, control, with_power=hold)
            power = self._power
        else:
            kin, pot, power = float(energies[1]), float(energies[2]), float(energies[3])
        e1 = kin + pot
        if hold and getattr(self.s, "prescribed_moved", False):  # their work is not measured: the budget starts
            self.budget, scale = e1, 1.0  # again from the step's end (module doc)
        elif hold:
            # the dampers' power at the rates the step ends with: scaling q̇⁺ by s scales it by s², so the budget
            # after the step, B − h s² P, and the energy, V + s² T, meet at s² = (B − V) / (T + h P)
            available = self.budget - float(impulse_loss)
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
            qd_new = qd_new * scale  # (a prescribed joint's rate is 0 here: it held still)
            e1 = pot + kin * scale * scale
        # the link poses at q⁺ (the workspace's, from the energy just taken or the one-call step's end): a control
        # change next step needs only its own potentials on them (_control_change)
        ws = self._scene_energy.flat.ws
        if self._kinematics is None:
            self._kinematics = (ws.X0_E.copy(), ws.X0_r.copy())
            scene = self.s.scene
            if getattr(scene, "moving_loads", ()) or getattr(scene, "controllers", ()):  # the control will change:
                # its potentials' kernel loaded with the first step's, not within the run (some ms)
                self._scene_energy.control_potential(q_new, control.joint_rest, control.point_forces, *self._kinematics)
        else:
            np.copyto(self._kinematics[0], ws.X0_E)
            np.copyto(self._kinematics[1], ws.X0_r)
        arrays[:2] = q_new, qd_new
        self._last = ([q_new.tobytes(), qd_new.tobytes(), *now[2:]], arrays, e1)  # (the control's bytes from _start)
        return qd_new


def make_energy_guard(stepper, enabled, policy: str = "cap"):
    """The budget for a stepper, or None: off; a scene whose drives put energy in that the budget does not count
    (motors, force fields; prescribed joints but with policy "hold" on a stepper that reports whether they moved,
    ``prescribed_moved``: module doc); or (policy "cap") a scene the issue #22 guard does not apply to (loop closures,
    prescribed joints, contact, joint limits)."""
    if not enabled:
        return None
    scene = stepper.scene
    if getattr(scene, "motors", ()) or getattr(scene, "force_fields", ()):
        return None
    if getattr(scene, "prescribed", ()) and (policy != "hold" or getattr(stepper, "prescribed_moved", None) is None):
        return None
    if policy == "cap" and (len(scene.loop_closures) or stepper.contact is not None or stepper.limits is not None):
        return None
    return EnergyGuard(stepper, policy=policy)
