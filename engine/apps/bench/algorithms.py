"""``bench algorithms``: the recursive algorithms against n on chains and balanced binary trees.

Models: ``random_tree(n, branching=scene, joint_types=("revolute",),
random_frames=True)``, fixed base, for scene in chain / binary. Methods:

* ``aba``, ``rnea``, ``crba``: the public functions (they check their inputs);
* ``aba_kernel``: the numba launch behind ``aba`` (``aba_flat`` on the model's flat
  buffers, the checks inside the kernel) on preallocated arrays, so the per-body
  cost is visible without the Python wrapper;
* ``crba+cholesky_solve``: CRBA + LAPACK Cholesky solve of one right-hand side;
* ``ltdl_solve``: CRBA + branch-induced-sparsity LTDL factor + solve (seed 001);
* ``minv``: Θ(n²) M⁻¹ by impulse propagation (seed 004);
* ``crba+cholesky_inverse``: CRBA + LAPACK dpotrf/dpotri;
* ``pinocchio_aba``: ``pinocchio.aba`` on an equivalent model, when pinocchio
  is importable, up to ``PINOCCHIO_MAX_BODIES`` bodies.

Steady-state times are medians per call (``report.time_call``). First-use
(compile or numba-cache load) seconds are measured apart, in a fresh process,
by timing the first call of each method on a tiny model of the same joint types.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from ... import aba, cholesky_inverse, cholesky_solve, crba, ltdl, ltdl_solve, minv, random_configuration, random_tree, rnea
from ...algorithms._flat import flat_model
from ...algorithms.aba import aba_flat
from .report import Progress, Row, SuiteResult, format_seconds, group_rows, markdown_table, time_call, timed_first_call

SUITE = "algorithms"
SCENES = ("chain", "binary")
SIZES = (8, 16, 32, 64, 128, 256, 512, 1024)
QUICK_SIZES = (8, 16, 32, 64, 128)
MIN_FIT = 64  # slopes are fitted on dofs ≥ this
PER_BODY_METHODS = ("aba", "aba_kernel", "pinocchio_aba")
FIRST_USE_MODEL_BODIES = 4
# pinocchio's Data grows like n³ in memory (pinocchio 2.7: 1 GB at 256 bodies, 7 GB at 512)
PINOCCHIO_MAX_BODIES = 256


def make_case(scene: str, n: int, seed: int = 1):
    """(model, q, qd, tau) for an n-body revolute ``scene`` tree with random frames, fixed base."""
    model = random_tree(n, branching=scene, seed=seed, joint_types=("revolute",), random_frames=True)
    rng = np.random.default_rng(seed)
    q, qd = random_configuration(model, rng)
    return model, q, qd, rng.normal(size=model.nv)


def method_calls(model, q, qd, tau) -> dict:
    """{method name: zero-argument callable} for every engine method of the suite."""
    flat = flat_model(model)
    qdd = np.empty(model.nv)
    return {
        "aba": lambda: aba(model, q, qd, tau),
        "aba_kernel": lambda: aba_flat(flat.ints, flat.floats, flat.work, q, qd, tau, flat.zero_forces, qdd),
        "rnea": lambda: rnea(model, q, qd, tau),
        "crba": lambda: crba(model, q),
        "crba+cholesky_solve": lambda: cholesky_solve(crba(model, q), tau),
        "ltdl_solve": lambda: ltdl_solve(model, ltdl(model, crba(model, q)), tau),
        "minv": lambda: minv(model, q),
        "crba+cholesky_inverse": lambda: cholesky_inverse(crba(model, q)),
    }


# --------------------------------------------------------------------- pinocchio
def pinocchio_version():
    """pinocchio's version string, or None when ``import pinocchio`` fails."""
    try:
        import pinocchio
    except Exception:  # ImportError, or a broken binary install
        return None
    return pinocchio.__version__


def pinocchio_aba_call(model, q, qd, tau):
    """(callable running pinocchio.aba on an equivalent model, max |q̈_pin − q̈_engine|).

    Mirrors the tree joint by joint: placement = (joint_rotation, joint_origin)
    in the parent's link frame, a revolute joint about ``joint_axis``, and the
    body's mass, COM and inertia (R diag(I) Rᵀ about the COM) in the link frame.
    """
    import pinocchio as pin

    pm = pin.Model()
    pm.gravity.linear = np.array(model.gravity)
    joint_ids = []
    for i in range(model.n_bodies):
        parent = model.body_parent[i]
        placement = pin.SE3(np.array(model.joint_rotation[i]), np.array(model.joint_origin[i]))
        jid = pm.addJoint(0 if parent < 0 else joint_ids[parent],
                          pin.JointModelRevoluteUnaligned(np.array(model.joint_axis[i])), placement, model.joint_names[i])
        R = model.body_rotation[i]
        inertia = pin.Inertia(float(model.body_mass[i]), np.array(model.body_com[i]),
                              R @ np.diag(model.body_principal_inertia[i]) @ R.T)
        pm.appendBodyToJoint(jid, inertia, pin.SE3.Identity())
        joint_ids.append(jid)
    data = pm.createData()

    def call():
        return pin.aba(pm, data, q, qd, tau)

    return call, float(np.abs(call() - aba(model, q, qd, tau)).max())


# --------------------------------------------------------------------- first use (compile)
def first_call_seconds() -> dict:
    """{method: seconds of its first call} on a tiny model, in method order.

    Meant for a fresh process: each time includes numba compilation (or the
    load from numba's on-disk cache) of whatever that method is the first to use.
    """
    calls = method_calls(*make_case("chain", FIRST_USE_MODEL_BODIES))
    return {name: timed_first_call(fn) for name, fn in calls.items()}


_FIRST_USE_SCRIPT = (
    "import json, time; t0 = time.perf_counter(); import engine; t = time.perf_counter() - t0; "
    "from engine.apps.bench.algorithms import first_call_seconds; "
    "print(json.dumps({'import engine': t, **first_call_seconds()}))"
)


def measure_first_use(cold: bool) -> dict:
    """{cache state: {'import engine' | method: seconds}}, each from a fresh process.

    cold=True: with an empty NUMBA_CACHE_DIR ("cold cache": real compilation),
    then again with that filled cache ("warm cache"). cold=False: once, with
    the current cache ("current cache").
    """
    root = str(Path(__file__).resolve().parents[3])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    labels = ("cold cache", "warm cache") if cold else ("current cache",)
    out = {}
    with tempfile.TemporaryDirectory(prefix="engine_numba_cache_") as cache_dir:
        if cold:
            env["NUMBA_CACHE_DIR"] = cache_dir
        for label in labels:
            res = subprocess.run([sys.executable, "-c", _FIRST_USE_SCRIPT], env=env, capture_output=True, text=True)
            if res.returncode != 0:
                raise RuntimeError(f"first-use measurement failed:\n{res.stderr[-2000:]}")
            out[label] = json.loads(res.stdout.strip().splitlines()[-1])
    return out


# --------------------------------------------------------------------- the suite
def run_algorithms(quick: bool = False) -> SuiteResult:
    """Time every method on chains and binary trees; return rows and the suite's markdown."""
    print("measuring first-use (compile) seconds in a fresh process ...", file=sys.stderr, flush=True)
    first_use = measure_first_use(cold=not quick)
    compile_seconds = next(iter(first_use.values()))
    pin_version = pinocchio_version()
    sizes = QUICK_SIZES if quick else SIZES
    timing = dict(min_time=0.01, batches=3) if quick else dict(min_time=0.05, batches=5)
    rows = []
    for scene, n in Progress([(s, n) for s in SCENES for n in sizes], f"bench {SUITE}"):
        rows += _time_case(scene, n, timing, compile_seconds, pin_version)
    extra = "\n".join([_per_body_text(rows), _speedup_text(rows), _first_use_text(first_use),
                       _pinocchio_text(pin_version, rows)])
    return SuiteResult(rows, extra, MIN_FIT)


def _time_case(scene, n, timing, compile_seconds, pin_version) -> list:
    model, q, qd, tau = make_case(scene, n)
    calls = method_calls(model, q, qd, tau)
    notes = {"aba_kernel": "the numba launch alone (aba_flat), no Python wrapper"}
    if pin_version and n <= PINOCCHIO_MAX_BODIES:
        calls["pinocchio_aba"], err = pinocchio_aba_call(model, q, qd, tau)
        notes["pinocchio_aba"] = f"pinocchio {pin_version}; max |qdd - aba| = {err:.1e}"
    rows = []
    for method, fn in calls.items():
        t = time_call(fn, **timing)
        rows.append(Row(SUITE, scene, method, n, model.nv, t.seconds, 0, t.calls,
                        compile_seconds.get(method, float("nan")), notes.get(method, ""),
                        {"us_per_body": t.seconds / n * 1e6}))
    return rows


def _per_body_text(rows) -> str:
    """µs per body of the ABA variants at each n (sizes down, scene/method across)."""
    picked = [r for r in rows if r.method in PER_BODY_METHODS]
    columns = list(group_rows(picked, ("scene", "method")))
    body = []
    for (n,), rs in group_rows(picked, ("n",)).items():
        by = {(r.scene, r.method): r.extra["us_per_body"] for r in rs}
        body.append([n] + [f"{by[c]:.3f}" if c in by else "—" for c in columns])
    header = ["n"] + [f"{s} {m}" for s, m in columns]
    return "\n".join(["## ABA: µs per body", "",
                      "`aba` is the public function (input checks + kernel), `aba_kernel` its numba launch alone (`aba_flat`, checks in the kernel).",
                      "", markdown_table(header, body), ""])


def _speedup_text(rows) -> str:
    """How much faster Θ(n²) minv is than CRBA + Cholesky inverse, per scene and n."""
    body = []
    for (scene, n), rs in group_rows(rows, ("scene", "n")).items():
        t = {r.method: r.seconds_per_step for r in rs}
        body.append([scene, n, f"{t['crba+cholesky_inverse'] / t['minv']:.2f}"])
    return "\n".join(["## minv speed-up over crba+cholesky_inverse", "",
                      markdown_table(["scene", "n", "time(crba+cholesky_inverse) / time(minv)"], body), ""])


def _first_use_text(first_use: dict) -> str:
    """Per-method first-call seconds for each cache state, and the engine's total first use."""
    labels = list(first_use)
    names = list(next(iter(first_use.values())))
    body = [[name] + [f"{first_use[lb][name]:.2f}" for lb in labels] for name in names]
    body.append(["**total engine first use**"] + [f"**{sum(first_use[lb].values()):.2f}**" for lb in labels])
    return "\n".join([
        "## compile / warm-up seconds", "",
        f"First call of each method, in this order, on a {FIRST_USE_MODEL_BODIES}-body revolute chain in a "
        "fresh process: numba compilation (cold cache) or loading numba's on-disk cache (warm cache). "
        "Kernels shared by several methods are charged to the first method that uses them. "
        "Steady-state times above exclude all of this.", "",
        markdown_table(["step"] + [f"seconds ({lb})" for lb in labels], body), ""])


def _pinocchio_text(pin_version, rows) -> str:
    if not pin_version:
        return "pinocchio: `import pinocchio` failed here, so there is no `pinocchio_aba` column.\n"
    n_max = max(r.n for r in rows if r.method == "pinocchio_aba")
    t = {(r.scene, r.method): r.seconds_per_step for r in rows if r.n == n_max}
    at_n_max = "; ".join(f"{s}: aba {format_seconds(t[s, 'aba'])}, pinocchio_aba {format_seconds(t[s, 'pinocchio_aba'])}"
                         for s in SCENES)
    return (f"pinocchio {pin_version}: `pinocchio_aba` runs pinocchio.aba on the same model "
            f"(its agreement with `aba` is in the CSV notes), up to {PINOCCHIO_MAX_BODIES} bodies because its "
            f"Data grows like n³ in memory. At n = {n_max}: {at_n_max}.\n")
