"""Settings advisor: which solver and how many substeps, by short measured trials
(``python -m engine advise SCENE``; *Suggest Settings* in the Blender panel; docs/advise.md).

Modules: ``advisor`` (the search: ``Advisor``, ``Advice``), ``trial`` (one setting simulated and
judged: ``Trial``, ``Run``, ``judge``), ``cli`` (the ``advise`` command and its scene sources).
"""
from .advisor import DENSE_MAX_DOFS, PROBE_BUDGET, SOLVERS, SUBSTEPS, Advice, Advisor
from .cli import build_scene, format_advice, parse_params, scale_stiffness
from .trial import CONSTRAINT_TOL, ENERGY_RISE, LIVELY, Run, Trial, judge

__all__ = ["Advisor", "Advice", "DENSE_MAX_DOFS", "SOLVERS", "SUBSTEPS", "PROBE_BUDGET", "Trial", "Run", "judge", "CONSTRAINT_TOL",
           "ENERGY_RISE", "LIVELY", "build_scene", "format_advice", "parse_params", "scale_stiffness"]
