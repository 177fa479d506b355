"""Command line: ``python -m engine COMMAND ...`` (``python -m engine --help`` lists the commands)."""
from __future__ import annotations

import argparse
import sys


def _add_bench(sub, suites) -> None:
    bench = sub.add_parser("bench", help="run a benchmark suite; write CSV, markdown and log-log plots",
                           description=f"Benchmark suites: {', '.join(suites)}.")
    bench.add_argument("suite", help=f"one of: {', '.join(suites)}; or 'compare BEFORE AFTER' (two --out folders)")
    bench.add_argument("runs", nargs="*", metavar="DIR", help="compare: the BEFORE and AFTER output folders")
    bench.add_argument("--quick", action="store_true", help="fewer sizes and repeats (a smoke run)")
    bench.add_argument("--out", default="bench_out", metavar="DIR", help="output folder (default: bench_out)")
    bench.add_argument("--sim-time", type=float, default=None, metavar="SECONDS",
                       help="scene time simulated per run (redmax suite; default 5 s, 0.2 s with --quick)")
    bench.add_argument("--only", default=None, metavar="PARTS",
                       help="peers suite: run only these comma-separated parts (aba_chain, minv_chain, "
                            "minv_floating_binary, stiff_rope_step)")
    bench.set_defaults(func=_bench)


def _bench(args) -> int:
    from .bench import SUITES, run_suite

    if args.suite == "compare":
        return _bench_compare(args)
    if args.suite not in SUITES:
        print(f"error: unknown benchmark suite '{args.suite}' (available: {', '.join(SUITES)})", file=sys.stderr)
        return 2
    from .bench.peers import PeersMissing, UnknownPart

    if args.only is not None and args.suite != "peers":
        print(f"error: --only is an option of the peers suite, not of '{args.suite}'", file=sys.stderr)
        return 2
    try:
        res = run_suite(args.suite, args.out, quick=args.quick, sim_time=args.sim_time, only=args.only)
    except (PeersMissing, UnknownPart) as e:  # a missing optional extra or an unknown part: one line, no traceback
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(res["text"])
    for path in [res["csv"], res["markdown"], *res["plots"]]:
        print(f"wrote {path}")
    return 0


def _bench_compare(args) -> int:
    from .bench.compare import compare_text

    if len(args.runs) != 2:
        print("error: bench compare takes two output folders: BEFORE AFTER", file=sys.stderr)
        return 2
    try:
        print(compare_text(*args.runs))
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


# command -> (one-line help, the function that adds its full parser): only the command being run gets its
# full parser (and imports what that needs), so --help and a command's own --help stay quick.
def _add_view(sub) -> None:
    from .viewer.cli import add_view_parser

    add_view_parser(sub)


def _add_advise(sub) -> None:
    from .advise_cli import add_advise_parser

    add_advise_parser(sub)


def _add_sweep(sub) -> None:
    from .sweep import add_sweep_parser

    add_sweep_parser(sub)


def _add_bench_parser(sub) -> None:
    from .bench import SUITES

    _add_bench(sub, SUITES)


COMMANDS = {
    "bench": ("run a benchmark suite; write CSV, markdown and log-log plots", _add_bench_parser),
    "view": ("open a scene in the desktop viewer (or render it headless: --screenshot, --record)", _add_view),
    "advise": ("recommend a solver and substeps for a scene, with measured reasons", _add_advise),
    "sweep": ("run a grid of simulations (TOML spec) on Dask; resumable", _add_sweep),
}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog="python -m engine", description="Articulated rigid-body dynamics engine.")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    chosen = next((a for a in argv if not a.startswith("-")), None)
    for name, (help_text, add_parser) in COMMANDS.items():
        if name == chosen:
            add_parser(sub)
        else:
            sub.add_parser(name, help=help_text)
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help()
        return 0
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
