"""Forward kinematics passes shared by every recursive algorithm.

``joint_pass`` fills the link-to-link transforms Xup and motion subspaces S;
``velocity_pass`` adds body velocities v and velocity-product accelerations c
(Featherstone RBDA Table 5.1, first loop). The public functions give world
poses of body frames (COM, principal axes) and body velocities.
"""
from __future__ import annotations

import numpy as np

from .._jit import kernel
from ..joints import (REVOLUTE, joint_bias_acceleration, joint_coordinates, joint_motion_subspace, joint_transform,
                      revolute_link_transform)
from ..spatial import compose_transforms, cross_motion, transform_motion
from ._checks import as_q, as_v


@kernel(refcounts=False)
def joint_pass(tree, q, ws):
    """Xup_i = X_J(q_i) · X_tree,i and S rows for every body (outward order irrelevant)."""
    n = tree.parent.shape[0]
    EJ = ws.scratch33[0]
    rJ = ws.tmp6[:3]
    for i in range(n):
        jt = tree.joint_type[i]
        if jt == REVOLUTE:  # the common case in straight-line code (no calls, r_J = 0)
            revolute_link_transform(tree.joint_axis[i], q[tree.q_start[i]], tree.tree_E[i], ws.Xup_E[i])
            vs = tree.v_start[i]
            for k in range(3):
                ws.Xup_r[i, k] = tree.tree_r[i, k]
                ws.S[vs, k] = tree.joint_axis[i, k]
                ws.S[vs, 3 + k] = 0.0
            continue
        joint_transform(jt, tree.joint_axis[i], q, tree.q_start[i] if jt > 0 else 0, EJ, rJ)
        compose_transforms(EJ, rJ, tree.tree_E[i], tree.tree_r[i], ws.Xup_E[i], ws.Xup_r[i])
        if tree.joint_nv[i] > 0:
            joint_motion_subspace(jt, tree.joint_axis[i], q, tree.q_start[i], ws.S, tree.v_start[i])


@kernel(inline="llvm", refcounts=False)
def velocity_pass(tree, q, qd, ws):
    """v_i = Xup v_λ + S q̇_i and c_i = c_J + v_i × v_J (needs joint_pass first)."""
    n = tree.parent.shape[0]
    vJ = ws.tmp6b
    for i in range(n):
        p = tree.parent[i]
        vi = ws.v[i]
        if p >= 0:
            transform_motion(ws.Xup_E[i], ws.Xup_r[i], ws.v[p], vi)
        else:
            for k in range(6):
                vi[k] = 0.0
        nv = tree.joint_nv[i]
        vs = tree.v_start[i]
        ci = ws.c[i]
        if tree.joint_type[i] == REVOLUTE:  # v_J = [axis q̇; 0], Ṡ = 0: c = v × v_J
            # (v_J through memory like the general path: the same rounding wherever this is inlined)
            w = qd[vs]
            for k in range(3):
                vJ[k] = tree.joint_axis[i, k] * w
                vJ[3 + k] = 0.0
            for k in range(3):
                vi[k] += vJ[k]
            cross_motion(vi, vJ, ci)
            for k in range(6):
                ws.cJ[i, k] = 0.0
            continue
        for k in range(6):
            vJ[k] = 0.0
        for d in range(nv):
            for k in range(6):
                vJ[k] += ws.S[vs + d, k] * qd[vs + d]
        for k in range(6):
            vi[k] += vJ[k]
        if nv > 0:
            joint_bias_acceleration(tree.joint_type[i], tree.joint_axis[i], q, tree.q_start[i], qd, qd, vs, ws.cJ[i])
            cross_motion(vi, vJ, ci)
            for k in range(6):
                ci[k] += ws.cJ[i, k]
        else:
            for k in range(6):
                ci[k] = 0.0


@kernel(refcounts=False)
def world_pass(tree, ws):
    """X0_i (world → link i) = Xup_i · X0_λ (needs joint_pass first)."""
    n = tree.parent.shape[0]
    for i in range(n):
        p = tree.parent[i]
        if p >= 0:
            compose_transforms(ws.Xup_E[i], ws.Xup_r[i], ws.X0_E[p], ws.X0_r[p], ws.X0_E[i], ws.X0_r[i])
        else:
            for a in range(3):  # explicit loops: slice assignment costs seconds of compile time
                ws.X0_r[i, a] = ws.Xup_r[i, a]
                for b in range(3):
                    ws.X0_E[i, a, b] = ws.Xup_E[i, a, b]


@kernel(refcounts=False)
def _kinematics_kernel(tree, q, ws):
    joint_pass(tree, q, ws)
    world_pass(tree, ws)


def link_poses(model, q, *, ws=None):
    """World pose of every link frame: (R (n, 3, 3) link→world rotation, p (n, 3) origin, m).
    ws: the workspace to compute in (default ``model.data``)."""
    q = as_q(model, q)
    ws = model.data if ws is None else ws
    _kinematics_kernel(model.tree, q, ws)
    R = np.transpose(ws.X0_E, (0, 2, 1)).copy()
    return R, ws.X0_r.copy()


def configuration_from_poses(model, R, p) -> np.ndarray:
    """The inverse of ``link_poses``: q (nq,) that puts the link frames at (R (n, 3, 3), p (n, 3)).

    Joint by joint, the child link frame in the parent-side joint frame gives the
    joint's coordinates (``joints.joint_coordinates``): exact for poses the joints
    can reach, a per-joint projection otherwise (e.g. an animation target that a
    hinge can only follow about its axis).
    """
    R = np.asarray(R, float)
    p = np.asarray(p, float)
    n = model.n_bodies
    if R.shape != (n, 3, 3) or p.shape != (n, 3):
        raise ValueError(f"configuration_from_poses: expected R ({n}, 3, 3) and p ({n}, 3), got {R.shape} and {p.shape}")
    q = np.zeros(model.nq)
    for i in range(n):
        par = int(model.body_parent[i])
        Rp, pp = (R[par], p[par]) if par >= 0 else (np.eye(3), np.zeros(3))
        Rj = Rp @ model.joint_rotation[i]  # parent-side joint frame in the world
        pj = pp + Rp @ model.joint_origin[i]
        jt = int(model.joint_type[i])
        qs = int(model.q_start[i])
        qi = joint_coordinates(jt, model.joint_axis[i], Rj.T @ R[i], Rj.T @ (p[i] - pj))
        q[qs:qs + qi.shape[0]] = qi
    return q


def forward_kinematics(model, q):
    """World pose of every body frame (COM, principal axes).

    q: (nq,). Returns (R, p): R (n, 3, 3) rotates body coordinates into world
    coordinates, p (n, 3) is the centre of mass in world coordinates (m).
    """
    R_link, p_link = link_poses(model, q)
    p = p_link + np.einsum("nij,nj->ni", R_link, model.body_com)
    R = R_link @ model.body_rotation
    return R, p


def body_velocities(model, q, qd):
    """Spatial velocity of every body in its body frame (COM, principal axes).

    q: (nq,), qd: (nv,). Returns (n, 6) rows [ω; v]: angular velocity and the
    COM's linear velocity, both in body-frame coordinates (RedMax's φ_i).
    """
    q = as_q(model, q)
    qd = as_v(model, qd, "qd")
    ws = model.data
    joint_pass(model.tree, q, ws)
    velocity_pass(model.tree, q, qd, ws)
    out = np.empty((model.n_bodies, 6))
    for i in range(model.n_bodies):
        E = model.body_rotation[i].T
        w = ws.v[i, :3]
        v_com = ws.v[i, 3:] + np.cross(w, model.body_com[i])
        out[i, :3] = E @ w
        out[i, 3:] = E @ v_com
    return out


def link_velocities(model, q, qd):
    """(n, 6) spatial velocities [ω; v at the link origin] in link coordinates."""
    q = as_q(model, q)
    qd = as_v(model, qd, "qd")
    ws = model.data
    joint_pass(model.tree, q, ws)
    velocity_pass(model.tree, q, qd, ws)
    return ws.v.copy()
