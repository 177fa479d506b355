"""Contact inside a time step: detect at q, then correct the step's new velocity.

``ContactHandler.apply(q, v, metric)`` — the contact stage of a step — takes the
unconstrained end-of-step velocity v* of any reduced-coordinate stepper
(explicit or RedMax) and returns

    v⁺ = v* + M⁻¹ Jᵀ λ,

λ from ``pgs`` on the contact-space inertia of ``space``; the stepper then moves
q with v⁺ (semi-implicit Euler). The normal target velocity per contact is

* a gap still open (depth < 0, within ``margin``): u_n ≥ depth / h — the contact
  may close during the step but not overshoot (speculative contact, no tunnelling);
* touching: u_n ≥ β (depth − slop) / h — Baumgarte push-out of penetration beyond
  ``slop`` at rate β;
* an impact (approaching faster than ``bounce_speed`` and touching, or about to
  cross the gap within the step): at least −e·u_n*, the ground's restitution e (0 between bodies).

Impulses are warm-started from the previous step by (body, feature) and
``last`` keeps the step's contacts, impulses and sweeps for tests and stats.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..algorithms.kinematics import link_poses
from .pgs import solve_contacts
from .pairs import body_contacts, candidate_pairs, segment_shapes
from .shapes import Contacts, candidate_points, colliding_bodies, ground_contacts
from .space import METHODS, ContactSpace


@dataclass
class ContactStep:
    contacts: Contacts
    impulses: np.ndarray  # (3k,) (λ_n, λ_t1, λ_t2) per contact, N·s
    sweeps: int
    A: np.ndarray         # contact-space inertia (3k, 3k)


class ContactHandler:
    """Contact of a scene's shapes with ``scene.ground`` and, when ``scene.set_body_contacts`` was
    called, between its spheres and capsules; ``method``: ``"minv"``, ``"cholesky"`` or
    ``"impulse"`` (``space``)."""

    def __init__(self, scene, dt: float, *, method: str = "minv", threads: int = 1, max_iter: int = 200,
                 tol: float = 1e-10, margin: float | None = None, baumgarte: float = 0.2, slop: float = 2e-4,
                 bounce_speed: float = 0.1, speculative_speed: float = 0.0):
        if method not in METHODS:
            raise ValueError(f"contact_method must be one of {', '.join(METHODS)}, got {method!r}")
        if scene.ground is None and scene.body_contact is None:
            raise ValueError(f"scene '{scene.name}' has no contact (call scene.set_ground() or set_body_contacts())")
        self.model = scene.model
        self.ws = scene.model.make_workspace()  # the stage's own kinematics workspace
        self.ground = scene.ground
        if self.ground is not None:
            self._points = candidate_points(colliding_bodies(self.model, scene.contact_bodies))
        self.pair_friction = None
        if scene.body_contact is not None:
            self.pair_friction = scene.body_contact["friction"]
            self._segments = segment_shapes(colliding_bodies(self.model, scene.body_contact["bodies"]))
            self._pairs = candidate_pairs(self.model, self._segments[0])
        self.dt = float(dt)
        self.method, self.threads, self.max_iter, self.tol = method, int(threads), int(max_iter), float(tol)
        if not (np.isfinite(speculative_speed) and speculative_speed >= 0):
            raise ValueError(f"contact speculative_speed must be ≥ 0 m/s, got {speculative_speed}")
        # detection margin: contacts are looked for this far; with speculative_speed it grows with the step
        # so that a body approaching at up to that speed is caught before it passes through (no tunnelling)
        self.margin = 0.02 if margin is None else float(margin)
        if speculative_speed > 0:
            self.margin = max(self.margin, float(speculative_speed) * self.dt)
        self.baumgarte, self.slop, self.bounce_speed = float(baumgarte), float(slop), float(bounce_speed)
        self._warm: dict = {}
        self.last: ContactStep | None = None
        self.seconds = {"detect": 0.0, "space": 0.0, "pgs": 0.0}  # accumulated per stage

    def detect(self, q) -> Contacts:
        R, p = link_poses(self.model, q, ws=self.ws)
        parts = []
        if self.ground is not None:
            parts.append(ground_contacts(self.model, R, p, self.ground, self.margin, points=self._points))
        if self.pair_friction is not None:
            parts.append(body_contacts(R, p, self._segments, self._pairs, self.pair_friction, self.margin))
        return Contacts.concatenate(parts)

    def normal_targets(self, contacts: Contacts, u_n_free: np.ndarray) -> np.ndarray:
        h, d = self.dt, contacts.depth
        push = self.baumgarte * np.maximum(d - self.slop, 0.0) / h
        target = np.where(d < 0.0, d / h, push)
        # an impact this step (touching, or a gap the free motion would cross) bounces back at e·|u_n|
        impact = (u_n_free < -self.bounce_speed) & (u_n_free * h < np.minimum(d, 0.0))
        e = np.where(contacts.other_bodies() < 0, self.ground.restitution if self.ground is not None else 0.0, 0.0)
        return np.where(impact, np.maximum(target, -e * u_n_free), target)

    def apply(self, q, v, metric=None) -> np.ndarray:
        """v⁺ (nv,) = v* + M⁻¹ Jᵀ λ for the contacts at configuration q (nq,), v* (nv,); ``metric``:
        the step's own M̃ as (link inertia blocks (n, 6, 6), joint diagonal (nv,)) (see ``space``),
        M when None."""
        inertia, joint_diag = (None, None) if metric is None else metric
        t0 = time.perf_counter()
        contacts = self.detect(q)
        k = len(contacts)
        t1 = time.perf_counter()
        self.seconds["detect"] += t1 - t0
        if k == 0:
            self.last, self._warm = ContactStep(contacts, np.zeros(0), 0, np.zeros((0, 0))), {}
            return v
        space = ContactSpace(self.model, q, contacts, self.method, self.threads, inertia, joint_diag, self.ws)
        t3 = time.perf_counter()
        self.seconds["space"] += t3 - t1
        u_free = space.velocity(v)
        keys = list(zip(contacts.body.tolist(), contacts.other_bodies().tolist(), contacts.feature.tolist()))
        lam0 = np.concatenate([self._warm.get(key, np.zeros(3)) for key in keys])
        lam, _, sweeps = solve_contacts(space.A, u_free, self.normal_targets(contacts, u_free[0::3]),
                                        contacts.friction, lam0, max_iter=self.max_iter, tol=self.tol)
        self._warm = {key: lam[3 * c:3 * c + 3].copy() for c, key in enumerate(keys)}
        self.last = ContactStep(contacts, lam, sweeps, space.A)
        v_new = v + space.response(lam)
        self.seconds["pgs"] += time.perf_counter() - t3
        return v_new


def contact_stage(scene, dt: float, options: dict | None = None) -> ContactHandler | None:
    """The contact stage of a reduced-coordinate stepper: a ``ContactHandler`` when the scene has a
    ground or body contacts, else None. options: ``method``, ``threads`` and the handler's keywords."""
    if scene.ground is None and scene.body_contact is None:
        return None
    return ContactHandler(scene, dt, **(options or {}))
