"""One setting of the settings advisor simulated frame by frame and judged (``engine.apps.advise``, ``engine sweep``).

:class:`Trial` runs ``solver`` × ``substeps`` frame by frame, timing every step but the first in CPU seconds
and recording what :func:`judge` needs (PCG convergence, loop-closure error, energy); :class:`Run` is what it
measured. The advisor's short trials and the sweep's whole bakes are the same test over different lengths.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ...energy import kinetic_energy
from ...errors import SimulationError
from ...simulator import Simulator

ENERGY_RISE = 0.1  # unstable when energy rises by more than this fraction of the energy in motion
CONSTRAINT_TOL = 1e-3  # m: largest loop-closure violation a stable run may show
LIVELY = 0.9  # a setting must keep at least this fraction of the energy in motion over the bake (issue #31)


@dataclass
class Run:
    """One setting simulated frame by frame: ``solver`` with ``substeps`` steps of ``dt`` s per frame.

    Costs are process CPU seconds (robust to other work on a shared machine) of every step but the
    first (which pays compilation and first-factorization costs once per process/simulator).
    energy_rise: largest energy increase over the start (J); energy_scale: the energy in motion it is
    judged against (J): the largest kinetic energy so far plus what damping has taken out so far
    (an integrator's energy error swings with the motion; a growing mode outruns the motion).
    """

    solver: str
    substeps: int
    dt: float
    frames: int = 0
    steps: int = 0
    timed_steps: int = 0
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    first_step_seconds: float = 0.0
    recent_cpu_seconds: float = 0.0
    recent_steps: int = 0
    frame_costs: list = field(default_factory=list, repr=False)  # (CPU s, timed steps, wall s, solve wall s) per frame
    first_solve_share: float = math.nan  # of the first step's wall time, the share in its linear solve
    setup_seconds: float = 0.0  # CPU s building its Simulator
    mean_iterations: float = 0.0
    max_iterations: int = 0
    unconverged_steps: int = 0
    energy_rise: float = 0.0
    energy_scale: float = 0.0
    constraint_error: float = 0.0
    energy_lost: float = 0.0  # J: the energy the integrator took (``Simulator.energy_budget`` − energy), ≥ 0
    motion_energy: float = math.nan  # J: the scene's energy in motion, E(0) − E_rest (asked for once energy is lost)
    bake_seconds: float = 0.0  # s of scene time the setting is to run (the whole bake), for ``energy_kept
    verdict: str = "stable"
    detail: str = ""
    complete: bool = False  # the advisor's trial of this setting ran its full length: its verdict and cost may pick it

    @property
    def stable(self) -> bool:
        return self.verdict == "stable"

    @property
    def seconds_per_step(self) -> float:
        """CPU seconds per step (nan before any step is timed)."""
        return self.cpu_seconds / self.timed_steps if self.timed_steps else math.nan

    @property
    def seconds_per_frame(self) -> float:
        return self.seconds_per_step * self.substeps

    @property
    def steady_seconds_per_step(self) -> float:
        return self.recent_cpu_seconds / self.recent_steps if self.recent_steps else math.nan

    @property
    def steady_seconds_per_frame(self) -> float:
        """CPU seconds per frame over the later half of the timed frames, at the cheapest frame's cost per step
        (nan before any): the cost a long bake settles to once the start's transients are over (e.g. PCG's
        extra iterations early in a motion), which the advisor compares settings by."""
        return self.steady_seconds_per_step * self.substeps

    @property
    def solve_share(self) -> float:
        """Fraction of a step's time spent in its linear solve (``StepStats.solve_seconds``; the rest of the step
        is the same for every linear solver of the same stepper): the median over the timed frames of solve wall
        time / step wall time, over the frames the process was not preempted in (wall within 1.25× CPU: both
        are wall-clock, so a preemption inside either would skew the share); nan before any."""
        frames = [f for f in self.frame_costs if f[2] > 0]
        clean = [f[3] / f[2] for f in frames if f[2] <= 1.25 * f[0] + 2e-5] or [f[3] / f[2] for f in frames]
        return _median(clean) if clean else math.nan

    @property
    def relative_energy_rise(self) -> float:
        return self.energy_rise / self.energy_scale if self.energy_scale > 0 else 0.0

    @property
    def energy_kept(self) -> float:
        """The fraction of the energy in motion left at the end of the bake (``bake_seconds``) at this setting: the
        fraction the run kept, 1 − energy_lost / motion_energy over its ``steps × dt`` s, compounded over the bake —
        exact for implicit Euler on an oscillation, which keeps 1/(1 + (ωh)²) of its energy every step whatever
        the phase. 1 when the integrator took nothing (the default step holds its energy budget)."""
        if self.energy_lost <= 0 or not self.steps:
            return 1.0
        if not self.motion_energy > 0:
            return 0.0 if math.isfinite(self.motion_energy) else 1.0
        kept = 1.0 - self.energy_lost / self.motion_energy
        return max(kept, 0.0) ** (self.bake_seconds / (self.steps * self.dt)) if kept > 0 else 0.0

    def as_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d.update(stable=self.stable, seconds_per_frame=self.seconds_per_frame,
                 steady_seconds_per_frame=self.steady_seconds_per_frame,
                 relative_energy_rise=self.relative_energy_rise, solve_share=self.solve_share,
                 energy_kept=self.energy_kept)
        return d


def _median(values) -> float:
    v, n = sorted(values), len(values)  # (statistics.median's type checks cost more than the advisor's decision)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def judge(run: Run, *, passive: bool = True) -> tuple[str, str]:
    """(verdict, detail) of a run so far: ``"stable"`` or why not. A diverged run has its verdict set
    when the Simulator raises; energy growth and damping are judged only on ``passive`` scenes (no controllers
    put energy in). ``"damped"``: stable, but the integrator takes so much of the motion's energy that less than
    LIVELY of it would be left at the end of the bake (``Run.energy_kept``; issue #31)."""
    if run.verdict == "diverged":
        return run.verdict, run.detail
    if run.unconverged_steps:
        return "PCG not converged", f"PCG did not converge in {run.unconverged_steps} step(s) (max {run.max_iterations} iterations)"
    if run.constraint_error > CONSTRAINT_TOL:
        return "constraint drift", f"loop closures drifted {run.constraint_error:.2g} m (> {CONSTRAINT_TOL:g} m)"
    if passive and run.relative_energy_rise > ENERGY_RISE:
        share = (f"{100 * run.relative_energy_rise:.0f} % of the {run.energy_scale:.3g} J in motion"
                 if run.relative_energy_rise < 10 else f"the scene had {run.energy_scale:.2g} J in motion")
        return "energy growth", f"energy rose {run.energy_rise:.3g} J, {share}"
    if passive and run.energy_kept < LIVELY:
        return "damped", (f"the step keeps only {100 * run.energy_kept:.0f} % of the energy in motion over the bake "
                          f"({run.bake_seconds:.3g} s; < {100 * LIVELY:.0f} %)")
    return "stable", ""


class Trial:
    """A resumable run of one setting: ``advance(k)`` simulates up to k more frames and stops early
    once :func:`judge` says unstable. Raises ValueError at construction when the solver cannot take
    the scene (e.g. explicit with loop closures)."""

    def __init__(self, scene, solver: str, substeps: int, fps: float, *, dt: float | None = None, options=None,
                 energy_every: int = 1, start_energy=None, lazy_kinetic: bool = False, bake_seconds: float = 0.0,
                 motion_energy=None):
        self.dt = float(dt) if dt is not None else 1.0 / (fps * substeps)
        opts = options(self.dt) if callable(options) else dict(options or {})
        opts.setdefault("on_unconverged", "ignore")  # counted in stats.unconverged_steps and judged here, not warned
        c0 = time.process_time()
        self.sim = Simulator(scene, solver, dt=self.dt, **opts)  # (public API only: step, state, stats, energy, step_energy)
        self.model = scene.model
        self.run = Run(solver, int(substeps), self.dt, setup_seconds=time.process_time() - c0,
                       bake_seconds=float(bake_seconds))
        # () -> E(0) − E_rest (J), asked once the run has lost energy (the advisor's, computed once per advice)
        self.motion_energy = motion_energy
        self.passive = not scene.controllers
        self._seen = self._its_sum = 0
        self.first_state = None  # (q, q̇) concatenated after the first frame: how this solver steps (see Advisor)
        self.energy_every = int(energy_every)  # frames between energy checks (an energy costs about a step)
        # lazy_kinetic: the kinetic energies (for the scale) only once the energy has risen at all: with no rise the
        # verdict and the printed rise (0 %) do not depend on the scale (the advisor's trials)
        self.lazy_kinetic = bool(lazy_kinetic)
        # (total, kinetic) energy of the start state: the same for every trial of a scene, so reusable; with
        # lazy_kinetic the kinetic part waits (None) until a verdict needs it, and the total is taken after the first
        # step, from the step itself where it has it (Simulator.step_energy): start_energy stays None until then
        self.start_energy = None
        if start_energy is None and not self.lazy_kinetic:
            start_energy = (self.sim.energy(), self._kinetic(scene.q0, scene.qd0))
        if start_energy is not None:
            self._set_start(start_energy)

    def _set_start(self, start_energy):
        self.start_energy = start_energy
        self._e0, ke0 = start_energy
        self._kemax = 0.0 if ke0 is None else ke0
        self._ke0_known = ke0 is not None
        self._emin = self._e0
        self._floor = 1e-6 * max(abs(self._e0), 1.0)  # round-off of an energy of this size

    def _kinetic(self, q, qd) -> float:
        return float(kinetic_energy(self.model, q, qd))

    def advance(self, frames: int) -> Run:
        r, sim = self.run, self.sim
        stats, clock, wall = sim.stats, time.process_time, time.perf_counter
        for _ in range(int(frames)):
            if r.verdict != "stable":
                break
            w0, c0 = wall(), clock()
            wt, s0, n = w0, stats.solve_seconds, r.substeps
            try:
                if r.steps == 0:  # the first step pays compilation / first factorization: kept apart
                    start = sim.state
                    sim.step(1)
                    c1 = clock()
                    r.first_step_seconds = c1 - c0
                    wt = wall()
                    r.first_solve_share = (stats.solve_seconds - s0) / max(wt - w0, 1e-12)
                    if self.start_energy is None:  # (outside the timed parts)
                        e = sim.step_energy(start=True)
                        self._set_start((sim.energy(start) if e is None else e, None))
                        c1, wt = clock(), wall()
                    c0, s0, n = c1, stats.solve_seconds, n - 1
                if n:
                    sim.step(n)
                    r.timed_steps += n
            except SimulationError as err:
                r.verdict, r.detail = "diverged", str(err).split(";")[0]
            cpu, now = clock() - c0, wall()
            r.cpu_seconds += cpu
            r.wall_seconds += now - w0
            if n and r.verdict != "diverged":
                costs = r.frame_costs
                costs.append((cpu, n, now - wt, stats.solve_seconds - s0))
                # the later half of the timed frames (all of them while fewer than 4: one or two frames do not
                # make a start and a rest, and a single frame is the likeliest to be off)
                recent = costs[len(costs) // 2:] if len(costs) >= 4 else costs
                r.recent_steps = sum(f[1] for f in recent)
                # at the cheapest frame's cost per step: on a busy machine a frame can cost 3× and a run of frames
                # 2× (preemption, cache thrashing, garbage collection); the least interfered one compares settings
                r.recent_cpu_seconds = min(f[0] / f[1] for f in recent) * r.recent_steps
            r.steps = stats.steps  # (one per step taken, a diverging one excluded)
            if r.verdict == "diverged":
                break
            r.frames += 1
            if r.frames == 1:
                self.first_state = np.concatenate([sim.state.q, sim.state.qd])
            self._measure()
            r.verdict, r.detail = judge(r, passive=self.passive)
        return r

    def _measure(self):
        r, sim = self.run, self.sim
        its = sim.stats.iterations[self._seen:]  # this frame's steps only: long runs stay linear in time
        if its:
            self._seen += len(its)
            self._its_sum += sum(its)
            r.mean_iterations, r.max_iterations = self._its_sum / self._seen, max(r.max_iterations, max(its))
        r.unconverged_steps = int(sim.stats.unconverged_steps)  # PCG solves that stopped at max_iter
        r.constraint_error = max(r.constraint_error, float(sim.stats.constraint_error))
        if r.frames % self.energy_every == 0:
            self._measure_energy()

    def check_energy(self) -> Run:
        """Measure the energy now (between the every-k-frames checks) and judge again."""
        if self.run.stable and self.run.frames % self.energy_every:
            self._measure_energy()
            self.run.verdict, self.run.detail = judge(self.run, passive=self.passive)
        return self.run

    def _measure_energy(self):
        r, sim = self.run, self.sim
        e = sim.step_energy()  # free when the step's energy guard has it (its E(q⁺, q̇⁺)), else computed
        if e is None:
            e = sim.energy()
        self._emin = min(self._emin, e)
        r.energy_rise = max(r.energy_rise, e - self._e0)
        budget = sim.energy_budget()  # what the physics leaves: the rest the integrator took
        r.energy_lost = max(budget - e, 0.0) if budget is not None else max(self._e0 - e, 0.0)
        if r.energy_lost > self._floor and r.bake_seconds > 0 and self.motion_energy is not None \
                and not math.isfinite(r.motion_energy):
            r.motion_energy = float(self.motion_energy())
        # lazily: only once the energy rose past round-off, so that a rise is always told against the whole scale
        if not self.lazy_kinetic or r.energy_rise > self._floor:
            if not self._ke0_known:  # the start's kinetic energy, left out so far (lazy_kinetic)
                self._kemax = max(self._kemax, self._kinetic(self.sim.scene.q0, self.sim.scene.qd0))
                self._ke0_known = True
            self._kemax = max(self._kemax, self._kinetic(sim.state.q, sim.state.qd))
        r.energy_scale = self._kemax + (self._e0 - self._emin) + self._floor
