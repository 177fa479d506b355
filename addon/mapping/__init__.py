"""Blender → engine: armatures, rigid objects, constraints and links become an ``engine.Scene``.

Translation only; every number it produces is a length, mass, frame or
stiffness read from Blender data (no physics here). The scene is built at the
*current* frame: each body's link frame is its joint frame there, so the start
configuration is the model's neutral q and the motion is relative to it.

* Armature bones (armatures with ``redmax.simulate``): one body per bone,
  joint at the bone head, link frame = the posed bone frame (Y along the
  bone). Joint type from the IK locks (two locked → hinge about the free
  axis, one → universal, none → ball, three → fixed) unless the bone's
  RedMax setting overrides it; the root bone is fixed to the world at its head
  or free. Mass from the bone setting or length × the armature's linear density.
* Rigid objects: Rigid Body Constraints form the joint tree (object1 = parent,
  object2 = child, joint frame = the constraint host's frame), each a chain of
  engine joints (``constraint_joints``: HINGE, SLIDER, PISTON, POINT, FIXED,
  GENERIC and GENERIC_SPRING with their free, limited and locked axes and
  springs); MOTOR constraints become motors. Constraints that close a loop
  become loop closures. Objects without a joint to the world float freely.
  Passive rigid bodies, empties (unless marked Simulate) and any object that is
  not simulated are part of the world — or moving anchors when Blender moves
  them by their animation (``anchors``). Per-body and world settings:
  ``rigid_settings``, ``settings`` (what is honoured, what is named), force
  fields: ``fields``.
* Contact shapes (used when the scene's *Collide with ground plane* is on): an
  object's local bounding box (scaled, in the object's axes), a bone's capsule
  along Y (bone length; the bone's contact radius or 10 % of the length); the
  per-object/per-bone *Collide* off gives the shape ``"collide": False``. Mass
  and inertia do not depend on them.
* Links (``scene.redmax.links``): cables, springs and loop closures between
  two objects or pose bones; an end on a non-simulated object is anchored in
  the world.

Errors are ``MappingError`` naming the object, bone, constraint or link.

Modules: ``common`` (Mapping, Target, frames, the body builder), ``armatures``, ``rigid_objects``,
``links``, ``build`` (the whole scene; ``scene_facts``), ``summary`` (the Scene Summary).
"""
from .armatures import limit_euler_order
from .build import build, build_scene, sample_timeline, scene_facts
from .common import WORLD, Mapping, MappingError, Target, check_matrix, describe, in_scene, matrix, rigid_part
from .rigid_objects import LiveRig
from .summary import simulated_reason, summary

__all__ = ["build", "build_scene", "sample_timeline", "scene_facts", "summary", "simulated_reason", "Mapping", "MappingError", "Target",
           "WORLD", "LiveRig", "check_matrix", "describe", "in_scene", "matrix", "rigid_part", "limit_euler_order"]
