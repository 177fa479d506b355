"""``bench liveliness``: how much motion survives each time integrator of the RedMax step (issue #31).

Every case is a scene, a step (an animation frame rate and substeps) and a length of run; every method is a
setting of the RedMax step (``METHODS``: the step before issue #31, ``integrator="euler"``, and the candidates
measured to choose its successor). Each run is measured against the exact motion where it is known and a
*converged reference* where it is not:

* a scene without dampers, controllers or moving loads keeps its energy exactly: E_ref(t) = E(0); the pendulum's
  period is 4 √(L/g) K(sin²(θ₀/2)) and the spring's 2π/ω (damped: ω = √(k/m − (c/2m)²));
* otherwise the reference is the explicit step (ABA, symplectic Euler) at a fine step for scenes without loop
  closures, TR-BDF2 without an energy budget at a fine step for those with — checked by halving its step.

Measures:

* ``energy_kept``: (E(T) − E_rest) / (E_ref(T) − E_rest) at the end of the run: the energy in motion (above the
  scene's rest, ``Case.rest``) as a fraction of the exact or reference motion's — 1 keeps all of it, 0 is at
  rest, > 1 gained; ``energy_min``, ``energy_max``: the least and most of that ratio over the run. Where the
  reference's own energy in motion has fallen below ``SETTLED`` of the start's (a damped scene come to rest) the
  ratio says little and is left out (``energy_kept``: nan);
* ``period_ratio``: the dominant period of the case's motion signal (``Case.signal``: the pendulum's angle, the
  ball's height, the 256-link chain's tip) over the exact or the reference's;
* ``check``: the number the issue's acceptance line asks for, where one does (``Case.check``);
* ``seconds_per_step`` (median over the run's steps) and the PCG iterations, as in the other suites.

The figure ``liveliness_energy.png`` draws (E − E_rest) / (E₀ − E_rest) against time, one panel per case.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ... import scenes
from ...algorithms.kinematics import link_poses
from ...errors import SimulationError
from ...model import State
from ...scenes.bridge import NORMAL_CAR
from ...simulator import Simulator
from .report import Progress, Row, SuiteResult, markdown_table

SUITE = "liveliness"
# method: Simulator options (solver "pcg")
METHODS = {
    "euler": {"integrator": "euler"},                               # the step before issue #31: Euler, "cap" guard
    "euler-hold": {"integrator": "euler", "energy_guard": "hold"},  # energy-targeted implicit Euler (You et al.)
    "bdf2-cap": {"integrator": "bdf2", "energy_guard": "cap"},      # BDF2 with the issue #22 guard only
    "bdf2": {"integrator": "bdf2"},                                 # BDF2, energy held: the default
    "tr-bdf2": {"integrator": "tr-bdf2"},                           # TR-BDF2, energy held (two solves a step)
    "blend": {"integrator": "blend"},                               # Dinev et al.: midpoint blended to Euler
}
QUICK_METHODS = ("euler", "bdf2")
SETTLED = 0.1  # a reference with less than this of the start's energy in motion has settled (module doc)


@dataclass
class Case:
    """A scene at one step. rest: "hanging" (E_rest = the energy at the neutral pose at rest), "spring" (the ball at
    its equilibrium), "settle" (the energy after a heavily damped run) or "reference" (the reference's energy at its
    end: a damped scene that comes to rest within the run); reference: ("explicit" or "tr-bdf2", Hz),
    or None for a conservative scene (its energy is exactly E(0)); signal(model, q) → the motion's scalar or (x, y)
    for the period (None: no period); check(t, signals, energies, run) → (text, value)."""

    name: str
    make: Callable
    hz: float
    seconds: float
    rest: str = "hanging"
    reference: tuple | None = None
    signal: Callable | None = None
    check: Callable | None = None
    exact_period: float | None = None
    plot: bool = True  # drawn in the energy figure (not when its energy in motion is too small to read)


def _angle(model, q):
    return float(q[0])


def _height(model, q):
    return float(q[2])


def _tip_xy(model, q):
    R, p = link_poses(model, q)
    return (p[-1] + R[-1] @ np.array([0.0, 0.0, -0.1]))[:2]


def _pendulum_check(t, sig, energies, run):
    late = np.abs(np.asarray(sig))[t >= t[-1] - 2.0]
    deg = math.degrees(float(late.max()))
    return f"largest angle in the last 2 s {deg:.2f}°", deg


def _spring_cycles(t, sig, k=200.0, m=2.0, mass_g=2.0 * 9.81):
    """Amplitudes (m) of the first six cycles about the equilibrium z = −m g / k."""
    period = 2 * math.pi / math.sqrt(k / m)
    x = np.asarray(sig) + mass_g / k
    return [float(np.abs(x[(t >= i * period) & (t < (i + 1) * period)]).max()) for i in range(6)], period


def _spring_check(t, sig, energies, run):
    amps, _ = _spring_cycles(t, sig)
    return f"sixth cycle / first {amps[5] / amps[0]:.3f}", amps[5] / amps[0]


def _damped_spring_check(t, sig, energies, run, c=0.4, m=2.0):
    amps, period = _spring_cycles(t, sig)
    rate = -np.polyfit(np.arange(6) * period, np.log(amps), 1)[0]
    exact = c / (2 * m)
    return f"decay rate {rate:.4f}/s (exact {exact:.4f}, {rate / exact - 1:+.1%})", rate / exact


def _kept_range_check(t, sig, energies, run):
    return f"energy kept within [{run['energy_min']:.4f}, {run['energy_max']:.4f}]", run["energy_min"]


def _closure_check(t, sig, energies, run):
    return f"largest closure error {run['closure_error']:.2g} m", run["closure_error"]


def _exact_pendulum_period(angle, length=1.0, g=9.81):
    from scipy.special import ellipk

    return 4.0 * math.sqrt(length / g) * float(ellipk(math.sin(angle / 2) ** 2))


def _spring_period(k=200.0, m=2.0, c=0.0):
    return 2 * math.pi / math.sqrt(k / m - (c / (2 * m)) ** 2)


def cases(quick: bool = False):
    """The suite's cases (``--quick``: the pendulum and the spring only, for CI)."""
    a = math.pi / 3
    out = [
        Case("pendulum_24x1", lambda: scenes.pendulum(angle=a, point_mass=True), 24, 10, signal=_angle,
             check=_pendulum_check, exact_period=_exact_pendulum_period(a)),
        Case("pendulum_24x2", lambda: scenes.pendulum(angle=a, point_mass=True), 48, 10, signal=_angle,
             check=_pendulum_check, exact_period=_exact_pendulum_period(a)),
        Case("spring_24x2", lambda: scenes.hanging_spring(), 48, 10, rest="spring", signal=_height,
             check=_spring_check, exact_period=_spring_period()),
        Case("damped_spring_24x2", lambda: scenes.hanging_spring(damping=0.4), 48, 10, rest="spring",
             reference=("explicit", 2400.0), signal=_height, check=_damped_spring_check,
             exact_period=_spring_period(c=0.4)),
    ]
    if quick:
        return out
    return out + [
        Case("chain10_80deg_30hz", lambda: scenes.chain(10, 0.1, 0.1, math.radians(80)), 30, 10,
             check=_kept_range_check),
        Case("hanging_chain256_30hz", lambda: scenes.hanging_chain(256), 30, 10, reference=("explicit", 1920.0),
             signal=_tip_xy),
        Case("umbrella4_60hz", lambda: scenes.umbrella(4), 60, 5, rest="reference", reference=("tr-bdf2", 960.0)),
        Case("bridge_rigid_car_60hz", lambda: scenes.bridge(31, 0, car_mass=NORMAL_CAR), 60, 5, rest="settle",
             reference=("tr-bdf2", 960.0), check=_closure_check),
        Case("bridge_flexible_car_60hz", lambda: scenes.bridge(31, 31, car_mass=NORMAL_CAR), 60, 5, rest="settle",
             reference=("tr-bdf2", 960.0), check=_closure_check),
        Case("rope_bridge_taut_24x2", lambda: scenes.rope_bridge(), 48, 10, rest="settle", check=_closure_check,
             plot=False),  # (taut: a sag of millimetres, its energy in motion ~0.4 J against the jitter's)
        Case("rope_bridge_slack0.1%_24x2", lambda: scenes.rope_bridge(slack=0.001), 48, 10, rest="settle",
             check=_closure_check),
        Case("rope_bridge_slack1%_24x2", lambda: scenes.rope_bridge(slack=0.01), 48, 10, rest="settle",
             check=_closure_check),
    ]


# ------------------------------------------------------------------ runs
def simulate(scene, hz, seconds, solver="pcg", stride=1, **options):
    """Run ``scene`` for ``seconds`` at dt = 1/hz; sample every ``stride`` steps. Returns a dict: t (k,), q (k, nq),
    energy (k,), step_seconds (per step), iterations, closure_error (largest), error (None, or the divergence)."""
    sim = Simulator(scene, solver, dt=1.0 / hz, **options)
    steps = int(round(seconds * hz))
    t, qs, es, secs, its = [0.0], [sim.state.q.copy()], [sim.energy()], [], []
    closure, error = 0.0, None
    for k in range(steps):
        t0 = time.perf_counter()
        try:
            sim.step(1)
        except SimulationError as err:
            error = str(err)
            break
        secs.append(time.perf_counter() - t0)
        its.append(sim.stats.iterations[-1])
        closure = max(closure, sim.stats.constraint_error)
        if (k + 1) % stride == 0:
            t.append(sim.state.t)
            qs.append(sim.state.q.copy())
            e = sim.step_energy()
            es.append(sim.energy() if e is None else e)
    return {"t": np.array(t), "q": np.array(qs), "energy": np.array(es), "step_seconds": np.array(secs),
            "iterations": float(np.mean(its)) if its else 0.0, "closure_error": closure, "error": error,
            "simulator": sim}


def reference_run(case):
    """The case's converged reference sampled at the case's steps, and its check: the same at half the rate
    (the largest energy difference relative to the energy in motion is reported); (None, None) for a
    conservative case (``Case.reference`` None: its energy is E(0))."""
    if case.reference is None:
        return None, None
    kind, hz = case.reference
    stride = int(round(hz / case.hz))
    options = {} if kind == "explicit" else {"integrator": "tr-bdf2", "energy_guard": False}
    solver = "explicit" if kind == "explicit" else "pcg"
    ref = simulate(case.make(), hz, case.seconds, solver, stride, **options)
    half = simulate(case.make(), hz / 2, case.seconds, solver, stride // 2, **options)
    return ref, half


def rest_energy(case, ref=None):
    """E_rest (J): the energy the scene comes to rest at (``Case.rest``; "reference": ``ref``'s last energy)."""
    if case.rest == "reference":
        return float(ref["energy"][-1])
    scene = case.make()
    if case.rest == "hanging":
        sim = Simulator(scene, "pcg", dt=1.0 / case.hz)
        return sim.energy(State(scene.model.neutral_q(), np.zeros(scene.model.nv), 0.0))
    if case.rest == "spring":  # the ball at z = −m g / k, at rest
        sim = Simulator(scene, "pcg", dt=1.0 / case.hz)
        q = scene.model.neutral_q()
        pair = scene.finalize().pair_arrays()
        q[2] = -float(scene.model.body_mass[0]) * 9.81 / float(pair.stiffness[0])
        return sim.energy(State(q, np.zeros(scene.model.nv), 0.0))
    # settle: the implicit Euler step with every joint and body heavily damped, 20 s of scene time
    scene.joint_damping[:] = np.maximum(scene.joint_damping, 50.0 * float(scene.model.body_mass.max()))
    scene.set_body_damping(20.0 * float(scene.model.body_mass.max()))
    sim = Simulator(scene, "pcg", dt=1.0 / 60, integrator="euler")
    sim.step(1200)
    s = sim.state
    return sim.energy(State(s.q, np.zeros_like(s.qd), s.t))


def dominant_period(t, signal):
    """The dominant period (s) of a scalar or (x, y) signal: the chains suite's two-axis sine periodogram."""
    from .chains import swing_measures

    x = np.asarray(signal, float)
    if x.ndim == 1:
        x = np.column_stack([x - x.mean(), np.zeros_like(x)])
    else:
        x = x - x.mean(axis=0)
    return swing_measures(t, np.column_stack([x, np.zeros(len(t))]))["period"]


def measure(case, run, ref, e_rest):
    """The run's measures against the reference (module doc); ref None: the exact energy E(0)."""
    e0 = run["energy"][0]
    n = len(run["t"]) if ref is None else min(len(run["t"]), len(ref["t"]))
    motion = (np.full(n, e0) if ref is None else ref["energy"][:n]) - e_rest
    moving = motion >= SETTLED * (e0 - e_rest)  # (divided only there: a reference at rest has no motion to keep)
    kept = np.divide(run["energy"][:n] - e_rest, motion, out=np.full(n, np.nan), where=moving)
    out = {"stable": run["error"] is None, "energy_kept": float(kept[-1]) if run["error"] is None else math.nan,
           "energy_min": float(np.nanmin(kept, initial=np.inf)), "energy_max": float(np.nanmax(kept, initial=-np.inf)),
           "closure_error": run["closure_error"], "kept_series": kept, "period_ratio": math.nan}
    if case.signal is not None and run["error"] is None:
        sig = [case.signal(run["simulator"].model, q) for q in run["q"]]
        period = dominant_period(run["t"], sig)
        if case.exact_period is not None:
            ref_period = case.exact_period
        elif ref is None:
            ref_period = math.nan
        else:
            ref_period = dominant_period(ref["t"], [case.signal(run["simulator"].model, q) for q in ref["q"]])
        out["period_ratio"] = period / ref_period
        out["signal"] = sig
    if case.check is not None and run["error"] is None:
        out["check"], out["check_value"] = case.check(run["t"], out.get("signal"), run["energy"], out)
    return out


def run_liveliness(quick: bool = False, **_ignored) -> SuiteResult:
    methods = QUICK_METHODS if quick else tuple(METHODS)
    rows, sections, series = [], [], {}
    for case in Progress(cases(quick), f"bench {SUITE}"):
        ref, half = reference_run(case)
        e_rest = rest_energy(case, ref)
        start = case.make()
        motion0 = Simulator(start, "pcg", dt=1.0 / case.hz).energy() - e_rest
        if ref is None:
            reference = "the exact motion's energy, E(0) (no dampers)"
            series[case.name] = {"exact": (np.array([0.0, case.seconds]), np.ones(2))}
        else:
            n = min(len(ref["energy"]), len(half["energy"]))
            ref_check = float(np.max(np.abs(ref["energy"][:n] - half["energy"][:n]))) / abs(motion0)
            reference = (f"{case.reference[0]} at 1/{case.reference[1]:g} s (its energy within {ref_check:.1e} of "
                         f"the energy in motion of the run at half its rate)")
            series[case.name] = {"reference": (ref["t"], (ref["energy"] - e_rest) / motion0)}
        series[case.name]["plot"] = case.plot
        body = []
        for method in methods:
            run = simulate(case.make(), case.hz, case.seconds, "pcg", **METHODS[method])
            m = measure(case, run, ref, e_rest)
            secs = float(np.median(run["step_seconds"])) if len(run["step_seconds"]) else math.nan
            model = run["simulator"].model
            rows.append(Row(SUITE, case.name, method, model.n_bodies, model.nv, secs, run["iterations"],
                            repeats=len(run["step_seconds"]), notes="" if m["stable"] else run["error"],
                            extra={"dt": 1.0 / case.hz, "stable": m["stable"], "energy_kept": m["energy_kept"],
                                   "energy_min": m["energy_min"], "energy_max": m["energy_max"],
                                   "period_ratio": m["period_ratio"], "closure_error": m["closure_error"],
                                   "check": m.get("check", ""), "check_value": m.get("check_value", math.nan)}))
            series[case.name][method] = (run["t"], (run["energy"] - e_rest) / motion0)
            body.append([method, "stable" if m["stable"] else f"diverged ({run['error'][:60]}…)",
                         _f(m["energy_kept"]), f"{_f(m['energy_min'])} … {_f(m['energy_max'])}",
                         _f(m["period_ratio"]), m.get("check", "—"), f"{secs * 1e3:.3g}"])
        period = f"; exact period {case.exact_period:.4f} s" if case.exact_period else ""
        sections.append(f"### {case.name} (dt = 1/{case.hz:g} s, {case.seconds:g} s)\n\n"
                        f"Reference: {reference}{period}; E_rest: {case.rest} (E(0) − E_rest = {motion0:.4g} J)."
                        "\n\n"
                        + markdown_table(["method", "run", "energy kept (end)", "kept (least … most)",
                                          "period / reference", "acceptance measure", "ms per step"], body) + "\n")
    text = ("## Energy kept and swing period against a converged reference\n\n"
            "Methods (Simulator options, solver pcg): " + "; ".join(f"`{k}` = {v}" for k, v in METHODS.items()
                                                                   if k in methods) + ".\n\n" + "\n".join(sections))
    result = SuiteResult(rows, text, 10**9, figures={"liveliness_energy.png": lambda path: _plot(series, path)})
    result.loglog_scenes = []
    return result


def _f(x):
    return "—" if x is None or not np.isfinite(x) else f"{x:.3f}"


def _plot(series, path):
    """(E − E_rest) / (E₀ − E_rest) against time, one panel per case, one line per method and the reference."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [name for name in series if series[name].get("plot", True)]
    cols = 3
    rows = math.ceil(len(names) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.2 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names):
        for method, (t, e) in ((k, v) for k, v in series[name].items() if k != "plot"):
            style = {"color": "black", "lw": 2.2, "alpha": 0.5} if method in ("reference", "exact") else {"lw": 1.1}
            ax.plot(t, e, label=method, **style)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("t (s)", fontsize=8)
        ax.set_ylabel("energy in motion / at start", fontsize=8)
        ax.set_ylim(-0.05, 1.3)
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(names):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
