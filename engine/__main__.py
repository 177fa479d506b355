"""Command line: ``python -m engine bench SUITE [--quick] [--out DIR]``."""
from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engine", description="Articulated-body dynamics engine tools.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    from .bench import SUITES

    bench = sub.add_parser("bench", help=f"run a benchmark suite ({', '.join(SUITES)}) and write CSV, markdown and plots")
    bench.add_argument("suite", help=f"one of: {', '.join(SUITES)}")
    bench.add_argument("--quick", action="store_true", help="few sizes and repeats (a smoke run)")
    bench.add_argument("--out", default="bench_out", help="output folder (default: bench_out)")
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "bench":
        if args.suite not in SUITES:
            print(f"error: unknown benchmark suite '{args.suite}' (available: {', '.join(SUITES)})", file=sys.stderr)
            return 2
        from .bench import run_suite

        res = run_suite(args.suite, args.out, quick=args.quick)
        print(res["text"])
        print(f"wrote {res['csv']}, {res['markdown']} and {len(res['plots'])} plot(s) in {args.out}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
