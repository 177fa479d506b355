"""Simulator: drives a stepper (``engine.solvers.registry``) over a Scene and keeps statistics."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from .algorithms._checks import as_q, as_v
from .errors import SimulationError
from .model import State
from .scene import Scene
from .sim_checks import DEFAULT_MAX_ITER, ConvergenceMonitor, check_closures_feasible, check_options, check_step_count
from .solvers.stages.joint_limits import check_enforce_limits
from .solvers.registry import SOLVERS, STEPPERS, check_option_names, make_stepper  # noqa: F401  (SOLVERS: the names, for the viewer)


@dataclass
class SimulationStats:
    """Per-run statistics. ``iterations``: PCG iterations of each step — the most any of
    the step's linear solves needed (one solve without loop closures, 1 + rows with them;
    0 for the direct solvers); ``total_iterations``: summed over those solves;
    ``constraint_error``: largest loop-closure violation after the last step (m); ``converged``:
    per step, False when a PCG solve stopped at ``max_iter`` (always True for the other solvers);
    ``unconverged_steps``: how many such steps; ``solve_seconds``: wall seconds of the steps spent in the
    part their linear-solver option changes (``StepStats.solve_seconds``; 0 for solvers without one)."""

    steps: int = 0
    iterations: list = field(default_factory=list)
    total_iterations: list = field(default_factory=list)
    constraint_error: float = 0.0
    wall_seconds: float = 0.0
    converged: list = field(default_factory=list)  # per step: False when a PCG solve hit max_iter
    unconverged_steps: int = 0
    solve_seconds: float = 0.0

    @property
    def mean_iterations(self) -> float:
        return float(np.mean(self.iterations)) if self.iterations else 0.0


# the options Simulator takes itself (the rest go to the solver's stepper: ``registry.solver_options``)
SIMULATOR_OPTIONS = ("on_unconverged", "contact_method", "contact_threads", "contact_options", "enforce_limits",
                     "limit_options")


class Simulator:
    """``Simulator(scene, solver="pcg", dt=1/240)``; ``.step(n)``, ``.state``, ``.stats``, ``.energy()``.

    solver: ``"explicit"`` (ABA + symplectic Euler), ``"pcg"``, ``"direct"``,
    ``"dense"`` (RedMax linearly implicit step, Eq. 2.13). Options for the
    RedMax solvers: ``tol`` (PCG relative residual in (0, 1), default 1e-8), ``max_iter`` (≥ 1,
    default 500), ``on_unconverged`` (``"warn"`` once, default; ``"raise"`` a ConvergenceError;
    ``"ignore"``) for a PCG solve that stops at ``max_iter`` (counted in ``stats.unconverged_steps``),
    ``ordering`` for ``direct`` (``"leaf-to-root"`` or ``"rcm"``), ``geometric_stiffness``:
    ``"joints"`` (default, same as True) treats the tension along chains and ropes implicitly
    (the joints' geometric stiffness, ``engine.solvers.stages.geometric_stiffness``; long chains at
    1/30 s), ``"springs"`` the springs' own geometric terms, ``"all"`` both, False neither;
    ``integrator``: the time integrator built from the linear solve (``engine.solvers.steppers.redmax_schemes``,
    docs/redmax.md): ``"bdf2"`` (default: second order, the motion's energy held against the budget),
    ``"euler"`` (the implicit Euler step before issue #31: it damps every swing), ``"tr-bdf2"``, ``"blend"``;
    ``energy_guard`` (default True: the integrator's own policy) — the energy budget
    (``engine.solvers.stages.energy_guard``): ``"hold"`` keeps E(q⁺, q̇⁺) at the start's energy less what the
    dampers and impulses take (BDF2's), ``"cap"`` only keeps steps from creating energy, on scenes without
    loop closures, contact and limits (Euler's, issue #22: chains of 512+ links at 1/30 s), False none;
    ``newton_iterations`` (default 0; ``integrator="euler"`` only): Newton iterations towards backward Euler
    on the incremental potential after the linear solve (``engine.solvers.steppers.incremental_potential``).
    Joint limits
    (``model.joint_lower``/``upper``) are enforced by every solver but ``baraff`` and
    ``hard-constraints`` (which refuse a limited scene) unless ``enforce_limits=False``;
    ``limit_options``: dict for ``engine.solvers.stages.joint_limits.JointLimits`` (``restitution``,
    default 0; ``baumgarte``, ``slop``, ``margin``).
    ``"baraff"``: maximal coordinates with Lagrange multipliers (seed 002; gravity, joints and loop
    closures only), options ``method`` (``"sparse"``, ``"dense"``, ``"naive"``), ``integrator``,
    ``alpha``/``beta`` (Baumgarte), ``post_stabilize`` — see ``engine.solvers.steppers.baraff``.

    A scene with a ground (``scene.set_ground``) gets contact impulses with friction after each
    step's velocity solve (``engine.contact``; explicit and RedMax solvers): ``contact_method``
    (``"minv"``, the Θ(n²) inverse, default; or ``"cholesky"``), ``contact_threads`` (numba threads
    of the inverse), ``contact_options`` (dict for ``ContactHandler``: ``max_iter``, ``tol``,
    ``margin``, ``baumgarte``, ``slop``, ``speculative_speed``: the margin grows to speed·dt so that
    nothing approaching slower tunnels); the same for contact between bodies (``set_body_contacts``).
    ``scene.controllers`` run before every step.
    """

    def __init__(self, scene: Scene, solver: str = "pcg", dt: float = 1.0 / 240.0, **options):
        check_option_names(solver, options, SIMULATOR_OPTIONS)
        dt = check_options(dt, options)
        check_closures_feasible(scene)
        on_unconverged = options.pop("on_unconverged", "warn")
        self.scene = scene
        self.model = scene.model
        self.solver = solver
        self.dt = float(dt)
        self.state = State(scene.q0.copy(), scene.qd0.copy(), 0.0)
        self.stats = SimulationStats()
        contact = {"method": options.pop("contact_method", "minv"), "threads": options.pop("contact_threads", 1),
                   **options.pop("contact_options", {})}
        enforce = check_enforce_limits(options.pop("enforce_limits", True))
        limit_options = options.pop("limit_options", {})
        self._stepper = make_stepper(solver, scene.finalize(), self.dt, contact=contact,
                                     limits=limit_options if enforce else None, **options)
        self._monitor = ConvergenceMonitor(getattr(self._stepper, "iterative", False), on_unconverged,
                                           options.get("max_iter", DEFAULT_MAX_ITER), options.get("tol", 1e-8))

    @property
    def contact(self):
        """The stepper's contact stage (``engine.contact.ContactHandler``), or None."""
        return self._stepper.contact

    @property
    def limits(self):
        """The stepper's joint-limit stage (``engine.solvers.stages.joint_limits.JointLimits``), or None."""
        return getattr(self._stepper, "limits", None)

    def step(self, n: int = 1) -> State:
        """Advance n steps; raises SimulationError (naming the step and quantity) on divergence."""
        t0 = time.perf_counter()
        stepper, stats = self._stepper, self.stats
        for _ in range(check_step_count(n)):
            s = self.state
            for controller in self.scene.controllers:
                controller(self.scene, s.t)
            try:
                new = stepper.step(s, self.scene.control(s.t))
            except np.linalg.LinAlgError as err:  # LAPACK on non-finite values: a divergence inside the step
                self._check_input(s)
                raise SimulationError(f"simulation diverged at step {stats.steps + 1} (t = {s.t + self.dt:.4f} s): "
                                      f"{err} (non-finite forces or state); {stepper.divergence_hint}") from None
            self._monitor.record(stats, stepper.stats.iterations, stats.steps + 1, s.t + self.dt)  # may raise: state kept
            self._check(new.q, new.qd, s)
            self.state = new
            stats.steps += 1
            stats.iterations.append(stepper.stats.iterations)
            stats.total_iterations.append(stepper.stats.total_iterations)
            stats.constraint_error = stepper.stats.constraint_error
            stats.solve_seconds += stepper.stats.solve_seconds
        stats.wall_seconds += time.perf_counter() - t0
        return self.state

    def _check_input(self, start: State) -> None:
        """A start state set from outside (``sim.state.q[k] = nan``) is the caller's input, not a divergence:
        a ModelError naming the entry and its joint instead of blaming dt (checked once a step has failed)."""
        as_q(self.model, start.q, "sim.state.q"), as_v(self.model, start.qd, "sim.state.qd")

    def _check(self, q, qd, start: State):
        # the usual case in two dot products: Σq̇² ≤ 1e12 bounds every |q̇| by 1e6 and is False for NaN;
        # an overflowing q·q (or anything else) takes the element-wise checks below
        if float(qd.dot(qd)) <= 1e12 and math.isfinite(float(q.dot(q))):
            return
        self._check_input(start)
        step = self.stats.steps + 1
        hint = self._stepper.divergence_hint
        if self.stats.unconverged_steps:  # an unconverged solve is the likelier cause than dt
            hint = (f"PCG hit max_iter on {self.stats.unconverged_steps} step(s) before this; raise max_iter "
                    "or use the 'direct' solver")
        for name, x in (("q", q), ("qd", qd)):
            if not np.all(np.isfinite(x)):
                raise SimulationError(f"simulation diverged at step {step} (t = {self.state.t + self.dt:.4f} s): "
                                      f"{name} is not finite; {hint}")
        vmax = float(np.abs(qd).max(initial=0.0))
        if vmax > 1e6:
            raise SimulationError(f"simulation diverged at step {step} (t = {self.state.t + self.dt:.4f} s): "
                                  f"|qd| reached {vmax:.3g}; {hint}")

    def energy(self, state: State | None = None) -> float:
        """Total energy (J) the solver models: kinetic + gravitational (+ spring, joint spring and
        point-force potentials for the explicit and RedMax solvers), of ``state`` (default: the current one)."""
        s = self.state if state is None else state
        return self._stepper.energy(s, self.scene.control(s.t))

    def energy_budget(self) -> float | None:
        """The energy the scene's physics leaves it after the steps so far (J): the start's energy, less what its
        dampers took, plus what a changing control put in, less what contact and limit impulses took — kept by the
        RedMax step's energy budget (``engine.solvers.stages.energy_guard``); None without one. With the default
        integrator (``"bdf2"``, the budget held) ``energy()`` stays at it; ``energy_budget() − energy()`` is the
        energy the integrator itself took (with ``integrator="euler"``, whose budget counts the joint dampers
        only, an upper bound of it)."""
        guard = getattr(self._stepper, "_energy_guard", None)
        return None if guard is None or guard.budget is None else float(guard.budget)

    def step_energy(self, start: bool = False) -> float | None:
        """``energy()`` as the last step already computed it for its energy guard (J): RedMax on scenes without
        closures, contact and limits (``energy_guard=True``, the default), free; equal to ``energy()`` to
        round-off. None when it did not (another solver, no guard, no step yet, the state or control changed).
        start=True: the energy at that step's start (the state before it), where the one-call step has it."""
        s, stepper = self.state, self._stepper
        if not hasattr(stepper, "step_energy"):
            return None
        return stepper.step_energy(s, self.scene.control(s.t), start)
