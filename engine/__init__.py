"""Articulated rigid-body dynamics: RedMax, MABA stable PD, Baraff, hard constraints, Θ(n²) M⁻¹.

Pure Python + numba; never imports Blender. Conventions: SI units, Z up,
gravity (0, 0, −9.81), spatial vectors [angular; linear] (docs/conventions.md).

``import engine`` is cheap: the public names below are imported on first use (PEP 562), so a
command's ``--help`` or a tool that only reads a scene file does not import numba (half a second)
and the kernels it decorates.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._lazy import keep_functions

__version__ = "0.1.0"

# public name -> the module (relative to this package) it comes from
_PUBLIC = {
    "HAVE_NUMBA": "._jit", "JIT_ENABLED": "._jit",
    **dict.fromkeys(["aba", "bias_forces", "body_velocities", "cholesky_inverse", "cholesky_solve",
                     "configuration_from_poses", "crba", "forward_kinematics", "link_poses", "link_velocities",
                     "ltdl", "ltdl_solve", "minv", "rnea"], ".algorithms"),
    **dict.fromkeys(["ConvergenceError", "ConvergenceWarning", "ModelError", "OutputPathError", "SceneFileError",
                     "SimulationError", "SimulatorOptionError", "URDFError"], ".errors"),
    "output_file": ".output_paths", "output_folder": ".output_paths",
    **dict.fromkeys(["integrate", "rk4_step", "semi_implicit_euler_step"], ".integrators"),
    **dict.fromkeys(["Data", "Model", "ModelBuilder", "State"], ".model"),
    **dict.fromkeys(["random_configuration", "random_tree"], ".random_tree"),
    "Scene": ".scene", "load_scene": ".scene_file", "save_scene": ".scene_file", "Simulator": ".simulator",
    "load_urdf": ".urdf", "spd": ".control",
    **dict.fromkeys(["energy", "kinetic_energy", "potential_energy"], ".energy"),
}
_SUBMODULES = ("scenes", "joints", "control")  # public submodules
# Submodules an eager ``import engine`` used to load, reachable as attributes as before (``engine.solvers``).
_LOADED_BEFORE = ("_jit", "algorithms", "contact", "energy", "errors", "forces", "geometry", "integrators", "maximal",
                  "model", "output_paths", "random_tree", "scene", "scene_file", "sim_checks", "simulator", "solvers",
                  "spatial", "stepper", "urdf", "conjugate_gradient", "scene_drives", "breaking")

__all__ = [
    "Model", "ModelBuilder", "State", "Data", "ModelError", "URDFError", "SimulationError",
    "SceneFileError", "SimulatorOptionError", "ConvergenceError", "ConvergenceWarning", "OutputPathError",
    "output_file", "output_folder",
    "aba", "rnea", "bias_forces", "crba", "minv", "ltdl", "ltdl_solve", "cholesky_solve", "cholesky_inverse",
    "forward_kinematics", "link_poses", "configuration_from_poses", "body_velocities", "link_velocities",
    "integrate", "rk4_step", "semi_implicit_euler_step", "energy", "kinetic_energy", "potential_energy",
    "random_tree", "random_configuration", "load_urdf", "Scene", "load_scene", "save_scene", "Simulator", "scenes",
    "joints", "HAVE_NUMBA", "JIT_ENABLED", "spd", "control",
]


def __getattr__(name: str):
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name], __name__), name)
    elif name in _SUBMODULES or name in _LOADED_BEFORE:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


# engine.random_tree and engine.energy are functions of submodules of the same name (_lazy.keep_functions)
keep_functions(__name__, lambda name, module: getattr(module, name) if name in ("random_tree", "energy") else None)

if TYPE_CHECKING:  # what the names are, for type checkers and editors
    from . import control, joints, scenes
    from ._jit import HAVE_NUMBA, JIT_ENABLED
    from .algorithms import (aba, bias_forces, body_velocities, cholesky_inverse, cholesky_solve,
                             configuration_from_poses, crba, forward_kinematics, link_poses, link_velocities, ltdl,
                             ltdl_solve, minv, rnea)
    from .control import spd
    from .energy import energy, kinetic_energy, potential_energy
    from .errors import (ConvergenceError, ConvergenceWarning, ModelError, OutputPathError, SceneFileError,
                         SimulationError, SimulatorOptionError, URDFError)
    from .integrators import integrate, rk4_step, semi_implicit_euler_step
    from .model import Data, Model, ModelBuilder, State
    from .output_paths import output_file, output_folder
    from .random_tree import random_configuration, random_tree
    from .scene import Scene
    from .scene_file import load_scene, save_scene
    from .simulator import Simulator
    from .urdf import load_urdf
