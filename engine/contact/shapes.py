"""The contact vocabulary: ``Contacts`` (what a detection finds), the ground plane, which bodies collide.

A body collides when its ``shape=`` dict (``ModelBuilder.add_body``; every kind and key in docs/contact.md,
validated by ``geometry.parse_shape``) has no ``"collide": False``. The engine's detection is compiled
(``detection.CollisionDetector``: every shape kind, the ground as a plane collider). ``ground_contacts`` is
the plain numpy test of spheres, capsules and boxes against a plane (their lowest point, cap centres and
corners), kept as an independent check of it in the tests.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..errors import ModelError
from ..geometry import BOX, CAPSULE, SHAPE_TYPES, SPHERE, ContactShape, parse_shape, parse_shapes  # noqa: F401  (re-exported)

_CORNERS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=float)


@dataclass(frozen=True)
class Ground:
    """The plane {x : normal·x = height} with its friction coefficient μ and restitution e."""

    height: float = 0.0
    normal: tuple = (0.0, 0.0, 1.0)
    friction: float = 0.8
    restitution: float = 0.0

    def __post_init__(self):
        n = np.asarray(self.normal, float).reshape(-1)
        if n.shape != (3,) or not np.all(np.isfinite(n)) or np.linalg.norm(n) < 1e-12:
            raise ModelError(f"ground: normal must be 3 finite numbers, not all zero; got {self.normal!r}")
        object.__setattr__(self, "normal", tuple(float(x) for x in n / np.linalg.norm(n)))
        for name, lo, hi in (("height", -np.inf, np.inf), ("friction", 0.0, np.inf), ("restitution", 0.0, 1.0)):
            v = getattr(self, name)
            if not isinstance(v, (int, float, np.floating, np.integer)) or not np.isfinite(v) or not lo <= v <= hi:
                bound = "≥ 0" if name == "friction" else "in [0, 1]" if name == "restitution" else "finite"
                raise ModelError(f"ground: {name} must be {bound}, got {v!r}")
            object.__setattr__(self, name, float(v))

    @classmethod
    def slope(cls, angle: float, *, friction: float = 0.8, restitution: float = 0.0, height: float = 0.0) -> "Ground":
        """A plane through height·n tilted by ``angle`` (rad) about the world y axis (downhill towards +x)."""
        return cls(height, (np.sin(angle), 0.0, np.cos(angle)), friction, restitution)


class Contacts(NamedTuple):
    """k contact candidates: arrays body (k,), point (k, 3) world contact point, normal (k, 3)
    (pushing ``body`` away from the ground, a static collider or ``other``), depth (k,) penetration (m,
    positive = penetrating, negative = a gap still open), feature (k,) an int64 key that identifies the
    contact from one step to the next, friction (k,) μ, other (k,) the second body (−1: the ground or a
    static collider; None: all −1), restitution (k,) e of the pair (None: the ground's for ground
    contacts, 0 between bodies)."""

    body: np.ndarray
    point: np.ndarray
    normal: np.ndarray
    depth: np.ndarray
    feature: np.ndarray
    friction: np.ndarray
    other: np.ndarray | None = None
    restitution: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.body.shape[0])

    def other_bodies(self) -> np.ndarray:
        """(k,) int64: the second body of each contact, −1 for the ground or a static collider."""
        return np.full(len(self), -1, np.int64) if self.other is None else np.asarray(self.other, np.int64)

    def involves(self, flags) -> np.ndarray:
        """(k,) bool: the contacts with a flagged body (flags (n,) bool) on either side."""
        other = self.other_bodies()
        return flags[self.body] | ((other >= 0) & flags[np.maximum(other, 0)])

    def flag_bodies(self, flags, which) -> None:
        """Flag (flags (n,) bool, in place) both bodies of the contacts picked by which ((k,) bool)."""
        other = self.other_bodies()
        flags[self.body[which]] = True
        flags[other[which & (other >= 0)]] = True

    @staticmethod
    def empty() -> "Contacts":
        return Contacts(np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros(0, np.int64),
                        np.zeros(0), np.zeros(0, np.int64), np.zeros(0))

    def select(self, keep) -> "Contacts":
        """The contacts picked by keep (a (k,) bool mask or indices), in their order."""
        return Contacts(*(None if f is None else f[keep] for f in self))

    def with_depth(self, depth) -> "Contacts":
        """The same contacts with the depths (k,) (``_replace`` would read ``__len__``: the count, not the fields')."""
        return Contacts(*(depth if f == "depth" else getattr(self, f) for f in Contacts._fields))

    @staticmethod
    def concatenate(parts) -> "Contacts":
        parts = [c for c in parts if len(c)] or list(parts)[:1]
        if not parts:
            return Contacts.empty()
        cols = [np.concatenate([getattr(c, f) for c in parts]) for f in Contacts._fields[:6]]
        rest = [np.zeros(len(c)) if c.restitution is None else c.restitution for c in parts]
        return Contacts(*cols, np.concatenate([c.other_bodies() for c in parts]), np.concatenate(rest))


def contact_shapes(model, body: int) -> list:
    """The validated contact shapes of ``body``: one, the parts of a compound, or none (no shape, or drawn only).
    Parsed once per model and body (``Model.shape_parts``)."""
    shape = model.body_shapes[body]
    if not shape or not shape.get("collide", True):
        return []
    return list(model.shape_parts(body))


def contact_shape(model, body: int) -> ContactShape | None:
    """The validated contact shape of ``body`` (None: no shape, or drawn only; a compound: its first part —
    ``contact_shapes`` gives them all)."""
    parts = contact_shapes(model, body)
    return parts[0] if parts else None


def colliding_bodies(model, bodies=None, what: str = "ground contact") -> dict:
    """{body: ContactShape} for ``bodies`` (default: every body with a contact shape).

    A body named explicitly must have a contact shape: the error names it.
    """
    if bodies is None:
        found = {b: s for b in range(model.n_bodies) if (s := contact_shape(model, b)) is not None}
        if not found:
            raise ModelError(f"{what}: no body has a contact shape (give add_body a shape= dict: "
                             "sphere, box or capsule)")
        return found
    out = {}
    for ref in bodies:
        b = model.body_index(ref) if isinstance(ref, str) else int(ref)
        if not 0 <= b < model.n_bodies:
            raise ModelError(f"{what}: no body with index {ref!r}")
        s = contact_shape(model, b)
        if s is None:
            raise ModelError(f"{what}: body '{model.body_names[b]}' has no contact shape "
                             "(give it a shape= dict: sphere, box or capsule)")
        out[b] = s
    return out


def candidate_points(shapes: dict):
    """Per shape kind, link-frame test points: (bodies (m,), local points (m, 3), radius (m,), feature (m,))."""
    body, local, radius, feature, mu = [], [], [], [], []
    for b, s in shapes.items():
        if s.kind == SPHERE:
            pts, feats, r = s.center[None, :], [0], s.radius
        elif s.kind == CAPSULE:
            a = s.axis * s.half[0]
            pts, feats, r = np.stack([s.center - a, s.center + a]), [0, 1], s.radius
        else:
            pts, feats, r = s.center + (_CORNERS * s.half) @ s.rotation.T, list(range(8)), 0.0
        body += [b] * len(feats)
        local.append(pts)
        radius += [r] * len(feats)
        feature += feats
        mu += [s.friction] * len(feats)
    return (np.array(body, np.int64), np.concatenate(local).reshape(-1, 3), np.array(radius, float),
            np.array(feature, np.int64), np.array(mu, float))


def ground_contacts(model, R_link, p_link, ground: Ground, margin: float = 0.0, shapes: dict | None = None,
                    points=None) -> Contacts:
    """Contacts of the bodies' shapes with ``ground`` at link poses R_link (n, 3, 3), p_link (n, 3).

    Candidates closer than ``margin`` (m) are kept too (depth ≥ −margin), so a
    solver sees a contact one step before it closes. ``shapes``: from
    ``colliding_bodies`` (default: all bodies with shapes); ``points``: their
    ``candidate_points`` (sphere centre, capsule cap centres, box corners), which a
    caller stepping many times computes once. All points are checked at once.
    """
    if points is None:
        points = candidate_points(colliding_bodies(model) if shapes is None else shapes)
    body, local, radius, feature, mu = points
    n = np.asarray(ground.normal)
    world = p_link[body] + np.einsum("kij,kj->ki", R_link[body], local)
    depth = ground.height - world @ n + radius
    keep = depth >= -margin
    k = int(keep.sum())
    mu = np.where(np.isnan(mu[keep]), ground.friction, mu[keep])
    return Contacts(body[keep], world[keep] - radius[keep, None] * n, np.tile(n, (k, 1)), depth[keep], feature[keep], mu)
