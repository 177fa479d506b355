"""``bench chains``: long chains and ropes at animation frame rates (issue #22).

* ``stability``: ``hanging_chain(n)`` (and ``rope``) for 10 s at dt = 1/30 s, no substeps, pcg and
  direct, with the joints' geometric stiffness and the energy guard on (``geometric_stiffness="joints"``,
  ``energy_guard=True``, the defaults) and off (both False and ``integrator="euler"``: the thesis's step): the
  step at which a run diverged, or "stable". "Term on/off" in the tables below means both, in the same way.
* ``swing``: the tip's swing over 10 s at 1/30 s against the same chain stepped at 1/960 s (64 and 256
  links): period (sine fit to the larger horizontal component of the tip's displacement) and amplitude
  (largest horizontal displacement over the last half period); the ratios are the acceptance numbers.
* ``swing against RK4``: 256 links and 512 links from four starts (``CHAIN_STARTS``: the issue's, whose
  51 m chain whips and cracks at 7.1 s, and three small ones) against a converged reference, RK4 on ABA
  at 1/7680 s checked at 1/3840 s, with measures robust to the record being shorter than the period and
  to the phase (``swing_measures``), for pcg 1/960 s and pcg and direct at 1/30 s.
* ``energy``: the chain without damping (conservative) at 1/30 s: largest E(t) − E(0) over 10 s.
* ``cost``: seconds per step with the term on and off, stepping both steppers from the *same*
  states (the on-trajectory; the off stepper's result is discarded), interleaved step by step.
* ``thesis``: the thesis's scenes (``bench redmax`` families) with the term on and off, stepped
  alternately in one run (pcg and direct, 1 s of scene time at 1/60 s, capped at ``THESIS_BUDGET``
  s of wall time per run): seconds per step (the minimum over the steps), fitted slopes on dofs ≥ 100 and the PCG iterations.
* ``springs``: the springs' own geometric terms (``"all"`` vs ``"joints"``) on the thesis scenes
  and the side-spring chain: stable or not, iterations, seconds per step.
"""
from __future__ import annotations

import time

import numpy as np

from ... import scenes
from ...algorithms.kinematics import joint_pass, world_pass
from ...errors import SimulationError
from ...simulator import Simulator
from .report import Progress, Row, SuiteResult, fit_slope, markdown_table

SUITE = "chains"
T_END = 10.0
THESIS_BUDGET = 6.0  # s of wall time per (scene, size, solver) pair of runs, thesis section
HZ, REF_HZ = 30.0, 960.0


def tip_track(scene, hz, solver="pcg", t_end=T_END, energy=False, **options):
    """(t (k,), tip (k, 3) world position of the last link's lower end, energy (k,) or None) over
    ``t_end`` s, sampled at 30 Hz (or every step for coarser steps); the energy (J) only if asked.
    Raises SimulationError if the run diverges."""
    m = scene.model
    sim = Simulator(scene, solver, dt=1.0 / hz, **options)
    stride = max(1, int(round(hz / HZ)))  # sampled at 30 Hz: finer steps are recorded every stride-th
    steps = int(round(t_end * hz)) // stride
    tip, energies = np.zeros((steps + 1, 3)), np.zeros(steps + 1) if energy else None
    end = np.array([0.0, 0.0, -_link_length(scene)])

    def record(k):
        joint_pass(m.tree, sim.state.q, m.data)
        world_pass(m.tree, m.data)
        tip[k] = m.data.X0_r[-1] + m.data.X0_E[-1].T @ end
        if energy:
            energies[k] = sim.energy()

    record(0)
    for k in range(steps):
        sim.step(stride)
        record(k + 1)
    return np.linspace(0.0, steps * stride / hz, steps + 1), tip, energies


def _link_length(scene):
    return float(np.linalg.norm(scene.model.tree.tree_r[1])) if scene.model.n_bodies > 1 else 0.1


def swing(t, tip, axis=None):
    """(period s, amplitude m, axis): a sine fit a sin ωt + b cos ωt + c to the tip's horizontal displacement
    along ``axis`` (0 = x, 1 = y; default the one with the larger variance); the amplitude is the largest
    horizontal displacement over the last half period."""
    from scipy.optimize import curve_fit

    xy = tip[:, :2] - tip[0, :2]
    k = int(np.argmax(xy.var(axis=0))) if axis is None else axis
    s = xy[:, k]
    crossing = np.signbit(s[1:]) != np.signbit(s[:-1])
    tc = t[1:][crossing]
    w0 = np.pi / np.mean(np.diff(tc)) if len(tc) >= 2 else (np.pi / tc[0] if len(tc) else 2 * np.pi / t[-1])

    def model(t, a, b, w, c):
        return a * np.sin(w * t) + b * np.cos(w * t) + c

    p, _ = curve_fit(model, t, s, p0=(s.std(), 0.0, w0, 0.0), maxfev=20000)
    period = 2 * np.pi / abs(p[2])
    last = t >= t[-1] - period / 2
    return period, float(np.abs(xy[last]).max()), k


def _tip(model, q, end):
    joint_pass(model.tree, q, model.data)
    world_pass(model.tree, model.data)
    return model.data.X0_r[-1] + model.data.X0_E[-1].T @ end


def tip_speed(scene):
    """|ẋ| (m/s) of the tip (the last link's lower end) at the scene's start (central differences along q̇0)."""
    m, end, eps = scene.model, np.array([0.0, 0.0, -_link_length(scene)]), 1e-6
    v = (_tip(m, scene.q0 + eps * scene.qd0, end) - _tip(m, scene.q0 - eps * scene.qd0, end)) / (2 * eps)
    return float(np.linalg.norm(v))


CHAIN_STARTS = {
    "issue": "the issue's start: random joint rates uniform in ±0.1 rad/s (seed 0), straight down",
    "tip256": "the same random pattern scaled so the tip moves as fast as the 256-link chain's (15.5 m/s)",
    "froude64": "the same random pattern scaled so the tip speed / √(gL) is the 64-link chain's (0.23)",
    "mode1": "at rest, bent into the fundamental mode of small swings, the tip 5 % of the length aside",
}


def chain_start(n, start="issue"):
    """``hanging_chain(n)`` with one of the starts of ``CHAIN_STARTS`` (the same chain, damping and links)."""
    if start == "issue":
        return scenes.hanging_chain(n)
    if start in ("tip256", "froude64"):
        ref = 256 if start == "tip256" else 64
        target = tip_speed(scenes.hanging_chain(ref))
        if start == "froude64":  # same speed relative to √(g L): dynamically similar swings
            target *= np.sqrt(n / ref)
        return scenes.hanging_chain(n, speed=0.1 * target / tip_speed(scenes.hanging_chain(n)))
    if start == "mode1":
        sc = scenes.hanging_chain(n, speed=0.0)
        sc.q0 = _fundamental_mode(sc)
        sc.qd0 = np.zeros(n)
        return sc
    raise KeyError(f"chain_start: unknown start {start!r} (one of {sorted(CHAIN_STARTS)})")


def _fundamental_mode(scene, aside=0.05):
    """q (rad) along the slowest mode of small swings about rest (eigenvector of −∂q̈/∂q at q = 0, q̇ = 0,
    by central differences of ABA), scaled so the tip is ``aside`` × the chain's length off the vertical."""
    from ... import aba

    m, n = scene.model, scene.model.nv
    zero, eps = np.zeros(n), 1e-6
    A = np.empty((n, n))
    for j in range(n):
        dq = np.zeros(n)
        dq[j] = eps
        A[:, j] = (aba(m, dq, zero, zero) - aba(m, -dq, zero, zero)) / (2 * eps)
    w, V = np.linalg.eig(-A)
    v = np.real(V[:, np.argmin(np.real(w))])
    end = np.array([0.0, 0.0, -_link_length(scene)])
    length = n * _link_length(scene)
    lateral = np.linalg.norm(_tip(m, 1e-6 * v, end)[:2]) / 1e-6
    return v * (aside * length / lateral)


def swing_measures(t, tip, ref_period=None):
    """Robust swing measures of the tip's horizontal displacement xy(t) = tip[:, :2] (from the vertical
    through the pivot; t (k,) s, tip (k, 3) m), both axes together:

    * ``period`` (s): the dominant period — the global maximum, over periods from 4 samples to twice the
      record, of the variance of xy explained by a least-squares fit a sin ωt + b cos ωt + c per axis
      with one ω (the two-axis generalized Lomb–Scargle periodogram; on a grid, then refined). It is the
      sine fit with a free frequency, found globally instead of from a starting guess, and needs no
      choice of axis.
    * ``amplitude`` (m): the largest |xy| over the last half period (``ref_period`` if given, so a run
      and its reference are measured over the same window): a half period holds one extreme of a
      sinusoid whatever its phase.
    * ``rms_last2`` (m): RMS of |xy| over the last 2 s (phase-dependent: for comparison only).
    """
    from scipy.optimize import minimize_scalar

    xy = tip[:, :2]
    span = t[-1] - t[0]

    def power(w):
        B = np.column_stack([np.sin(w * t), np.cos(w * t), np.ones_like(t)])
        coef, *_ = np.linalg.lstsq(B, xy, rcond=None)
        return float(np.sum((B @ coef - xy.mean(axis=0)) ** 2))

    dt = float(np.median(np.diff(t)))
    f = np.arange(1.0 / (2 * span), 1.0 / (4 * dt), 1.0 / (20 * span))
    p = np.array([power(2 * np.pi * fk) for fk in f])
    k = int(np.argmax(p))
    lo, hi = f[max(k - 1, 0)], f[min(k + 1, len(f) - 1)]
    best = minimize_scalar(lambda fk: -power(2 * np.pi * fk), bounds=(lo, hi), method="bounded",
                           options={"xatol": 1e-7})
    period = 1.0 / best.x
    window = min(ref_period or period, 2 * span) / 2
    r = np.linalg.norm(xy, axis=1)
    return {"period": float(period), "amplitude": float(r[t >= t[-1] - window].max()),
            "rms_last2": float(np.sqrt(np.mean(r[t >= t[-1] - 2.0] ** 2)))}


def _stability(sizes, dts):
    rows, body = [], []
    cases = [(name, n, hz) for name in ("hanging_chain",) for n in sizes for hz in dts]
    if 512 in sizes:  # the limit: even 1/240 s diverges where 1/960 s does not (docs/redmax.md)
        cases.append(("hanging_chain", 512, 240.0))
    cases += [("rope_weight", 64, 30.0), ("rope_pinned", 64, 30.0), ("side_spring_chain", 64, 30.0)]
    for name, n, hz in Progress(cases, f"bench {SUITE}: stability"):
        for solver in ("pcg", "direct"):
            cells = []
            for gs in ("joints", False):
                sc = _scene(name, n)
                sim = Simulator(sc, solver, dt=1.0 / hz, **_term(gs))
                t0 = time.perf_counter()
                try:
                    sim.step(int(round(T_END * hz)))
                    cells.append("stable")
                except SimulationError:
                    cells.append(f"diverges at step {sim.stats.steps + 1}")
                seconds = (time.perf_counter() - t0) / max(sim.stats.steps, 1)
                rows.append(Row(SUITE, f"{name}_1/{int(hz)}", f"{solver}-{'on' if gs else 'off'}", n, sc.model.nv,
                                seconds, sim.stats.mean_iterations, repeats=sim.stats.steps,
                                extra={"outcome": cells[-1]}))
            body.append([name, n, f"1/{int(hz)}", solver, *cells])
    text = ("## Stability: 10 s, no substeps\n\n"
            + markdown_table(["scene", "links", "dt (s)", "solver", "term on (default)", "term off"], body) + "\n")
    return rows, text


def _term(gs):
    """Simulator options of a run with the joints' geometric stiffness ``gs`` ("joints": the defaults) or without it
    (False: the thesis's step — implicit Euler, no term, no energy budget; the default integrator without the term
    is not a step anyone runs: BDF2 keeps the energy that lets a 16-link chain at 1/30 s diverge at step 112)."""
    return {"geometric_stiffness": gs, "energy_guard": bool(gs), **({} if gs else {"integrator": "euler"})}


def _scene(name, n, **kw):
    if name == "hanging_chain":
        return scenes.hanging_chain(n, **kw)
    if name == "rope_weight":
        return scenes.rope(n, 0.1 * n, 0.5 * n, end="weight")
    if name == "rope_pinned":
        return scenes.rope(n, 0.1 * n, 0.5 * n, end="pinned")
    if name in ("side_spring_chain", "tip_spring_chain"):  # 1e5 N/m, 1 m aside, at the middle or the tip
        sc = scenes.hanging_chain(n, **kw)
        b = n // 2 - 1 if name == "side_spring_chain" else n - 1
        z = sc.world_point(b, np.array([0.0, 0.0, -0.1]))
        sc.add_spring(b, z, -1, z + np.array([1.0, 0.0, 0.0]), 1e5, name="side_spring")
        return sc
    raise KeyError(name)


def _swing(sizes):
    rows, body = [], []
    for n in Progress(sizes, f"bench {SUITE}: swing"):
        try:
            t, tip, _ = tip_track(scenes.hanging_chain(n), REF_HZ, "pcg")
            ref = swing(t, tip)
        except SimulationError as err:
            body.append([n, f"1/{int(REF_HZ)} reference diverged: {err}", "", "", "", "", ""])
            continue
        for solver in ("pcg", "direct"):
            try:
                t, tip, _ = tip_track(scenes.hanging_chain(n), HZ, solver)
                per, amp, _ = swing(t, tip, axis=ref[2])
                body.append([n, solver, f"{ref[0]:.3f}", f"{per:.3f}", f"{per / ref[0]:.4f}", f"{ref[1]:.3f}",
                             f"{amp:.3f}", f"{amp / ref[1]:.3f}"])
                rows.append(Row(SUITE, "swing", solver, n, n, 0.0, 0.0, repeats=1,
                                extra={"period_ratio": per / ref[0], "amplitude_ratio": amp / ref[1]}))
            except SimulationError as err:
                body.append([n, solver, f"{ref[0]:.3f}", f"diverged: {err}", "", "", "", ""])
    return rows, ("## Swing of the tip, 1/30 s against 1/960 s (10 s)\n\n" + markdown_table(
        ["links", "solver", "period 1/960 (s)", "period 1/30 (s)", "ratio", "amplitude 1/960 (m)",
         "amplitude 1/30 (m)", "ratio"], body) + "\n")


RK4_HZ = 7680.0  # the converged reference's steps per second; checked against half as many (RK4_HZ_CHECK)
RK4_HZ_CHECK = 3840.0


def rk4_tip_track(scene, hz, t_end=T_END):
    """(t (k,), tip (k, 3)) as ``tip_track`` (30 Hz samples) for classical RK4 on ABA at 1/hz s, the joint
    dampers as torques: the explicit reference whose error falls as h⁴. Raises SimulationError if it diverges."""
    from ... import aba
    from ...errors import ModelError
    from ...integrators import rk4_step

    model, damping = scene.model, scene.joint_damping
    q, qd, h, stride = scene.q0.copy(), scene.qd0.copy(), 1.0 / hz, int(round(hz / HZ))
    end = np.array([0.0, 0.0, -_link_length(scene)])
    steps = int(round(t_end * HZ))
    tip = np.zeros((steps + 1, 3))
    tip[0] = _tip(model, q, end)
    for k in range(steps):
        try:
            for _ in range(stride):
                q, qd = rk4_step(model, q, qd, h, lambda q, qd, t: aba(model, q, qd, -damping * qd))
        except ModelError as err:  # a stage's rates went non-finite (ABA names the joint)
            raise SimulationError(f"RK4 at 1/{hz:.0f} s diverged before t = {(k + 1) / HZ:.2f} s: {err}") from err
        tip[k + 1] = _tip(model, q, end)
    return np.linspace(0.0, steps / HZ, steps + 1), tip


def _swing_converged(cases, rk4_hz=(RK4_HZ, RK4_HZ_CHECK)):
    """The tip's swing (``swing_measures``) of the RedMax runs at 1/960, 1/30 s (pcg, direct) against RK4 at
    1/rk4_hz[0] s, whose own convergence is shown by RK4 at 1/rk4_hz[1] s (half the steps): the largest
    distance between their tips over the 10 s; a fourth-order method's error at the finer step is about
    1/15 of it."""
    rows, body, notes = [], [], []
    for n, start in Progress(cases, f"bench {SUITE}: swing against RK4"):
        try:
            t, ref = rk4_tip_track(chain_start(n, start), rk4_hz[0])
            _, check = rk4_tip_track(chain_start(n, start), rk4_hz[1])
        except SimulationError as err:
            body.append([n, start, f"RK4 diverged: {err}"] + [""] * 8)  # (the coarser run, at 1/RK4_HZ_CHECK s)
            continue
        m0 = swing_measures(t, ref)
        rk4_check = float(np.linalg.norm(ref - check, axis=1).max())
        speed = tip_speed(chain_start(n, start))
        for name, hz, solver in (("pcg 1/960", REF_HZ, "pcg"), ("pcg 1/30", HZ, "pcg"), ("direct 1/30", HZ, "direct")):
            try:
                _, tip, _ = tip_track(chain_start(n, start), hz, solver)
            except SimulationError as err:
                body.append([n, start, f"{speed:.1f}", f"{rk4_check:.1e}", name, f"diverged: {err}"] + [""] * 5)
                continue
            m = swing_measures(t, tip, ref_period=m0["period"])
            pr, ar = m["period"] / m0["period"], m["amplitude"] / m0["amplitude"]
            dist = float(np.linalg.norm(tip - ref, axis=1).max())
            ok = abs(pr - 1) <= 0.05 and ar >= 0.5
            body.append([n, start, f"{speed:.1f}", f"{rk4_check:.1e}", name, f"{m0['period']:.3f}",
                         f"{m['period']:.3f} ({pr:.4f})", f"{m0['amplitude']:.3f}", f"{m['amplitude']:.3f} ({ar:.3f})",
                         f"{dist:.3g}", "yes" if ok else "no"])
            rows.append(Row(SUITE, f"swing_rk4_{start}", name.replace(" ", "_"), n, n, 0.0, 0.0, repeats=1,
                            extra={"period_ratio": pr, "amplitude_ratio": ar, "max_tip_distance": dist,
                                   "rk4_check": rk4_check}))
    starts = "\n".join(f"- `{k}`: {v}" for k, v in CHAIN_STARTS.items() if any(s == k for _, s in cases))
    return rows, ("## Swing of the tip against a converged reference (RK4 on ABA at 1/%d s)\n\n"
                  "Reference: classical RK4 on ABA at 1/%d s. Column 'RK4 check': the largest distance of its tip "
                  "from RK4 at 1/%d s over the 10 s; RK4 is fourth order, so the reference's own error is about "
                  "1/15 of that. Period: the global maximum of the two-axis "
                  "least-squares sine periodogram of the tip's horizontal displacement over 10 s; amplitude: the "
                  "largest horizontal displacement of the tip over the last half of the reference's period "
                  "(`swing_measures`). 'meets': period within 5 %% and amplitude at least half of the reference's. "
                  "Starts:\n\n%s\n\n" % (rk4_hz[0], rk4_hz[0], rk4_hz[1], starts)
                  + markdown_table(["links", "start", "tip speed (m/s)", "RK4 check (m)", "run", "period RK4 (s)",
                                    "period (ratio)", "amplitude RK4 (m)", "amplitude (ratio)",
                                    "max tip distance from RK4 (m)", "meets"], body) + "\n")


def _energy(n):
    t, _, e = tip_track(scenes.hanging_chain(n, damping=0.0), HZ, "pcg", energy=True)
    growth = float(np.max(e - e[0]))
    return ("## Energy, no damping, 1/30 s, 10 s\n\n" + markdown_table(
        ["links", "E(0) (J)", "max E(t) − E(0) (J)", "E(10 s) − E(0) (J)"],
        [[n, f"{e[0]:.3f}", f"{growth:.3g}", f"{e[-1] - e[0]:.3g}"]]) + "\n")


def _cost(n, steps):
    sc = scenes.hanging_chain(n)
    on = Simulator(sc, "pcg", dt=1 / HZ, geometric_stiffness="joints")
    off = Simulator(scenes.hanging_chain(n), "pcg", dt=1 / HZ, **_term(False))._stepper
    on.step(1)
    control = sc.control(0.0)  # (no time-varying loads in a hanging chain)
    off.step(on.state, control)  # warm-up (compilation)
    t_on, t_off = [], []
    for _ in range(steps):
        s = on.state
        t0 = time.perf_counter()
        off.step(s, control)
        t1 = time.perf_counter()
        on.step(1)
        t_on.append(time.perf_counter() - t1)
        t_off.append(t1 - t0)
    a, b = float(np.median(t_on)), float(np.median(t_off))
    rows = [Row(SUITE, "cost", "pcg-on", n, n, a, 1.0, repeats=steps),
            Row(SUITE, "cost", "pcg-off", n, n, b, 1.0, repeats=steps)]
    return rows, ("## Cost per step, term on / off (pcg, same states, interleaved)\n\n" + markdown_table(
        ["links", "steps", "on (ms)", "off (ms)", "on / off"],
        [[n, steps, f"{a * 1e3:.3f}", f"{b * 1e3:.3f}", f"{a / b:.2f}"]]) + "\n")


def _springs(quick):
    cases = [("bridge_flexible", lambda: scenes.bridge(15 if quick else 31, 15 if quick else 31)),
             ("umbrella", lambda: scenes.umbrella(3 if quick else 8)),
             ("tree", lambda: scenes.tree(4 if quick else 6, "siblings")),
             ("side_spring_chain", lambda: _scene("side_spring_chain", 64)),
             ("tip_spring_chain", lambda: _scene("tip_spring_chain", 64))]
    body = []
    for name, make in Progress(cases, f"bench {SUITE}: springs"):
        for hz in (60.0, 30.0):
            cells = []
            for gs in ("joints", "all"):
                sim = Simulator(make(), "pcg", dt=1 / hz, geometric_stiffness=gs)
                t0 = time.perf_counter()
                try:
                    sim.step(int(round((1.0 if quick else 5.0) * hz)))
                    out = "stable"
                except SimulationError:
                    out = f"diverges at step {sim.stats.steps + 1}"
                ms = (time.perf_counter() - t0) / max(sim.stats.steps, 1) * 1e3
                cells.append(f"{out}, {sim.stats.mean_iterations:.1f} its, {ms:.2f} ms")
            body.append([name, f"1/{int(hz)}", *cells])
    return ("## Springs' own geometric terms: 'joints' (default) vs 'all'\n\n" + markdown_table(
        ["scene", "dt (s)", "'joints'", "'all'"], body) + "\n")


def _thesis(quick):
    from .redmax import FAMILIES, MIN_FIT

    rows, body, diverged = [], [], []
    cases = [(fam, n) for fam, (_, full, small) in FAMILIES.items() for n in (small if quick else full)]
    for fam, n in Progress(cases, f"bench {SUITE}: thesis scenes"):
        make = FAMILIES[fam][0]
        for solver in ("pcg", "direct"):
            sims = {gs: Simulator(make(n), solver, dt=1 / 60, **_term(gs))
                    for gs in ("joints", False)}
            times = {gs: [] for gs in sims}
            t_start = time.perf_counter()
            for k in range(1 + (3 if quick else 60)):  # the first step is a warm-up
                for gs, sim in list(sims.items()):
                    t0 = time.perf_counter()
                    try:
                        sim.step(1)
                    except SimulationError as err:  # reported, left out of the fits
                        diverged.append(f"{fam} n={n}, {solver}, term {'on' if gs else 'off'}: {err}")
                        del sims[gs]
                        continue
                    if k:
                        times[gs].append(time.perf_counter() - t0)
                if time.perf_counter() - t_start > THESIS_BUDGET:
                    break
            for gs, sim in sims.items():
                rows.append(Row(SUITE, f"thesis_{fam}", f"{solver}-{'on' if gs else 'off'}", n,
                                sim.model.nv, float(np.min(times[gs])), float(np.mean(sim.stats.iterations[1:])),
                                repeats=len(times[gs])))
    by = {}
    for r in rows:
        by.setdefault((r.scene, r.method), []).append(r)
    for fam in FAMILIES:
        cells = [fam]
        for method in ("pcg-on", "pcg-off", "direct-on", "direct-off"):
            rs = by.get((f"thesis_{fam}", method), [])
            cells.append(f"{fit_slope([r.dofs for r in rs], [r.seconds_per_step for r in rs], min_n=MIN_FIT):.2f}")
        on = by.get((f"thesis_{fam}", "pcg-on"), [])
        off = by.get((f"thesis_{fam}", "pcg-off"), [])
        if on and off:
            cells.append(f"{np.mean([r.iterations for r in on]):.2f} / {np.mean([r.iterations for r in off]):.2f}")
            cells.append(f"{np.median([a.seconds_per_step / b.seconds_per_step for a, b in zip(on, off)]):.2f}")
        body.append(cells)
    return rows, ("## Thesis scenes, term on / off (1/60 s, stepped alternately)\n\n"
                  "Seconds per step here: the minimum over the interleaved steps (robust to a loaded machine).\n\n"
                  + markdown_table(
        ["scene", "PCG slope on", "PCG slope off", "direct slope on", "direct slope off",
         "PCG iterations on / off", "PCG time on / off (median over sizes)"], body) + "\n"
                  + ("\nRuns that diverged (left out):\n\n" + "\n".join(f"- {d}" for d in diverged) + "\n"
                     if diverged else ""))


def run_chains(quick: bool = False, **_ignored) -> SuiteResult:
    sizes = (16, 64) if quick else (64, 256, 512)
    rows, t1 = _stability(sizes, (30.0,) if quick else (30.0, 60.0))
    r2, t2 = _swing((32,) if quick else (64, 256))
    if quick:  # (CI: a gentle 16-link chain, whose RK4 converges at far coarser steps)
        r5, t5 = _swing_converged([(16, "mode1")], rk4_hz=(960.0, 480.0))
    else:
        r5, t5 = _swing_converged([(256, "issue")] + [(512, s) for s in CHAIN_STARTS])
    r3, t3 = _cost(64 if quick else 256, 20 if quick else 300)
    r4, t4 = _thesis(quick)
    text = "\n".join([t1, t2, t5, _energy(64 if quick else 256), t3, t4, _springs(quick)])
    result = SuiteResult(rows + r2 + r5 + r3 + r4, text, 10**9)
    result.loglog_scenes = []
    return result
