"""``bench algorithms``: the recursive algorithms vs n on chains and balanced binary trees.

Methods (all revolute joints, random frames, fixed base):
ABA, RNEA, CRBA, CRBA + LAPACK Cholesky solve, CRBA + LTDL factor + solve,
Θ(n²) M⁻¹ (seed 004) and CRBA + Cholesky inverse; a ``pinocchio_aba`` column
when pinocchio is importable. Times are medians per call of the public
functions (input checks included). ``aba_kernel`` is the raw numba kernel,
for per-body cost. Compile time is measured separately in fresh processes
with a cold and then a warm numba cache.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from .. import aba, cholesky_inverse, cholesky_solve, crba, ltdl, ltdl_solve, minv, random_configuration, random_tree, rnea
from ..algorithms.aba import aba_kernel
from .report import Progress, Row, groups, markdown_table, results_table, slopes, time_call

SIZES = (8, 16, 32, 64, 128, 256, 512, 1024)
QUICK_SIZES = (8, 16, 32, 64, 128)
SLOPE_MIN_DOFS = 64


def _methods(model, q, qd, tau):
    f = np.zeros((model.n_bodies, 6))
    out = np.empty(model.nv)
    ws = model.data
    return {
        "aba": lambda: aba(model, q, qd, tau),
        "aba_kernel": lambda: aba_kernel(model.tree, q, qd, tau, f, ws, out),
        "rnea": lambda: rnea(model, q, qd, tau),
        "crba": lambda: crba(model, q),
        "crba+cholesky_solve": lambda: cholesky_solve(crba(model, q), tau),
        "ltdl_solve": lambda: ltdl_solve(model, ltdl(model, crba(model, q)), tau),
        "minv": lambda: minv(model, q),
        "crba+cholesky_inverse": lambda: cholesky_inverse(crba(model, q)),
    }


def _pinocchio_aba(model):
    """An equivalent pinocchio model and a call of pinocchio.aba, or None without pinocchio."""
    try:
        import pinocchio as pin
    except Exception:
        return None
    pm = pin.Model()
    ids = []
    for i in range(model.n_bodies):
        parent = 0 if model.body_parent[i] < 0 else ids[model.body_parent[i]]
        placement = pin.SE3(model.joint_rotation[i], model.joint_origin[i])
        jid = pm.addJoint(parent, pin.JointModelRevoluteUnaligned(model.joint_axis[i]), placement, f"j{i}")
        Ic = model.body_rotation[i] @ np.diag(model.body_principal_inertia[i]) @ model.body_rotation[i].T
        pm.appendBodyToJoint(jid, pin.Inertia(model.body_mass[i], model.body_com[i], Ic), pin.SE3.Identity())
        ids.append(jid)
    pm.gravity.linear = np.array(model.gravity)
    data = pm.createData()
    return lambda q, qd, tau: pin.aba(pm, data, q, qd, tau)


def measure_compile_seconds(cold: bool = True) -> dict:
    """First-use seconds of every algorithm in a fresh process: cold cache (an empty
    NUMBA_CACHE_DIR), then warm (the same cache again); ``cold=False`` times only the
    current cache (quick runs)."""
    code = (
        "import time, json, numpy as np; t0 = time.perf_counter(); import engine; "
        "m = engine.random_tree(4, seed=0, floating_base=True); q, qd = engine.random_configuration(m, np.random.default_rng(0)); "
        "tau = np.zeros(m.nv); engine.aba(m, q, qd, tau); engine.rnea(m, q, qd, tau); M = engine.crba(m, q); "
        "engine.ltdl_solve(m, engine.ltdl(m, M), tau); engine.minv(m, q); engine.forward_kinematics(m, q); "
        "engine.integrate(m, q, qd, 0.01); print(json.dumps(time.perf_counter() - t0))"
    )
    root = str(Path(__file__).resolve().parents[2])
    out = {}
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryDirectory(prefix="engine_numba_cache_") as cache:
        if cold:
            env["NUMBA_CACHE_DIR"] = cache
        for label in (("cold_cache", "warm_cache") if cold else ("current_cache",)):
            res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
            out[label] = float(json.loads(res.stdout.strip().splitlines()[-1]))
    return out


def run(quick: bool = False):
    """Returns (rows, markdown text, {png name: (rows, title, slopes)})."""
    sizes = QUICK_SIZES if quick else SIZES
    rows = []
    cases = [(scene, n) for scene in ("chain", "binary") for n in sizes]
    rng = np.random.default_rng(0)
    have_pin = _pinocchio_aba(random_tree(2, seed=0, joint_types=("revolute",))) is not None
    for scene, n in Progress(cases, "bench algorithms"):
        model = random_tree(n, branching=scene, seed=1, joint_types=("revolute",))
        q, qd = random_configuration(model, rng)
        tau = rng.normal(size=model.nv)
        min_time = 0.01 if quick else 0.03
        for method, fn in _methods(model, q, qd, tau).items():
            t = time_call(fn, min_time=min_time, batches=3 if quick else 5)
            rows.append(Row("algorithms", scene, method, n, model.nv, t, 0, {"us_per_body": t / n * 1e6}))
        if have_pin:
            pin_aba = _pinocchio_aba(model)
            t = time_call(lambda: pin_aba(q, qd, tau), min_time=min_time, batches=3 if quick else 5)
            rows.append(Row("algorithms", scene, "pinocchio_aba", n, model.nv, t, 0, {"us_per_body": t / n * 1e6}))
    compile_s = measure_compile_seconds(cold=not quick)
    sl = slopes(rows, SLOPE_MIN_DOFS)
    md = _markdown(rows, sl, compile_s, have_pin, quick)
    plots = {
        "algorithms_chain.png": ([r for r in rows if r.scene == "chain"], "chains (revolute)", sl),
        "algorithms_binary.png": ([r for r in rows if r.scene == "binary"], "balanced binary trees (revolute)", sl),
    }
    return rows, md, plots


def _markdown(rows, sl, compile_s, have_pin, quick) -> str:
    parts = ["# bench algorithms", "",
             f"Median seconds per call; slopes fitted on dofs ≥ {SLOPE_MIN_DOFS}"
             + (" (quick run: few sizes, slopes indicative only)" if quick else "") + ".", ""]
    for scene in ("chain", "binary"):
        parts += [f"## {scene}", "", results_table([r for r in rows if r.scene == scene]), ""]
    body = [[scene, method, f"{s:.2f}"] for (scene, method), s in sl.items()]
    parts += ["## log-log slopes", "", markdown_table(["scene", "method", "slope"], body), ""]
    chain = {r.method: r for r in rows if r.scene == "chain" and r.n == max(x.n for x in rows)}
    if "aba_kernel" in chain:
        n = chain["aba_kernel"].n
        parts += [f"ABA on a {n}-body revolute chain: {chain['aba_kernel'].extra['us_per_body']:.3f} µs per body "
                  f"(kernel), {chain['aba'].extra['us_per_body']:.3f} µs per body (public function).", ""]
    ratios = []
    for (scene, n), rs in groups(rows, ("scene", "n")).items():
        by = {x.method: x for x in rs}
        if scene == "chain":
            ratios.append([n, f"{by['crba+cholesky_inverse'].seconds_per_step / by['minv'].seconds_per_step:.2f}"])
    parts += ["## Θ(n²) M⁻¹ vs CRBA + Cholesky inverse (chains)", "",
              markdown_table(["n", "speed-up of minv"], ratios), ""]
    parts += ["## compile time (whole engine, first use in a fresh process)", "",
              markdown_table(["numba cache", "seconds"], [[k.replace("_", " "), f"{v:.1f}"] for k, v in compile_s.items()]), ""]
    parts += ["pinocchio: " + ("column `pinocchio_aba` measured side by side." if have_pin else
                               "not importable here, so no `pinocchio_aba` column."), ""]
    return "\n".join(parts)
