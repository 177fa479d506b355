"""Where a cold first call spends its time: numba compile time per kernel, top first.

    python scripts/studies/compile_profile.py aba        # first engine.aba on the README's 20-body floating tree
    python scripts/studies/compile_profile.py bridge     # first bake of the README bridge (bpy wheel, 250 frames)
    python scripts/studies/compile_profile.py both --top 30   # in one process: the bridge reuses what aba compiled
    python scripts/studies/compile_profile.py bridge --scene UMBRELLA   # another demo scene's first bake

Runs on an empty numba cache of its own (a new temporary NUMBA_CACHE_DIR, removed at the end)
unless ``--cache DIR`` is given. Listens to numba's ``numba:compile`` events: each compile of a
kernel for one signature is an interval, and a kernel compiled while typing another (a callee)
is a nested interval, so "self" seconds are a kernel's own compile time without its callees and
"incl" seconds include them. Seconds are CPU seconds of the compiling thread (a shared machine's
load changes wall time two-fold, CPU time much less). Helpers with ``kernel(inline=True)`` never
show up on their own: their cost is in every caller's self time (``inline="llvm"`` helpers are
compiled once and listed). Also printed: the CPU seconds of the process outside any compile
(imports, cache writes, the work itself), the number of kernels and signatures compiled, the
share of each numba pass, the CPU seconds spent inside LLVM (llvmlite's calls: function and
module optimisation, machine code, IR parsing; the rest of a compile is numba's own Python: bytecode
analysis, type inference, IR rewrites and lowering to LLVM IR), every kernel compiled for more than one signature (each extra one
is a full compile) and, for a bake, what compiled after the add-on's warm-up (mid-bake, with no
progress shown: nothing when the warm-up covers what the scene's bake runs).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class CompileRecorder:
    """Collects numba:compile START/END events (per thread) into nested intervals."""

    def __init__(self):
        self.records = []  # (name, signature, CPU s with callees, CPU s without, depth)
        self.compiles = []  # (dispatcher, argument types, wall s of the callees compiled inside)
        self._stack = threading.local()

    def _frames(self):
        if not hasattr(self._stack, "frames"):
            self._stack.frames = []
        return self._stack.frames

    def on_start(self, event):
        self._frames().append([event.data["dispatcher"], event.data["args"], time.thread_time(), 0.0,
                               time.perf_counter(), 0.0])

    def on_end(self, event):
        frames = self._frames()
        disp, args, t0, children, w0, wchildren = frames.pop()
        dt, dw = time.thread_time() - t0, time.perf_counter() - w0
        if frames:
            frames[-1][3] += dt
            frames[-1][5] += dw
        py = disp.py_func
        name = f"{py.__module__}.{py.__qualname__}"
        self.records.append((name, tuple(str(a) for a in args), dt, dt - children, len(frames)))
        self.compiles.append((disp, tuple(args), wchildren))


class LLVMTimer:
    """CPU seconds inside llvmlite's calls into LLVM, per LLVM entry point (``LLVMPY_*``). Wraps llvmlite's
    one call path into its C library (``ffi._lib_fn_wrapper.__call__``); does nothing when a future llvmlite
    lacks it."""

    GROUPS = (("optimisation, per function", ("RunNewFunctionPassManager", "RunFunctionPassManager")),
              ("optimisation, per module", ("RunNewModulePassManager", "RunPassManager")),
              ("machine code", ("FinalizeObject", "TargetMachineEmitToMemory")),
              ("IR parsing and linking", ("ParseAssembly", "ParseBitcode", "LinkModules", "CloneModule",
                                          "VerifyModule", "WriteBitcodeToString")))

    def __init__(self):
        self.seconds = defaultdict(float)

    def install(self) -> bool:
        from llvmlite.binding import ffi

        wrapper = getattr(ffi, "_lib_fn_wrapper", None)
        if wrapper is None:
            return False
        call, seconds = wrapper.__call__, self.seconds

        def timed(fn, *args, **kwargs):
            t0 = time.thread_time()
            try:
                return call(fn, *args, **kwargs)
            finally:
                seconds[getattr(fn._cfn, "__name__", "?")] += time.thread_time() - t0

        wrapper.__call__ = timed
        return True

    def clear(self):
        self.seconds.clear()

    def report(self, compiling: float, out=print):
        total = sum(self.seconds.values())
        parts = []
        for label, names in self.GROUPS:
            s = sum(v for k, v in self.seconds.items() if k.removeprefix("LLVMPY_") in names)
            parts.append(f"{label} {s:.2f} s")
        out(f"-- inside LLVM: {total:.2f} s CPU ({', '.join(parts)}); numba's own Python: "
            f"{compiling - total:.2f} s of the compiling")


def install(recorder: CompileRecorder):
    from numba.core import event

    class _Listener(event.Listener):
        def on_start(self, ev):
            recorder.on_start(ev)

        def on_end(self, ev):
            recorder.on_end(ev)

    event.register("numba:compile", _Listener())


def report(title: str, recorder: CompileRecorder, cpu: float, top: int, out=print):
    recs = recorder.records
    top_level = sum(r[2] for r in recs if r[4] == 0)
    per = defaultdict(lambda: [0.0, 0.0, 0])  # name -> self, incl (top of its own stack), signatures
    sigs = defaultdict(set)
    for name, args, incl, self_s, depth in recs:
        per[name][0] += self_s
        per[name][1] += incl
        per[name][2] += 1
        sigs[name].add(args)
    out(f"== {title}: {cpu:.1f} s CPU, of which {top_level:.1f} s compiling ({len(per)} kernels, {len(recs)} "
        f"signatures) and {cpu - top_level:.1f} s outside compiles (imports, cache writes, the work)")
    out(f"{'self s':>7} {'incl s':>7} {'sigs':>4}  kernel")
    for name, (self_s, incl, n) in sorted(per.items(), key=lambda kv: -kv[1][0])[:top]:
        out(f"{self_s:7.2f} {incl:7.2f} {n:4d}  {name}")
    stages = defaultdict(float)
    for disp, args, wchildren in recorder.compiles:
        cres = disp.overloads.get(args)
        times = (cres.metadata or {}).get("pipeline_times", {}) if cres is not None else {}
        for passes in times.values():
            for key, t in passes.items():
                stages[key.split("_", 1)[1]] += t.init + t.run + t.finalize
        stages["nopython_type_inference"] -= wchildren  # callees compile while the caller is typed
    total = sum(stages.values())
    if total > 0:
        out("-- numba passes, share of compile wall time (type inference without the callees it compiled; "
            "native_lowering includes LLVM and the wrappers):")
        out("   " + ", ".join(f"{k} {100 * v / total:.0f} %" for k, v in sorted(stages.items(), key=lambda kv: -kv[1])
                            if v >= 0.01 * total))
    multi = {name: s for name, s in sigs.items() if len(s) > 1}
    if multi:
        out(f"-- kernels compiled for more than one signature ({len(multi)}):")
        for name, s in sorted(multi.items()):
            out(f"   {name}:")
            for args in sorted(s):
                out(f"      ({', '.join(args)})"[:400])


def run_aba():
    import numpy as np

    import engine

    print(f"engine from {Path(engine.__file__).parent}", file=sys.stderr)

    model = engine.random_tree(20, branching="binary", seed=1, floating_base=True)
    q, qd = engine.random_configuration(model, np.random.default_rng(0))
    engine.aba(model, q, qd, tau=np.zeros(model.nv))


def run_bridge(frames: int, substeps: int, recorder: CompileRecorder, scene: str = "BRIDGE", root: Path = ROOT):
    """The bake; returns the (name, signature) of every kernel compiled after the add-on's warm-up (the
    bake's own compiles, which no progress shows: none when the warm-up covers the scene)."""
    sys.path.insert(0, str(root / "scripts"))  # the measured checkout's bake_demo (it imports that add-on)
    import bake_demo
    from engine.apps import warmup

    compile_kernels, mark = warmup.compile_kernels, []

    def marked(*args, **kwargs):
        result = compile_kernels(*args, **kwargs)
        mark.append(len(recorder.records))
        return result

    warmup.compile_kernels = marked

    with tempfile.TemporaryDirectory(prefix="compile_profile_") as out:
        code = bake_demo.main(["--scene", scene, "--frames", str(frames), "--substeps", str(substeps),
                               "--no-render", "--out", out])
    warmup.compile_kernels = compile_kernels
    if code:
        raise SystemExit(f"{scene.lower()} bake failed ({code})")
    return [r[:2] for r in recorder.records[mark[-1] if mark else 0:] if r[4] == 0]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("case", choices=["aba", "bridge", "both"])
    ap.add_argument("--top", type=int, default=25, help="kernels listed (by self compile time)")
    ap.add_argument("--frames", type=int, default=250)
    ap.add_argument("--substeps", type=int, default=2)
    ap.add_argument("--scene", default="BRIDGE", choices=["BRIDGE", "UMBRELLA", "TREE", "CHAIN"],
                    help="the demo scene the 'bridge' case bakes (default: the README bridge)")
    ap.add_argument("--cache", help="NUMBA_CACHE_DIR to use (default: a new empty one)")
    ap.add_argument("--root", type=Path, default=ROOT,
                    help="checkout whose engine is imported (default: this one), e.g. a worktree of an older "
                         "commit, to measure a baseline the same way")
    args = ap.parse_args(argv)
    if "numba" in sys.modules:
        raise SystemExit("numba is already imported: run this script as its own process")
    cache = args.cache or tempfile.mkdtemp(prefix="numba_cold_")
    os.environ["NUMBA_CACHE_DIR"] = cache
    sys.path.insert(0, str(args.root.resolve()))
    try:
        t0 = time.perf_counter()
        import numba  # noqa: F401  (after NUMBA_CACHE_DIR is set)

        recorder = CompileRecorder()
        install(recorder)
        llvm = LLVMTimer()
        timing_llvm = llvm.install()
        cases = ["aba", "bridge"] if args.case == "both" else [args.case]
        for case in cases:
            recorder.records.clear()
            recorder.compiles.clear()
            llvm.clear()
            t0 = time.process_time()
            if case == "aba":
                run_aba()
                title = "first engine.aba (20-body floating binary tree)"
            else:
                late = run_bridge(args.frames, args.substeps, recorder, args.scene, args.root.resolve())
                title = f"first bake of the {args.scene.lower()} ({args.frames} frames × {args.substeps} substeps)"
            report(title, recorder, time.process_time() - t0, args.top)
            if timing_llvm:
                llvm.report(sum(r[2] for r in recorder.records if r[4] == 0))
            if case == "bridge":
                print(f"-- compiled after the add-on's warm-up (during the bake, without progress): {len(late)} "
                      "kernel signatures" + "".join(f"\n   {name}{args}"[:300] for name, args in late))
    finally:
        if not args.cache:
            shutil.rmtree(cache, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
