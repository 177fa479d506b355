"""``bench minv``: the seed-004 experiments (Drumwright, §6, Figs. 2–4).

* ``chain`` (Fig. 2–3): seconds to get M⁻¹ of an n-body revolute chain (random
  frames, fixed base) by ``minv`` (Θ(n²) impulse propagation, one thread),
  ``minv_2threads`` (its columns split over 2 numba threads, §6.2),
  ``crba+cholesky_inverse`` (LAPACK dpotrf + dpotri) and ``crba+ltdl_inverse``
  (Featherstone's branch-induced-sparsity LTDL, then n solves);
* ``branched``: the same on trees of expected depth ≈ n/2 (each body is the previous
  one's child with probability 1/2, else a random body's), where LTDL has sparsity;
* ``centipede`` (Fig. 4): seconds per simulation step of the walking centipede
  (``engine.scenes.centipede``, RedMax PCG step + ground contact) for segments
  5 … 150, with the contact-space inertia J M⁻¹ Jᵀ from ``minv`` (1 and 2
  threads), from CRBA + Cholesky, or from ``impulse`` — the seed's propagation run on
  the contacts' test impulses only, Θ(n k) (``engine.contact.space``). ``iterations`` is
  the mean number of PGS sweeps; the share of the step spent on the contact-space
  matrices is reported too.

``n`` is bodies (chain, branched) or segments (centipede); slopes are fitted
against dofs. The methods of a case are interleaved and the minimum is kept
(``peers.interleaved_min``; the centipede's simulators take ``CENTIPEDE_STEPS``
steps each in turn per round, in step with each other), so the other work on a
shared machine hits all of them alike.
"""
from __future__ import annotations

import time

import numpy as np

from ... import cholesky_inverse, crba, ltdl, ltdl_solve, minv, random_configuration, random_tree
from ...scenes.centipede import centipede
from ...simulator import Simulator
from .peers import interleaved_min
from .report import Progress, Row, SuiteResult, group_rows, markdown_table

SUITE = "minv"
MIN_FIT = 64
INVERSE_SIZES, INVERSE_QUICK = (16, 32, 64, 128, 256, 512, 1024), (16, 64, 256)
SEGMENTS, SEGMENTS_QUICK = (5, 10, 25, 50, 100, 150), (3, 6)
CONTACT_METHODS = (("minv", "minv", 1), ("minv_2threads", "minv", 2), ("cholesky", "cholesky", 1),
                   ("impulse", "impulse", 1))


def _inverse_case(scene: str, n: int):
    branching = "chain" if scene == "chain" else 0.5
    model = random_tree(n, branching=branching, seed=1, joint_types=("revolute",), random_frames=True)
    q, _ = random_configuration(model, np.random.default_rng(1))
    eye = np.eye(model.nv)
    return model, {
        "minv": lambda: minv(model, q),
        "minv_2threads": lambda: minv(model, q, threads=2),
        "crba+cholesky_inverse": lambda: cholesky_inverse(crba(model, q)),
        "crba+ltdl_inverse": lambda: ltdl_solve(model, ltdl(model, crba(model, q)), eye),
    }


CENTIPEDE_STEPS = 2  # steps per simulator per round


def _centipede_rows(segments, quick):
    rows = []
    for n in Progress(segments, f"bench {SUITE}: centipede"):
        sims = {name: Simulator(centipede(n), "pcg", dt=1 / 240, contact_method=method, contact_threads=threads)
                for name, method, threads in CONTACT_METHODS}
        for sim in sims.values():
            sim.step(24)  # settle onto the feet, numba warm
        start = {name: (sim.stats.wall_seconds, sim.contact.seconds["space"]) for name, sim in sims.items()}
        best, sweeps = {name: np.inf for name in sims}, {name: [] for name in sims}
        for _ in range(3 if quick else 12):  # all simulators at the same step of the walk in each round
            for name, sim in sims.items():
                t0 = time.perf_counter()
                for _ in range(CENTIPEDE_STEPS):
                    sim.step()
                    sweeps[name].append(sim.contact.last.sweeps)
                best[name] = min(best[name], (time.perf_counter() - t0) / CENTIPEDE_STEPS)
        for name, sim in sims.items():
            wall0, space0 = start[name]
            share = (sim.contact.seconds["space"] - space0) / max(sim.stats.wall_seconds - wall0, 1e-12)
            rows.append(Row(SUITE, "centipede", name, n, sim.model.nv, best[name], float(np.mean(sweeps[name])),
                            repeats=len(sweeps[name]), extra={"contacts": len(sim.contact.last.contacts),
                                                              "contact_space_share": round(float(share), 3)}))
        del sims
    return rows


def run_minv(quick: bool = False, **_ignored) -> SuiteResult:
    rows = []
    sizes = INVERSE_QUICK if quick else INVERSE_SIZES
    timing = dict(min_time=0.001, rounds=3) if quick else dict(min_time=0.002, rounds=15)
    for scene, n in Progress([(s, n) for s in ("chain", "branched") for n in sizes], f"bench {SUITE}: inverse"):
        model, calls = _inverse_case(scene, n)
        for method, (seconds, count) in interleaved_min(calls, **timing).items():
            rows.append(Row(SUITE, scene, method, n, model.nv, seconds, 0, repeats=count))
    rows += _centipede_rows(SEGMENTS_QUICK if quick else SEGMENTS, quick)
    return SuiteResult(rows, _ratios_text(rows), MIN_FIT)


def _ratios_text(rows) -> str:
    t = {(r.scene, r.method, r.n): r for r in rows}
    out = []
    for scene in ("chain", "branched"):
        body = []
        for n in sorted({r.n for r in rows if r.scene == scene}):
            m = t[(scene, "minv", n)].seconds_per_step
            body.append([n, f"{m * 1e3:.3g}", f"{m / t[(scene, 'minv_2threads', n)].seconds_per_step:.2f}",
                         f"{t[(scene, 'crba+cholesky_inverse', n)].seconds_per_step / m:.2f}",
                         f"{t[(scene, 'crba+ltdl_inverse', n)].seconds_per_step / m:.2f}"])
        out.append(f"## M⁻¹ of the {scene} trees (Figs. 2–3)\n\nMinimum over interleaved rounds.\n\n" + markdown_table(
            ["n", "minv (ms)", "2 threads: speed-up", "crba+cholesky_inverse / minv", "crba+ltdl_inverse / minv"],
            body) + "\n")
    body = []
    for (n,), rs in sorted(group_rows([r for r in rows if r.scene == "centipede"], ("n",)).items()):
        g = {r.method: r for r in rs}
        m = g["minv"]
        body.append([n, m.dofs, m.extra["contacts"], f"{m.seconds_per_step * 1e3:.3g}",
                     f"{g['minv_2threads'].seconds_per_step * 1e3:.3g}", f"{g['cholesky'].seconds_per_step * 1e3:.3g}",
                     f"{g['cholesky'].seconds_per_step / m.seconds_per_step:.2f}",
                     f"{g['cholesky'].seconds_per_step / g['minv_2threads'].seconds_per_step:.2f}",
                     f"{g['impulse'].seconds_per_step * 1e3:.3g}",
                     f"{g['cholesky'].seconds_per_step / g['impulse'].seconds_per_step:.2f}",
                     f"{m.extra['contact_space_share']:.0%} / {g['cholesky'].extra['contact_space_share']:.0%}"])
    out.append("## Centipede, seconds per step (Fig. 4)\n\n"
               "Minimum over interleaved rounds (all paths at the same step of the walk in each round).\n\n"
               + markdown_table(
        ["segments", "dofs", "contacts", "minv (ms)", "minv 2 threads (ms)", "cholesky (ms)", "cholesky / minv",
         "cholesky / minv 2 threads", "impulse (ms)", "cholesky / impulse",
         "contact-space share minv / cholesky"], body) + "\n")
    return "\n".join(out)
