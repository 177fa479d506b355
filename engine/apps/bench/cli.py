"""``python -m engine bench SUITE`` and ``bench compare BEFORE AFTER`` (docs/benchmarks.md)."""
from __future__ import annotations

import sys

from . import SUITES


def add_bench_parser(sub) -> None:
    suites = list(SUITES)
    bench = sub.add_parser("bench", help="run a benchmark suite; write CSV, markdown and log-log plots",
                           description=f"Benchmark suites: {', '.join(suites)}.")
    bench.add_argument("suite", help=f"one of: {', '.join(suites)}; or 'compare BEFORE AFTER' (two --out folders; DIR1,DIR2 on either side keeps each row's fastest run)")
    bench.add_argument("runs", nargs="*", metavar="DIR", help="compare: the BEFORE and AFTER output folders")
    bench.add_argument("--quick", action="store_true", help="fewer sizes and repeats (a smoke run)")
    bench.add_argument("--out", default="bench_out", metavar="DIR", help="output folder (default: bench_out)")
    bench.add_argument("--sim-time", type=float, default=None, metavar="SECONDS",
                       help="scene time simulated per run (redmax suite; default 5 s, 0.2 s with --quick)")
    bench.add_argument("--only", default=None, metavar="PARTS",
                       help="peers suite: run only these comma-separated parts (aba_chain, minv_chain, "
                            "minv_floating_binary, stiff_rope_step)")
    bench.add_argument("--repeats", type=int, default=None, metavar="N",
                       help="contact suite: runs per side at each size, the engine and Bullet in turn, the fastest "
                            "of each reported (default 3 up to 500 boxes, 2 above)")
    bench.set_defaults(func=_bench)


def _bench(args) -> int:
    from . import run_suite

    if args.suite == "compare":
        return _bench_compare(args)
    if args.suite not in SUITES:
        print(f"error: unknown benchmark suite '{args.suite}' (available: {', '.join(SUITES)})", file=sys.stderr)
        return 2
    from .peers import PeersMissing, UnknownPart

    if args.only is not None and args.suite != "peers":
        print(f"error: --only is an option of the peers suite, not of '{args.suite}'", file=sys.stderr)
        return 2
    if args.repeats is not None and args.suite != "contact":
        print(f"error: --repeats is an option of the contact suite, not of '{args.suite}'", file=sys.stderr)
        return 2
    if args.repeats is not None and args.repeats < 1:
        print(f"error: --repeats must be ≥ 1, got {args.repeats}", file=sys.stderr)
        return 2
    from ...errors import OutputPathError
    from ...output_paths import output_folder

    try:
        output_folder(args.out, "--out")  # before the suite runs for minutes
    except OutputPathError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        res = run_suite(args.suite, args.out, quick=args.quick, sim_time=args.sim_time, only=args.only,
                        repeats=args.repeats)
    except (PeersMissing, UnknownPart) as e:  # a missing optional extra or an unknown part: one line, no traceback
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(res["text"])
    for path in [res["csv"], res["markdown"], *res["plots"]]:
        print(f"wrote {path}")
    return 0


def _bench_compare(args) -> int:
    from .compare import compare_text

    if len(args.runs) != 2:
        print("error: bench compare takes two output folders: BEFORE AFTER", file=sys.stderr)
        return 2
    try:
        print(compare_text(*args.runs))
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0
