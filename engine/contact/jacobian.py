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
from ..algorithms import _lanes as lanes
from ..algorithms._lanes import LANES
from ..algorithms.kinematics import _kinematics_kernel
from ..spatial import transform_motion_inverse


@kernel
def world_axes(tree, ws, s_w):
    """s_w (nv, 6): every dof's motion axis in world coordinates (needs joint and world passes)."""
    for i in range(tree.parent.shape[0]):
        vs = tree.v_start[i]
        for d in range(tree.joint_nv[i]):
            transform_motion_inverse(ws.X0_E[i], ws.X0_r[i], ws.S[vs + d], s_w[vs + d])


def tangent_basis(n: np.ndarray) -> np.ndarray:
    """(k, 2, 3) unit tangents t₁, t₂ with (n, t₁, t₂) right-handed, for unit normals n (k, 3)."""
    seed = np.where(np.abs(n[:, :1]) < 0.9, np.array([[1.0, 0.0, 0.0]]), np.array([[0.0, 1.0, 0.0]]))
    t1 = np.cross(n, seed)
    t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
    return np.stack([t1, np.cross(n, t1)], axis=1)


def contact_directions(normal: np.ndarray) -> np.ndarray:
    """(k, 3, 3): rows n, t₁, t₂ of every contact's frame."""
    return np.ascontiguousarray(np.concatenate([normal[:, None, :], tangent_basis(normal)], axis=1))


def point_maps(point: np.ndarray, dirs: np.ndarray) -> np.ndarray:
    """F (k, 3, 6): row r of contact c maps a spatial velocity [ω; v] (world, at the origin) to
    d_r · (v + ω × x) = [x × d_r; d_r] · [ω; v], the velocity of the contact point x along d_r."""
    return np.ascontiguousarray(np.concatenate([np.cross(point[:, None, :], dirs), dirs], axis=2))


@kernel
def contact_point_maps(point, normal, F):
    """F (k, 3, 6) ← ``point_maps(point, contact_directions(normal))`` in one pass (the same tangents: t₁ = n × x̂,
    or n × ŷ when |n_x| ≥ 0.9, normalized; t₂ = n × t₁), without numpy's temporaries (a pile's 2000 contacts a step)."""
    d = np.zeros((3, 3))
    for c in range(point.shape[0]):
        nx, ny, nz = normal[c, 0], normal[c, 1], normal[c, 2]
        if abs(nx) < 0.9:  # n × (1, 0, 0)
            tx, ty, tz = 0.0, nz, -ny
        else:  # n × (0, 1, 0)
            tx, ty, tz = -nz, 0.0, nx
        norm = np.sqrt(tx * tx + ty * ty + tz * tz)
        tx, ty, tz = tx / norm, ty / norm, tz / norm
        d[0, 0], d[0, 1], d[0, 2] = nx, ny, nz
        d[1, 0], d[1, 1], d[1, 2] = tx, ty, tz
        d[2, 0], d[2, 1], d[2, 2] = ny * tz - nz * ty, nz * tx - nx * tz, nx * ty - ny * tx
        x0, x1, x2 = point[c, 0], point[c, 1], point[c, 2]
        for r in range(3):  # [x × d_r; d_r]
            F[c, r, 0] = x1 * d[r, 2] - x2 * d[r, 1]
            F[c, r, 1] = x2 * d[r, 0] - x0 * d[r, 2]
            F[c, r, 2] = x0 * d[r, 1] - x1 * d[r, 0]
            F[c, r, 3], F[c, r, 4], F[c, r, 5] = d[r, 0], d[r, 1], d[r, 2]


@kernel
def fill_jacobian(tree, s_w, body, other, F, J):
    """J (3k, nv), zeroed: row 3c+r = F[c, r] · s_d on the dofs d of body[c] and its ancestors,
    minus the same for other[c] (when ≥ 0) — an ancestor walk per contact, Θ(k · depth)."""
    for c in range(body.shape[0]):
        for side in range(2):
            i = body[c] if side == 0 else other[c]
            sign = 1.0 if side == 0 else -1.0
            while i >= 0:
                vs = tree.v_start[i]
                for d in range(tree.joint_nv[i]):
                    for r in range(3):
                        s = 0.0
                        for e in range(6):
                            s += F[c, r, e] * s_w[vs + d, e]
                        J[3 * c + r, vs + d] += sign * s
                i = tree.parent[i]


@kernel(simd_lanes=True)
def jacobian_times(tree, s_w, X, body, other, F, U):
    """U (3k, m) = J X for X (nv, m) without forming J: each column of X taken as a generalized
    velocity, one outward pass gives every body's spatial velocity (V_i = V_parent + Σ s_d x_d),
    and F reads the contact points' velocities off them — Θ((n + k) m), LANES columns at a time
    (``algorithms._lanes``: one SIMD lane per column)."""
    n = tree.parent.shape[0]
    m = X.shape[1]
    V = np.zeros((6 * n, LANES))
    tail = np.zeros((X.shape[0], LANES))  # the last columns, zero-padded to LANES
    for j0 in range(0, m, LANES):
        jb = min(LANES, m - j0)
        if jb < LANES:
            for r in range(X.shape[0]):
                for j in range(jb):
                    tail[r, j] = X[r, j0 + j]
        for i in range(n):
            p = tree.parent[i]
            vs = tree.v_start[i]
            for e in range(6):
                v = lanes.load(V, 6 * p + e) if p >= 0 else lanes.zeros()
                for d in range(tree.joint_nv[i]):
                    x = lanes.load_at(X, vs + d, j0) if jb == LANES else lanes.load(tail, vs + d)
                    v = lanes.axpy(v, s_w[vs + d, e], x)
                lanes.store(V, 6 * i + e, v)
        for c in range(body.shape[0]):
            o = 6 * other[c] if other[c] >= 0 else -1
            for r in range(3):
                u = lanes.dot6_relative(F[c, r], V, 6 * body[c], o)
                if jb == LANES:
                    lanes.store_at(U, 3 * c + r, j0, u)
                else:
                    for j in range(jb):
                        U[3 * c + r, j0 + j] = u[j]


def world_axes_at(model, q, ws=None) -> np.ndarray:
    """s_w (nv, 6) at configuration q (computed in workspace ws, default ``model.data``)."""
    ws = model.data if ws is None else ws
    _kinematics_kernel(model.tree, np.ascontiguousarray(q, dtype=float), ws)
    s_w = np.empty((model.nv, 6))
    world_axes(model.tree, ws, s_w)
    return s_w


def contact_jacobian(model, q, contacts) -> np.ndarray:
    """J (3k, nv) for k contacts at configuration q: rows (n, t₁, t₂) of each contact."""
    F = point_maps(contacts.point, contact_directions(contacts.normal))
    J = np.zeros((3 * len(contacts), model.nv))
    fill_jacobian(model.tree, world_axes_at(model, q), np.ascontiguousarray(contacts.body, dtype=np.int64),
                  np.ascontiguousarray(contacts.other_bodies(), dtype=np.int64), F, J)
    return J
