"""A converged reference for ``hanging_chain(n)`` (RK4 on ABA at a fine step) against the RedMax step
(issue #22: why the 512-link chain diverged at every frame-rate dt, 1/240 s included).

Prints, every ``--every`` s, the reference's energy (it may only fall: the joints are damped), its
largest joint rate, and the tip of the reference and of the RedMax runs; then the sine-fit period and
amplitude of ``bench chains`` for every run against the reference and the 1/960 s run, and the RMS
distance of each run's tip from the reference's over the first ``--window`` s.

    python scripts/studies/chain_whip_reference.py --links 512
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import engine
from engine import scenes
from engine.algorithms.kinematics import joint_pass, world_pass
from engine.apps.bench.chains import swing, tip_track
from engine.energy import energy
from engine.errors import SimulationError
from engine.integrators import rk4_step

T_END = 10.0


def rk4_reference(n, hz):
    """(t, tip (k, 3), energy (k,), largest |q̇| (k,)) sampled at 30 Hz, RK4 at 1/hz s."""
    scene = scenes.hanging_chain(n)
    model, damping = scene.model, scene.joint_damping
    q, qd, h, stride = scene.q0.copy(), scene.qd0.copy(), 1.0 / hz, int(round(hz / 30))
    end = np.array([0.0, 0.0, -0.1])
    tips, energies, rates = [], [], []

    def record():
        joint_pass(model.tree, q, model.data)
        world_pass(model.tree, model.data)
        tips.append(model.data.X0_r[-1] + model.data.X0_E[-1].T @ end)
        energies.append(energy(model, q, qd))
        rates.append(np.abs(qd).max())

    record()
    for _ in range(int(round(T_END * 30))):
        for _ in range(stride):
            q, qd = rk4_step(model, q, qd, h, lambda q, qd, t: engine.aba(model, q, qd, -damping * qd))
        record()
    return np.linspace(0.0, T_END, len(tips)), np.array(tips), np.array(energies), np.array(rates)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--links", type=int, default=512)
    ap.add_argument("--hz", type=float, default=3840.0, help="RK4 steps per second")
    ap.add_argument("--every", type=float, default=0.5)
    ap.add_argument("--window", type=float, default=6.0)
    ap.add_argument("--newton", action="store_true", help="also pcg with newton_iterations=10 (slow)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    t, ref, e, rate = rk4_reference(args.links, args.hz)
    print(f"RK4 at 1/{args.hz:.0f} s: {time.perf_counter() - t0:.0f} s of wall time; energy may only fall: "
          f"largest rise between samples {np.max(np.diff(e)):.3g} J", flush=True)
    runs = {}
    cases = [("pcg 1/960", 960.0, "pcg", {}), ("pcg 1/240", 240.0, "pcg", {}), ("pcg 1/30", 30.0, "pcg", {}),
             ("direct 1/30", 30.0, "direct", {})]
    if args.newton:
        cases.append(("pcg 1/30 newton", 30.0, "pcg", {"newton_iterations": 10}))
    for name, hz, solver, opts in cases:
        try:
            runs[name] = tip_track(scenes.hanging_chain(args.links), hz, solver, **opts)[1]
        except SimulationError as err:
            print(f"{name}: {err}")
    stride = max(1, int(round(args.every * 30)))
    print("t (s) | RK4 energy (J) | RK4 max |q̇| (rad/s) | tip z (m): RK4 " + " ".join(f"| {n}" for n in runs))
    for k in range(0, len(t), stride):
        print(f"{t[k]:5.2f} | {e[k]:12.1f} | {rate[k]:8.1f} | {ref[k, 2]:7.2f} "
              + " ".join(f"| {v[k, 2]:7.2f}" for v in runs.values()))
    print(f"largest joint rate of RK4: {rate.max():.0f} rad/s at t = {t[np.argmax(rate)]:.2f} s")
    for ref_name, ref_tip in (("RK4", ref), ("pcg 1/960", runs.get("pcg 1/960"))):
        if ref_tip is None:
            continue
        p0, a0, axis = swing(t, ref_tip)
        print(f"against {ref_name} (period {p0:.3f} s, amplitude {a0:.3f} m, axis {'xy'[axis]}):")
        for name, tip in runs.items():
            p, a, _ = swing(t, tip, axis)
            print(f"  {name}: period {p:.3f} s ({p / p0:.3f}), amplitude {a:.3f} m ({a / a0:.3f})")
    w = t <= args.window
    for name, tip in runs.items():
        print(f"RMS tip distance from RK4 over 0–{args.window:g} s, {name}: "
              f"{np.sqrt(np.mean(np.sum((tip[w] - ref[w]) ** 2, axis=1))):.2f} m")


if __name__ == "__main__":
    main()
