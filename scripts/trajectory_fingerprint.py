"""Final states of a fixed set of simulations, to check that a refactor changed no numbers.

    python scripts/trajectory_fingerprint.py run OUT.npz        # with the engine on sys.path
    python scripts/trajectory_fingerprint.py run OUT.npz --integrator euler
    python scripts/trajectory_fingerprint.py compare A.npz B.npz

``run`` steps every solver on a few scenes (closures, springs, contact, maximal coordinates) and
saves per run the final q, q̇, the per-step iterations, the constraint error and the energy.
``compare`` says, run by run, whether two such files are bitwise identical (else the largest
differences). To compare two source trees, run ``run`` once in each (``PYTHONPATH=TREE``).
``--integrator NAME`` passes ``integrator=NAME`` to the RedMax runs (pcg, direct, dense): a tree from before the
option (issue #31) stepped implicit Euler only, so ``--integrator euler`` in the newer tree compares like with like.
"""
from __future__ import annotations

import sys

import numpy as np

FIELDS = ("q", "qd", "its", "err", "E")


REDMAX = ("pcg", "direct", "dense")


def run(path, integrator=None) -> int:
    import engine
    from engine import scenes as S

    out = {}

    def sim_run(key, scene, solver, dt, n, **opt):
        if integrator is not None and solver in REDMAX:
            opt["integrator"] = integrator
        sim = engine.Simulator(scene, solver, dt=dt, **opt)
        sim.step(n)
        out.update({f"{key}/q": sim.state.q, f"{key}/qd": sim.state.qd,
                    f"{key}/its": np.array(sim.stats.iterations, float),
                    f"{key}/err": np.array([sim.stats.constraint_error]), f"{key}/E": np.array([sim.energy()])})

    for solver in ("pcg", "direct", "dense"):
        sim_run(f"bridge-{solver}", S.bridge(), solver, 1 / 240, 40)
        sim_run(f"umbrella-{solver}", S.umbrella(), solver, 1 / 120, 30)
        sim_run(f"four_bar-{solver}", S.four_bar(), solver, 1 / 240, 50)
        sim_run(f"strandbeest-{solver}", S.strandbeest(), solver, 1 / 240, 20)
    for solver in ("explicit", "pcg", "direct", "dense"):
        sim_run(f"tree-{solver}", S.tree(3), solver, 1 / 120 if solver != "explicit" else 1e-4, 30)
    sim_run("centipede-explicit", S.centipede(4), "explicit", 1e-5, 40)
    sim_run("centipede-pcg", S.centipede(4), "pcg", 1 / 240, 40)
    sim_run("humanoid-pcg", S.humanoid(), "pcg", 1 / 240, 30)
    for method in ("sparse", "dense", "naive"):
        sim_run(f"four_bar-baraff-{method}", S.four_bar(), "baraff", 1 / 240, 50, method=method)
    sim_run("serial_arm_2d-baraff", S.serial_arm_2d(), "baraff", 1 / 240, 50)
    sim_run("strandbeest-hard-constraints", S.strandbeest(), "hard-constraints", 1 / 240, 30)
    sim_run("trike-hard-constraints", S.trike(), "hard-constraints", 1 / 240, 30)
    # joint limits reached (the humanoid falls onto its knees and elbows) and ground contact, longer
    for solver in ("explicit", "pcg"):
        sim_run(f"humanoid-fall-{solver}", S.humanoid(), solver, 1 / 240 if solver == "pcg" else 1 / 2000,
                240 if solver == "pcg" else 2000)
    # joint limits reached: a limited hinge chain released sideways swings into its bounds
    mb = engine.ModelBuilder()
    for i in range(4):
        mb.add_body(f"l{i}", parent=i - 1, joint="revolute", axis=(1.0, 0.0, 0.0),
                    joint_origin=(0.0, 0.0, 0.0 if i == 0 else -0.3), com=(0.0, 0.0, -0.15), mass=1.0,
                    limits=(-0.4, 0.4))
    limited = engine.Scene(mb.finalize(), name="limited_chain")
    limited.q0[:] = 0.35
    for solver in ("explicit", "pcg", "direct"):
        sim_run(f"limited_chain-{solver}", limited, solver, 1 / 240 if solver != "explicit" else 1 / 1000, 120)
    # stable PD, every method, at a state away from the target
    model = S.dog().model
    rng = np.random.default_rng(3)
    q, qd = engine.random_configuration(model, rng)
    q_target, _ = engine.random_configuration(model, rng)
    for method in ("maba", "dense", "sparse", "pcg"):
        qdd, tau = engine.spd(model, q, qd, q_target, 300.0, 30.0, 1 / 60, method=method)
        out.update({f"spd-{method}/q": qdd, f"spd-{method}/qd": tau, f"spd-{method}/its": np.zeros(1),
                    f"spd-{method}/err": np.zeros(1), f"spd-{method}/E": np.zeros(1)})
    np.savez(path, **out)
    print(f"{len(out) // len(FIELDS)} runs → {path}")
    return 0


def compare(path_a, path_b) -> int:
    a, b = np.load(path_a), np.load(path_b)
    runs = sorted({k.rsplit("/", 1)[0] for k in a.files} | {k.rsplit("/", 1)[0] for k in b.files})
    same = 0
    for r in runs:
        if any(f"{r}/{f}" not in a.files or f"{r}/{f}" not in b.files for f in FIELDS):
            print(f"{r:32s} only in one file")
            continue
        if all(np.array_equal(a[f"{r}/{f}"], b[f"{r}/{f}"]) for f in FIELDS):
            same += 1
            print(f"{r:32s} bitwise identical")
        else:
            diffs = ", ".join(f"{f} {np.abs(a[f'{r}/{f}'] - b[f'{r}/{f}']).max():.3g}" if a[f"{r}/{f}"].shape ==
                              b[f"{r}/{f}"].shape else f"{f} shape differs" for f in FIELDS)
            print(f"{r:32s} differs: {diffs}")
    print(f"{same} of {len(runs)} runs bitwise identical")
    return 0 if same == len(runs) else 1


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "run":
        sys.exit(run(sys.argv[2]))
    if len(sys.argv) == 5 and sys.argv[1] == "run" and sys.argv[3] == "--integrator":
        sys.exit(run(sys.argv[2], sys.argv[4]))
    if len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    print(__doc__, file=sys.stderr)
    sys.exit(2)
