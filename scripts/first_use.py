"""First use with shipped kernels, measured (issue #34's acceptance; results in docs/kernels.md).

    python scripts/first_use.py blender [--zip ZIP]     # 1: install the zip into a fresh Blender user folder;
                                                        #    first bakes: kernels compiled, seconds to the first frame
    python scripts/first_use.py wheel [--wheel WHEEL]   # 2: a fresh venv with the wheel; README API example's first calls
    python scripts/first_use.py speed [--rounds 3]      # 3: bench peers / redmax --quick, shipped vs native kernels
    python scripts/first_use.py help [--runs 7]         # 4: python -m engine --help, and each command's --help
    python scripts/first_use.py fallback                # 5: kernels for another CPU: native compile, same results

Without ``--zip`` / ``--wheel`` the zip and the wheel are built first (scripts/build_extension.py,
build_wheel.py: every kernel group), ``--kernels DIR`` reuses kernels from scripts/build_kernels.py for
``speed`` and ``fallback``. Every run uses fresh user folders and caches; the Blender and wheel runs block
imports of this checkout (``engine``, ``addon``), so only the installed copy can serve them.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

BLOCK_CHECKOUT = r"""
import sys
class _NoCheckout:  # only the installed copy may serve (this venv may have the checkout installed editable)
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("engine", "addon"):
            raise ImportError(f"{name}: the checkout is blocked in this measurement")
        return None
sys.meta_path.insert(0, _NoCheckout())
"""

INSTALL = BLOCK_CHECKOUT + r"""
import bpy
print(sorted(bpy.ops.extensions.package_install_files(filepath=sys.argv[1], repo="user_default",
                                                       enable_on_install=True)))
"""

# One first bake in a fresh Blender process: the umbrella demo, or a rig built with Blender's operators: a row of
# four hinged cubes between two anchors (the last hinge to the right anchor closes a loop), one hinge limited,
# the cubes resting on the ground plane.
BAKE = BLOCK_CHECKOUT + r"""
import json, math, time
import bpy
import addon_utils
MOD = "bl_ext.user_default.redmax"
kind = sys.argv[1]
addon_utils.enable(MOD, default_set=True)
jit = sys.modules[MOD + ".engine._jit"]
bake = sys.modules[MOD + ".addon.bake"]
bpy.ops.wm.read_homefile(use_empty=True)
scene = bpy.context.scene
if kind == "umbrella":
    assert bpy.ops.redmax.add_demo_scene(scene="UMBRELLA") == {"FINISHED"}
    scene.frame_start, scene.frame_end = 1, 120
else:
    def cube(name, loc, kind):
        bpy.ops.mesh.primitive_cube_add(size=0.27, location=loc)
        ob = bpy.context.active_object
        ob.name = name
        bpy.ops.rigidbody.object_add(type=kind)
        return ob
    def joint(name, kind, a, b, loc):
        bpy.ops.object.empty_add(location=loc, rotation=(0.0, math.pi / 2, 0.0))  # local Z = world X
        host = bpy.context.active_object
        host.name = name
        bpy.ops.rigidbody.constraint_add(type=kind)
        host.rigid_body_constraint.object1, host.rigid_body_constraint.object2 = a, b
        return host
    prev = left = cube("left", (0, 0, 1.0), "PASSIVE")
    for i in range(1, 5):
        link = cube(f"link{i}", (0, 0.3 * i, 1.0), "ACTIVE")
        hinge = joint(f"hinge{i}", "HINGE", prev, link, (0, 0.3 * i - 0.15, 1.0))
        prev = link
    c = bpy.data.objects["hinge2"].rigid_body_constraint
    c.use_limit_ang_z, c.limit_ang_z_lower, c.limit_ang_z_upper = True, -0.4, 0.4
    right = cube("right", (0, 1.5, 1.0), "PASSIVE")
    joint("closing", "POINT", prev, right, (0, 1.35, 1.0))
    settings = scene.redmax
    settings.collide_with_ground, settings.ground_height = True, 1.0 - 0.135  # the cubes' undersides
    scene.frame_start, scene.frame_end = 1, 48
first = {}
steps = bake.BakeJob.steps
def timed_steps(self):
    for fraction in steps(self):
        first.setdefault("frame", time.perf_counter())
        yield fraction
bake.BakeJob.steps = timed_steps
before = jit.kernel_counts()
pressed = time.perf_counter()
result = sorted(bpy.ops.redmax.bake())
done = time.perf_counter()
after = jit.kernel_counts()
built = sys.modules[MOD + ".addon.kernels"].options(scene.redmax)  # the facts the bake's compile check read
print("RESULT " + json.dumps({"kind": kind, "result": result, "message": scene.redmax.last_message,
                              "first_frame_s": first["frame"] - pressed, "bake_s": done - pressed,
                              "compiled_in_bake": after["compiled"] - before["compiled"], "counts": after,
                              "facts": built, "describe": jit.describe()}))
"""

README_API = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import engine
model = engine.random_tree(20, branching="binary", seed=1, floating_base=True)
q, qd = engine.random_configuration(model, np.random.default_rng(0))
seconds = {}
t = time.perf_counter(); qdd = engine.aba(model, q, qd, tau=np.zeros(model.nv)); seconds["aba"] = time.perf_counter() - t
t = time.perf_counter(); tau = engine.rnea(model, q, qd, qdd); seconds["rnea"] = time.perf_counter() - t
t = time.perf_counter(); M = engine.crba(model, q); seconds["crba"] = time.perf_counter() - t
t = time.perf_counter(); Minv = engine.minv(model, q); seconds["minv"] = time.perf_counter() - t
print("RESULT " + json.dumps({"seconds": seconds, "four_calls_s": sum(seconds.values()),
                              "with_imports_s": time.perf_counter() - t0, "counts": engine._jit.kernel_counts(),
                              "describe": engine._jit.describe(), "engine": engine.__file__}))
"""


def _result(run: subprocess.CompletedProcess) -> dict:
    if run.returncode != 0 or "RESULT " not in run.stdout:
        raise SystemExit(f"failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    return json.loads(run.stdout.split("RESULT ", 1)[1].splitlines()[0])


def _clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "ENGINE_", "_ENGINE", "PYTHONPATH"))}
    env.update(extra)
    return env


def blender(args) -> list[dict]:
    import build_extension

    with tempfile.TemporaryDirectory(prefix="first_use_") as tmp:
        zip_path = args.zip or build_extension.build(["--platforms", "linux-x64", "--split-platforms",
                                                      "--output-dir", str(Path(tmp) / "dist")])[0]
        print(f"zip: {zip_path} ({Path(zip_path).stat().st_size / 1e6:.1f} MB)")
        env = _clean_env(BLENDER_USER_RESOURCES=str(Path(tmp) / "blender_user"))
        print(_result_or_line(subprocess.run([sys.executable, "-c", INSTALL, str(zip_path)], cwd=tmp, env=env,
                                             capture_output=True, text=True)))
        results = []
        for kind in ("umbrella", "rig"):
            res = _result(subprocess.run([sys.executable, "-c", BAKE, kind], cwd=tmp, env=env, capture_output=True,
                                         text=True, timeout=1800))
            results.append(res)
            print(f"{kind}: {res['result']} first frame {res['first_frame_s']:.2f} s after Bake, whole bake "
                  f"{res['bake_s']:.2f} s, kernels compiled in the bake: {res['compiled_in_bake']} "
                  f"(process: {res['counts']}); facts {res['facts']}; {res['message']}")
        print(results[0]["describe"])
    return results


def _result_or_line(run: subprocess.CompletedProcess) -> str:
    if run.returncode != 0:
        raise SystemExit(f"install failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    return "install: " + run.stdout.strip().splitlines()[-1]


def wheel(args) -> dict:
    import build_wheel

    with tempfile.TemporaryDirectory(prefix="first_use_") as tmp:
        whl = Path(args.wheel) if args.wheel else build_wheel.build(["--output-dir", str(Path(tmp) / "dist")])
        print(f"wheel: {whl} ({whl.stat().st_size / 1e6:.2f} MB)")
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        py = venv / "bin" / "python"
        subprocess.run([str(py), "-m", "pip", "install", "--quiet", str(whl)], check=True)
        env = _clean_env(XDG_CACHE_HOME=str(Path(tmp) / "xdg_cache"), HOME=str(Path(tmp) / "home"))
        res = _result(subprocess.run([str(py), "-c", README_API], cwd=tmp, env=env, capture_output=True, text=True))
        print(f"first calls: " + ", ".join(f"{k} {v * 1e3:.0f} ms" for k, v in res["seconds"].items())
              + f"; the four {res['four_calls_s']:.2f} s ({res['with_imports_s']:.2f} s with the imports); "
              f"{res['counts']}\n{res['describe']}\nengine from {res['engine']}")
        return res


def _site_with_kernels(tmp: Path, kernels: str | None) -> Path:
    """A copy of this engine with every kernel group shipped (built unless ``kernels`` names a folder)."""
    import build_kernels

    site = tmp / "site"
    shutil.copytree(ROOT / "engine", site / "engine", ignore=shutil.ignore_patterns("__pycache__", "_shipped_kernels"))
    dest = site / "engine" / "_shipped_kernels"
    if kernels:
        shutil.copytree(kernels, dest)
    else:
        build_kernels.build(dest, site, "all")
    return site


def speed(args) -> None:
    """Each round runs both suites with the shipped kernels, then with native ones (compiled beforehand into their
    own cache, so neither run compiles), in turn; per row the minimum over the rounds; the ratio shipped / native."""
    with tempfile.TemporaryDirectory(prefix="first_use_") as tmp:
        tmp = Path(tmp)
        site = _site_with_kernels(tmp, args.kernels)
        modes = {"shipped": {}, "native": {"ENGINE_KERNELS": "native"}}
        if args.control:  # the same comparison between two native runs: how much of the spread is noise
            modes["shipped"] = {"ENGINE_KERNELS": "native"}
        suites = [s for s in (("peers", []), ("redmax", ["--quick"])) if s[0] in args.suites.split(",")]
        best: dict = {}
        for r in range(args.rounds + 1):  # round 0 warms the native cache (and is not counted)
            for mode, extra in modes.items():
                env = _clean_env(PYTHONPATH=str(site), NUMBA_CACHE_DIR=str(tmp / f"cache_{mode}"), **extra)
                for suite, flags in suites:
                    out = tmp / f"{mode}_{suite}_{r}"
                    run = subprocess.run([sys.executable, "-m", "engine", "bench", suite, *flags, "--out", str(out)],
                                         cwd=site, env=env, capture_output=True, text=True)
                    if run.returncode != 0:
                        raise SystemExit(run.stderr[-3000:])
                    if r == 0:
                        continue
                    for row in _rows(out / f"{suite}.csv"):
                        key = (suite, row["scene"], row["method"], row["n"], mode)
                        best[key] = min(best.get(key, float("inf")), float(row["seconds_per_step"]))
            print(f"round {r} done", flush=True)
        ratios = []
        print("| suite | scene | method | n | shipped (s) | native (s) | shipped / native |\n|---|---|---|---|---|---|---|")
        for (suite, scene, method, n, mode), s in sorted(best.items()):
            if mode != "shipped" or (suite, scene, method, n, "native") not in best:
                continue
            if suite == "peers" and not method.startswith("engine"):
                continue  # Pinocchio's and MuJoCo's rows: not the engine's kernels
            native = best[(suite, scene, method, n, "native")]
            ratios.append(((suite, scene, method, n), s / native))
            print(f"| {suite} | {scene} | {method} | {n} | {s:.3e} | {native:.3e} | {s / native:.3f} |")
        for suite, _ in suites:
            r = [x for (su, *_), x in ratios if su == suite]
            print(f"{suite}: shipped / native over {len(r)} rows: geometric mean {statistics.geometric_mean(r):.3f}, "
                  f"median {statistics.median(r):.3f}, range {min(r):.3f}–{max(r):.3f} "
                  f"(each the minimum of {args.rounds} interleaved rounds)")


def _rows(path: Path) -> list[dict]:
    import csv

    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def help_times(args) -> None:
    env = _clean_env(PYTHONPATH=str(ROOT))
    for cmd in ([], ["bench"], ["advise"], ["sweep"], ["view"]):
        times, numba = [], None
        for _ in range(args.runs):
            t = time.perf_counter()
            run = subprocess.run([sys.executable, "-X", "importtime", "-m", "engine", *cmd, "--help"], cwd=ROOT,
                                 env=env, capture_output=True, text=True)
            times.append(time.perf_counter() - t)
            numba = " numba" in run.stderr.replace("|", " ")
        plain = []
        for _ in range(args.runs):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "engine", *cmd, "--help"], cwd=ROOT, env=env, capture_output=True)
            plain.append(time.perf_counter() - t)
        print(f"python -m engine {' '.join(cmd + ['--help'])}: min {min(plain):.3f} s, median "
              f"{statistics.median(plain):.3f} s of {args.runs}; imports numba: {numba}")


FALLBACK = r"""
import hashlib, json, sys
import numpy as np
import engine
from engine import _jit
sim = engine.Simulator(engine.scenes.umbrella(), "pcg", dt=1 / 48)
qs = []
for _ in range(48):
    sim.step()
    qs.append(sim.state.q.copy())
print("RESULT " + json.dumps({"hash": hashlib.sha256(np.array(qs).tobytes()).hexdigest(), "counts": _jit.kernel_counts(),
                              "describe": _jit.describe()}))
"""


def fallback(args) -> None:
    """The umbrella's 48 PCG steps with the shipped kernels, then with their manifest saying they were built for
    another CPU (sapphirerapids with AMX: the engine then compiles for this CPU, with its progress line)."""
    with tempfile.TemporaryDirectory(prefix="first_use_") as tmp:
        tmp = Path(tmp)
        site = _site_with_kernels(tmp, args.kernels)
        out = {}
        for case in ("shipped", "another CPU"):
            if case == "another CPU":
                path = site / "engine" / "_shipped_kernels" / "manifest.json"
                manifest = json.loads(path.read_text())
                manifest.update(cpu_name="sapphirerapids", cpu_features="+amx-tile")
                path.write_text(json.dumps(manifest))
            env = _clean_env(PYTHONPATH=str(site), NUMBA_CACHE_DIR=str(tmp / f"cache_{len(out)}"))
            t = time.perf_counter()
            run = subprocess.run([sys.executable, "-c", FALLBACK], cwd=site, env=env, capture_output=True, text=True)
            res = _result(run)
            res["seconds"], res["progress"] = time.perf_counter() - t, [ln for ln in run.stderr.splitlines() if ln]
            out[case] = res
            print(f"{case}: {res['seconds']:.1f} s, {res['counts']}\n  {res['describe']}\n  stderr: {res['progress']}")
        same = out["shipped"]["hash"] == out["another CPU"]["hash"]
        print(f"trajectories identical (48 steps, bit for bit): {same}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    p = sub.add_parser("blender")
    p.add_argument("--zip")
    p = sub.add_parser("wheel")
    p.add_argument("--wheel")
    p = sub.add_parser("speed")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--suites", default="peers,redmax", help="peers, redmax (--quick) or both")
    p.add_argument("--control", action="store_true", help="native against native (the 'shipped' column compiled "
                                                           "natively into a cache of its own): the noise level")
    p.add_argument("--kernels", help="a folder from scripts/build_kernels.py (default: build every group)")
    p = sub.add_parser("help")
    p.add_argument("--runs", type=int, default=7)
    p = sub.add_parser("fallback")
    p.add_argument("--kernels", help="a folder from scripts/build_kernels.py (default: build every group)")
    args = ap.parse_args(argv)
    {"blender": blender, "wheel": wheel, "speed": speed, "help": help_times, "fallback": fallback}[args.what](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
