"""Contact between bodies where it is cheap: spheres and capsules against each other.

Every sphere or capsule is a segment a–b (a = b for a sphere) swept by a radius;
two of them touch when the closest points of their segments (Ericson, *Real-Time
Collision Detection*, §5.1.9) are nearer than the radii's sum. Boxes collide
with the ground only. Bodies joined by a joint (parent and child) never collide:
their shapes overlap at the joint by construction.

A pair contact is reported on the first body with the normal pointing from the
second body to it (``Contacts.other``), at the midpoint of the two surfaces.
"""
from __future__ import annotations

import numpy as np

from .shapes import BOX, CAPSULE, Contacts

EPS = 1e-12


def segment_shapes(shapes: dict):
    """(bodies (m,), a (m, 3), b (m, 3) link-frame segment ends, radius (m,), friction (m,)) of the
    spheres and capsules in ``shapes`` ({body: ContactShape})."""
    rows = []
    for body, s in shapes.items():
        if s.kind == BOX:
            continue
        half = s.axis * s.half[0] if s.kind == CAPSULE else np.zeros(3)
        rows.append((body, s.center - half, s.center + half, s.radius, s.friction))
    if not rows:
        return np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros(0)
    body, a, b, r, mu = zip(*rows)
    return np.array(body, np.int64), np.array(a), np.array(b), np.array(r, float), np.array(mu, float)


def candidate_pairs(model, bodies: np.ndarray):
    """(i, j) index arrays into ``bodies`` of every pair that may collide: different bodies not
    joined by a joint."""
    i, j = np.triu_indices(len(bodies), k=1)
    bi, bj = bodies[i], bodies[j]
    parent = model.body_parent
    keep = (bi != bj) & (parent[bi] != bj) & (parent[bj] != bi)
    return i[keep], j[keep]


def closest_segment_points(p1, q1, p2, q2):
    """Parameters s, t (m,) in [0, 1] of the closest points p1 + s (q1 − p1), p2 + t (q2 − p2)."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e, f = (d1 * d1).sum(1), (d2 * d2).sum(1), (d2 * r).sum(1)
    c, b = (d1 * r).sum(1), (d1 * d2).sum(1)
    safe_a, safe_e = np.where(a > EPS, a, 1.0), np.where(e > EPS, e, 1.0)
    denom = a * e - b * b
    s = np.where(denom > EPS, np.clip((b * f - c * e) / np.where(denom > EPS, denom, 1.0), 0.0, 1.0), 0.0)
    t = (b * s + f) / safe_e
    s = np.where(t < 0.0, np.clip(-c / safe_a, 0.0, 1.0), np.where(t > 1.0, np.clip((b - c) / safe_a, 0.0, 1.0), s))
    t = np.clip(t, 0.0, 1.0)
    # degenerate segments (spheres): the other's parameter alone decides
    s = np.where(a <= EPS, 0.0, np.where(e <= EPS, np.clip(-c / safe_a, 0.0, 1.0), s))
    t = np.where(e <= EPS, 0.0, np.where(a <= EPS, np.clip(f / safe_e, 0.0, 1.0), t))
    return s, t


def body_contacts(R_link, p_link, segments, pairs, friction: float, margin: float = 0.0) -> Contacts:
    """Contacts between the ``segments`` (``segment_shapes``) of the candidate ``pairs`` at link
    poses R_link (n, 3, 3), p_link (n, 3); ``friction``: μ for shapes without their own."""
    body, a, b, radius, mu = segments
    i, j = pairs
    if len(i) == 0:
        return Contacts(np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0),
                        np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64))
    wa = p_link[body] + np.einsum("kij,kj->ki", R_link[body], a)
    wb = p_link[body] + np.einsum("kij,kj->ki", R_link[body], b)
    # bounding-sphere cull before the exact test
    centre, reach = 0.5 * (wa + wb), 0.5 * np.linalg.norm(wb - wa, axis=1) + radius
    near = np.linalg.norm(centre[i] - centre[j], axis=1) <= reach[i] + reach[j] + margin
    i, j = i[near], j[near]
    s, t = closest_segment_points(wa[i], wb[i], wa[j], wb[j])
    ci = wa[i] + s[:, None] * (wb[i] - wa[i])
    cj = wa[j] + t[:, None] * (wb[j] - wa[j])
    diff = ci - cj
    dist = np.linalg.norm(diff, axis=1)
    depth = radius[i] + radius[j] - dist
    keep = depth >= -margin
    i, j, ci, cj, diff, dist, depth = i[keep], j[keep], ci[keep], cj[keep], diff[keep], dist[keep], depth[keep]
    normal = np.where(dist[:, None] > EPS, diff / np.where(dist > EPS, dist, 1.0)[:, None], np.array([0.0, 0.0, 1.0]))
    point = 0.5 * ((ci - radius[i, None] * normal) + (cj + radius[j, None] * normal))
    mi, mj = mu[i], mu[j]
    pair_mu = np.where(np.isnan(mi) | np.isnan(mj), friction, np.sqrt(np.abs(mi * mj)))
    return Contacts(body[i], point, normal, depth, j.astype(np.int64), pair_mu, body[j])
