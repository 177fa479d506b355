"""``bench baraff``: the seed's Tables 1–2 (seed 002, Sec. 5) — seconds per step to solve λ.

For each scene and size, the constraint rows are evaluated once at the
scene's initial state (not timed, as in the seed), then each method's solve
for the multipliers and accelerations is timed: ``sparse`` (children-first
ordering + O(n) block LDLᵀ factor and solve, Sec. 3.3), ``dense`` (LAPACK
symmetric-indefinite factorization of the same H, Sec. 3.2) and ``naive``
(λ from J M⁻¹ Jᵀ λ = b, Sec. 2.2). The factorization is part of every timed
call. Scenes are the seed's: 2D serial arms and binary trees of 1 × 5 bars
(``engine.scenes.serial_arm_2d`` / ``binary_tree_2d``), 3 DoF per body; the
sparse method is extended to n = 4096; a 3D chain and tree (6 DoF per body)
run as well. ``n`` is the number of bodies, ``dofs`` the maximal coordinates
(3n or 6n).
"""
from __future__ import annotations

import math

from ...random_tree import random_tree
from ...scene import Scene
from ...scenes.planar import binary_tree_2d, serial_arm_2d
from ...solvers.steppers.baraff import METHODS, BaraffSolver, MaximalSystem, maximal_state, planar_state, planar_system
from .report import Progress, Row, SuiteResult, group_rows, markdown_table, time_call

SUITE = "baraff"
MIN_FIT = 50
DENSE_MAX = 400   # bodies: the dense H is 5n × 5n in 2D
NAIVE_MAX = 1024
SEED_ARM = {2: (2.23e-5, 3.89e-4, 3.94e-4), 5: (1.28e-4, 6.52e-4, 1.20e-3), 10: (3.06e-4, 1.00e-3, 4.00e-3),
            20: (9.34e-4, 1.90e-3, 1.97e-2), 50: (2.30e-3, 4.10e-3, 2.38e-1), 100: (8.50e-3, 8.00e-3, 1.67),
            200: (6.47e-2, 1.90e-2, 13.5)}  # seed Table 1: n → (A\\b, sparse, dense) s/step
SEED_TREE = {3: (1.35e-5, 3.98e-4, 5.27e-4), 7: (1.35e-5, 9.15e-4, 2.60e-3), 15: (5.13e-4, 2.00e-3, 1.05e-2),
             31: (1.40e-3, 4.20e-3, 5.55e-2), 63: (4.60e-3, 5.40e-3, 0.399), 127: (2.27e-2, 1.05e-2, 3.67),
             255: (0.244, 3.82e-2, 39.7)}  # seed Table 2


def _arm(n):
    return serial_arm_2d(n)


def _tree(n):
    return binary_tree_2d(int(round(math.log2(n + 1))))


def _chain_3d(n):
    return Scene(random_tree(n, branching="chain", seed=1))


def _tree_3d(n):
    return Scene(random_tree(n, branching="binary", seed=1))


FAMILIES = {  # scene: (builder from body count, sizes, --quick sizes, planar)
    "arm_2d": (_arm, (2, 5, 10, 20, 50, 100, 200, 400, 800, 1600, 4096), (2, 10, 50), True),
    "tree_2d": (_tree, (3, 7, 15, 31, 63, 127, 255, 511, 1023, 2047, 4095), (3, 15, 63), True),
    "chain_3d": (_chain_3d, (4, 16, 64, 256, 1024), (4, 16), False),
    "tree_3d": (_tree_3d, (3, 15, 63, 255, 1023), (3, 15), False),
}


def _solver(scene, planar, method):
    system = planar_system(scene) if planar else MaximalSystem.from_scene(scene)
    qmax, v = (planar_state if planar else maximal_state)(scene.model, scene.q0, scene.qd0)
    solver = BaraffSolver(system, method)
    solver.evaluate(qmax, v)
    return solver


def _solve_once(solver):
    solver._factored = False  # every call factors H anew, as every step must
    return solver.solve()


def run_baraff(quick: bool = False, **_ignored) -> SuiteResult:
    cases = [(fam, n) for fam, (_, full, small, _) in FAMILIES.items() for n in (small if quick else full)]
    rows = []
    for fam, n in Progress(cases, f"bench {SUITE}"):
        build, _, _, planar = FAMILIES[fam]
        scene = build(n)
        for method in METHODS:
            if (method == "dense" and n > DENSE_MAX) or (method == "naive" and n > NAIVE_MAX):
                continue
            solver = _solver(scene, planar, method)
            t = time_call(lambda: _solve_once(solver), min_time=0.02 if quick else 0.1, batches=3 if quick else 5)
            rows.append(Row(SUITE, fam, method, scene.model.n_bodies, solver.system.n_bodies * solver.system.body_dim,
                            t.seconds, 0, repeats=t.calls,
                            extra={"constraint_rows": solver.system.primary.n_rows + solver.system.aux.n_rows}))
    return SuiteResult(rows, _seed_text(rows) + _crossover_text(rows), MIN_FIT)


def _seed_text(rows) -> str:
    """Our times beside the seed's Tables 1–2 (MATLAB, i7-7500U): compare ratios, not absolute times."""
    ours = {(r.scene, r.n, r.method): r.seconds_per_step for r in rows}
    out = []
    for fam, table, title in (("arm_2d", SEED_ARM, "Table 1: serial arms"), ("tree_2d", SEED_TREE, "Table 2: binary trees")):
        body = []
        for n, (naive, sparse, dense) in table.items():
            o = [ours.get((fam, n, m)) for m in ("naive", "sparse", "dense")]
            fmt = lambda x: f"{x:.2e}" if x is not None else "—"  # noqa: E731
            ratio = lambda a, b: f"{a / b:.2g}" if a and b else "—"  # noqa: E731
            body.append([n, fmt(o[0]), fmt(o[1]), fmt(o[2]), f"{naive:.2e}", f"{sparse:.2e}", f"{dense:.2e}",
                         ratio(o[0], o[1]), ratio(naive, sparse), ratio(o[2], o[1]), ratio(dense, sparse)])
        out.append(f"### {title} (seconds per step to solve λ)\n\n" + markdown_table(
            ["n", "ours naive", "ours sparse", "ours dense", "seed A\\b", "seed sparse", "seed dense",
             "naive/sparse ours", "seed", "dense/sparse ours", "seed"], body) + "\n")
    return "## Side by side with the seed (002, Tables 1–2)\n\n" + "\n".join(out)


def _crossover_text(rows) -> str:
    body = []
    for (fam,), rs in group_rows(rows, ("scene",)).items():
        by_n = {}
        for r in rs:
            by_n.setdefault(r.n, {})[r.method] = r.seconds_per_step
        faster = [n for n, g in sorted(by_n.items()) if "naive" in g and g["sparse"] < g["naive"]]
        from_n = None
        for n, g in sorted(by_n.items()):
            if "naive" not in g:
                continue
            if g["sparse"] < g["naive"]:
                from_n = from_n or n
            else:
                from_n = None
        largest = max(by_n)
        body.append([fam, ", ".join(map(str, faster)) or "none", from_n or "—",
                     f"{by_n[largest]['sparse'] * 1e3:.3g} ms at n = {largest}"])
    return ("## Sparse against naive\n\n" + markdown_table(
        ["scene", "n where sparse is faster", "sparse faster at every size from n", "sparse, largest n"], body) + "\n")

