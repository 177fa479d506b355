"""The explicit step: ABA + symplectic Euler, with the same forces and contact stages as RedMax.

    q̈ = ABA(q, q̇, τ = f_r − D_r q̇, f_m − D_m φ),   q̇⁺ = limits(contact(motors(prescribed(q̇ + h q̈)))),   q⁺ = q ⊕ h q̇⁺

Prescribed joints and motors are rows imposed on q̇ + h q̈ in the metric M⁻¹ (``stages/prescribed.py``,
``stages/servos.py``): ABA's hybrid dynamics at the velocity level. Stiff springs need a small h here (the
implicit ``"pcg"`` step takes them at large h).
"""
from __future__ import annotations

import numpy as np

from ...algorithms.aba import aba_kernel
from ...algorithms.minv import minv
from ...contact.handler import contact_stage
from ...errors import SimulatorOptionError
from ...forces.evaluator import ForceEvaluator
from ...integrators import integrate
from ...model import State
from ...stepper import StepStats
from ..stages.energy_guard import make_energy_guard
from ..stages.geometric_stiffness import parse_geometric_stiffness
from ..stages.joint_limits import limit_stage
from ..stages.prescribed import PrescribedMotion, project
from ..stages.servos import Servos


class ExplicitStepper:
    """``Simulator(scene, "explicit", dt)`` (``engine.stepper`` contract); no loop closures."""

    divergence_hint = "try a smaller dt or the implicit 'pcg' solver"

    def __init__(self, scene, dt: float, *, geometric_stiffness: bool = False, contact: dict | None = None,
                 limits: dict | None = None, energy_guard: bool = False, integrator: str = "euler"):
        if scene.loop_closures:
            raise ValueError("the explicit solver does not handle loop closures; use 'pcg', 'direct' or 'dense'")
        if integrator != "euler":  # (the option the RedMax solvers share, so one set of options serves every solver)
            raise SimulatorOptionError(f"the explicit solver integrates by symplectic Euler only (integrator='euler'), "
                                       f"got integrator={integrator!r}")
        self.scene, self.model, self.dt = scene, scene.model, float(dt)
        self.ws = self.model.make_workspace()  # this stepper's own kinematics workspace
        _, springs = parse_geometric_stiffness(geometric_stiffness)  # (no implicit solve: the joints' term has no use here)
        self.forces = ForceEvaluator(scene, springs)
        self.stats = StepStats()
        self.contact = contact_stage(scene, self.dt, contact)
        self.limits = limit_stage(scene, self.dt, limits)  # joint limits after contact, in the metric M
        self._energy_guard = make_energy_guard(self, energy_guard)  # off by default: the explicit baseline
        self.prescribed = PrescribedMotion(scene, self.dt)
        self.servos = Servos(scene, self.dt)

    def step(self, state, control):
        model, ws, fe, h = self.model, self.ws, self.forces, self.dt
        q, qd = state.q, state.qd
        fe.evaluate(q, qd, control, ws)
        tau = fe.joint_forces(q, control.joint_rest) - fe.joint_damping * qd
        qdd = np.empty(model.nv)
        aba_kernel(model.tree, q, qd, tau, fe.body_wrenches(ws), ws, qdd)
        qd_new = qd + h * qdd
        dofs, rates = self.prescribed.rows(q, state.t) if self.prescribed else (np.zeros(0, np.int64), None)
        W = minv(model, q, ws=self.servos.ws) if len(dofs) else None
        if W is not None:
            qd_new = project(qd_new, W, dofs, rates)
        held = self.prescribed.unit_rows(dofs) if len(dofs) else None
        if self.servos:
            qd_new = self.servos.apply(q, qd_new, fixed=held)
        # without prescribed rows to hold, the contact stage solves the limits' rows with its own (limits_contact.py)
        joined = self.limits and self.limits.for_contact(held is not None)
        if self.contact is not None:
            qd_new = self.contact.apply(q, qd_new, None, joined)
            if W is not None:  # contact may have pushed a prescribed joint: its rows again
                qd_new = project(qd_new, W, dofs, rates)
        if self.limits is not None and not (self.contact is not None and self.contact.limits_joined):
            self.limits.hold(held)
            qd_new = self.limits.apply(q, qd_new)
        q_new = integrate(model, q, qd_new, h)
        if self.contact is not None:
            moved = self.contact.stabilize(q_new, joined)  # no contact deeper than the stage allows at the step's end
            q_new = moved if self.limits is None else self.limits.at_step_end(moved, moved is not q_new)  # nor a bound
        if self._energy_guard is not None:
            qd_new = self._energy_guard.apply(state, q_new, qd_new, control)
        return State(q_new, qd_new, state.t + h)

    def energy(self, state, control) -> float:
        """Kinetic + gravitational + spring (+ joint spring, point force) potential energy (J)."""
        return self.forces.energy(state, control)
