"""Run an engine benchmark suite inside Blender's Python, through the add-on's ``redmax.run_benchmark``,
or the add-on's own suite ``bake-scale`` (``scripts/bake_scale.py``: each Blender-side stage of a bake
against the object count, beside Blender's *Bake to Keyframes*).

    blender -b -P scripts/blender_bench.py -- SUITE [--quick] [--out DIR] [--sim-time SECONDS]
    python scripts/blender_bench.py SUITE [--quick] [--out DIR] [--sim-time SECONDS]   # bpy wheel

Writes the same ``DIR/SUITE.csv``, markdown and plots as ``python -m engine bench SUITE``
(same CSV columns), plus a line in the markdown naming the Blender build it ran in. The ``contact`` suite
bakes its piles with Blender's own Rigid Body too, in this process (``bullet_pile.py``), as it does from
``python -m engine bench contact`` wherever the ``bpy`` module is installed.
Exits non-zero if the suite is unknown or the run fails.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ADDON_SUITES = ("bake-scale",)  # measured in Blender itself, not engine suites


def parse(argv, suites):
    ap = argparse.ArgumentParser(prog="blender_bench.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("suite", help=f"one of: {', '.join(suites)}")
    ap.add_argument("--quick", action="store_true", help="fewer sizes and repeats (a smoke run)")
    ap.add_argument("--out", default="bench_out_blender", metavar="DIR")
    ap.add_argument("--sim-time", type=float, default=0.0, metavar="SECONDS",
                    help="scene time per run (redmax suite; 0 = the suite default)")
    ap.add_argument("--rigs", nargs="+", metavar="RIG", help="bake-scale: only these rigs (chain, tree, bridge)")
    ap.add_argument("--sizes", nargs="+", type=int, metavar="N", help="bake-scale: only these sizes")
    args = ap.parse_args(argv)
    if args.suite not in suites:
        ap.error(f"unknown suite '{args.suite}' (available: {', '.join(suites)})")
    return args


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[1:]
    if "bpy" not in sys.modules and "BLENDER_USER_RESOURCES" not in os.environ:
        os.environ["BLENDER_USER_RESOURCES"] = tempfile.mkdtemp(prefix="redmax_blender_")  # recipes §1
    import bpy

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import addon
    from addon._engine import bench

    args = parse(argv, (*bench.SUITES, *ADDON_SUITES))
    if not hasattr(bpy.types, "REDMAX_OT_run_benchmark"):
        addon.register()
    out = Path(args.out).resolve()
    if args.suite == "bake-scale":
        sys.path.insert(0, str(ROOT / "scripts"))
        import bake_scale

        print(f"RedMax: bake-scale{' --quick' if args.quick else ''} in Blender {bpy.app.version_string} → {out}",
              flush=True)
        print(f"wrote {bake_scale.run(out, quick=args.quick, rigs=args.rigs, sizes=args.sizes)}")
        return 0
    print(f"RedMax: running bench {args.suite}{' --quick' if args.quick else ''} in Blender "
          f"{bpy.app.version_string} (Python {sys.version.split()[0]}) → {out}", flush=True)
    try:
        result = bpy.ops.redmax.run_benchmark(suite=args.suite, quick=args.quick, sim_time=args.sim_time,
                                              output_dir=str(out))
    except RuntimeError as err:
        print(f"blender_bench: {err}", file=sys.stderr)
        return 1
    if result != {"FINISHED"}:
        print(f"blender_bench: run_benchmark returned {sorted(result)}", file=sys.stderr)
        return 1
    for p in sorted(out.glob(f"{args.suite}*")):
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
