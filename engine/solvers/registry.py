"""The solver names of ``engine.Simulator(scene, solver=...)`` and the steppers behind them.

Each entry maps a name to a callable ``(scene, dt, *, contact=None, limits=None, **options) -> stepper`` that
keeps the contract of ``engine.stepper``. Adding a solver is one module with its stepper class
and one entry here (docs/architecture.md, "Adding a solver").
"""
from __future__ import annotations

from functools import partial
from typing import Callable

from ..stepper import Stepper
from .baraff import SceneStepper as BaraffSceneStepper
from .explicit import ExplicitStepper
from .hard_constraints import HardConstraintStepper
from .redmax import RedMaxStepper

STEPPERS: dict[str, Callable[..., Stepper]] = {
    "explicit": ExplicitStepper,                                # ABA + symplectic Euler
    # RedMax step; the joints' geometric stiffness and the energy guard (energy_guard.py) are on for
    # users (the bare RedMaxStepper keeps the thesis's step): pcg with the projected block Jacobi PCG,
    # direct sparse LDLᵀ, dense Cholesky
    "pcg": partial(RedMaxStepper, linear_solver="pcg", geometric_stiffness="joints", energy_guard=True),
    "direct": partial(RedMaxStepper, linear_solver="direct", geometric_stiffness="joints", energy_guard=True),
    "dense": partial(RedMaxStepper, linear_solver="dense", geometric_stiffness="joints", energy_guard=True),
    "baraff": BaraffSceneStepper,                               # maximal coordinates, Lagrange multipliers
    "hard-constraints": HardConstraintStepper,                  # maximal coordinates, impulses (seed 003)
}
SOLVERS = tuple(STEPPERS)


def make_stepper(solver: str, scene, dt: float, **options) -> Stepper:
    """The stepper of solver ``solver`` for ``scene`` at step ``dt`` (s); ValueError for an unknown name."""
    if solver not in STEPPERS:
        raise ValueError(f"unknown solver {solver!r}; expected one of {', '.join(SOLVERS)}")
    return STEPPERS[solver](scene, dt, **options)
