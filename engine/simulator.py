"""Simulator: drives a stepper (``engine.solvers.registry``) over a Scene and keeps statistics."""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from .algorithms._checks import as_q, as_v, plain_vector, state_ok_flat
from .algorithms._flat import flat_model
from .breaking import BreakWatch, scene_with_free_joint, scene_without_closure
from .errors import ModelError, SimulationError
from .model import State
from .scene import Scene
from .contact.handler import ContactHandler
from .sim_checks import (DEFAULT_MAX_ITER, ConvergenceMonitor, check_closures_feasible, check_contact_method,
                         check_options, check_stage_options, check_step_count, check_threads)
from .solvers.stages.joint_limits import JointLimits, check_enforce_limits
from .solvers.registry import SOLVERS, STEPPERS, check_option_names, make_stepper  # noqa: F401  (SOLVERS: the names, for the viewer)


def _start_time(t) -> float:
    """sim.state.t as a float, or a ModelError (it may have been set from outside)."""
    if isinstance(t, (bool, np.bool_)) or not isinstance(t, (int, float, np.integer, np.floating)) or not math.isfinite(t):
        raise ModelError(f"sim.state.t must be a finite number of seconds, got {t!r}")
    return float(t)


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
# scene controllers write the scene (joint_rest, forces): Simulators of one scene in several threads run them
# and sample the control they set one at a time (a controller is Python, which holds the GIL anyway)
_CONTROLLERS = threading.Lock()


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
    (``"auto"``, the default: ``"impulse"`` for a few contacts on a large tree, else ``"minv"``, the Θ(n²)
    inverse; or either of them, or ``"cholesky"``), ``contact_threads`` (numba threads
    of the inverse), ``contact_options`` (dict for ``ContactHandler``: ``max_iter``, ``tol``,
    ``margin``, ``baumgarte``, ``slop``, ``speculative_speed``: the margin grows to speed·dt so that
    nothing approaching slower tunnels); the same for contact between bodies (``set_body_contacts``).
    ``scene.controllers`` run before every step.
    """

    def __init__(self, scene: Scene, solver: str = "pcg", dt: float = 1.0 / 240.0, **options):
        check_option_names(solver, options, SIMULATOR_OPTIONS)
        dt = check_options(dt, options)
        frozen = scene.finalize()  # (checks the scene's public arrays, which users may have written)
        check_closures_feasible(scene)
        on_unconverged = options.pop("on_unconverged", "warn")
        self.scene = scene
        self.model = scene.model
        self.solver = solver
        self.dt = float(dt)
        self.state = State(frozen.q0.copy(), frozen.qd0.copy(), 0.0)
        self.stats = SimulationStats()
        contact = {"method": check_contact_method(options.pop("contact_method", "auto")),
                   "threads": check_threads(options.pop("contact_threads", 1), "contact_threads"),
                   **check_stage_options("contact_options", options.pop("contact_options", {}), ContactHandler,
                                         ("method", "threads"))}
        enforce = check_enforce_limits(options.pop("enforce_limits", True))
        limit_options = check_stage_options("limit_options", options.pop("limit_options", {}), JointLimits)
        self._make = lambda fs: make_stepper(solver, fs, self.dt, contact=contact,
                                             limits=limit_options if enforce else None, **options)
        self._stepper = self._make(frozen)
        self._breaks = BreakWatch(scene, self.dt)
        self.broken: list = []  # (t, name) of each joint or loop closure that broke (``Scene.set_breakable``)
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
        """Advance n steps; raises SimulationError (naming the step and quantity) on divergence, and ModelError
        naming the entry when ``sim.state`` or ``scene.joint_rest`` was set from outside to something the step
        cannot take (non-finite, a quaternion that is not unit: docs/errors.md)."""
        t0 = time.perf_counter()
        stepper, stats = self._stepper, self.stats
        for _ in range(check_step_count(n)):
            s = self.state
            if type(s.t) is not float:
                self.state = s = State(s.q, s.qd, _start_time(s.t))
            control = self._control(s.t, s)
            flat = self.model._per_thread.flat or flat_model(self.model)
            if not (plain_vector(s.q) and plain_vector(s.qd) and plain_vector(control.joint_rest)
                    and state_ok_flat(flat.ints, flat.floats, s.q, s.qd, control.joint_rest)):
                s, control = self._checked_start(s, control)
            try:
                new = stepper.step(s, control)
            except np.linalg.LinAlgError as err:  # LAPACK on non-finite values: a divergence inside the step
                raise SimulationError(f"simulation diverged at step {stats.steps + 1} (t = {s.t + self.dt:.4f} s): "
                                      f"{err} (non-finite forces or state); {stepper.divergence_hint}") from None
            self._monitor.record(stats, stepper.stats.iterations, stats.steps + 1, s.t + self.dt)  # may raise: state kept
            self._check(new.q, new.qd)
            self.state = new
            stats.steps += 1
            stats.iterations.append(stepper.stats.iterations)
            stats.total_iterations.append(stepper.stats.total_iterations)
            stats.constraint_error = stepper.stats.constraint_error
            stats.solve_seconds += stepper.stats.solve_seconds
            if self._breaks:
                broken = self._breaks.check(stepper, s, new)
                if broken:
                    self._break(broken)
                    stepper = self._stepper
        stats.wall_seconds += time.perf_counter() - t0
        return self.state

    def _control(self, t: float, state: State):
        """The scene's control at t (force fields at ``state``), after its controllers ran (under a lock, with a
        private joint_rest, when there are controllers: another thread's Simulator of the same scene runs them
        for its own t)."""
        scene = self.scene
        if not scene.controllers:
            return scene.control(t, state)
        with _CONTROLLERS:
            for controller in scene.controllers:
                controller(scene, t)
            control = scene.control(t, state)
            return control._replace(joint_rest=np.array(control.joint_rest, dtype=float))

    def _break(self, broken) -> None:
        """Break ``broken`` (``Breakable``s) after the step just taken: a new scene (joints freed, closures
        dropped) and a new stepper for it, the state carried over (``engine.breaking``)."""
        scene, state = self.scene, self.state
        q, qd = state.q, state.qd
        for b in broken:
            if b.kind == "joint":
                scene, q, qd = scene_with_free_joint(scene, b.name, q, qd)
            else:
                scene = scene_without_closure(scene, b.name)
            self.broken.append((state.t, b.name))
        self.scene, self.model = scene, scene.model
        self.state = State(q, qd, state.t)
        self._stepper = self._make(scene.finalize())
        self._breaks = BreakWatch(scene, self.dt)

    def _checked_start(self, s: State, control):
        """The start of a step that failed the fast check (or holds lists, integers, ...): a ModelError naming
        the entry and its joint (a state set from outside is the caller's input, not a divergence to blame on
        dt), else the same values as float arrays."""
        model = self.model
        state = State(as_q(model, s.q, "sim.state.q"), as_v(model, s.qd, "sim.state.qd"), s.t)
        rest = as_q(model, control.joint_rest, f"scene '{self.scene.name}': joint_rest")
        if state.q is not s.q or state.qd is not s.qd:
            self.state = state
        return state, control._replace(joint_rest=rest)

    def _check(self, q, qd):
        # the usual case in two dot products: Σq̇² ≤ 1e12 bounds every |q̇| by 1e6 and is False for NaN;
        # an overflowing q·q (or anything else) takes the element-wise checks below
        if float(qd.dot(qd)) <= 1e12 and math.isfinite(float(q.dot(q))):
            return
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
