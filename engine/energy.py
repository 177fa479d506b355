"""Mechanical energy of a model state: kinetic ½ q̇ᵀ M q̇ and gravitational potential.

``kinetic_and_gravity`` is the one place the engine sums these two (issue #35, "one energy"): the public
functions below, ``engine.forces.energy`` (a scene's energy with its springs, loads and joint springs, which
``Simulator.energy()``, every reduced-coordinate stepper and the RedMax energy budget use) and the one-call
RedMax step all call it on the kinematics passes they have run.
"""
from __future__ import annotations

import numpy as np

from ._jit import kernel
from .algorithms._checks import as_q, as_v
from .algorithms.kinematics import joint_pass, velocity_pass, world_pass


@kernel(inline="llvm", refcounts=False)
def kinetic_and_gravity(tree, ws, mass, com, gravity, with_velocity):
    """(½ Σ vᵀ I v, −Σ m g·c) (J) from the workspace's kinematics (joint_pass, world_pass and, if
    ``with_velocity``, velocity_pass): link twists and link spatial inertias, centres of mass in world
    (c = X0_r + X0_Eᵀ com; mass (n,), com (n, 3) link frames, gravity (3,))."""
    n = tree.parent.shape[0]
    kin = 0.0
    pot = 0.0
    for i in range(n):
        E = ws.X0_E[i]
        for a in range(3):
            c = ws.X0_r[i, a] + E[0, a] * com[i, 0] + E[1, a] * com[i, 1] + E[2, a] * com[i, 2]
            pot -= mass[i] * gravity[a] * c
        if with_velocity:
            v = ws.v[i]
            I = tree.link_inertia[i]
            for r in range(6):
                t = 0.0
                for k in range(6):
                    t += I[r, k] * v[k]
                kin += 0.5 * v[r] * t
    return kin, pot


@kernel(refcounts=False)
def tree_energy(tree, ws, q, qd, mass, com, gravity, with_velocity):
    """(T, V_gravity) (J) at (q (nq,), q̇ (nv,)): the kinematics passes into ``ws``, then ``kinetic_and_gravity``
    (T = 0 without ``with_velocity``; q̇ is then not read)."""
    joint_pass(tree, q, ws)
    world_pass(tree, ws)
    if with_velocity:
        velocity_pass(tree, q, qd, ws)
    return kinetic_and_gravity(tree, ws, mass, com, gravity, with_velocity)


def kinetic_energy(model, q, qd) -> float:
    """½ Σ vᵢᵀ Iᵢ vᵢ over bodies (J); equals ½ q̇ᵀ M(q) q̇. q: (nq,), qd: (nv,)."""
    return float(tree_energy(model.tree, model.data, as_q(model, q), as_v(model, qd, "qd"), model.body_mass,
                             model.body_com, model.gravity, True)[0])


def potential_energy(model, q) -> float:
    """−Σ mᵢ g·cᵢ (J), zero at the world origin. q: (nq,)."""
    return float(tree_energy(model.tree, model.data, as_q(model, q), np.zeros(model.nv), model.body_mass,
                             model.body_com, model.gravity, False)[1])


def energy(model, q, qd) -> float:
    """Total mechanical energy (J) of the tree alone (no springs; forces add theirs). q: (nq,), qd: (nv,)."""
    kin, pot = tree_energy(model.tree, model.data, as_q(model, q), as_v(model, qd, "qd"), model.body_mass,
                           model.body_com, model.gravity, True)
    return float(kin + pot)
