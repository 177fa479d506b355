"""Directional point forces (thesis 000, Eq. 2.35–2.37) and loads that move along bodies.

A constant world force F = k·a on link point l: wrench w = Γᵀ Rᵀ F
(Eq. 2.35), potential V = −F·x (Eq. 2.36), stiffness K = −∂w/∂δ =
−Γᵀ [[RᵀF], 0] (Eq. 2.37), which is not symmetric and is **symmetrized**.
It is purely geometric (indefinite), so the implicit solvers include it only
with ``geometric=True`` (see point_pair).
"""
from __future__ import annotations

import numpy as np

from .._jit import kernel
from .point_pair import _add_geometric_term, _add_point_wrench, _point_world


@kernel(inline="llvm")
def point_force_kernel(X0_E, X0_r, body, point, force, geometric, wrench, K):
    """wrench (n, 6) += each force's wrench; K (m, 6, 6) its symmetrized stiffness. Returns V (J)."""
    x = np.empty(3)
    G = np.empty((3, 6))
    energy = 0.0
    for s in range(body.shape[0]):
        for r in range(6):
            for c in range(6):
                K[s, r, c] = 0.0
        b = body[s]
        if b < 0:
            continue
        _point_world(X0_E, X0_r, b, point[s], x, G[:, 0:6])  # a view, as point_pair passes (one signature)
        energy -= force[s, 0] * x[0] + force[s, 1] * x[1] + force[s, 2] * x[2]
        _add_point_wrench(X0_E, b, point[s], force[s], 1.0, wrench)
        if geometric:
            _add_geometric_term(X0_E, b, point[s], force[s], -1.0, K[s, 0:6, 0:6])
    return energy
