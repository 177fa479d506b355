"""Contact Jacobians in generalized velocities: N (normal rows) and D (two friction rows).

The velocity of a world point x on body b is ẋ = Σ_d (s_d,lin + s_d,ang × x) v_d
over the dofs d of b and its ancestors, with s_d the dof's spatial axis in
world coordinates at the world origin ([angular; linear]). Row 3c of J is
n_cᵀ ẋ, rows 3c+1, 3c+2 are t₁ᵀ ẋ, t₂ᵀ ẋ: J = [N; D] interleaved per contact.
For a contact between two bodies ẋ is the relative velocity (body minus other).
"""
from __future__ import annotations

import numpy as np

from .._jit import kernel
from ..algorithms.kinematics import _kinematics_kernel
from ..spatial import transform_motion_inverse


@kernel
def world_axes(tree, ws, s_w):
    """s_w (nv, 6): every dof's motion axis in world coordinates (needs joint and world passes)."""
    for i in range(tree.parent.shape[0]):
        vs = tree.v_start[i]
        for d in range(tree.joint_nv[i]):
            transform_motion_inverse(ws.X0_E[i], ws.X0_r[i], ws.S[vs + d], s_w[vs + d])


def ancestor_dofs(model) -> list:
    """Per body, the indices of its own and its ancestors' dofs (the columns its Jacobian may fill)."""
    out: list = []
    for b in range(model.n_bodies):
        own = np.arange(model.v_start[b], model.v_start[b] + model.joint_nv[b])
        p = int(model.body_parent[b])
        out.append(own if p < 0 else np.concatenate([out[p], own]))
    return out


def tangent_basis(n: np.ndarray) -> np.ndarray:
    """(k, 2, 3) unit tangents t₁, t₂ with (n, t₁, t₂) right-handed, for unit normals n (k, 3)."""
    seed = np.where(np.abs(n[:, :1]) < 0.9, np.array([[1.0, 0.0, 0.0]]), np.array([[0.0, 1.0, 0.0]]))
    t1 = np.cross(n, seed)
    t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
    return np.stack([t1, np.cross(n, t1)], axis=1)


def contact_directions(normal: np.ndarray) -> np.ndarray:
    """(k, 3, 3): rows n, t₁, t₂ of every contact's frame."""
    return np.ascontiguousarray(np.concatenate([normal[:, None, :], tangent_basis(normal)], axis=1))


def contact_jacobian(model, q, contacts, ancestors=None) -> np.ndarray:
    """J (3k, nv) for k contacts at configuration q: rows (n, t₁, t₂) of each contact."""
    ancestors = ancestor_dofs(model) if ancestors is None else ancestors
    ws = model.data
    _kinematics_kernel(model.tree, np.ascontiguousarray(q, dtype=float), ws)
    s_w = np.empty((model.nv, 6))
    world_axes(model.tree, ws, s_w)
    k = len(contacts)
    dirs = contact_directions(contacts.normal)
    J = np.zeros((3 * k, model.nv))
    for c, (b, o) in enumerate(zip(contacts.body, contacts.other_bodies())):
        for body, sign in ((b, 1.0), (o, -1.0)):  # relative velocity: body minus the other (−1: the ground)
            if body < 0:
                continue
            cols = ancestors[body]
            S = s_w[cols]
            point_velocity = S[:, 3:] + np.cross(S[:, :3], contacts.point[c])  # (m, 3)
            J[3 * c:3 * c + 3, cols] += sign * (dirs[c] @ point_velocity.T)
    return J
