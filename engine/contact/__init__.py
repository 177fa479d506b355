"""Ground contact with Coulomb friction through the contact-space inertia (seed 004, §6.3).

``shapes`` detects contacts of body shapes with a ground plane; ``jacobian``
gives the contact Jacobians N (normal) and D (friction) in generalized
velocities; ``space`` forms the contact-space inertia [N D]ᵀ M⁻¹ [N D] either
from the Θ(n²) inverse (``engine.minv``) or from CRBA + Cholesky; ``pgs``
solves for the impulses; ``handler`` applies them inside a time step.
"""
from .shapes import Contacts, ContactShape, Ground, colliding_bodies, contact_shape, ground_contacts

__all__ = ["Contacts", "ContactShape", "Ground", "colliding_bodies", "contact_shape", "ground_contacts"]
