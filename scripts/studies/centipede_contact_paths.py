"""The walking centipede under each contact-space method, side by side (seed 004, Fig. 4).

    python scripts/studies/centipede_contact_paths.py [--segments 100] [--rounds 6] [--steps 5]
    python scripts/studies/centipede_contact_paths.py --walk [--segments 50] [--seconds 5]

Default: one simulator per path (minv, minv on 2 threads, cholesky, impulse), all warmed
up, then ``rounds`` rounds in which each path takes ``steps`` steps in turn, so the shared
machine's load hits every path alike; prints the median milliseconds per step and the
Cholesky / other ratios; BLAS on one thread, as in ``python -m engine bench minv``.
``--walk``: the acceptance-2 walk with the minv path: how far every segment moved, their
height range, the lateral drift and the largest |q̇|.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import engine  # noqa: E402

PATHS = (("minv", "minv", 1), ("minv_2threads", "minv", 2), ("cholesky", "cholesky", 1), ("impulse", "impulse", 1))


def interleaved(segments: int, rounds: int, steps: int) -> dict:
    sims = {name: engine.Simulator(engine.scenes.centipede(segments), "pcg", dt=1 / 240, contact_method=method,
                                   contact_threads=threads) for name, method, threads in PATHS}
    for sim in sims.values():
        sim.step(24)  # onto its feet, numba warm
    times: dict = {name: [] for name in sims}
    for _ in range(rounds):
        for name, sim in sims.items():
            t0 = time.perf_counter()
            sim.step(steps)
            times[name].append((time.perf_counter() - t0) / steps)
    return {name: float(np.median(t)) for name, t in times.items()}


def walk(segments: int, seconds: float) -> str:
    scene = engine.scenes.centipede(segments)
    sim = engine.Simulator(scene, "pcg", dt=1 / 240, contact_method="minv")
    seg = [scene.model.body_index(f"segment{i}") for i in range(segments)]
    p0 = engine.forward_kinematics(scene.model, sim.state.q)[1][seg]
    z, lateral, qd = [np.inf, -np.inf], 0.0, 0.0
    t0 = time.perf_counter()
    for _ in range(int(round(seconds * 240))):
        sim.step()
        p = engine.forward_kinematics(scene.model, sim.state.q)[1][seg]
        z = [min(z[0], p[:, 2].min()), max(z[1], p[:, 2].max())]
        lateral = max(lateral, float(np.abs(p[:, 1] - p0[:, 1]).max()))
        qd = max(qd, float(np.abs(sim.state.qd).max()))
    forward = p[:, 0] - p0[:, 0]
    return (f"{segments} segments, {seconds:g} s, minv path: forward {forward.min() * 100:.1f}–"
            f"{forward.max() * 100:.1f} cm, heights {z[0] * 100:.1f}–{z[1] * 100:.1f} cm, lateral drift "
            f"{lateral * 100:.1f} cm, |q̇| ≤ {qd:.2f}, wall {time.perf_counter() - t0:.0f} s")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--segments", type=int, default=None, help="centipede segments (100; --walk: 50)")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--walk", action="store_true", help="the 5 s walk of acceptance 2 instead of the timing")
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args(argv)
    if args.walk:
        print(walk(args.segments or 50, args.seconds))
        return 0
    from engine.apps.bench.report import single_threaded_blas

    with single_threaded_blas():
        ms = interleaved(args.segments or 100, args.rounds, args.steps)
    print("  ".join(f"{name} {t * 1e3:.1f} ms" for name, t in ms.items()))
    print("  ".join(f"cholesky / {name} {ms['cholesky'] / t:.2f}" for name, t in ms.items() if name != "cholesky"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
