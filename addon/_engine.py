"""The engine package, wherever the add-on runs from (one place for the import fallback).

Inside the installed extension the engine is the sibling package ``<ext>.engine``;
from a checkout (tests, ``scripts/``) the add-on is imported as the top-level
package ``addon`` with the repository root on ``sys.path``.
"""
try:
    from .. import engine
    from ..engine import geometry
    from ..engine.apps import advise, bench, warmup
except ImportError:
    import engine  # type: ignore[no-redef, import-not-found, import-untyped]
    from engine import geometry  # type: ignore[no-redef, import-not-found, import-untyped]
    from engine.apps import advise, bench, warmup  # type: ignore[no-redef, import-not-found, import-untyped]

__all__ = ["engine", "advise", "bench", "geometry", "warmup"]
