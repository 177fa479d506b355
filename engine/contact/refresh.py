"""Contacts carried with their bodies over a small move: the stabilization's check after a projection.

The stabilization (``handler.ContactHandler.stabilize``) detects the contacts at the step's end, projects the
deep ones out — a move of millimetres — and looks again. That second look need not be a full detection: a
pair the detection did not report was farther apart than the margin, and stays apart when no shape moved by
half the margin in the projection; the pairs it reported keep their features over such a move. So each
contact is carried with its bodies (Bullet's ``btPersistentManifold::refreshContactPoints``): the points on
either surface move rigidly with their bodies, the normal turns with the body whose face is the manifold's
reference, and the depth is measured again between the moved points.
"""
from __future__ import annotations

import numpy as np

from .._jit import kernel
from .manifold import CODE_EXACT, CODE_FLIP, CODE_GJK


@kernel
def refresh_contacts(body, other, point, normal, depth, feature, R0, p0, R1, p1, point_out, normal_out, depth_out):
    """Contacts found at link poses (R0, p0) (n, 3, 3), (n, 3), carried to (R1, p1): point (k, 3) is the midpoint of
    the two surfaces' points a = x − d/2 n on ``body`` and b = x + d/2 n on ``other`` (−1: static), depth d (k,),
    normal n (k, 3) from other to body. Each point moves with its body, the normal with the body whose face is the
    manifold's reference (``manifold``: ``CODE_FLIP`` in the key's code when it is ``body``'s; a single closest
    point keeps its world normal); the new depth is (b' − a') · n' and the new point their midpoint."""
    a = np.zeros(3)
    b = np.zeros(3)
    n1 = np.zeros(3)
    for c in range(body.shape[0]):
        i, j = body[c], other[c]
        h = 0.5 * depth[c]
        for r in range(3):
            a[r] = point[c, r] - h * normal[c, r]
            b[r] = point[c, r] + h * normal[c, r]
        code = feature[c] & 0xFFFF
        f = i if (code & CODE_FLIP) != 0 else j
        if code == CODE_GJK or code == CODE_EXACT:
            f = -1
        for r in range(3):
            if f < 0:
                n1[r] = normal[c, r]
            else:
                x = 0.0
                for s in range(3):
                    for t in range(3):
                        x += R1[f, r, s] * R0[f, t, s] * normal[c, t]
                n1[r] = x
        d = 0.0
        for r in range(3):
            ar = p1[i, r]
            br = p1[j, r] if j >= 0 else b[r]
            for s in range(3):
                for t in range(3):  # R1 R0ᵀ (x − p0) + p1
                    ar += R1[i, r, s] * R0[i, t, s] * (a[t] - p0[i, t])
                    if j >= 0:
                        br += R1[j, r, s] * R0[j, t, s] * (b[t] - p0[j, t])
            point_out[c, r] = 0.5 * (ar + br)
            normal_out[c, r] = n1[r]
            d += (br - ar) * n1[r]
        depth_out[c] = d


def carried_contacts(contacts, R0, p0, R1, p1):
    """``Contacts`` found at link poses (R0, p0) carried to (R1, p1) (``refresh_contacts``)."""
    k = len(contacts)
    point, normal, depth = np.empty((k, 3)), np.empty((k, 3)), np.empty(k)
    refresh_contacts(contacts.body, contacts.other_bodies(), contacts.point, contacts.normal, contacts.depth,
                     contacts.feature, R0, p0, R1, p1, point, normal, depth)
    return type(contacts)(contacts.body, point, normal, depth, contacts.feature, contacts.friction, contacts.other,
                          contacts.restitution)
