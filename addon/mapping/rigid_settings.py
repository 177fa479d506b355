"""Per-body and per-constraint Rigid Body settings → the engine: Damping (velocity decay), Breakable, Disable
Collisions and MOTOR constraints; what the bake cannot honour goes to the Builder's ``ignore`` list.

* Damping Translation / Rotation d: Bullet scales a body's linear and angular velocity by (1 − d)^h every step
  h (btRigidBody::applyDamping; checked against Blender's playback in tests/test_addon_rigid_settings.py),
  the decay of rate −ln(1 − d) per second: ``engine.Scene.set_velocity_decay`` (d = 1 stops the body).
* Breakable: Bullet breaks a constraint when one of its rows' impulse over one substep of the rigid body
  world (Speed / (fps · Substeps Per Frame) seconds) exceeds the Breaking Threshold (N·s):
  ``engine.Scene.set_breakable`` with that interval.
* MOTOR: Bullet's generic constraint with every axis free and a velocity motor about (angular) and along
  (linear) the constraint's X axis; measured in Blender: object 2 turns at −target velocity relative to object
  1 about X (object 1 at +target relative to object 2), and *Max Impulse* bounds the motor's torque in N·m
  (N), whatever the substeps (Bullet divides it by the step's rate).
"""
from __future__ import annotations

import math

from .common import WORLD, matrix, rigid_part
from .constraint_joints import locked_offsets
from .settings import DEACTIVATION_SETTINGS, ui_names

STOP_RATE = 1e6  # 1/s: Damping 1 stops a body every step


def decay_rate(d: float) -> float:
    """The decay rate (1/s) of Bullet's damping factor d ∈ [0, 1]: (1 − d)^t = exp(−rate·t)."""
    return STOP_RATE if d >= 1.0 else -math.log(1.0 - max(d, 0.0))


def body_settings(b, ob) -> None:
    """The rigid body settings of simulated object ``ob`` that act on its motion."""
    rb = ob.rigid_body
    if rb is None:
        return
    if rb.linear_damping > 0 or rb.angular_damping > 0:
        b.decay[ob.name] = (decay_rate(rb.linear_damping), decay_rate(rb.angular_damping))
    if rb.use_deactivation:
        b.ignore(f"object '{ob.name}'", f"Deactivation ({ui_names('RigidBodyObject', DEACTIVATION_SETTINGS)})",
                 "RedMax does not put slow bodies to sleep: they keep moving where Bullet would freeze them")
    locks = [f"{kind} {'XYZ'[i]}" for kind, flags in (("Location", ob.lock_location), ("Rotation", ob.lock_rotation))
             for i, on in enumerate(flags) if on]
    if locks:
        b.ignore(f"object '{ob.name}'", f"Transform lock ({', '.join(locks)})",
                 "Bullet keeps a locked axis of an active body still; the bake lets it move (add a constraint)")


def constraint_settings(b, host, child: str, parent_ob) -> None:
    """Breakable, Disable Collisions and the other settings of the constraint on ``host`` whose child body is
    ``child`` (the last joint of its chain) below ``parent_ob`` (None: the world)."""
    c = host.rigid_body_constraint
    what = f"rigid body constraint on '{host.name}'"
    if c.use_breaking:
        b.breakable.append((child, float(c.breaking_threshold), what))
    if c.disable_collisions and parent_ob is not None:
        b.no_collision.append((b.anchor_bodies.get(parent_ob, parent_ob.name), child))
    other_settings(b, c, what)


def other_settings(b, c, what: str) -> None:
    """Settings of any Rigid Body Constraint ``c`` (joint, closure or motor) that the bake does not honour."""
    if c.use_override_solver_iterations:
        b.ignore(what, ui_names("RigidBodyConstraint", ["use_override_solver_iterations", "solver_iterations"]),
                 "RedMax solves constraints exactly each step, not by a number of iterations")
    offsets = locked_offsets(c)
    if offsets:
        b.ignore(what, ", ".join(offsets), "an axis locked at a non-zero value is held where it starts (Bullet "
                                           "pulls it to that value at the first step)")
    if c.type == "GENERIC_SPRING" and c.spring_type == "SPRING1":
        damped = [a for a in ("x", "y", "z", "ang_x", "ang_y", "ang_z")
                  if getattr(c, f"use_spring_{a}") and getattr(c, f"spring_damping_{a}") >= 1.0]
        if damped:
            b.ignore(what, "Blender 2.7 spring damping ≥ 1",
                     "Bullet's Blender 2.7 spring stops at its first turn with damping 1 or more; the bake "
                     "keeps it an undamped spring, as Bullet runs it below 1 (use Blender 2.8 springs to damp)")


def add_motor(b, host, dynamic_set, anchor_of) -> None:
    """A MOTOR constraint's angular and linear motors between its two objects (``engine.Scene.add_motor``)."""
    c = host.rigid_body_constraint
    what = f"rigid body constraint on '{host.name}'"
    ends = []
    for o in (c.object1, c.object2):
        if o in dynamic_set:
            ends.append(o.name)
        else:
            ends.append(b.anchor_bodies.get(o) or anchor_of(o) or WORLD)
    if ends[0] == WORLD and ends[1] == WORLD:
        return
    other_settings(b, c, what)
    R, p = rigid_part(matrix(host.matrix_world))
    x = R[:, 0]
    for kind, on, velocity, limit in (("angular", c.use_motor_ang, c.motor_ang_target_velocity, c.motor_ang_max_impulse),
                                      ("linear", c.use_motor_lin, c.motor_lin_target_velocity, c.motor_lin_max_impulse)):
        if on:
            b.motors.append(dict(body_a=ends[0], body_b=ends[1], axis=x, target_velocity=-float(velocity),
                                 max_force=float(limit), kind=kind, point=p, name=f"{host.name} {kind}",
                                 what=what))
    if c.use_breaking:
        b.ignore(what, "Breakable", "a MOTOR holds nothing that could break: Bullet's breaks only its motor")


def apply_decay(scene, decay: dict) -> None:
    """Give the engine scene the velocity decay of each body in ``decay`` ({body name: (linear, angular)})."""
    for name, (lin, ang) in decay.items():
        scene.set_velocity_decay(name, lin, ang)


def substep_interval(bscene) -> float:
    """Simulated seconds of one substep of the rigid body world: the breaking impulse's interval."""
    w = bscene.rigidbody_world
    fps = bscene.render.fps / bscene.render.fps_base
    speed = w.time_scale if w is not None else 1.0
    substeps = w.substeps_per_frame if w is not None else 10
    return float(speed) / fps / max(int(substeps), 1)


def body_names_of(pairs) -> list:
    """Pairs of body names, deduplicated in order."""
    return list(dict.fromkeys(tuple(p) for p in pairs))

