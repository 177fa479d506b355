"""Settings advisor: which solver, how many substeps — by measurement (``python -m engine advise``).

Short trial runs of solver × substep count over the first part of the motion, each judged by :func:`judge`
on what the run did (divergence, energy growth, loop-closure error, PCG convergence) and timed in CPU seconds
per frame. One kind of step (the stepper behind a solver: explicit; pcg/direct/dense share the RedMax step and
differ in the linear solve) is probed first for two frames at one substep (the first pays the setup, the second
is timed): the RedMax step, linearly implicit and so stable over the widest range of steps. Then the setting
predicted to be cheapest is tried next, costs are taken from the later half of a trial (the start of a motion
can cost more than the rest), and the search stops as soon as no remaining setting is predicted to cost less
than the cheapest stable one found / ADVANTAGE. A setting found unstable rules out the same solver (and solvers
taking the same steps) with fewer substeps; a stable one rules out more. A solver sharing a probed solver's
step is probed only when, with a free linear solve (the step less its measured solve time,
``StepStats.solve_seconds``), it could be PROBE_ADVANTAGE× cheaper than the best found and the probe keeps the
advisor within PROBE_BUDGET of the bake; another kind of step (explicit), whose cost nothing bounds before it
is probed, only within that budget or when nothing is stable. Nothing here knows which solver is better where: the numbers decide
(so a change of a solver changes the advice with it), and every setting left out is named with the reason.

The same :class:`Run` and :func:`judge` are used by ``engine sweep`` cells over a whole bake, so the
advisor's verdicts and the sweep's are the same test over different lengths.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from .trial import CONSTRAINT_TOL, ENERGY_RISE, LIVELY, Run, Trial, judge  # noqa: F401  (engine.apps.advise's names)
from ...errors import SimulationError
from ...model import State
from ...simulator import Simulator
from ...solvers.registry import STEPPERS

SOLVERS = ("explicit", "pcg", "direct", "dense")  # what the advisor chooses between
SUBSTEPS = (1, 2, 4, 8, 16, 32, 64)  # the substep ladder tried (steps per frame)
DENSE_MAX_DOFS = 700  # the dense solver is O(n³) per step: only offered to rigs up to this size
PROBE_FRAMES = 2  # frames each kind of step (stepper) runs before the cost-ordered search: the first step pays the
#                  setup, the second is timed, so the search starts from measured costs (a first step's time over an
#                  estimated setup factor can be off by 2× on a busy machine); the frames count towards its trial
ADVANTAGE = 1.2  # once a setting is stable, another is tried only if predicted this many times cheaper: a
#                 closer call is within the timings' noise, and trying both would cost more than it could save
SAME_STATE = 1e-6  # relative state difference below which two solvers' probes took the same steps
PROBE_ADVANTAGE = 1.5  # a solver sharing a probed solver's step (pcg, direct, dense: one RedMax step, three linear
#                        solves) is probed only if, with its linear solve free, it could be this many times cheaper
#                        than the best stable setting: short of that the pick is within 1.5× of it whatever it costs
PROBE_BUDGET = 0.03  # ... and only while the advisor's CPU time, that probe included (estimated as the costliest probe
#                      so far: construction and first step), stays within this fraction of the bake it predicts: what
#                      such a probe can save is bounded, and the advisor's cost must stay a small part of the bake. The
#                      same budget decides whether a kind of step not probed yet (explicit, after the RedMax step) is
#                      probed once a setting is stable. (Trials are not shortened to fit it: a chain's growing mode can
#                      show only at frame 5, tests/test_advise.py, and a pick must hold over the whole bake.)
SOLVER_VERDICTS = ("PCG not converged",)  # verdicts about a solver's own solve, not shared with same-step solvers
SETTLE_DT, SETTLE_STEPS = 0.25, 60  # the rest pose for the energy in motion: implicit Euler, 15 s in 0.25 s steps
ENERGY_EVERY = 4  # the advisor's trials check energy every 4th frame (an energy costs about a step; a growing
#                  mode grows by orders of magnitude within a few frames, so it still shows in time)


def _family(solver) -> object:
    """The stepper class behind a solver name: solvers built by the same class (pcg, direct, dense: the RedMax
    step) run the same step but for the part that class times as its linear solve (StepStats.solve_seconds)."""
    maker = STEPPERS[solver]
    return getattr(maker, "func", maker)


_WARMED: set = set()  # (solver, scene features) whose kernels this process has run: see Advisor.warm_up
_REFUSED: dict = {}  # (solver, scene features) -> why the Simulator refused that kind of scene (found by warm_up)


def _features(scene) -> tuple:
    """What decides which kernels a step runs (not the sizes): closures, ground/body contact, limits, springs,
    point forces, controllers."""
    m = scene.model
    return (bool(scene.loop_closures), scene.ground is not None, getattr(scene, "body_contact", None) is not None,
            bool(np.isfinite(m.joint_lower).any() or np.isfinite(m.joint_upper).any()), bool(scene.pairs),
            bool(scene.point_forces or scene.moving_loads), bool(scene.controllers), bool(np.any(scene.joint_stiffness)))


@dataclass
class Advice:
    """The advisor's answer. ``pick``: the recommended Run (None if nothing was stable);
    ``trials``: every Run tried, in the order tried; ``reasons``: measured reasons, one a line;
    ``skipped``: settings not tried and why; ``seconds``: the advisor's own wall time."""

    pick: Run | None
    trials: list
    reasons: list
    skipped: list = field(default_factory=list)
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    fps: float = 30.0
    frames: int = 250
    trial_frames: int = 0
    scene: str = ""
    dofs: int = 0
    warmup_seconds: float = 0.0  # CPU s loading kernels before the search (first advice of a process only)

    @property
    def solver(self) -> str | None:
        return self.pick.solver if self.pick else None

    @property
    def substeps(self) -> int | None:
        return self.pick.substeps if self.pick else None

    def estimated_bake_seconds(self) -> float:
        return self.pick.steady_seconds_per_frame * (self.frames - 1) if self.pick else math.nan

    def as_dict(self) -> dict:
        return {"scene": self.scene, "dofs": self.dofs, "fps": self.fps, "frames": self.frames,
                "trial_frames": self.trial_frames, "solver": self.solver, "substeps": self.substeps,
                "estimated_bake_seconds": self.estimated_bake_seconds(), "seconds": self.seconds,
                "cpu_seconds": self.cpu_seconds, "warmup_seconds": self.warmup_seconds, "reasons": self.reasons, "skipped": self.skipped,
                "trials": [t.as_dict() for t in self.trials]}


class Advisor:
    """Finds the cheapest stable (solver, substeps) for baking ``frames`` frames at ``fps``.

    scene: an engine Scene (not modified). solvers: the choices (default: explicit, pcg, direct, and
    dense up to DENSE_MAX_DOFS dofs). substeps: the ladder of steps per frame. trial_frames: frames
    each candidate runs (default 2.5 % of the bake, at least 7). options: Simulator options, or a
    callable dt -> options (the add-on's contact margin grows with the step).
    Drive it with ``for fraction, message in advisor.steps(): ...`` (UI progress), or ``advisor.run()``.
    """

    def __init__(self, scene, *, fps: float = 30.0, frames: int = 250, solvers=None, substeps=SUBSTEPS,
                 trial_frames: int | None = None, options=None):
        if not (fps > 0 and math.isfinite(fps)):
            raise ValueError(f"fps must be a positive number, got {fps}")
        if int(frames) < 2:
            raise ValueError(f"a bake needs at least 2 frames, got {frames}")
        self.scene, self.fps, self.frames, self.options = scene, float(fps), int(frames), options
        nv = scene.model.nv
        if solvers is None:
            solvers = [s for s in SOLVERS if s != "dense" or nv <= DENSE_MAX_DOFS]
        unknown = [s for s in solvers if s not in SOLVERS]
        if unknown or not solvers:
            raise ValueError(f"advisor solvers must be among {', '.join(SOLVERS)}; got {list(solvers)}")
        self.solvers = list(solvers)
        self.ladder = sorted({int(s) for s in substeps})
        if not self.ladder or self.ladder[0] < 1:
            raise ValueError(f"substeps must be positive integers, got {list(substeps)}")
        self.trial_frames = int(trial_frames) if trial_frames else max(7, math.ceil(0.025 * self.frames))
        self.trial_frames = min(self.trial_frames, self.frames - 1)
        self.trials: dict = {}  # (solver, substeps) -> Trial
        self.order: list = []  # keys in the order first tried
        self.not_applicable: dict = {}  # solver -> reason
        self.skipped: list = []
        self.abandoned: set = set()  # (solver, substeps) trials stopped once measured slower than the pick
        self.same_steps: dict = {}  # solver -> (solver it steps like, largest state difference, cost ratio)
        self.deferred: dict = {}  # solver not probed yet -> the probed solver whose stepper it shares (_family), or
        #                           None: a kind of step not probed yet (probed once within budget, see _candidates)
        self._start_energy = None
        self._motion = None  # E(0) − E_rest (J), once a trial lost energy (_motion_energy)
        self._features = _features(scene)  # (once: a handful of array scans)
        self._group_cache = (-1, {})
        self.warmup_seconds = 0.0
        self.advice: Advice | None = None
        self._search_start = time.process_time()

    # --------------------------------------------------------------- search
    def _motion_energy(self) -> float:
        """E(0) − E_rest (J): the energy the scene's motion has to keep, asked for (once per advice) when a trial's
        step loses energy (the default step holds its energy, and never asks). E_rest: the energy at rest after
        SETTLE_STEPS implicit Euler steps of SETTLE_DT s (each close to a Newton step on the potential: a mode of
        rate ω keeps 1/(1 + (ω·0.25 s)²) of its energy a step; its energy guard keeps the run bounded), without
        controllers; nan if that run fails."""
        if self._motion is None:
            import copy

            scene = copy.deepcopy(self.scene)
            scene.controllers = []
            opts = self.options(SETTLE_DT) if callable(self.options) else dict(self.options or {})
            opts.update(integrator="euler", on_unconverged="ignore")
            try:
                sim = Simulator(scene, "pcg", dt=SETTLE_DT, **opts)
                e0 = sim.energy()
                sim.step(SETTLE_STEPS)
                s = sim.state
                self._motion = e0 - sim.energy(State(s.q, 0.0 * s.qd, s.t))
            except (SimulationError, ValueError):
                self._motion = math.nan
        return self._motion

    def _trial(self, solver, s) -> Trial:
        key = (solver, s)
        if key not in self.trials:
            if self._start_energy is None:  # the first trial's, taken at its first step
                self._start_energy = next((t.start_energy for t in self.trials.values() if t.start_energy), None)
            self.trials[key] = Trial(self.scene, solver, s, self.fps, options=self.options, energy_every=ENERGY_EVERY,
                                     lazy_kinetic=True, start_energy=self._start_energy,
                                     bake_seconds=(self.frames - 1) / self.fps, motion_energy=self._motion_energy)
            self._start_energy = self.trials[key].start_energy  # (None until its first step: see Trial)
            self.order.append(key)
        return self.trials[key]

    def _merge_same_steps(self, trial):
        """A solver whose first frame reached the same state (to SAME_STATE, relative) as another solver's first
        frame at the same substeps takes the same steps, so they share every stability verdict: a setting found
        unstable for one is not tried for the other. Measured, not assumed: solvers that step differently stay
        apart. Each keeps its own cost."""
        x, r = trial.first_state, trial.run
        if x is None or r.solver in self.same_steps:
            return
        for (sv, s), other in self.trials.items():
            if sv == r.solver or s != r.substeps or other.first_state is None or sv in self.same_steps:
                continue
            rx = other.first_state
            diff = float(np.max(np.abs(x - rx), initial=0.0)) / (1.0 + float(np.max(np.abs(rx), initial=0.0)))
            if diff <= SAME_STATE:
                self.same_steps[r.solver] = (sv, diff, r.first_step_seconds / other.run.first_step_seconds)
                return

    def _probe(self, solver, frames=PROBE_FRAMES) -> bool:
        """``frames`` frames of ``solver`` at the first substep count (False: not applicable, and why noted)."""
        self.deferred.pop(solver, None)
        refused = _REFUSED.get((solver, self._features))
        try:
            if refused is not None:  # as the warm-up found: the Simulator refuses this kind of scene
                raise ValueError(refused)
            trial = self._trial(solver, self.ladder[0])
        except ValueError as err:
            self.not_applicable[solver] = str(err)
            return False
        trial.advance(frames)  # the warm-up step's cost bounds a step's, its state shows how it steps
        self._merge_same_steps(trial)
        return True

    def _setup_factor(self) -> float:
        """How much a first step costs over a steady one, measured on the trials timed so far (the largest
        ratio seen, at least 1): the first step of an untimed solver divided by it estimates its steady cost."""
        ratios = [t.run.first_step_seconds / t.run.steady_seconds_per_step for t in self.trials.values()
                  if t.run.recent_steps and t.run.first_step_seconds > 0]
        return max([1.0, *ratios])

    def _cost_per_step(self, solver) -> float:
        """CPU seconds per step of ``solver``: measured over the later half of its trial with the most timed
        steps; else its first (warm-up) step's time, which includes its setup, divided by the setup factor
        measured on the timed trials (``_setup_factor``); else 0 (its first step diverged), so that its
        next setting gets a trial."""
        runs = [t.run for (sv, _), t in self.trials.items() if sv == solver]
        timed = [r for r in runs if r.recent_steps]
        if timed:
            return max(timed, key=lambda r: r.timed_steps).steady_seconds_per_step
        warm = [r.first_step_seconds for r in runs if r.stable and r.steps]
        return min(warm) / self._setup_factor() if warm else 0.0

    def _best(self):
        done = [t.run for t in self.trials.values() if t.run.stable and t.run.complete]
        return min(done, key=lambda r: r.steady_seconds_per_frame, default=None)

    @staticmethod
    def _slower(run, best) -> bool:
        """A trial measured no cheaper than the stable ``best``: at twice its cost after one timed frame, or
        over the later half of two or more (a start that costs more, e.g. PCG's early iterations, can settle)."""
        ratio = run.steady_seconds_per_frame / best.steady_seconds_per_frame
        return ratio >= 2.0 or (ratio >= 1.0 and len(run.frame_costs) >= 2)

    def _group(self) -> dict:
        """solver -> the solver whose steps it takes (itself unless ``same_steps`` found otherwise)."""
        if self._group_cache[0] != len(self.same_steps):  # same_steps only grows
            self._group_cache = (len(self.same_steps), {sv: self.same_steps.get(sv, (sv,))[0] for sv in self.solvers})
        return self._group_cache[1]

    def _worst_unstable(self, solver, group) -> int:
        """The most substeps at which ``solver`` or a solver taking the same steps (``group``: solver -> whose
        steps it takes) was unstable (0: none); a verdict about a solver's own solve (SOLVER_VERDICTS) holds for
        that solver only."""
        return max((s for (sv, s), t in self.trials.items() if group.get(sv, sv) == group.get(solver, solver)
                    and not t.run.stable and (sv == solver or t.run.verdict not in SOLVER_VERDICTS)), default=0)

    def _deferred_bound(self, solver):
        """(least CPU s per frame, solve share) ``solver`` (not probed yet) could cost: the shared part of its
        step (``_shared_floor``) at the fewest substeps its stepper-mate is not known unstable at; None before the
        mate is timed, or when the mate is unstable at every substep count."""
        floor = self._shared_floor(solver) if self.deferred.get(solver) is not None else None
        if floor is None:
            return None
        group = dict(self._group())
        group[solver] = group[self.deferred[solver]]  # as if it takes its mate's steps (checked once probed)
        fewest = [s for s in self.ladder if s > self._worst_unstable(solver, group)]
        return (fewest[0] * floor[0], floor[1]) if fewest else None

    def _shared_floor(self, solver):
        """(CPU s per step, solve share) of the part of a step that ``solver`` (not probed yet) shares with the
        probed solver of its stepper: that solver's steady step less its measured linear-solve time
        (``Run.solve_share``) — what ``solver``'s step would cost with a free linear solve; before that solver is
        timed, its estimated cost less its first step's solve share. None if it has no stable step at all."""
        mate = self.deferred[solver]
        runs = [t.run for (sv, _), t in self.trials.items() if sv == mate]
        timed = [r for r in runs if r.recent_steps]
        if timed:
            run = max(timed, key=lambda r: r.timed_steps)
            cost, share = run.steady_seconds_per_step, run.solve_share
        else:  # only its first step: its estimated cost (_cost_per_step) and that step's solve share
            first = [r for r in runs if r.stable and r.steps and r.first_step_seconds > 0]
            if not first:
                return None
            cost, share = self._cost_per_step(mate), first[0].first_solve_share
        share = min(max(share, 0.0), 1.0) if math.isfinite(share) else 0.0
        return cost * (1.0 - share), share

    def _candidates(self, best=None):
        """[(predicted CPU s per frame, solver, substeps)] still worth a trial, cheapest first. A solver not
        probed yet (``deferred``) is listed at its first substep count (its probe) with the least it could cost —
        the shared part of its step (``_shared_floor``) at the fewest substeps its stepper-mate is not known
        unstable at — once that is PROBE_ADVANTAGE× below ``best``, or when its stepper-mate gave no
        measure and has nothing left to try."""
        out = []
        group = self._group()
        for solver in self.solvers:
            if solver in self.not_applicable or solver in self.deferred:
                continue
            worst_unstable = self._worst_unstable(solver, group)
            best_stable = min((s for (sv, s), t in self.trials.items()
                               if sv == solver and t.run.stable and t.run.complete), default=math.inf)
            slower = min((s for (sv, s) in self.abandoned if sv == solver), default=math.inf)
            c = self._cost_per_step(solver)
            out += [(s * c, solver, s) for s in self.ladder if worst_unstable < s < min(best_stable, slower)]
        budget = {}  # probe frames -> within budget (asked once per call: it reads the CPU clock)
        for solver, mate in self.deferred.items():
            if mate is None:  # a kind of step not probed yet: nothing bounds its cost, so probed while affordable
                if best is not None and budget.setdefault(PROBE_FRAMES, self._within_budget(best, PROBE_FRAMES)):
                    out.append((0.0, solver, self.ladder[0]))
                continue
            if self._shared_floor(solver) is None:
                if not any(sv == mate for _, sv, _ in out):
                    out.append((0.0, solver, self.ladder[0]))
                continue
            if best is None or not budget.setdefault(1, self._within_budget(best)):
                continue
            bound = self._deferred_bound(solver)
            if bound and bound[0] * PROBE_ADVANTAGE < best.steady_seconds_per_frame:
                out.append((bound[0], solver, self.ladder[0]))
        return sorted(out)

    def _one_sample(self, cands, best):
        """The started, unfinished, stable trial of a candidate whose cost rests on one timed frame and is within
        2× of ``best`` (the threshold at which ``_slower`` abandons a trial after one frame), or None."""
        for p, sv, ss in cands:
            t = self.trials.get((sv, ss))
            if (t is not None and sv not in self.deferred and t.run.stable and len(t.run.frame_costs) == 1
                    and not t.run.complete and p < 2.0 * best.steady_seconds_per_frame):
                return t
        return None

    def _order(self, cand):
        """(sort key, ...) of a candidate: its predicted cost, × ADVANTAGE for a setting just above a failure of its
        solver (or a solver taking the same steps) — the likelier to fail too, and a failure that shows late costs
        a whole trial — so within ADVANTAGE (the timings' noise) the others go first, and after a stable setting
        it must promise ADVANTAGE² to be tried."""
        pred, solver, s = cand
        group = self._group()
        near_failure = solver not in self.deferred and self._worst_unstable(solver, group) > 0
        return (pred * (ADVANTAGE if near_failure else 1.0), solver, s)

    def _within_budget(self, best, frames=1) -> bool:
        """Whether a probe of ``frames`` frames keeps the advisor within PROBE_BUDGET of the bake ``best`` predicts
        (the probe estimated as the costliest so far, Simulator construction and first step, and a frame of
        ``best`` for each further frame)."""
        probe = max((t.run.setup_seconds + t.run.first_step_seconds for t in self.trials.values()), default=0.0)
        probe += (frames - 1) * best.steady_seconds_per_frame
        return self._spent() + probe <= PROBE_BUDGET * self._bake(best)

    def _spent(self) -> float:
        return time.process_time() - self._search_start

    def _bake(self, run) -> float:
        """CPU s of the bake ``run``'s setting predicts (its steady cost per frame over the bake's frames)."""
        return run.steady_seconds_per_frame * (self.frames - 1)


    def warm_up(self):
        """Generator: one untimed step of each solver on the scene, once per process
        and kind of scene (``_features``), yielding (0, message) per solver. The first step a process takes
        with a solver loads (or compiles) its numba kernels — seconds, as the first bake of a session pays
        them — which would drown the advisor's millisecond measurements."""
        c0, loaded = time.process_time(), False
        for solver in self.solvers:
            key = (solver, self._features)
            if key in _WARMED:
                continue
            loaded = True
            try:
                opts = self.options(1.0 / self.fps) if callable(self.options) else dict(self.options or {})
                Simulator(self.scene, solver, dt=1.0 / self.fps, **{"on_unconverged": "ignore", **opts}).step(1)
            except ValueError as err:  # not applicable to this kind of scene (explicit and loop closures)
                _REFUSED[key] = str(err)
            except SimulationError:
                pass  # diverging at once: the probe finds out and says so
            _WARMED.add(key)
            yield 0.0, f"loading the {solver} solver's kernels"
        if loaded:
            self.warmup_seconds = time.process_time() - c0

    def steps(self):
        """Generator: runs the search a frame or so at a time; yields (fraction of the work bound done, message).
        Kernels are loaded first (``warm_up``, timed apart: ``Advice.warmup_seconds``)."""
        yield from self.warm_up()
        w0, c0 = time.perf_counter(), time.process_time()
        self._search_start = c0
        # probe one kind of step: cost per step at one substep (and divergence, if immediate). The RedMax step first:
        # linearly implicit, it is stable over the widest range of steps, so the likeliest to hold the pick; a
        # solver sharing a probed one's stepper, or of another kind, is probed when it could pay (_candidates)
        for solver in sorted(self.solvers, key=lambda sv: _family(sv) is _family("explicit")):
            refused = _REFUSED.get((solver, self._features))
            if refused is not None:  # as the warm-up found: the Simulator refuses this kind of scene
                self.not_applicable[solver] = refused
                continue
            if self.trials:
                self.deferred[solver] = next((sv for (sv, _) in self.trials if _family(sv) == _family(solver)), None)
                continue
            if self._probe(solver):
                yield 0.0, f"probing {solver}"
        while True:
            best = self._best()
            cands = self._candidates(best)
            if not cands and best is None and self.deferred:  # nothing stable: the solvers not probed yet may be
                cands = [(0.0, sv, self.ladder[0]) for sv in self.deferred]
            if not cands:
                break
            # after a stable setting, another runs only if predicted ADVANTAGE× cheaper (ADVANTAGE² just above a
            # failure of its solver: see _order)
            worth = [c for c in cands if best is None or self._order(c)[0] * ADVANTAGE < best.steady_seconds_per_frame]
            if not worth:
                again = self._one_sample(cands, best)
                if again is not None:  # one timed frame can be off 2× on a busy machine: a second before ruling out
                    again.advance(1)
                    yield again.run.frames / self.trial_frames, f"{again.run.solver}: one more timed frame"
                    continue
                for p, sv, ss in cands:
                    if sv not in self.deferred:
                        self.skipped.append((sv, ss, p / best.steady_seconds_per_frame))
                break
            pred, solver, s = min(worth, key=self._order)
            if solver in self.deferred:
                # of a probed stepper: a warm-up step shows how it steps (shared verdicts) and bounds its cost; of
                # another kind: timed as the first probe was
                self._probe(solver, 1 if self.deferred[solver] is not None else PROBE_FRAMES)
                yield 0.0, f"probing {solver}"
                continue
            trial = self._trial(solver, s)
            r = trial.run
            while r.stable and not r.complete:
                trial.advance(1)
                if r.stable and r.frames >= self.trial_frames:
                    trial.check_energy()  # a trial always ends on an energy check
                    r.complete = True
                if best is not None and r.timed_steps and self._slower(r, best):
                    self.abandoned.add((solver, s))  # measured slower than a stable pick: no need to finish
                    break
                yield r.frames / self.trial_frames, f"{solver}, {s} substeps: frame {r.frames}"
        self.advice = self._conclude()
        # the advisor's own time: from its first probe to its recommendation with the reasons
        self.advice.seconds, self.advice.cpu_seconds = time.perf_counter() - w0, time.process_time() - c0
        yield 1.0, "done"

    def run(self) -> Advice:
        for _ in self.steps():
            pass
        return self.advice

    # -------------------------------------------------------------- reasons
    def _conclude(self) -> Advice:
        pick = self._best()
        runs = [self.trials[k].run for k in self.order]
        tried = set(self.trials)
        reasons = _reasons(pick, runs, self.not_applicable, self.skipped, self.fps, self.ladder, tried, self.same_steps)
        for solver, mate in self.deferred.items():  # never probed
            if mate is None:  # another kind of step: nothing bounds its cost without a probe
                if pick is not None:
                    reasons.append(f"{solver}: not probed: a probe of its own step (its Simulator and first "
                                   f"{PROBE_FRAMES} frames) would have taken the advisor past {100 * PROBE_BUDGET:g} % "
                                   f"of the bake the pick predicts")
                continue
            bound = self._deferred_bound(solver)
            if pick is not None and bound is not None:
                ratio = bound[0] / pick.steady_seconds_per_frame
                why = (f"probed only below {1 / PROBE_ADVANTAGE:.2f}×" if ratio * PROBE_ADVANTAGE >= 1 else
                       f"a probe would have taken the advisor past {100 * PROBE_BUDGET:g} % of the bake")
                # a share of 0 is the RedMax step's exact block solve (no couplings): reported as 0 s, as none beats it
                where = (f"where {mate}'s solve is one exact block solve (no spring couples two bodies)" if bound[1] == 0
                         else f"where {mate} spends {100 * bound[1]:.0f} % of its step")
                reasons.append(f"{solver}: not probed: it takes {mate}'s step but for the linear solve, {where}; even "
                               f"with a free solve it would cost ≥ {ratio:.2f}× the pick ({why})")
            elif pick is not None:
                reasons.append(f"{solver}: not probed: it takes {mate}'s step but for the linear solve, and {mate} "
                               "was never timed stable enough to bound it")
        reasons += [f"{sv}: takes the same steps as {rep} (states agree to {diff:.1g} after the probe), so it shares "
                    f"{rep}'s verdicts; its first step (setup included) took {ratio:.1f}× {rep}'s"
                    for sv, (rep, diff, ratio) in self.same_steps.items()]
        return Advice(pick, runs, reasons, list(self.skipped), 0.0, 0.0, self.fps, self.frames, self.trial_frames,
                      self.scene.name, self.scene.model.nv, self.warmup_seconds)


def _substeps_text(s) -> str:
    return f"{s} substep{'s' if s != 1 else ''}"


def _reasons(pick, runs, not_applicable, skipped, fps, ladder, tried, same_steps=()) -> list:
    out = []
    if pick is None:
        worst = max(ladder)
        out.append(f"nothing was stable up to {_substeps_text(worst)} per frame; try more substeps or a softer rig")
    else:
        out.append(f"{pick.solver} at {_substeps_text(pick.substeps)} (dt = {1e3 * pick.dt:.3g} ms) stayed stable over "
                   f"the first {pick.frames} frames ({pick.frames / fps:.2f} s): energy rise "
                   f"{100 * pick.relative_energy_rise:.1f} % of the energy in motion; energy kept "
                   f"{100 * pick.energy_kept:.0f} % over the bake ({pick.bake_seconds:.3g} s)"
                   + (f", loop closures within {pick.constraint_error:.1g} m" if pick.constraint_error > 0 else "")
                   + f"; {1e3 * pick.steady_seconds_per_frame:.3g} ms CPU per frame")
        fewer = [r for r in runs if r.solver == pick.solver and not r.stable]
        if fewer:  # why not fewer substeps
            r = max(fewer, key=lambda r: r.substeps)
            out.append(f"{pick.solver} at {_substeps_text(r.substeps)} was unstable ({r.detail or r.verdict})")
        if pick.solver == "pcg":
            out.append(f"PCG needs {pick.mean_iterations:.1f} iterations per step here (at most {pick.max_iterations})")
    for solver in dict.fromkeys(r.solver for r in runs):
        if (pick is not None and solver == pick.solver) or solver in same_steps:
            continue
        mine = [r for r in runs if r.solver == solver]
        stable = [r for r in mine if r.stable and r.complete]
        slower = [r for r in mine if r.stable and not r.complete and r.timed_steps]
        unstable = [r for r in mine if not r.stable]
        parts = []
        if unstable:
            u = max(unstable, key=lambda r: r.substeps)
            parts.append(f"unstable at {_substeps_text(u.substeps)} ({u.detail or u.verdict})")
        if stable and pick is not None:
            r = min(stable, key=lambda r: r.steady_seconds_per_frame)
            parts.append(f"stable at {_substeps_text(r.substeps)} but {pick.solver} is "
                         f"{r.steady_seconds_per_frame / pick.steady_seconds_per_frame:.1f}× faster")
            if solver == "pcg":
                parts.append(f"PCG needs {r.mean_iterations:.1f} iterations per step here")
        warm = [r for r in mine if r.stable and r.steps and not r.timed_steps]
        if warm and pick is not None and not stable and not slower:
            r = warm[0]
            parts.append(f"its first step took {1e3 * r.first_step_seconds:.3g} ms (setup included), "
                         f"{r.first_step_seconds / pick.steady_seconds_per_step:.1f}× a step of the pick (not timed further)")
        if slower and pick is not None and not stable:
            r = min(slower, key=lambda r: r.steady_seconds_per_frame)
            parts.append(f"{r.steady_seconds_per_frame / pick.steady_seconds_per_frame:.1f}× the pick's cost per frame at "
                         f"{_substeps_text(r.substeps)} after {r.frames} frame(s) (not run further)")
        mine_skipped = [(s, ratio) for sv, s, ratio in skipped if sv == solver and (sv, s) not in tried]
        if mine_skipped:
            s, ratio = min(mine_skipped)
            parts.append(f"at {_substeps_text(s)} or more it would cost ≥ {ratio:.1f}× the pick (not tried)" if ratio >= 1
                         else f"at {_substeps_text(s)} it would cost about {ratio:.2f}× the pick, too close to be "
                              "worth a trial (not tried)")
        if parts:
            out.append(f"{solver}: " + "; ".join(parts))
    for solver, why in not_applicable.items():
        out.append(f"{solver}: not applicable ({why})")
    return out
