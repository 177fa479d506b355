"""The contract every solver keeps (DESIGN.md, "The step"; docs/architecture.md).

A *stepper* is built from a scene, a time step and its options,
``Stepper(scene, dt, *, contact=None, limits=None, **options)``, and then

* ``step(state, control) -> State``: one step of length ``dt`` from ``state``
  (q (nq,), q̇ (nv,), t s) under ``control`` (what changes over time);
* ``stats``: a ``StepStats`` describing the last step;
* ``energy(state, control) -> float``: the total energy (J) the stepper conserves
  or dissipates (kinetic + gravity + every potential it models);
* ``contact``: its contact stage (``engine.contact.ContactHandler``) or None;
* ``limits``: its joint-limit stage (``engine.solvers.stages.joint_limits.JointLimits``) or None
  (a stepper without one refuses enforced limits: ``joint_limits.refuse_limits``);
* ``divergence_hint``: what to tell a user whose run diverged.

``engine.solvers.registry.STEPPERS`` maps the solver names to stepper classes;
``engine.Simulator`` only drives them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Protocol

import numpy as np

from .model import State


class Control(NamedTuple):
    """What the step reads that changes over time, sampled at the step's start time ``t`` (s).

    joint_rest: (nq,) rest configuration of the joint springs (a gait moves it);
    point_forces: (body (k,) int, point (k, 3) link frame m, force (k, 3) world N) — the
    constant point forces and the moving loads on their path at t.
    """

    t: float
    joint_rest: np.ndarray
    point_forces: tuple


@dataclass
class StepStats:
    """What one step reports. iterations: the most iterations any linear solve of the step took
    (0 for direct solvers); total_iterations: summed over the step's solves; solves: how many;
    constraint_error: the largest constraint violation after the step (m); solve_seconds: wall seconds
    spent in the part of the step its linear-solver option changes (0 when a stepper has no such option).
    The settings advisor reads it: the rest of the step is the same whichever linear solver runs."""

    iterations: int = 0
    total_iterations: int = 0
    solves: int = 0
    constraint_error: float = 0.0
    solve_seconds: float = 0.0


class Stepper(Protocol):
    stats: StepStats
    contact: object
    divergence_hint: str

    def step(self, state: State, control: Control) -> State: ...

    def energy(self, state: State, control: Control) -> float: ...
