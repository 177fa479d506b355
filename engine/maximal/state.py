"""Maximal-coordinate states of a joint tree, and the way back (reduced q, q̇ ↔ per-body poses and twists).

Three forms, one per maximal-coordinate solver family:

* link frames (``maximal_state``/``reduced_state``): per body its link frame's position and
  quaternion qmax (7n,) and its spatial velocity φ = [ω; v] (n, 6) in link coordinates (Baraff 3D);
* the plane (``planar_state``/``planar_reduced_state``): per body (x, y, θ) of its centre of mass and
  (ẋ, ẏ, ω) (Baraff 2D);
* principal frames (``com_state``/``reduced_from_com``): per body the world rotation R (n, 3, 3) of its
  principal axes, its COM x (n, 3), and world v, ω (n, 3) (hard constraints).

Going back, the joint coordinates come from the relative poses (``configuration_from_poses``) and
q̇ = Sᵀ v_J from the relative twists, so every solver hands the same (q, q̇) to the Simulator.
"""
from __future__ import annotations

import numpy as np

from .._jit import kernel
from ..algorithms.kinematics import configuration_from_poses, link_poses, link_velocities
from ..joints import FREE, joint_motion_subspace, matrix_to_quat, quat_to_matrix
from ..spatial import transform_motion


@kernel
def poses_from_q(qmax, R, p):
    """Link poses (R (n,3,3) link→world, p (n,3)) from the maximal state (per body: position, quaternion)."""
    n = R.shape[0]
    for i in range(n):
        quat_to_matrix(qmax, 7 * i + 3, R[i])
        for a in range(3):
            p[i, a] = qmax[7 * i + a]



class FreeBodies:
    """Just what ``integrate_kernel`` reads: n free joints (per body: position, quaternion / twist)."""

    def __init__(self, n):
        self.joint_type = np.full(n, FREE, dtype=np.int64)
        self.q_start = 7 * np.arange(n, dtype=np.int64)
        self.v_start = 6 * np.arange(n, dtype=np.int64)


def maximal_state(model, q, qd):
    """(qmax (7n,), φ (n, 6)) of the tree at reduced state (q, q̇): link poses and link twists."""
    R, p = link_poses(model, q)
    qmax = np.empty(7 * model.n_bodies)
    for i in range(model.n_bodies):
        qmax[7 * i:7 * i + 3] = p[i]
        qmax[7 * i + 3:7 * i + 7] = matrix_to_quat(R[i])
    return qmax, link_velocities(model, q, qd)


def reduced_state(model, R, p, phi):
    """(q, q̇) of the tree from link poses and twists: joint coordinates from the relative poses,
    joint rates q̇ = Sᵀ v_J from the relative twists (S has orthonormal rows for every joint type)."""
    q = configuration_from_poses(model, R, p)
    qd = np.zeros(model.nv)
    S = np.zeros((6, 6))
    Ep, vp, vJ = np.zeros((3, 3)), np.zeros(6), np.zeros(6)
    for i in range(model.n_bodies):
        par, jt, vs = int(model.body_parent[i]), int(model.joint_type[i]), int(model.v_start[i])
        nv = int(model.joint_nv[i])
        if nv == 0:
            continue
        if par >= 0:  # parent twist in child coordinates: X_{i←par} φ_par
            Ep[:] = R[i].T @ R[par]
            transform_motion(Ep, R[par].T @ (p[i] - p[par]), phi[par], vp)
            vJ[:] = phi[i] - vp
        else:
            vJ[:] = phi[i]
        joint_motion_subspace(jt, model.joint_axis[i], q, int(model.q_start[i]), S, 0)
        qd[vs:vs + nv] = S[:nv] @ vJ
    return q, qd


def planar_state(model, q, qd):
    """(qmax (3n,) = per body (x, y, θ) of the centre of mass, v (n, 3) = (ẋ, ẏ, ω)) of a planar tree."""
    R, p = link_poses(model, q)
    phi = link_velocities(model, q, qd)
    c = p + np.einsum("nij,nj->ni", R, model.body_com)
    w = np.einsum("nij,nj->ni", R, phi[:, :3])  # world angular velocity
    v0 = np.einsum("nij,nj->ni", R, phi[:, 3:])  # world velocity of the link origin
    vc = v0 + np.cross(w, c - p)
    qmax = np.column_stack([c[:, :2], np.arctan2(R[:, 1, 0], R[:, 0, 0])]).reshape(-1)
    return qmax, np.column_stack([vc[:, :2], w[:, 2]])


def planar_reduced_state(model, qmax, v):
    """(q, q̇) of the tree from the 2D maximal state (inverse of ``planar_state``)."""
    n = model.n_bodies
    x = qmax.reshape(n, 3)
    c, s = np.cos(x[:, 2]), np.sin(x[:, 2])
    R = np.zeros((n, 3, 3))
    R[:, 0, 0], R[:, 0, 1], R[:, 1, 0], R[:, 1, 1], R[:, 2, 2] = c, -s, s, c, 1.0
    p = np.column_stack([x[:, :2], np.zeros(n)]) - np.einsum("nij,nj->ni", R, model.body_com)
    w = np.column_stack([np.zeros((n, 2)), v[:, 2]])
    v0 = np.column_stack([v[:, :2], np.zeros(n)]) - np.cross(w, np.einsum("nij,nj->ni", R, model.body_com))
    phi = np.concatenate([np.einsum("nji,nj->ni", R, w), np.einsum("nji,nj->ni", R, v0)], axis=1)
    return reduced_state(model, R, p, phi)


def body_poses(model, R_link, p_link):
    """(R (n, 3, 3), x (n, 3)) of the bodies' principal frames (COM) from link poses."""
    return R_link @ np.array(model.body_rotation), p_link + np.einsum("nij,nj->ni", R_link, model.body_com)


def link_poses_of(model, R, x):
    """Link poses (R_link, p_link) from the principal frames (R, x): the inverse of ``body_poses``."""
    Rl = R @ np.transpose(np.array(model.body_rotation), (0, 2, 1))
    return Rl, x - np.einsum("nij,nj->ni", Rl, model.body_com)


def com_state(model, q, qd):
    """(R, x, v, ω) of every body's principal frame at reduced state (q, q̇): world rotation (n, 3, 3),
    COM (n, 3) m, COM velocity (n, 3) m/s and angular velocity (n, 3) rad/s, world coordinates."""
    R_l, p_l = link_poses(model, q)
    _, phi = maximal_state(model, q, qd)
    R, x = body_poses(model, R_l, p_l)
    w = np.einsum("nij,nj->ni", R_l, phi[:, :3])
    v_origin = np.einsum("nij,nj->ni", R_l, phi[:, 3:])
    v = v_origin + np.cross(w, x - p_l)
    return R, x, v, w


def reduced_from_com(model, R, x, v, w):
    """(q, q̇) from the principal-frame state of ``com_state`` (its inverse)."""
    R_l, p_l = link_poses_of(model, R, x)
    v_origin = v + np.cross(w, p_l - x)
    phi = np.hstack([np.einsum("nji,nj->ni", R_l, w), np.einsum("nji,nj->ni", R_l, v_origin)])
    return reduced_state(model, R_l, p_l, phi)
