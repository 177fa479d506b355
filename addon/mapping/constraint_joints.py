"""A Rigid Body Constraint as the chain of engine joints that moves its child relative to its parent.

Every axis of a constraint is free, limited (lower < upper), locked (both limits equal) or, for the types
that have no such setting, fixed by the type. In the constraint's frame (the host object's axes at its
origin) the free and limited axes become joints, in Bullet's order (measured against Blender's own rigid
body world, tests/test_addon_constraints.py):

* HINGE: revolute about Z; SLIDER: prismatic along X; PISTON: prismatic along X, then revolute about X;
  POINT: ball; FIXED: weld;
* GENERIC and GENERIC_SPRING (Bullet's 6-DoF constraints): a prismatic joint per free or limited linear
  axis (along the axes of object 1's frame), then the rotation: a hinge, a universal or a ball joint for
  1, 2 or 3 free angular axes. Bullet measures the rotation of object 1 relative to object 2 as the Euler
  angles R = Rx Ry Rz, so the angular limits become bounds on those angles (a ball joint's as Euler angles,
  ``limit_angles``) and a universal joint turns first about its higher axis.

When the tree has object 1 as the child (``flip``), the chain runs the other way: rotation first, then the
prismatic joints along the child's own axes. The sign of a bound follows Bullet's measures: a linear one is
the child's displacement when object 2 is the child; an angle of HINGE and the 6-DoF types is object 1's
relative to object 2 (negated when object 2 is the child); a PISTON's angle is object 2's.

``springs`` (GENERIC_SPRING): per free axis (stiffness, damping) of Bullet's spring on it. Spring type
Blender 2.8 (SPRING2) is a damped spring, N/m and N·s/m (N·m/rad, N·m·s/rad); Blender 2.7 (SPRING1) drives
the spring through a velocity motor that, for damping below 1, leaves it undamped (measured: the mass
oscillates as with damping 0), so its damping is dropped (and named when it is 1 or more, where Bullet's
spring stops at its first turn).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

AXES = np.eye(3)
XYZ = "xyz"
SIMPLE = {"HINGE": ("revolute", 2), "SLIDER": ("prismatic", 0), "POINT": ("spherical", None), "FIXED": ("fixed", None)}
SIX_DOF = ("GENERIC", "GENERIC_SPRING")
JOINT_TYPES = ("HINGE", "SLIDER", "PISTON", "POINT", "FIXED", "GENERIC", "GENERIC_SPRING")  # MOTOR is no joint


@dataclass
class JointPart:
    """One engine joint of a constraint's chain: type, the joint frame's rotation in the host frame (its
    columns: the joint frame's axes), the axis in that frame, per-dof bounds or None, the Euler order of a
    ball joint's bounds, and per-dof (stiffness, damping) or None."""

    jtype: str
    frame: np.ndarray
    axis: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    limits: tuple | None = None
    limit_angles: str = "rotation_vector"
    springs: list | None = None


def _axis_state(c, kind, a):
    """('free' | 'limited' | 'locked', lower, upper) of axis a ('x', 'y', 'z') of kind 'lin' or 'ang'."""
    if not getattr(c, f"use_limit_{kind}_{a}"):
        return "free", -np.inf, np.inf
    lo, hi = getattr(c, f"limit_{kind}_{a}_lower"), getattr(c, f"limit_{kind}_{a}_upper")
    if lo == hi:
        return "locked", lo, hi
    if lo > hi:  # Bullet: a lower limit above the upper one leaves the axis free
        return "free", -np.inf, np.inf
    return "limited", lo, hi


def _bounds(states, negate):
    """(lower (k,), upper (k,)) of the free/limited axes' states, negated and swapped with ``negate``, or None
    when none is limited."""
    if not any(s == "limited" for s, _, _ in states):
        return None
    lo = np.array([l for _, l, _ in states], float)
    hi = np.array([h for _, _, h in states], float)
    return (-hi, -lo) if negate else (lo, hi)


def _spring(c, kind, a, spring_type):
    """(stiffness, damping) of Bullet's spring on axis a, or None when off."""
    key = f"use_spring_{a}" if kind == "lin" else f"use_spring_ang_{a}"
    if not getattr(c, key):
        return None
    tag = a if kind == "lin" else f"ang_{a}"
    k, d = float(getattr(c, f"spring_stiffness_{tag}")), float(getattr(c, f"spring_damping_{tag}"))
    return (k, d if spring_type == "SPRING2" else 0.0)


def constraint_parts(c, flip: bool) -> list:
    """The JointParts of constraint ``c`` from parent to child (``flip``: object 1 is the child)."""
    if c.type in SIMPLE:
        jtype, ax = SIMPLE[c.type]
        axis = AXES[ax] if ax is not None else AXES[2]
        limits = None
        if c.type == "HINGE" and c.use_limit_ang_z:
            limits = _bounds([("limited", c.limit_ang_z_lower, c.limit_ang_z_upper)], negate=not flip)
        if c.type == "SLIDER" and c.use_limit_lin_x:
            limits = _bounds([("limited", c.limit_lin_x_lower, c.limit_lin_x_upper)], negate=flip)
        return [JointPart(jtype, np.eye(3), axis, limits)]
    if c.type == "PISTON":
        lin = _axis_state(c, "lin", "x")
        ang = _axis_state(c, "ang", "x")
        parts = [JointPart("prismatic", np.eye(3), AXES[0], _bounds([lin], flip)) if lin[0] != "locked" else None,
                 JointPart("revolute", np.eye(3), AXES[0], _bounds([ang], flip)) if ang[0] != "locked" else None]
        parts = [p for p in parts if p is not None] or [JointPart("fixed", np.eye(3))]
        return parts[::-1] if flip else parts
    if c.type not in SIX_DOF:
        raise ValueError(f"constraint type {c.type} is not a joint")
    spring_type = getattr(c, "spring_type", "SPRING2")
    springs = c.type == "GENERIC_SPRING"
    linear = []
    for i, a in enumerate(XYZ):
        state = _axis_state(c, "lin", a)
        if state[0] != "locked":
            spring = [_spring(c, "lin", a, spring_type)] if springs else None
            linear.append(JointPart("prismatic", np.eye(3), AXES[i], _bounds([state], flip), springs=spring))
    free = [(i, a, _axis_state(c, "ang", a)) for i, a in enumerate(XYZ)]
    free = [(i, a, s) for i, a, s in free if s[0] != "locked"]
    if not flip:  # object 2 is the child: its rotation is (Rx Ry Rz)ᵀ = Rz Ry Rx of negated angles
        free = free[::-1]
    negate = not flip
    states = [s for _, _, s in free]
    spring = [_spring(c, "ang", a, spring_type) for _, a, _ in free] if springs else None
    if len(free) == 0:
        rot = JointPart("fixed", np.eye(3))
    elif len(free) == 1:
        rot = JointPart("revolute", np.eye(3), AXES[free[0][0]], _bounds(states, negate), springs=spring)
    elif len(free) == 2:  # universal: about its frame's x, then its y — the two free axes in turn order
        x, y = AXES[free[0][0]], AXES[free[1][0]]
        rot = JointPart("universal", np.column_stack([x, y, np.cross(x, y)]), AXES[2], _bounds(states, negate),
                        springs=spring)
    else:  # ball: dofs about x, y, z of its frame (the host's); bounds on the Euler angles of Bullet's order
        states = [s for _, _, s in sorted(free)]
        spring = [_spring(c, "ang", a, spring_type) for a in XYZ] if springs else None
        rot = JointPart("spherical", np.eye(3), AXES[2], _bounds(states, negate),
                        limit_angles="XYZ" if negate else "ZYX", springs=spring)
    return [rot] + linear if flip else linear + [rot]


def locked_offsets(c) -> list:
    """Axes locked at a non-zero value (Bullet pulls them there from the first step; the bake holds them
    where they start): names for the Scene Summary."""
    if c.type not in SIX_DOF + ("PISTON",):
        return []
    out = []
    for kind in ("lin", "ang"):
        for a in (XYZ if c.type in SIX_DOF else "x"):
            state, lo, _ = _axis_state(c, kind, a)
            if state == "locked" and lo != 0.0:
                out.append(f"limit_{kind}_{a}")
    return out


def closable_kind(parts) -> str | None:
    """The loop-closure kind that closes a loop with the same freedom as ``parts`` (a single rotational
    joint), or None (a chain with a slide cannot close a loop)."""
    if len(parts) != 1:
        return None
    return {"revolute": "hinge", "spherical": "point", "fixed": "fixed", "universal": "universal"}.get(parts[0].jtype)
