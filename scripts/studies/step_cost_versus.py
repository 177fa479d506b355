"""Step cost of two source trees side by side, interleaved (issue #31, acceptance 3: the default step may cost at
most 1.5× the step before it on the thesis scenes, the long chains and the characters with contact).

    python scripts/studies/step_cost_versus.py --before /tmp/main_snapshot --after . [--rounds 3] [--steps 120]

For every case and solver, each tree runs in a fresh process (``PYTHONPATH=TREE``; its kernels from its own cache)
that builds ``engine.Simulator(scene, solver, dt)`` with the tree's defaults, takes 5 untimed steps, then times
``--steps`` steps one by one; the trees alternate case by case, ``--rounds`` times. Reported: the least seconds
per step over the rounds of each (``--stat min``: a step's cost on a quiet machine; ``--stat median``: the
median step of each round, least over the rounds — a motion whose steps cost more later, e.g. more PCG
iterations, shows there), their ratio, and whether the run stayed stable. The machine is shared: interleaved
runs and minima over rounds, not single timings, compare the trees.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CASES = {  # name: (scene expression in the child, dt)
    "bridge_rigid_car_7": ("scenes.bridge(7, 0, car_mass=NORMAL_CAR)", 1 / 60),  # bench redmax --quick's sizes
    "bridge_rigid_car_15": ("scenes.bridge(15, 0, car_mass=NORMAL_CAR)", 1 / 60),
    "bridge_flexible_7": ("scenes.bridge(7, 7)", 1 / 60),
    "bridge_flexible_9": ("scenes.bridge(9, 9)", 1 / 60),
    "bridge_flexible_heavy_car_7": ("scenes.bridge(7, 7, car_mass=500 * NORMAL_CAR)", 1 / 60),
    "bridge_rigid_car_31": ("scenes.bridge(31, 0, car_mass=NORMAL_CAR)", 1 / 60),
    "bridge_rigid_car_127": ("scenes.bridge(127, 0, car_mass=NORMAL_CAR)", 1 / 60),
    "bridge_flexible_car_31": ("scenes.bridge(31, 31, car_mass=NORMAL_CAR)", 1 / 60),
    "bridge_flexible_car_127": ("scenes.bridge(127, 127, car_mass=NORMAL_CAR)", 1 / 60),
    "umbrella_4": ("scenes.umbrella(4)", 1 / 60),
    "umbrella_12": ("scenes.umbrella(12)", 1 / 60),
    "tree_6": ("scenes.tree(6)", 1 / 60),
    "tree_8": ("scenes.tree(8)", 1 / 60),
    "hanging_chain_256": ("scenes.hanging_chain(256)", 1 / 30),
    "hanging_chain_512": ("scenes.hanging_chain(512)", 1 / 30),
    "side_spring_chain_64": ("side_spring(64)", 1 / 30),
    "humanoid_ground": ("grounded(scenes.humanoid())", 1 / 60),
    "dog_ground": ("grounded(scenes.dog())", 1 / 60),
}

CHILD = r'''
import json, sys, time
import numpy as np
from engine import Simulator, scenes
from engine.errors import SimulationError
from engine.scenes.bridge import NORMAL_CAR

def side_spring(n):
    sc = scenes.hanging_chain(n)
    b = n // 2 - 1
    z = sc.world_point(b, np.array([0.0, 0.0, -0.1]))
    sc.add_spring(b, z, -1, z + np.array([1.0, 0.0, 0.0]), 1e5, name="side_spring")
    return sc

def grounded(sc):  # a 5 cm contact sphere on every body, the ground at z = 0
    for b in range(sc.model.n_bodies):
        sc.model.body_shapes[b] = {"type": "sphere", "radius": 0.05}
    sc.set_ground()
    return sc

scene, solver, dt, steps = eval(sys.argv[1]), sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
sim = Simulator(scene, solver, dt=dt)
out = {"stable": True, "seconds": []}
try:
    sim.step(5)
    for _ in range(steps):
        t0 = time.perf_counter()
        sim.step()
        out["seconds"].append(time.perf_counter() - t0)
except SimulationError as err:
    out["stable"], out["error"] = False, str(err)
out["iterations"] = float(np.mean(sim.stats.iterations)) if sim.stats.iterations else 0.0
print(json.dumps(out))
'''


def run(tree, case, solver, steps):
    expr, dt = CASES[case]
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree), OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-c", CHILD, expr, solver, repr(dt), str(steps)], env=env,
                         cwd=os.path.abspath(tree), capture_output=True, text=True, timeout=1800)
    if res.returncode:
        return {"stable": False, "error": res.stderr.strip().splitlines()[-1], "seconds": []}
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="source tree of the step before")
    ap.add_argument("--after", required=True, help="source tree of the step after")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=120)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--solvers", default="pcg,direct")
    ap.add_argument("--stat", choices=("min", "median"), default="min", help="per round: the least or the median step")
    args = ap.parse_args()
    rows = []
    print("| case | solver | before (ms/step) | after (ms/step) | after / before | before | after | PCG its before / after |")
    print("|---|---|---|---|---|---|---|---|")
    for case in args.cases.split(","):
        for solver in args.solvers.split(","):
            best = {"before": None, "after": None}
            runs = {}
            for _ in range(args.rounds):
                for side in ("before", "after"):
                    r = run(getattr(args, side), case, solver, args.steps)
                    runs[side] = r
                    if r["seconds"]:
                        m = min(r["seconds"]) if args.stat == "min" else sorted(r["seconds"])[len(r["seconds"]) // 2]
                        best[side] = m if best[side] is None else min(best[side], m)
            b, a = best["before"], best["after"]
            ratio = a / b if a and b else float("nan")
            state = {s: "stable" if runs[s]["stable"] else f"diverged ({runs[s].get('error', '')[:50]})" for s in runs}
            its = f"{runs['before'].get('iterations', 0):.2f} / {runs['after'].get('iterations', 0):.2f}"
            print(f"| {case} | {solver} | {1e3 * b:.3f} | {1e3 * a:.3f} | {ratio:.2f} | {state['before']} | "
                  f"{state['after']} | {its} |" if a and b else f"| {case} | {solver} | — | — | — | {state['before']} | "
                  f"{state['after']} | {its} |", flush=True)
            rows.append({"case": case, "solver": solver, "before": b, "after": a, "ratio": ratio, **state})
    return rows


if __name__ == "__main__":
    main()
