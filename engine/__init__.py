"""Articulated rigid-body dynamics: RedMax, MABA stable PD, Baraff, hard constraints, Θ(n²) M⁻¹.

Pure Python + numba; never imports Blender. Conventions: SI units, Z up,
gravity (0, 0, −9.81), spatial vectors [angular; linear] (docs/conventions.md).
"""
from . import joints, scenes
from ._jit import HAVE_NUMBA, JIT_ENABLED
from .algorithms import (
    aba, bias_forces, body_velocities, cholesky_inverse, cholesky_solve, configuration_from_poses, crba, forward_kinematics,
    link_poses, link_velocities, ltdl, ltdl_solve, minv, rnea,
)
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
from . import control  # noqa: E402  (after the algorithms it builds on)
from .control import spd  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "Model", "ModelBuilder", "State", "Data", "ModelError", "URDFError", "SimulationError",
    "SceneFileError", "SimulatorOptionError", "ConvergenceError", "ConvergenceWarning", "OutputPathError",
    "output_file", "output_folder",
    "aba", "rnea", "bias_forces", "crba", "minv", "ltdl", "ltdl_solve", "cholesky_solve", "cholesky_inverse",
    "forward_kinematics", "link_poses", "configuration_from_poses", "body_velocities", "link_velocities",
    "integrate", "rk4_step", "semi_implicit_euler_step", "energy", "kinetic_energy", "potential_energy",
    "random_tree", "random_configuration", "load_urdf", "Scene", "load_scene", "save_scene", "Simulator", "scenes", "joints", "HAVE_NUMBA", "JIT_ENABLED",
    "spd", "control",
]
from .energy import energy, kinetic_energy, potential_energy  # noqa: E402
