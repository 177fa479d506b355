"""The Simulator's checks at the door and its PCG convergence report.

``check_options`` validates ``dt`` and the numeric solver options before any stepper is built;
``check_step_count`` the ``n`` of ``step(n)``; ``ConvergenceMonitor`` turns each step's PCG
iteration count into ``stats.converged`` / ``stats.unconverged_steps`` and warns (once) or raises.
Errors are ``SimulatorOptionError`` (a ``SimulationError`` and a ``ValueError``) naming the option.
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np

from .errors import ConvergenceError, ConvergenceWarning, SimulatorOptionError

ON_UNCONVERGED = ("warn", "raise", "ignore")
DEFAULT_MAX_ITER = 500  # RedMaxStepper's default


def _real(value, name):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise SimulatorOptionError(f"Simulator option '{name}' must be a number, got {value!r} "
                                   f"({type(value).__name__})")
    value = float(value)
    if not np.isfinite(value):
        raise SimulatorOptionError(f"Simulator option '{name}' must be finite, got {value}")
    return value


def check_options(dt, options: dict) -> float:
    """dt (s) as a float; raises SimulatorOptionError for a bad dt, ``tol``, ``max_iter``, ``on_unconverged``."""
    dt = _real(dt, "dt")
    if dt <= 0:
        raise SimulatorOptionError(f"Simulator option 'dt' must be a positive number of seconds, got {dt}")
    if "tol" in options:
        tol = _real(options["tol"], "tol")
        if not 0.0 < tol < 1.0:
            raise SimulatorOptionError(f"Simulator option 'tol' (PCG relative residual) must be in (0, 1), got {tol}")
    if "max_iter" in options:
        m = options["max_iter"]
        if isinstance(m, (bool, np.bool_)) or not isinstance(m, numbers.Integral) or m < 1:
            raise SimulatorOptionError(f"Simulator option 'max_iter' must be a positive integer, got {m!r}")
    mode = options.get("on_unconverged", "warn")
    if mode not in ON_UNCONVERGED:
        raise SimulatorOptionError(f"Simulator option 'on_unconverged' must be one of "
                                   f"{', '.join(repr(m) for m in ON_UNCONVERGED)}, got {mode!r}")
    return dt


# settings users reach for in a stage's dict that live elsewhere
_ELSEWHERE = {"mu": "friction is the ground's: scene.set_ground(friction=...)",
              "friction": "friction is the ground's: scene.set_ground(friction=...)",
              "method": "the contact method is the Simulator option contact_method",
              "threads": "the contact threads are the Simulator option contact_threads"}


def check_stage_options(option: str, value, stage, set_elsewhere=()) -> dict:
    """``value`` of the Simulator option ``option`` (``contact_options``, ``limit_options``) as a dict of keyword
    settings of ``stage`` (a class: ``ContactHandler``, ``JointLimits``) — a dict, each key one of the stage's
    parameters with a default but ``set_elsewhere`` (else the closest match and the list), each value of the kind of
    that parameter's default (a number ≥ 0; a whole number ≥ 1 where the default is one; None where it is None).
    SimulatorOptionError naming the option and the setting, as for the Simulator's own options."""
    import inspect

    from .solvers.registry import _did_you_mean

    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SimulatorOptionError(f"Simulator option '{option}' must be a dict of settings, got {value!r} "
                                   f"({type(value).__name__})")
    params = inspect.signature(stage).parameters
    known = [name for name, p in params.items()  # the settings: the parameters with a default
             if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is not p.empty
             and name not in set_elsewhere]
    for key, v in value.items():
        if key not in known:
            hint = f" ({_ELSEWHERE[key]})" if isinstance(key, str) and key in _ELSEWHERE else ""
            raise SimulatorOptionError(f"Simulator option '{option}': {key!r} is not a setting{hint}; "
                                       f"{_did_you_mean(key, known)}its settings: {', '.join(known)}")
        default, name = params[key].default, f"{option}['{key}']"
        if default is None and v is None:
            continue
        if isinstance(default, bool):
            if not isinstance(v, (bool, np.bool_)):
                raise SimulatorOptionError(f"Simulator option {name} must be True or False, got {v!r}")
        elif isinstance(default, int):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral) or v < 1:
                raise SimulatorOptionError(f"Simulator option {name} must be a whole number ≥ 1, got {v!r}")
        elif isinstance(default, str):
            if not isinstance(v, str):
                raise SimulatorOptionError(f"Simulator option {name} must be a string, got {v!r}")
        elif isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real) or not np.isfinite(v):
            raise SimulatorOptionError(f"Simulator option {name} must be a number, got {v!r} ({type(v).__name__})")
        elif v < 0:
            raise SimulatorOptionError(f"Simulator option {name} must be ≥ 0, got {v!r}")
    return dict(value)


def check_contact_method(method) -> str:
    """The Simulator option ``contact_method``: one of ``contact.space.CHOICES`` (its METHODS and "auto")."""
    from .contact.space import CHOICES as METHODS
    from .solvers.registry import _did_you_mean

    if not isinstance(method, str) or method not in METHODS:
        raise SimulatorOptionError(f"Simulator option 'contact_method' must be one of {', '.join(METHODS)}; "
                                   f"{_did_you_mean(method, METHODS)}got {method!r}")
    return method


def check_threads(n, name: str) -> int:
    """A thread count option: a whole number 1 … 1024."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral) or not 1 <= n <= 1024:
        raise SimulatorOptionError(f"Simulator option '{name}' must be a whole number of threads 1 … 1024, got {n!r}")
    return int(n)


def check_step_count(n) -> int:
    """n of ``step(n)``: a non-negative integer (an integral float such as 3.0 is not accepted either)."""
    if type(n) is int and n >= 0:  # the usual call, without the abstract-class checks
        return n
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral):
        raise SimulatorOptionError(f"step(n): n must be a whole number of steps, got {n!r} ({type(n).__name__})")
    if n < 0:
        raise SimulatorOptionError(f"step(n): n must be ≥ 0, got {n}")
    return int(n)


class ConvergenceMonitor:
    """Counts the steps whose PCG solve hit ``max_iter`` (a solve that met the tolerance exactly on
    its last allowed iteration counts too: the cap is what is reported). ``mode``: ``"warn"``
    (a ConvergenceWarning the first time), ``"raise"`` (ConvergenceError) or ``"ignore"``."""

    def __init__(self, active: bool, mode: str, max_iter: int, tol: float):
        self.active = bool(active)  # the stepper's ``iterative`` flag: only iterative solves can stop at the cap
        self.mode, self.max_iter, self.tol = mode, int(max_iter), float(tol)
        self.warned = False

    def record(self, stats, iterations: int, step: int, t: float):
        converged = not (self.active and iterations >= self.max_iter)
        stats.converged.append(converged)
        if converged:
            return
        stats.unconverged_steps += 1
        message = (f"PCG did not reach tol={self.tol:g} within max_iter={self.max_iter} iterations at step {step} "
                   f"(t = {t:.4f} s); {{}}. Raise max_iter (or tol), or use the 'direct' solver")
        if self.mode == "raise":
            raise ConvergenceError(message.format("the step was not taken"))
        message = message.format("the step used the last iterate")
        if self.mode == "warn" and not self.warned:
            self.warned = True
            warnings.warn(message + " (warned once; sim.stats.unconverged_steps counts them)", ConvergenceWarning,
                          stacklevel=3)


CLOSURE_TOL = 1e-3  # m (translational rows) and rad (rotational rows) allowed at the initial pose


def check_closures_feasible(scene, tol: float = CLOSURE_TOL) -> None:
    """Refuse a scene whose loop closures are violated at q0 by more than ``tol`` (m or rad): the
    solvers would pull the bodies together violently in the first steps. ModelError names the
    closure and its residual."""
    if not scene.loop_closures:
        return
    from .algorithms.kinematics import joint_pass, world_pass
    from .errors import ModelError
    from .solvers.stages.loop_closures import closure_arrays, constraint_rows

    model = scene.model
    ws = model.make_workspace()
    arrays = closure_arrays(scene.loop_closures)
    joint_pass(model.tree, np.ascontiguousarray(scene.q0, dtype=float), ws)
    world_pass(model.tree, ws)
    _, _, C = constraint_rows(arrays, ws)
    k = 0
    for lc, n_rot in zip(scene.loop_closures, arrays.n_rot):
        gap = float(np.linalg.norm(C[k:k + 3]))
        turn = float(np.abs(C[k + 3:k + 3 + n_rot]).max(initial=0.0))
        k += 3 + int(n_rot)
        if gap > tol or turn > tol:
            raise ModelError(f"loop closure '{lc.name}' of scene '{scene.name}' is not satisfied at the initial pose: "
                             f"its points are {gap:.4g} m apart" + (f" and its axes {turn:.4g} rad off" if n_rot else "")
                             + f" (tolerance {tol:g}); move q0 onto the constraint or fix the attachment points")
