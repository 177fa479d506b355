"""The solver names of ``engine.Simulator(scene, solver=...)`` and the steppers behind them.

Each entry maps a name to a callable ``(scene, dt, *, contact=None, limits=None, **options) -> stepper`` that
keeps the contract of ``engine.stepper``. Adding a solver is one module with its stepper class
and one entry here (docs/architecture.md, "Adding a solver").
"""
from __future__ import annotations

import difflib
import inspect
from functools import lru_cache, partial
from typing import Callable

from ..errors import SimulatorOptionError
from ..stepper import Stepper
from .steppers.baraff import SceneStepper as BaraffSceneStepper
from .steppers.explicit import ExplicitStepper
from .steppers.hard_constraints import HardConstraintStepper
from .steppers.redmax import RedMaxStepper

STEPPERS: dict[str, Callable[..., Stepper]] = {
    "explicit": ExplicitStepper,                                # ABA + symplectic Euler
    # RedMax step; for users the joints' geometric stiffness, BDF2 and its energy budget (redmax_schemes.py,
    # energy_guard.py; integrator="euler" is the step before issue #31; the bare RedMaxStepper keeps the
    # thesis's step): pcg with the projected block Jacobi PCG, direct sparse LDLᵀ, dense Cholesky
    "pcg": partial(RedMaxStepper, linear_solver="pcg", geometric_stiffness="joints", energy_guard=True,
                   integrator="bdf2"),
    "direct": partial(RedMaxStepper, linear_solver="direct", geometric_stiffness="joints", energy_guard=True,
                      integrator="bdf2"),
    "dense": partial(RedMaxStepper, linear_solver="dense", geometric_stiffness="joints", energy_guard=True,
                     integrator="bdf2"),
    "baraff": BaraffSceneStepper,                               # maximal coordinates, Lagrange multipliers
    "hard-constraints": HardConstraintStepper,                  # maximal coordinates, impulses (seed 003)
}
SOLVERS = tuple(STEPPERS)


def _did_you_mean(name, choices) -> str:
    close = difflib.get_close_matches(str(name), list(choices), n=1)
    return f"did you mean {close[0]!r}? " if close else ""


def check_solver(solver) -> str:
    """``solver`` when it names a registered solver, else SimulatorOptionError listing the names."""
    if not isinstance(solver, str) or solver not in STEPPERS:
        raise SimulatorOptionError(f"unknown solver {solver!r}; {_did_you_mean(solver, SOLVERS)}"
                                   f"expected one of {', '.join(SOLVERS)}")
    return solver


# stepper parameters the Simulator fills itself (the contact and limit stages it builds, the solver's own name)
_SET_BY_SIMULATOR = ("scene", "dt", "contact", "limits", "linear_solver")


@lru_cache(maxsize=None)
def solver_options(solver: str) -> tuple[str, ...]:
    """The keyword options of the stepper of ``solver`` that a user passes through ``Simulator``."""
    params = inspect.signature(STEPPERS[check_solver(solver)]).parameters
    return tuple(name for name, p in params.items()
                 if name not in _SET_BY_SIMULATOR and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


def check_option_names(solver: str, options, also=()) -> None:
    """SimulatorOptionError naming the first of ``options`` that neither the stepper of ``solver`` nor ``also``
    (the Simulator's own options) takes, with a close match and the list of what is taken."""
    known = solver_options(check_solver(solver)) + tuple(also)
    for name in options:
        if name not in known:
            raise SimulatorOptionError(f"Simulator option {name!r} is not an option of solver {solver!r}; "
                                       f"{_did_you_mean(name, known)}its options: {', '.join(known)}")


def make_stepper(solver: str, scene, dt: float, **options) -> Stepper:
    """The stepper of solver ``solver`` for ``scene`` at step ``dt`` (s); SimulatorOptionError (a ValueError)
    for an unknown solver name."""
    return STEPPERS[check_solver(solver)](scene, dt, **options)
