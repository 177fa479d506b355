"""Recursive rigid-body algorithms over a Model (Featherstone; Drumwright)."""
from .aba import aba
from .crba import crba
from .dense import cholesky_inverse, cholesky_solve
from .kinematics import body_velocities, configuration_from_poses, forward_kinematics, link_poses, link_velocities
from .ltdl import ltdl, ltdl_solve
from .minv import minv
from .rnea import bias_forces, rnea

__all__ = [
    "aba", "rnea", "bias_forces", "crba", "minv", "ltdl", "ltdl_solve", "cholesky_solve", "cholesky_inverse",
    "forward_kinematics", "link_poses", "configuration_from_poses", "body_velocities", "link_velocities",
]
