"""Parameter sweeps on Dask: ``python -m engine sweep SPEC.toml [--scheduler ADDRESS]`` (docs/advise.md).

Modules: ``runner`` (spec, cells, the run and its dataset), ``plots`` (stability maps, time vs size).
"""
from .runner import (SpecError, add_sweep_parser, cell_id, cell_path, expand_grid, load_spec, read_rows, run_cell,
                     run_sweep, write_results, write_row)

__all__ = ["SpecError", "add_sweep_parser", "cell_id", "cell_path", "expand_grid", "load_spec", "read_rows",
           "run_cell", "run_sweep", "write_results", "write_row"]
