"""Simulator: steps a Scene with one of the engine's solvers and keeps statistics."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .algorithms.aba import aba_kernel
from .energy import kinetic_energy, potential_energy
from .errors import SimulationError
from .integrators import integrate
from .model import State
from .scene import Scene
from .solvers.redmax import LINEAR_SOLVERS, RedMaxStepper

SOLVERS = ("explicit",) + LINEAR_SOLVERS + ("baraff", "hard-constraints")
PLANNED: dict = {}


@dataclass
class SimulationStats:
    """Per-run statistics. ``iterations``: PCG iterations of each step — the most any of
    the step's linear solves needed (one solve without loop closures, 1 + rows with them;
    0 for the direct solvers); ``total_iterations``: summed over those solves;
    ``constraint_error``: largest loop-closure violation after the last step (m)."""

    steps: int = 0
    iterations: list = field(default_factory=list)
    total_iterations: list = field(default_factory=list)
    constraint_error: float = 0.0
    wall_seconds: float = 0.0

    @property
    def mean_iterations(self) -> float:
        return float(np.mean(self.iterations)) if self.iterations else 0.0


class Simulator:
    """``Simulator(scene, solver="pcg", dt=1/240)``; ``.step(n)``, ``.state``, ``.stats``, ``.energy()``.

    solver: ``"explicit"`` (ABA + symplectic Euler), ``"pcg"``, ``"direct"``,
    ``"dense"`` (RedMax linearly implicit step, Eq. 2.13). Options for the
    RedMax solvers: ``tol`` (PCG relative residual, default 1e-8), ``max_iter``,
    ``ordering`` for ``direct`` (``"leaf-to-root"`` or ``"rcm"``), ``geometric_stiffness``:
    ``"joints"`` (default, same as True) treats the tension along chains and ropes implicitly
    (the joints' geometric stiffness, ``engine.solvers.geometric_stiffness``; long chains at
    1/30 s), ``"springs"`` the springs' own geometric terms, ``"all"`` both, False neither.
    ``"baraff"``: maximal coordinates with Lagrange multipliers (seed 002; gravity, joints and loop
    closures only), options ``method`` (``"sparse"``, ``"dense"``, ``"naive"``), ``integrator``,
    ``alpha``/``beta`` (Baumgarte), ``post_stabilize`` — see ``engine.solvers.baraff``.

    A scene with a ground (``scene.set_ground``) gets contact impulses with friction after each
    step's velocity solve (``engine.contact``; explicit and RedMax solvers): ``contact_method``
    (``"minv"``, the Θ(n²) inverse, default; or ``"cholesky"``), ``contact_threads`` (numba threads
    of the inverse), ``contact_options`` (dict for ``ContactHandler``: ``max_iter``, ``tol``,
    ``margin``, ``baumgarte``, ``slop``); the same for contact between bodies (``set_body_contacts``).
    ``scene.controllers`` run before every step.
    """

    def __init__(self, scene: Scene, solver: str = "pcg", dt: float = 1.0 / 240.0, **options):
        if solver in PLANNED:
            raise ValueError(f"solver {solver!r} is not available yet ({PLANNED[solver]}); use one of {', '.join(SOLVERS)}")
        if solver not in SOLVERS:
            raise ValueError(f"unknown solver {solver!r}; expected one of {', '.join(SOLVERS)}")
        if not (dt > 0 and np.isfinite(dt)):
            raise ValueError(f"dt must be a positive number of seconds, got {dt}")
        self.scene = scene
        self.model = scene.model
        self.solver = solver
        self.dt = float(dt)
        self.state = State(scene.q0.copy(), scene.qd0.copy(), 0.0)
        self.stats = SimulationStats()
        contact = {"method": options.pop("contact_method", "minv"), "threads": options.pop("contact_threads", 1),
                   **options.pop("contact_options", {})}
        self.contact = None
        if solver == "baraff":
            from .solvers.baraff import SceneStepper

            self._stepper = SceneStepper(scene, dt, **options)
        elif solver == "hard-constraints":
            from .solvers.hard_constraints import HardConstraintStepper

            self._stepper = HardConstraintStepper(scene, dt, **options)
        else:  # the joints' geometric stiffness is on for users; the bare stepper keeps the thesis's step
            options.setdefault("geometric_stiffness", "joints")
            self._stepper = RedMaxStepper(scene, dt, "pcg" if solver == "explicit" else solver, **options)
        if solver == "explicit" and scene.loop_closures:
            raise ValueError("the explicit solver does not handle loop closures; use 'pcg', 'direct' or 'dense'")
        if (scene.ground is not None or scene.body_contact is not None) and solver != "hard-constraints":
            if solver == "baraff":  # (hard-constraints handles its own contacts)
                raise ValueError("the 'baraff' solver has no contact; use 'pcg', 'direct', 'dense' or 'explicit'")
            from .contact.handler import ContactHandler

            self.contact = ContactHandler(scene, self.dt, **contact)
            self._stepper.velocity_filter = self.contact.apply

    def step(self, n: int = 1) -> State:
        """Advance n steps; raises SimulationError (naming the step and quantity) on divergence."""
        t0 = time.perf_counter()
        for _ in range(int(n)):
            s = self.state
            for controller in self.scene.controllers:
                controller(self.scene, s.t)
            if self.solver == "explicit":
                q, qd = self._explicit_step(s.q, s.qd, s.t)
                its = total = 0
            else:
                q, qd = self._stepper.step(s.q, s.qd, s.t)
                its, total = self._stepper.last_iterations, self._stepper.last_total_iterations
            self._check(q, qd)
            self.state = State(q, qd, s.t + self.dt)
            self.stats.steps += 1
            self.stats.iterations.append(its)
            self.stats.total_iterations.append(total)
            self.stats.constraint_error = self._stepper.constraint_error
        self.stats.wall_seconds += time.perf_counter() - t0
        return self.state

    def _explicit_step(self, q, qd, t):
        st, model = self._stepper, self.model
        f_r, _ = st.evaluate(q, qd, t)
        tau = f_r - self.scene.joint_damping * qd
        ws = model.data
        f = st.wrench + st.wrench_damping - np.einsum("nij,nj->ni", st.body_damping_blocks, ws.v)
        qdd = np.empty(model.nv)
        aba_kernel(model.tree, q, qd, tau, f, ws, qdd)
        qd_new = qd + self.dt * qdd
        if st.velocity_filter is not None:
            qd_new = st.velocity_filter(q, qd_new)
        return integrate(model, q, qd_new, self.dt), qd_new

    def _check(self, q, qd):
        step = self.stats.steps + 1
        hint = "try a smaller dt or the implicit 'pcg' solver" if self.solver == "explicit" else "try a smaller dt"
        for name, x in (("q", q), ("qd", qd)):
            if not np.all(np.isfinite(x)):
                raise SimulationError(f"simulation diverged at step {step} (t = {self.state.t + self.dt:.4f} s): "
                                      f"{name} is not finite; {hint}")
        vmax = float(np.abs(qd).max(initial=0.0))
        if vmax > 1e6:
            raise SimulationError(f"simulation diverged at step {step} (t = {self.state.t + self.dt:.4f} s): "
                                  f"|qd| reached {vmax:.3g}; {hint}")

    def energy(self) -> float:
        """Kinetic + gravitational + spring (+ joint spring, point force) potential energy (J)."""
        s, st = self.state, self._stepper
        if self.solver in ("baraff", "hard-constraints"):  # gravity and joints only (the solvers refuse other forces)
            return kinetic_energy(self.model, s.q, s.qd) + potential_energy(self.model, s.q)
        st.evaluate(s.q, s.qd, s.t)
        joint_pe = st.joint_spring_energy(s.q)
        return (kinetic_energy(self.model, s.q, s.qd) + potential_energy(self.model, s.q) + st.spring_energy
                + st.point_force_energy + joint_pe)
