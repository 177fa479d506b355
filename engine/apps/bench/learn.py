"""``bench learn``: the imitation environments (engine.envs) — throughput and the largest stable step.

Parts (rows of ``learn.csv``):

1. **Throughput** [``throughput_<character>``]: environment steps per second of
   wall time in one process, control at 1/30 s with one simulation step per
   control step, ground contact on, random actions in [−1, 1] with automatic
   resets (falls end episodes; resets are counted in the time). Methods
   ``<spd>-gym``: ``gymnasium.make("RedMax/Imitate-v0", ...)`` with its
   default wrappers (order enforcing, passive checker) — what a learner
   sees; ``<spd>-sim``: the bare ``ImitationSim`` (step + observation), the
   simulation's own cost. Best of ``ROUNDS`` interleaved rounds of
   ``STEPS`` steps each (the machine is shared; the least disturbed round).
2. **Largest stable step** [``stability_<character>``], as the seed's
   stability study: for each SPD method and step h (control = simulation
   step = h), ``EPISODES`` episodes with random actions and as many with the
   zero action (the reference as PD target), each 3 s long and run on past a
   fall (the character then lies on the ground); a step size is stable when
   no episode diverges (|q̇| > 1000 or non-finite).
   ``n`` is 1/h; ``extra`` has diverged episodes and the mean survival time;
   ``seconds_per_step`` of these rows is the wall time of the whole study at that h
   (not a per-step time: nothing is timed there).
"""
from __future__ import annotations

import math
import sys
import time

import numpy as np

from ...control.spd import METHODS
from .peers import PeersMissing
from .report import Progress, Row, SuiteResult, markdown_table

SUITE = "learn"
ROUNDS, QUICK_ROUNDS = 5, 2
STEPS, QUICK_STEPS = 3000, 200
CHARACTERS = ("humanoid", "dog", "snake")
STABILITY_STEPS = (1 / 5, 1 / 10, 1 / 15, 1 / 20, 1 / 30, 1 / 60, 1 / 120)
QUICK_STABILITY_STEPS = (1 / 15, 1 / 30)
EPISODES, QUICK_EPISODES = 8, 1
TARGET_STEPS_PER_SECOND = 2000  # issue #23: humanoid with ground contact at 1/30 s, one process


class LearnMissing(PeersMissing):
    """Gymnasium is not installed (``pip install -e .[learn]`` or ``pip install gymnasium``)."""


def _gym():
    try:
        import gymnasium
    except ImportError:
        raise LearnMissing("bench learn needs gymnasium: pip install gymnasium (or the .[learn] extra)") from None
    from .. import envs  # noqa: F401  (registers the environments)
    return gymnasium


def _run_gym(env, actions) -> float:
    env.reset(seed=0)
    t0 = time.perf_counter()
    for a in actions:
        _, _, term, trunc, _ = env.step(a)
        if term or trunc:
            env.reset()
    return time.perf_counter() - t0


def _run_sim(sim, actions, rng) -> float:
    sim.reset(0)
    t0 = time.perf_counter()
    for a in actions:
        _, fallen, diverged, truncated = sim.step(a)
        sim.observation()
        if fallen or diverged or truncated:
            sim.reset(int(rng.integers(sim.start_frames)))
    return time.perf_counter() - t0


def _throughput_rows(character, rounds, steps) -> list:
    gym = _gym()
    from ..envs import ImitationSim

    envs = {m: gym.make("RedMax/Imitate-v0", character=character, spd=m, dt=1 / 30) for m in METHODS}
    sims = {m: ImitationSim(character, spd=m, dt=1 / 30) for m in METHODS}
    n_act = sims["maba"].n_actions
    actions = np.random.default_rng(0).uniform(-1, 1, (steps, n_act)).astype(np.float32)
    for m in METHODS:  # warm-up: compilation, caches
        _run_gym(envs[m], actions[:20])
        _run_sim(sims[m], actions[:20], np.random.default_rng(0))
    best = {}
    for _ in range(rounds):
        for m in METHODS:
            best[(m, "gym")] = min(best.get((m, "gym"), math.inf), _run_gym(envs[m], actions))
            best[(m, "sim")] = min(best.get((m, "sim"), math.inf), _run_sim(sims[m], actions, np.random.default_rng(1)))
    model = sims["maba"].model
    rows = []
    for (m, kind), t in best.items():
        rows.append(Row(SUITE, f"throughput_{character}", f"{m}-{kind}", model.n_bodies, model.nv, t / steps,
                        repeats=rounds * steps, notes="random actions, auto-reset, control 1/30 s, 1 sim step",
                        extra={"steps_per_second": steps / t, "character": character, "dt": 1 / 30}))
    return rows


def stability(character: str, method: str, h: float, episodes: int, seconds: float = 3.0, seed: int = 0) -> dict:
    """Episodes of ``seconds`` with random and with zero actions at control = simulation step h, run on
    past falls: diverged count, mean time to the first fall (s)."""
    from ..envs import ImitationSim

    sim = ImitationSim(character, spd=method, dt=h, episode_seconds=seconds)
    rng = np.random.default_rng(seed)
    diverged, survival = 0, []
    for e in range(2 * episodes):
        sim.reset(int(rng.integers(sim.start_frames)))
        upright = None
        while True:  # on past a fall: a character lying on the ground is the hardest contact case
            a = rng.uniform(-1, 1, sim.n_actions) if e % 2 == 0 else np.zeros(sim.n_actions)
            _, fallen, div, truncated = sim.step(a)
            if fallen and upright is None:
                upright = sim.time
            if div:
                diverged += 1
            if div or truncated:
                break
        survival.append(sim.time if upright is None else upright)
    return {"diverged": diverged, "episodes": 2 * episodes, "survival": float(np.mean(survival))}


def _stability_rows(character, steps, episodes) -> list:
    from ..envs import CHARACTERS as SPECS

    model = SPECS[character].build().model
    rows = []
    for h in steps:
        for m in METHODS:
            t0 = time.perf_counter()
            s = stability(character, m, h, episodes)
            rows.append(Row(SUITE, f"stability_{character}", m, int(round(1 / h)), model.nv,
                            (time.perf_counter() - t0), notes="stable" if s["diverged"] == 0 else "DIVERGED",
                            extra={"dt": h, "diverged": s["diverged"], "episodes": s["episodes"],
                                   "survival_seconds": s["survival"], "character": character}))
    return rows


def largest_stable_step(rows, character: str, method: str) -> float:
    """The largest h among the stability rows of ``character`` / ``method`` with no diverged episode, and
    every smaller tested h stable too (nan if none)."""
    rs = sorted((r for r in rows if r.scene == f"stability_{character}" and r.method == method),
                key=lambda r: r.extra["dt"])
    best = math.nan
    for r in rs:
        if r.extra["diverged"]:
            break
        best = r.extra["dt"]
    return best


def run_learn(quick: bool = False, **_options) -> SuiteResult:
    _gym()
    rounds, steps = (QUICK_ROUNDS, QUICK_STEPS) if quick else (ROUNDS, STEPS)
    h_list = QUICK_STABILITY_STEPS if quick else STABILITY_STEPS
    episodes = QUICK_EPISODES if quick else EPISODES
    cases = [("throughput", c) for c in CHARACTERS] + [("stability", c) for c in CHARACTERS]
    rows = []
    for kind, c in Progress(cases, f"bench {SUITE}"):
        rows += _throughput_rows(c, rounds, steps) if kind == "throughput" else _stability_rows(c, h_list, episodes)
    print(f"bench {SUITE}: done", file=sys.stderr)
    result = SuiteResult(rows, _text(rows, quick), min_fit=10**9)
    result.loglog_scenes = ()  # no size sweeps: no log-log plots
    return result


def _text(rows, quick) -> str:
    thr = [r for r in rows if r.scene.startswith("throughput_")]
    body = [[r.extra["character"], r.dofs, r.method, f"{r.extra['steps_per_second']:,.0f}",
             f"{r.seconds_per_step * 1e6:,.1f}"] for r in thr]
    stab = {}
    for r in rows:
        if r.scene.startswith("stability_"):
            stab.setdefault((r.extra["character"], r.method), []).append(r)
    sbody = []
    for (c, m), rs in stab.items():
        cells = [f"1/{r.n}: {'ok' if not r.extra['diverged'] else str(r.extra['diverged']) + ' div'} "
                 f"({r.extra['survival_seconds']:.2f} s)" for r in sorted(rs, key=lambda r: -r.extra["dt"])]
        h = largest_stable_step(rows, c, m)
        sbody.append([c, m, " · ".join(cells), "none" if math.isnan(h) else f"1/{round(1 / h)}"])
    hum = [r.extra["steps_per_second"] for r in thr if r.extra["character"] == "humanoid" and r.method.endswith("-gym")]
    check = (f"- humanoid, ground contact, control 1/30 s, one process, through gymnasium.make: "
             f"{min(hum):,.0f}–{max(hum):,.0f} env steps/s over the four SPD methods "
             f"(target ≥ {TARGET_STEPS_PER_SECOND:,}: {'yes' if min(hum) >= TARGET_STEPS_PER_SECOND else 'NO'})"
             if hum else "")
    return "\n".join([
        "## Environment throughput (steps per second, one process)", "",
        markdown_table(["character", "dofs", "method", "env steps/s", "µs per step"], body), "",
        "## Largest stable step (control = simulation step h)", "",
        "Per h: diverged episodes of " + f"{2 * (QUICK_EPISODES if quick else EPISODES)}"
        " (half random actions, half zero action) and, in brackets, the mean time to a fall (s).", "",
        markdown_table(["character", "method", "per step h", "largest stable h"], sbody), "",
        "## Checks against the issue's targets", "", check, ""])
