"""Cost of the energy guard on the thesis trees (issue #22): seconds per step with and without it,
interleaved step by step (minimum over the steps), and whether it ever acted.

    python scripts/energy_guard_cost.py
"""
from __future__ import annotations

import time

import numpy as np

from engine.bench.redmax import FAMILIES
from engine.simulator import Simulator


def main(steps: int = 30):
    print("family | n | dofs | solver | guard / no guard (min s per step) | steps it acted | max |q − q_no guard|")
    for fam in ("tree", "tree_square"):
        make = FAMILIES[fam][0]
        for n in (6, 8, 10):
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
                print(f"{fam} | {n} | {on.model.nv} | {solver} | {min(t_on) / min(t_off):.2f} | "
                      f"{on._stepper._energy_guard.clamped_steps} | {np.abs(on.state.q - off.state.q).max():.1e}",
                      flush=True)


if __name__ == "__main__":
    main()
