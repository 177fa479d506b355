"""Compile the engine's kernels for this platform's portable CPU baseline: the cache that ships in the
extension zip and the wheel (``engine/_shipped_kernels``; docs/kernels.md).

    python scripts/build_kernels.py --out DIR                 # every kernel group (minutes)
    python scripts/build_kernels.py --out DIR --groups api    # only some: kinematics, api, pcg, direct, dense
    python scripts/build_kernels.py --out DIR --source STAGING  # the engine copy under STAGING (a build's)
    python scripts/build_kernels.py --out DIR --cpu sapphirerapids --cpu-features +amx-tile,...  # another CPU

A child process imports the engine with ``ENGINE_KERNELS=baseline`` (numba compiles for the baseline,
e.g. x86-64-v3, not for this CPU) and an empty cache of its own, runs the warm-up's kernel groups
(``engine.apps.warmup``: for each solver the steps with and without loop closures and joint limits, and
contact by every method, "auto" running both M⁻¹'s and the impulse response's; plus the public algorithms),
and the cache it wrote is copied to DIR
with a ``manifest.json`` (platform triple, CPU name and features, Python, numba, the engine's source
digest, groups). The engine uses DIR only when all of these match the process and the CPU has the
baseline's features. Python and numba versions matter: build with the Python that will run it
(Blender 4.5 and 5.0: 3.11).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOLVERS = ("pcg", "direct", "dense")
GROUPS = ("kinematics", "api", *SOLVERS)


class KernelBuildError(RuntimeError):
    pass


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder to write (replaced): the shipped cache and its manifest")
    ap.add_argument("--source", default=str(ROOT), help="folder holding the engine/ package to compile (default: this checkout)")
    ap.add_argument("--groups", default="all", help=f"comma-separated: all, or some of {', '.join(GROUPS)}")
    ap.add_argument("--cpu", default=None, metavar="NAME",
                    help="compile for this LLVM CPU instead of the platform's baseline (with --cpu-features)")
    ap.add_argument("--cpu-features", default="", metavar="FEATURES", help="LLVM feature string for --cpu")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def _groups(text: str) -> list[str]:
    names = list(GROUPS) if text.strip() == "all" else [g.strip() for g in text.split(",") if g.strip()]
    unknown = [g for g in names if g not in GROUPS]
    if unknown or not names:
        raise KernelBuildError(f"unknown kernel group(s) {', '.join(unknown) or '(none)'}; known: all, {', '.join(GROUPS)}")
    return names


def _child(groups: list[str]) -> int:
    """In the compiling process: run the groups, print one JSON line with what was built."""
    import engine
    from engine import _jit
    from engine.apps import warmup

    target = _jit.TARGET
    if target is None or target.mode not in ("baseline", "user"):
        print(json.dumps({"error": f"not compiling for the portable baseline: {_jit.describe()}"}))
        return 1
    seconds = {}

    def progress(done, total, name):
        if name:
            print(f"  {name} ...", file=sys.stderr, flush=True)

    for group in groups:
        t0 = time.perf_counter()
        print(f"build_kernels: {group}", file=sys.stderr, flush=True)
        if group == "kinematics":
            warmup.kernel_groups("pcg")[0].run()
        elif group == "api":
            warmup.api_group().run()
        else:
            for contact, method in ((False, "auto"), (True, "auto"), (True, "cholesky")):  # auto: minv and impulse
                warmup.compile_kernels(group, contact=contact, contact_method=method, progress=progress)
        seconds[group] = round(time.perf_counter() - t0, 1)
    import numba
    import llvmlite.binding as ll

    print(json.dumps({"format": _jit._kernel_store.MANIFEST_FORMAT, "python": "%d.%d" % sys.version_info[:2],
                      "numba": numba.__version__, "triple": _jit._kernel_store.normalized_triple(ll.get_process_triple()),
                      "cpu_name": target.cpu_name, "cpu_features": target.cpu_features,
                      "source": _jit.source_digest(), "package": engine.__name__, "engine_version": engine.__version__, "groups": groups,
                      "seconds": seconds, "kernels": _jit.kernel_counts(), "cache": str(_jit.cache_folder())}))
    return 0


def build(out: str | Path, source: str | Path = ROOT, groups: str = "all", echo=print, cpu: str | None = None,
          cpu_features: str = "") -> dict:
    """Compile ``groups`` of the engine under ``source`` for the baseline (or ``cpu`` with ``cpu_features``)
    into ``out`` (replaced); returns the manifest."""
    names = _groups(groups)
    out, source = Path(out), Path(source).resolve()
    if not (source / "engine" / "_jit.py").is_file():
        raise KernelBuildError(f"no engine package under {source}")
    with tempfile.TemporaryDirectory(prefix="redmax_kernels_") as tmp:
        env = {k: v for k, v in os.environ.items()
               if k not in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "ENGINE_DISABLE_JIT", "NUMBA_DISABLE_JIT")}
        env.update(ENGINE_KERNELS="baseline", NUMBA_CACHE_DIR=tmp, PYTHONPATH=str(source))
        if cpu:
            env.update(NUMBA_CPU_NAME=cpu, NUMBA_CPU_FEATURES=cpu_features)
        started = time.perf_counter()
        run = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", "--out", str(out),
                              "--groups", ",".join(names)], env=env, cwd=tmp, stdout=subprocess.PIPE, text=True)
        lines = [ln for ln in run.stdout.splitlines() if ln.startswith("{")]
        result = json.loads(lines[-1]) if lines else {"error": run.stdout[-2000:]}
        if run.returncode != 0 or "error" in result:
            raise KernelBuildError(f"compiling the kernels failed: {result.get('error', run.returncode)}")
        cache = Path(result.pop("cache"))
        if out.exists():
            shutil.rmtree(out)
        shutil.copytree(cache, out, ignore=shutil.ignore_patterns("*.tmp*"))
    result["build_seconds"] = round(time.perf_counter() - started, 1)
    (out / "manifest.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    echo(f"build_kernels: {len(list(out.rglob('*.nbi')))} kernels ({result['kernels']['compiled']} compiled) for "
         f"{result['cpu_name']} in {result['build_seconds']:.0f} s, {size / 1e6:.1f} MB in {out}")
    return result


def main(argv=None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    try:
        if args.child:
            return _child(_groups(args.groups))
        build(args.out, args.source, args.groups, cpu=args.cpu, cpu_features=args.cpu_features)
    except KernelBuildError as err:
        print(f"build_kernels: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
