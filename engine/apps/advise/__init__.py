"""Settings advisor: which solver and how many substeps, by short measured trials
(``python -m engine advise SCENE``; *Suggest Settings* in the Blender panel; docs/advise.md).

Modules: ``advisor`` (the search: ``Advisor``, ``Advice``), ``trial`` (one setting simulated and
judged: ``Trial``, ``Run``, ``judge``), ``cli`` (the ``advise`` command and its scene sources).
"""
from __future__ import annotations

import importlib

# public name -> its module, imported on first use (``python -m engine advise --help`` imports no kernels)
_PUBLIC = {**dict.fromkeys(["DENSE_MAX_DOFS", "PROBE_BUDGET", "SOLVERS", "SUBSTEPS", "Advice", "Advisor"], "advisor"),
           **dict.fromkeys(["build_scene", "format_advice", "parse_params", "scale_stiffness"], "cli"),
           **dict.fromkeys(["CONSTRAINT_TOL", "ENERGY_RISE", "LIVELY", "Run", "Trial", "judge"], "trial")}

__all__ = ["Advisor", "Advice", "DENSE_MAX_DOFS", "SOLVERS", "SUBSTEPS", "PROBE_BUDGET", "Trial", "Run", "judge", "CONSTRAINT_TOL",
           "ENERGY_RISE", "LIVELY", "build_scene", "format_advice", "parse_params", "scale_stiffness"]


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_PUBLIC[name]}", __name__), name)
    globals()[name] = value
    return value
