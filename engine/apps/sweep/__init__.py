"""Parameter sweeps on Dask: ``python -m engine sweep SPEC.toml [--scheduler ADDRESS]`` (docs/advise.md).

Modules: ``runner`` (spec, cells, the run and its dataset), ``plots`` (stability maps, time vs size).
"""
from .runner import (MAX_CELLS, MAX_FRAMES, MAX_SUBSTEPS, MAX_WORKERS, SpecError, add_sweep_parser, cell_id,
                     cell_path, check_workers, expand_grid, failed_cells, load_spec, read_rows, remove_stale_temporaries,
                     run_cell, run_sweep, write_results, write_row)

__all__ = ["MAX_CELLS", "MAX_FRAMES", "MAX_SUBSTEPS", "MAX_WORKERS", "SpecError", "add_sweep_parser", "cell_id",
           "cell_path", "check_workers", "expand_grid", "failed_cells", "load_spec", "read_rows",
           "remove_stale_temporaries", "run_cell", "run_sweep", "write_results", "write_row"]
