"""What a Scene collides (``engine.Scene`` inherits ``ContactsMixin``; docs/contact.md): the ground
plane (``set_ground``), the bodies' shapes among themselves (``set_body_contacts``), passive colliders of
any shape (``add_static_collider``) and the body pairs that never collide (``disable_collision``). The
mixin keeps its state on the Scene (``ground``, ``contact_bodies``, ``body_contact``, ``static_colliders``,
``collision_exclusions``: set in ``Scene.__init__`` and frozen by ``Scene.finalize``)."""
from __future__ import annotations

import numpy as np

from .contact.colliders import StaticCollider, static_collider
from .contact.shapes import Ground, colliding_bodies
from .errors import ModelError
from .model import _float_array as _floats, _rotation_matrix as _rotation  # the builder's checks


class ContactsMixin:
    """Scene methods that say what collides with what (the Scene supplies ``model`` and ``body``)."""

    def set_ground(self, height: float = 0.0, normal=(0.0, 0.0, 1.0), friction: float = 0.8,
                   restitution: float = 0.0, *, bodies=None) -> Ground:
        """Let the bodies' contact shapes collide with the plane normal·x = height (``engine.contact``).

        friction: Coulomb μ ≥ 0; restitution e in [0, 1]; bodies: names or indices
        (default: every body with a contact shape). Errors name a body without a shape.
        """
        try:
            ground = Ground(height, normal, friction, restitution)
        except ModelError:
            raise
        except (TypeError, ValueError) as e:
            raise ModelError(f"ground: height, normal, friction and restitution must be numbers ({e})") from None
        colliding_bodies(self.model, bodies)  # validates every shape now, naming the body
        self.ground = ground
        self.contact_bodies = None if bodies is None else [self.body(b, "ground contact") for b in bodies]
        return ground

    def set_body_contacts(self, friction: float = 0.5, *, bodies=None) -> None:
        """Let the bodies' shapes collide with each other (``engine.contact``; bodies joined by a joint or a
        loop closure, or passed to ``disable_collision``, never collide). friction: μ ≥ 0 of a pair whose
        shapes give none of their own; bodies: names or indices (default: every body with a shape)."""
        Ground(friction=friction)  # validates μ with the ground's message
        chosen = colliding_bodies(self.model, None if bodies is None else [self.body(b, "body contact") for b in bodies],
                                  "body contact")
        self.body_contact = {"friction": float(friction), "bodies": sorted(chosen)}

    def add_static_collider(self, name: str, shape: dict, *, position=(0.0, 0.0, 0.0), rotation=None,
                            friction: float = 0.5, restitution: float = 0.0, bodies=None) -> StaticCollider:
        """A passive object the bodies' shapes collide with (world coordinates; docs/contact.md).

        shape: {"type": "mesh", "vertices": (n, 3), "triangles": (T, 3)} (any triangle mesh: floors,
        ramps, stairs, terrain), {"type": "plane", "normal": (3,)} (through ``position``), or any body
        shape dict (box, sphere, …, convex, compound). position (3,) m and rotation (3, 3) or quaternion
        (w, x, y, z) place it; friction μ ≥ 0 and restitution e in [0, 1] are combined with each body
        shape's own as Blender's Rigid Body does (the product; a shape without its own takes these);
        bodies: names or indices it touches (default: every body with a shape)."""
        if not isinstance(name, str) or not name:
            raise ModelError(f"static collider: name must be a non-empty string, got {name!r}")
        if any(c.name == name for c in self.static_colliders):
            raise ModelError(f"static collider '{name}': a collider with this name already exists")
        where = f"static collider '{name}'"
        pos = _floats(position, f"{where}: position").reshape(-1)
        if pos.shape != (3,) or not np.all(np.isfinite(pos)):
            raise ModelError(f"{where}: position must be 3 finite numbers, got {position!r}")
        R = np.eye(3) if rotation is None else _rotation(rotation, f"{where}: rotation")
        chosen = None
        if bodies is not None:
            chosen = tuple(sorted(colliding_bodies(self.model, [self.body(b, where) for b in bodies], where)))
        collider = static_collider(name, shape, pos, R, friction, restitution, chosen)
        self.static_colliders.append(collider)
        return collider

    def disable_collision(self, body_a, body_b) -> None:
        """The two bodies never collide with each other (Blender's *Disable Collisions* of a constraint)."""
        a, b = self.body(body_a, "disable_collision"), self.body(body_b, "disable_collision")
        if a < 0 or b < 0 or a == b:
            raise ModelError(f"disable_collision: needs two different bodies, got {body_a!r} and {body_b!r}")
        self.collision_exclusions.append((min(a, b), max(a, b)))

    @property
    def has_contact(self) -> bool:
        """A ground, body contacts or a static collider: the scene needs a contact stage."""
        return self.ground is not None or self.body_contact is not None or bool(self.static_colliders)
