"""Loop closures as joint constraints between two frames (``rows.JointConstraints``), for the 3D
maximal-coordinate solvers. The closure's joint type comes from the Scene (``LoopClosure.joint_type``)."""
from __future__ import annotations

import numpy as np

from ..joints import JOINT_FREE_ROTATIONS
from .rows import JointConstraints, joint_constraints


def closure_constraints(closures) -> JointConstraints:
    """Loop closures (and fixed points: closures to the world) as joint constraints between two frames."""
    rows = []
    for lc in closures:
        jt = lc.joint_type
        rest = np.asarray(lc.rest_rotation, float)
        Rfa = np.eye(3)
        axis = np.asarray(lc.axis_a, float)
        if JOINT_FREE_ROTATIONS[jt] == 2:  # universal: joint frame: x = first axis (in a), y = second axis (in b, seen from a at rest)
            x = axis / np.linalg.norm(axis)
            y = rest @ np.asarray(lc.axis_b, float)
            y = y - x * (x @ y)
            y /= np.linalg.norm(y)
            Rfa = np.column_stack([x, y, np.cross(x, y)])
            axis = np.array([1.0, 0.0, 0.0])
        Rfb = rest.T @ Rfa  # F_b coincides with F_a at rest
        rows.append((jt, axis, (lc.body_a, lc.body_b), Rfa.T, lc.point_a, Rfb.T, lc.point_b))
    if not rows:
        return joint_constraints(np.zeros(0), np.zeros((0, 3)), np.zeros((0, 2)), np.zeros((0, 3, 3)), np.zeros((0, 3)),
                                 np.zeros((0, 3, 3)), np.zeros((0, 3)))
    return joint_constraints(*[np.array([r[i] for r in rows]) for i in range(7)])
