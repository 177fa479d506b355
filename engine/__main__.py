"""Command line: ``python -m engine COMMAND ...`` (``python -m engine --help`` lists the commands).

Each command belongs to an app (``engine.apps``) that builds its own parser; only the command given is
imported, so ``--help`` and a command's own help stay quick.
"""
from __future__ import annotations

import argparse
import importlib
import sys

# command: (one line for the listing, the module and function that add its full parser)
COMMANDS = {
    "bench": ("run a benchmark suite; write CSV, markdown and log-log plots", ".apps.bench.cli", "add_bench_parser"),
    "view": ("open a scene in the desktop viewer (or render it headless: --screenshot, --record)",
             ".apps.viewer.cli", "add_view_parser"),
    "advise": ("recommend a solver and substeps for a scene, with measured reasons", ".apps.advise.cli",
               "add_advise_parser"),
    "sweep": ("run a grid of simulations (TOML spec) on Dask; resumable", ".apps.sweep.runner", "add_sweep_parser"),
}


def build_parser(argv) -> argparse.ArgumentParser:
    """The parser, with the full sub-parser of the command named in ``argv`` and a one-line entry for the others."""
    parser = argparse.ArgumentParser(prog="python -m engine", description="Articulated rigid-body dynamics engine.")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    given = next((a for a in argv if not a.startswith("-")), None)
    for name, (help_line, module, function) in COMMANDS.items():
        if name == given:
            getattr(importlib.import_module(module, __package__), function)(sub)
        else:
            sub.add_parser(name, help=help_line)
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv).parse_args(argv)
    if not hasattr(args, "func"):
        build_parser([]).print_help()
        return 0
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
