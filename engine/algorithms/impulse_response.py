"""Velocity response to spatial impulses by Drumwright's propagation (seed 004, Alg. 2 lines 4–10).

``minv`` applies a unit *joint* impulse per column and so builds all of M⁻¹ in Θ(n²).
Contact needs only M⁻¹ Jᵀ for the few directions J of the contacts: the same two
sweeps, started from a *spatial* impulse f on one body (bias impulse Y_b = −f, as an
external force enters ABA's bias force), give the generalized velocity change and
every body's spatial velocity change in Θ(n) per direction — Θ(n k) for k
directions, without ever forming M⁻¹ or the n² k product.

All spatial quantities are world coordinates at the world origin, [angular; linear],
as in ``minv.world_articulated_quantities`` (which ``prepare_minv`` fills).
"""
from __future__ import annotations

import numpy as np

from .._jit import kernel
from .minv import pass_impulse_to_parent


@kernel
def impulse_response(tree, s_w, U_w, Dinv, Y, dq, dv):
    """Y (n, 6): bias impulses (−applied impulse per body), consumed (left zero);
    dq (nv,) ← M⁻¹ τ of the applied impulses; dv (n, 6) ← each body's spatial velocity change."""
    n = tree.parent.shape[0]
    t = np.zeros(6)
    for i in range(n - 1, -1, -1):  # inward: articulated bias impulses (line 5)
        nv = tree.joint_nv[i]
        vs = tree.v_start[i]
        p = tree.parent[i]
        for d in range(nv):
            s = 0.0
            for c in range(6):
                s -= s_w[vs + d, c] * Y[i, c]
            t[d] = s
        if p >= 0:
            pass_impulse_to_parent(U_w, Dinv, i, p, vs, nv, t, Y)
    for i in range(n):  # outward: velocity changes (lines 7–10)
        nv = tree.joint_nv[i]
        vs = tree.v_start[i]
        p = tree.parent[i]
        for c in range(6):
            dv[i, c] = dv[p, c] if p >= 0 else 0.0
        for d in range(nv):
            s = 0.0
            for c in range(6):
                s -= U_w[vs + d, c] * dv[i, c] + s_w[vs + d, c] * Y[i, c]
            t[d] = s
        for d in range(nv):
            g = 0.0
            for e in range(nv):
                g += Dinv[i, d, e] * t[e]
            dq[vs + d] = g
            for c in range(6):
                dv[i, c] += s_w[vs + d, c] * g
        for c in range(6):
            Y[i, c] = 0.0


@kernel(inline=True)
def point_velocity_along(dv, b, x, d):
    """d · (velocity of the world point x moving with body b), dv in world coordinates at the origin."""
    w0, w1, w2 = dv[b, 0], dv[b, 1], dv[b, 2]
    return (d[0] * (dv[b, 3] + w1 * x[2] - w2 * x[1]) + d[1] * (dv[b, 4] + w2 * x[0] - w0 * x[2])
            + d[2] * (dv[b, 5] + w0 * x[1] - w1 * x[0]))


@kernel(inline=True)
def relative_velocity_along(dv, b, o, x, d):
    """d · (velocity of x on body b − on body o); o < 0: the world (at rest)."""
    u = point_velocity_along(dv, b, x, d)
    if o >= 0:
        u -= point_velocity_along(dv, o, x, d)
    return u


@kernel(inline=True)
def add_point_impulse(Y, b, o, x, d, f):
    """Bias impulses of the impulse f·d at x on body b and its reaction on body o (o < 0: the world)."""
    m0, m1, m2 = x[1] * d[2] - x[2] * d[1], x[2] * d[0] - x[0] * d[2], x[0] * d[1] - x[1] * d[0]
    Y[b, 0] -= f * m0
    Y[b, 1] -= f * m1
    Y[b, 2] -= f * m2
    Y[b, 3] -= f * d[0]
    Y[b, 4] -= f * d[1]
    Y[b, 5] -= f * d[2]
    if o >= 0:
        Y[o, 0] += f * m0
        Y[o, 1] += f * m1
        Y[o, 2] += f * m2
        Y[o, 3] += f * d[0]
        Y[o, 4] += f * d[1]
        Y[o, 5] += f * d[2]


@kernel
def contact_space_columns(tree, s_w, U_w, Dinv, body, other, point, dirs, A):
    """A (3k, 3k) = J M⁻¹ Jᵀ for k contacts (body, other (k,), point (k, 3), dirs (k, 3, 3) rows n, t₁, t₂):
    one impulse response per column, Θ(n k + k²)."""
    n = tree.parent.shape[0]
    k = body.shape[0]
    Y = np.zeros((n, 6))
    dq = np.zeros(s_w.shape[0])
    dv = np.zeros((n, 6))
    for c in range(k):
        for r in range(3):
            # unit impulse along d at x: spatial impulse [x × d; d] (and its reaction on the other body)
            add_point_impulse(Y, body[c], other[c], point[c], dirs[c, r], 1.0)
            impulse_response(tree, s_w, U_w, Dinv, Y, dq, dv)
            for c2 in range(k):
                for r2 in range(3):
                    A[3 * c2 + r2, 3 * c + r] = relative_velocity_along(dv, body[c2], other[c2], point[c2], dirs[c2, r2])


@kernel
def contact_impulses_response(tree, s_w, U_w, Dinv, body, other, point, dirs, lam, dq):
    """dq (nv,) = M⁻¹ Jᵀ λ: all contact impulses applied at once, one Θ(n) response."""
    n = tree.parent.shape[0]
    Y = np.zeros((n, 6))
    dv = np.zeros((n, 6))
    for c in range(body.shape[0]):
        for r in range(3):
            add_point_impulse(Y, body[c], other[c], point[c], dirs[c, r], lam[3 * c + r])
    impulse_response(tree, s_w, U_w, Dinv, Y, dq, dv)
