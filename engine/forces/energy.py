"""A scene's energy, summed in one place (issue #35, "one energy"; issue #31's energy budget).

    E = T + V,   V = V_gravity + (V_springs + V_point forces) + V_joint springs                          (J)

* T, V_gravity: ``engine.energy.kinetic_and_gravity`` (the tree's own, also behind ``engine.energy``);
* V_springs = Σ ½ k (ℓ − L)² over springs and taut cables (thesis Eq. 2.40), ``pair_energy``, with the
  arithmetic of ``point_pair_kernel``'s energy;
* V_point forces = −Σ f·x (Eq. 2.36), ``point_force_energy``, with ``point_force_kernel``'s arithmetic;
* V_joint springs = ½ Σ K_r (q ⊖ q_rest)², ``joint_spring_energy``.

``scene_energy`` sums them on kinematics already in a workspace; ``energy_terms`` is the one compiled entry
(a FlatModel's buffers: three arguments instead of ~30 arrays) that runs the passes first and can add the
dampers' power q̇ᵀ D q̇ (``damping_power``), which the energy budget needs. ``SceneEnergy`` calls it for one
scene: ``ForceEvaluator.energy`` (``Simulator.energy()``, the explicit and RedMax steppers), the energy
budget (``engine.solvers.stages.energy_guard``) and, inlined, the one-call RedMax step
(``engine.solvers.steppers.redmax_step.pcg_step``) all use it. ``control_potential`` is the part of V a
``Control`` sets (point forces, the joint springs' rest pose), for a control that changes between steps.
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from .._jit import compiled_for, kernel
from ..algorithms._flat import flat_model, unpack_tree, unpack_workspace
from ..algorithms.kinematics import joint_pass, velocity_pass, world_pass
from ..energy import kinetic_and_gravity
from ..integrators import position_error

# mass (n,), com (n, 3) link frames, gravity (3,); joint_stiffness, joint_damping (nv,); spring_v: the dofs of
# joints with springs; body_damping_blocks (n, 6, 6); zero_v (nv,) zeros; difference (nv,) scratch
EnergyArrays = namedtuple("EnergyArrays", "mass com gravity joint_stiffness joint_damping spring_v "
                                          "body_damping_blocks zero_v difference")


def energy_arrays(model, evaluator) -> EnergyArrays:
    """The EnergyArrays of a ``ForceEvaluator``'s scene (its joint springs, dampers and body damping shared)."""
    return EnergyArrays(np.ascontiguousarray(model.body_mass, float), np.ascontiguousarray(model.body_com, float),
                        np.ascontiguousarray(model.gravity, float), evaluator.joint_stiffness,
                        np.ascontiguousarray(evaluator.joint_damping, float), evaluator._spring_v,
                        evaluator.body_damping_blocks, np.zeros(model.nv), np.zeros(model.nv))


@kernel
def pair_energy(X0_E, X0_r, pairs):
    """Σ ½ k (ℓ − L)² (J) over the springs and taut cables of ``pairs`` (``PairArrays``), with the arithmetic of
    ``point_pair_kernel``'s energy but none of its wrenches and 12 × 12 blocks."""
    energy = 0.0
    x1 = np.empty(3)
    x2 = np.empty(3)
    for s in range(pairs.body_a.shape[0]):
        for x, body, l in ((x1, pairs.body_a[s], pairs.point_a[s]), (x2, pairs.body_b[s], pairs.point_b[s])):
            if body < 0:
                for k in range(3):
                    x[k] = l[k]
            else:
                for k in range(3):  # x = p + Eᵀ l
                    x[k] = X0_r[body, k] + X0_E[body, 0, k] * l[0] + X0_E[body, 1, k] * l[1] + X0_E[body, 2, k] * l[2]
        ell = 0.0
        for k in range(3):
            ell += (x2[k] - x1[k]) * (x2[k] - x1[k])
        ell = np.sqrt(ell)
        L = pairs.rest_length[s]
        if ell < 1e-12 or (pairs.tension_only[s] and ell <= L):
            continue
        stretch = ell - L
        energy += 0.5 * pairs.stiffness[s] * stretch * stretch
    return energy


@kernel
def point_force_energy(X0_E, X0_r, body, point, force):
    """−Σ f·x (J): the potential of constant world forces f on link points (body (k,), point (k, 3) in the
    link frame, force (k, 3) world), with the arithmetic of ``point_force_kernel``'s energy."""
    energy = 0.0
    for s in range(body.shape[0]):
        b = body[s]
        if b < 0:
            continue
        l = point[s]
        x0 = X0_r[b, 0] + X0_E[b, 0, 0] * l[0] + X0_E[b, 1, 0] * l[1] + X0_E[b, 2, 0] * l[2]
        x1 = X0_r[b, 1] + X0_E[b, 0, 1] * l[0] + X0_E[b, 1, 1] * l[1] + X0_E[b, 2, 1] * l[2]
        x2 = X0_r[b, 2] + X0_E[b, 0, 2] * l[0] + X0_E[b, 1, 2] * l[1] + X0_E[b, 2, 2] * l[2]
        energy -= force[s, 0] * x0 + force[s, 1] * x1 + force[s, 2] * x2
    return energy


@kernel(inline=True)
def joint_spring_energy(tree, q, rest, joints):
    """½ Σ K_r d² (J), d = q ⊖ q_rest on the sprung dofs (``joints``: a record with joint_stiffness, spring_v,
    zero_v and difference, e.g. EnergyArrays; difference is left holding d)."""
    e = 0.0
    if joints.spring_v.shape[0] > 0:
        position_error(tree, q, joints.zero_v, rest, 0.0, joints.difference)
        for j in range(joints.spring_v.shape[0]):
            d = joints.spring_v[j]
            e += joints.joint_stiffness[d] * (joints.difference[d] * joints.difference[d])
    return 0.5 * e


@kernel(inline=True)
def scene_energy(tree, ws, q, rest, bodies, joints, pairs, pf_body, pf_point, pf_force):
    """(T, V) (J, module doc) at (q (nq,), q̇) from the kinematics at (q, q̇) already in ``ws`` (joint, world and
    velocity passes). bodies: a record with mass, com, gravity; joints: with joint_stiffness, spring_v, zero_v,
    difference (EnergyArrays serves as both); pairs: ``PairArrays``; point forces: body (k,), point (k, 3) link
    frame, force (k, 3) world; rest (nq,): the joint springs' rest pose."""
    kin, grav = kinetic_and_gravity(tree, ws, bodies.mass, bodies.com, bodies.gravity, True)
    forces = pair_energy(ws.X0_E, ws.X0_r, pairs) + point_force_energy(ws.X0_E, ws.X0_r, pf_body, pf_point, pf_force)
    return kin, grav + forces + joint_spring_energy(tree, q, rest, joints)


@kernel(inline="llvm", refcounts=False)
def _point_velocity(X0_E, X0_r, v_link, body, l, out):
    """World velocity of link point l of ``body``: R (ω × l + v) from its link twist [ω; v] (0 for the world)."""
    if body < 0:
        for k in range(3):
            out[k] = 0.0
        return
    w = v_link[body]
    a0 = w[1] * l[2] - w[2] * l[1] + w[3]
    a1 = w[2] * l[0] - w[0] * l[2] + w[4]
    a2 = w[0] * l[1] - w[1] * l[0] + w[5]
    E = X0_E[body]
    for k in range(3):  # R = Eᵀ
        out[k] = E[0, k] * a0 + E[1, k] * a1 + E[2, k] * a2


@kernel
def damping_power(tree, ws, dampers, pairs, qd):
    """q̇ᵀ D q̇ (W) at the workspace's kinematics (joint, world and velocity passes at (q, q̇)): the joint dampers
    Σ c q̇², the bodies' damping Σ φᵀ D_m φ (link twists φ, ``dampers.body_damping_blocks`` (n, 6, 6) link frames;
    ``dampers.joint_damping`` (nv,)) and the dampers along every spring and taut cable of ``pairs``,
    c (u·(ẋ_b − ẋ_a))² (a slack cable's damper is off, as in ``point_pair_kernel``)."""
    power = 0.0
    for d in range(qd.shape[0]):
        power += dampers.joint_damping[d] * qd[d] * qd[d]
    for i in range(tree.parent.shape[0]):
        D = dampers.body_damping_blocks[i]
        if D[0, 0] == 0.0 and D[3, 3] == 0.0:
            continue
        v = ws.v[i]
        for r in range(6):
            t = 0.0
            for c in range(6):
                t += D[r, c] * v[c]
            power += v[r] * t
    xa = np.empty(3)
    xb = np.empty(3)
    va = np.empty(3)
    vb = np.empty(3)
    for s in range(pairs.body_a.shape[0]):
        c = pairs.damping[s]
        if c == 0.0:
            continue
        for x, body, l in ((xa, pairs.body_a[s], pairs.point_a[s]), (xb, pairs.body_b[s], pairs.point_b[s])):
            if body < 0:
                for k in range(3):
                    x[k] = l[k]
            else:
                for k in range(3):
                    x[k] = ws.X0_r[body, k] + ws.X0_E[body, 0, k] * l[0] + ws.X0_E[body, 1, k] * l[1] \
                        + ws.X0_E[body, 2, k] * l[2]
        ell = math.sqrt((xb[0] - xa[0]) ** 2 + (xb[1] - xa[1]) ** 2 + (xb[2] - xa[2]) ** 2)
        if ell < 1e-12 or (pairs.tension_only[s] and ell <= pairs.rest_length[s]):
            continue
        _point_velocity(ws.X0_E, ws.X0_r, ws.v, pairs.body_a[s], pairs.point_a[s], va)
        _point_velocity(ws.X0_E, ws.X0_r, ws.v, pairs.body_b[s], pairs.point_b[s], vb)
        rate = 0.0
        for k in range(3):
            rate += (xb[k] - xa[k]) * (vb[k] - va[k])
        rate /= ell
        power += c * rate * rate
    return power


@kernel
def energy_terms(ints, floats, work, q, qd, rest, arrays, pairs, pf_body, pf_point, pf_force, with_power):
    """(T, V, q̇ᵀ D q̇) at (q (nq,), q̇ (nv,)): the kinematics passes into the FlatModel's workspace, then
    ``scene_energy`` and, when ``with_power``, ``damping_power`` (W; else 0). ints, floats, work: a ``FlatModel``'s
    buffers; arrays: EnergyArrays; the rest as ``scene_energy``."""
    tree = unpack_tree(ints, floats)
    ws = unpack_workspace(ints, work)
    joint_pass(tree, q, ws)
    world_pass(tree, ws)
    velocity_pass(tree, q, qd, ws)
    kin, pot = scene_energy(tree, ws, q, rest, arrays, arrays, pairs, pf_body, pf_point, pf_force)
    power = damping_power(tree, ws, arrays, pairs, qd) if with_power else 0.0
    return kin, pot, power


@kernel
def control_potential(ints, floats, X0_E, X0_r, q, rest, arrays, pf_body, pf_point, pf_force):
    """V_point forces + V_joint springs (J): the potentials a ``Control`` sets, at q (nq,) with the link poses
    (X0_E (n, 3, 3), X0_r (n, 3)) already known there — what a change of the control between two steps changes."""
    tree = unpack_tree(ints, floats)
    return point_force_energy(X0_E, X0_r, pf_body, pf_point, pf_force) + joint_spring_energy(tree, q, rest, arrays)


def point_force_arrays(loads):
    """Point forces (body, point, force) as the kernels take them: body (k,) int64, point (k, 3), force (k, 3)."""
    body, point, force = loads
    return (np.ascontiguousarray(body, dtype=np.int64).reshape(-1), np.ascontiguousarray(point, dtype=float).reshape(-1, 3),
            np.ascontiguousarray(force, dtype=float).reshape(-1, 3))


class SceneEnergy:
    """``(q, q̇, control) -> (T, V, q̇ᵀ D q̇)`` (J, J, W) of one scene in one ``energy_terms`` call.

    flat: the FlatModel whose workspace the passes run in (a stepper's own, so that its caller can read the
    link poses there afterwards: ``flat.ws``), or None: the calling thread's scratch (``flat_model``)."""

    def __init__(self, model, evaluator, flat=None):
        self.model = model
        self.arrays = energy_arrays(model, evaluator)
        self.pairs = evaluator.pairs
        self.flat = flat
        self._entries = {}  # compiled entry points by (kernel, point forces or none): two argument types each

    def _buffers(self):
        return self.flat if self.flat is not None else (self.model._per_thread.flat or flat_model(self.model))

    def _entry(self, fn, args, with_loads):
        entry = self._entries.get((fn, with_loads))
        if entry is None:
            entry = self._entries[(fn, with_loads)] = compiled_for(fn, args)
        return entry

    def __call__(self, q, qd, control, with_power: bool = False):
        flat = self._buffers()
        loads = point_force_arrays(control.point_forces)
        args = (flat.ints, flat.floats, flat.work, np.ascontiguousarray(q, float), np.ascontiguousarray(qd, float),
                np.ascontiguousarray(control.joint_rest, float), self.arrays, self.pairs, *loads, bool(with_power))
        kin, pot, power = self._entry(energy_terms, args, len(loads[0]) > 0)(*args)
        return float(kin), float(pot), float(power)

    def control_potential(self, q, rest, loads, X0_E, X0_r) -> float:
        """V_point forces + V_joint springs (J) of a control — joint springs' rest pose ``rest`` (nq,), point forces
        ``loads`` (body, point, force) — at q (nq,), with the link poses there (X0_E (n, 3, 3), X0_r (n, 3))."""
        flat = self._buffers()
        loads = point_force_arrays(loads)
        args = (flat.ints, flat.floats, X0_E, X0_r, np.ascontiguousarray(q, float), np.ascontiguousarray(rest, float),
                self.arrays, *loads)
        return float(self._entry(control_potential, args, len(loads[0]) > 0)(*args))
