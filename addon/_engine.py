"""The engine package, wherever the add-on runs from (one place for the import fallback).

Inside the installed extension the engine is the sibling package ``<ext>.engine``;
from a checkout (tests, ``scripts/``) the add-on is imported as the top-level
package ``addon`` with the repository root on ``sys.path``.
"""
try:
    from .. import engine
    from ..engine import bench, geometry, warmup
except ImportError:
    import engine  # type: ignore[no-redef, import-not-found]
    from engine import bench, geometry, warmup  # type: ignore[no-redef, import-not-found]

__all__ = ["engine", "bench", "geometry", "warmup"]
