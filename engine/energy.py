"""Mechanical energy of a model state: kinetic ½ q̇ᵀ M q̇ and gravitational potential."""
from __future__ import annotations

import numpy as np

from .algorithms.kinematics import forward_kinematics, link_velocities


def kinetic_energy(model, q, qd) -> float:
    """½ Σ vᵢᵀ Iᵢ vᵢ over bodies (J); equals ½ q̇ᵀ M(q) q̇."""
    return kinetic_energy_of_links(model, link_velocities(model, q, qd))


def kinetic_energy_of_links(model, v) -> float:
    """½ Σ vᵢᵀ Iᵢ vᵢ (J) from link velocities v (n, 6) in link coordinates (a workspace's ``v``)."""
    return 0.5 * float(np.einsum("ni,nij,nj->", v, model.tree.link_inertia, v))


def potential_energy(model, q) -> float:
    """−Σ mᵢ g·cᵢ (J), zero at the world origin."""
    _, com = forward_kinematics(model, q)
    return -float(model.body_mass @ (com @ model.gravity))


def potential_energy_of_links(model, X0_E, X0_r) -> float:
    """−Σ mᵢ g·cᵢ (J) from the world → link transforms (a workspace's ``X0_E`` (n, 3, 3), ``X0_r`` (n, 3)):
    cᵢ = X0_rᵢ + X0_Eᵢᵀ comᵢ."""
    com = X0_r + np.einsum("nji,nj->ni", X0_E, model.body_com)
    return -float(model.body_mass @ (com @ model.gravity))


def energy(model, q, qd) -> float:
    """Total mechanical energy (J) of the tree alone (no springs; forces add theirs)."""
    return kinetic_energy(model, q, qd) + potential_energy(model, q)
