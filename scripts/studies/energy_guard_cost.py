"""Cost of the energy guard on the thesis trees and bridges (issue #22): seconds per step with and
without it, interleaved step by step (minimum and median over the steps), and whether it ever acted.
(The bridges have loop closures, so the guard is off there: their ratio shows the noise floor.)

    python scripts/studies/energy_guard_cost.py [--steps 60] [--families tree tree_square bridge_rigid bridge_flexible]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from engine.apps.bench.redmax import FAMILIES
from engine.simulator import Simulator


SIZES = {"tree": (6, 8, 10), "tree_square": (6, 8, 10), "bridge_rigid": (127, 511, 1023),
         "bridge_flexible": (63, 127, 255)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--families", nargs="*", default=list(SIZES))
    args = ap.parse_args()
    steps = args.steps
    print("family | n | dofs | solver | guard on | guard / no guard: min | median (s per step) | steps it acted "
          "| max |q − q_no guard|")
    for fam in args.families:
        make = FAMILIES[fam][0]
        for n in SIZES[fam]:
            for solver in ("pcg", "direct"):
                on = Simulator(make(n), solver, dt=1 / 60)
                off = Simulator(make(n), solver, dt=1 / 60, energy_guard=False)
                on.step(1)
                off.step(1)
                t_on, t_off = [], []
                for _ in range(steps):
                    t0 = time.perf_counter()
                    on.step(1)
                    t1 = time.perf_counter()
                    off.step(1)
                    t_off.append(time.perf_counter() - t1)
                    t_on.append(t1 - t0)
                guard = on._stepper._energy_guard
                print(f"{fam} | {n} | {on.model.nv} | {solver} | {'yes' if guard else 'no (closures)'} | "
                      f"{min(t_on) / min(t_off):.3f} | {np.median(t_on) / np.median(t_off):.3f} | "
                      f"{guard.clamped_steps if guard else '—'} | {np.abs(on.state.q - off.state.q).max():.1e}",
                      flush=True)


if __name__ == "__main__":
    main()
