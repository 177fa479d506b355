"""Spectral radius of the RedMax step map of ``hanging_chain(n)`` at chosen states (issue #22 diagnosis).

The step map (q, q̇) → (q⁺, q̇⁺) of the default stepper (joints' geometric stiffness on) is
differentiated by forward differences (2n steps of the 'direct' solver, so no iteration noise);
ρ > 1 means a perturbation grows from one step to the next. The states are taken from a 1/960 s
reference run at the times asked, as they are ("full"), with the joint rates zeroed ("q only") and
with the configuration reset to straight down but the rates kept ("qd only").

    python scripts/studies/chain_step_stability.py --links 512 --times 0,0.63
"""
from __future__ import annotations

import argparse

import numpy as np

from engine import scenes
from engine.model import State
from engine.simulator import Simulator


def step_map_radius(scene, q, qd, dt, eps=1e-7):
    """(ρ, index of the joint where the most unstable mode peaks) of the step map at (q, q̇)."""
    n = scene.model.nv
    stepper = Simulator(scene, "direct", dt=dt)._stepper
    control = scene.control(0.0)

    def f(x):
        s = stepper.step(State(x[:n].copy(), x[n:].copy(), 0.0), control)
        return np.r_[s.q, s.qd]

    x0 = np.r_[q, qd]
    f0 = f(x0)
    J = np.empty((2 * n, 2 * n))
    for i in range(2 * n):
        x = x0.copy()
        x[i] += eps
        J[:, i] = (f(x) - f0) / eps
    w, V = np.linalg.eig(J)
    k = int(np.argmax(np.abs(w)))
    return float(np.abs(w[k])), int(np.argmax(np.abs(V[:n, k])))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--links", type=int, default=512)
    ap.add_argument("--hz", type=float, default=30.0, help="the step whose map is analysed (1/hz s)")
    ap.add_argument("--times", default="0,0.63", help="comma-separated reference times (s)")
    args = ap.parse_args()
    scene = scenes.hanging_chain(args.links)
    ref = Simulator(scenes.hanging_chain(args.links), "pcg", dt=1 / 960)
    zeros = np.zeros(args.links)
    for t in sorted(float(x) for x in args.times.split(",")):
        ref.step(int(round((t - ref.state.t) * 960)))
        q, qd = ref.state.q, ref.state.qd
        cases = (("full", q, qd), ("q only", q, zeros), ("qd only", zeros, qd)) if t > 0 else (("rest", q, zeros),)
        for name, qq, vv in cases:
            rho, peak = step_map_radius(scene, qq, vv, 1 / args.hz)
            print(f"t = {ref.state.t:.3f} s  {name:8s} max|qd| = {np.abs(vv).max():6.2f} rad/s  "
                  f"rho = {rho:.4f}  (mode peaks at joint {peak})", flush=True)


if __name__ == "__main__":
    main()
