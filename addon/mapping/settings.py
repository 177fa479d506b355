"""Every property of Blender's Rigid Body, Rigid Body Constraint, Rigid Body World, Force Field and Effector
Weights panels, and what a bake does with it: ``HONOURED`` (how) or ``IGNORED`` (why; the Scene Summary names
each one that is set, with its object, under "ignored"). tests/test_addon_settings.py walks ``bl_rna`` and
checks that every property is in one of the two tables and that each ignored one is named when set.

``world_settings`` reads the rigid body world into the Builder (gravity weight, Speed) and names what it does
not honour; ``scan`` names the ignored settings of every rigid body, constraint and field in the scene.
"""
from __future__ import annotations

import bpy

from .fields import KINDS as FIELD_KINDS
from .fields import field_objects

COLLISIONS = "the bake simulates no collisions between objects yet (ground contact aside): "
HONOURED = {
    "RigidBodyObject": {
        "type": "Active: simulated; Passive: part of the world (a moving anchor when Animated and keyed)",
        "enabled": "Dynamic off: held like a passive body (released when it is keyed on)",
        "kinematic": "Animated: a moving anchor following its animation (released when it is keyed off)",
        "mass": "the body's mass (the mesh gives the inertia's shape)",
        "linear_damping": "velocity decay at rate −ln(1 − d) (Bullet's (1 − d)^h per step)",
        "angular_damping": "angular velocity decay at rate −ln(1 − d)",
        "use_start_deactivated": "held while its whole island starts deactivated; woken with an active body",
    },
    "RigidBodyConstraint": {
        "type": "a chain of engine joints (MOTOR: motors)", "spring_type": "Blender 2.8 damped, 2.7 undamped spring",
        "enabled": "disabled constraints are left out", "object1": "parent end", "object2": "child end",
        "disable_collisions": "recorded for the collision stage (the bake does not collide objects yet)",
        "use_breaking": "breaks mid-bake: the child goes on free", "breaking_threshold": "N·s over a world substep",
        **{f"use_limit_{k}_{a}": "joint limit or locked axis" for k in ("lin", "ang") for a in "xyz"},
        **{f"limit_{k}_{a}_{e}": "joint limit" for k in ("lin", "ang") for a in "xyz" for e in ("lower", "upper")},
        **{f"use_spring_{a}": "joint spring" for a in ("x", "y", "z", "ang_x", "ang_y", "ang_z")},
        **{f"spring_{q}_{a}": "joint spring" for q in ("stiffness", "damping")
           for a in ("x", "y", "z", "ang_x", "ang_y", "ang_z")},
        "use_motor_lin": "linear motor", "use_motor_ang": "angular motor",
        "motor_lin_target_velocity": "m/s", "motor_ang_target_velocity": "rad/s",
        "motor_lin_max_impulse": "N (Bullet's force bound)", "motor_ang_max_impulse": "N·m (Bullet's torque bound)",
    },
    "RigidBodyWorld": {
        "collection": "which objects are rigid bodies", "constraints": "which constraints exist",
        "enabled": "the bake simulates also with the world off (it never reads Blender's cache)",
        "time_scale": "Speed: each frame simulates Speed/fps seconds",
        "substeps_per_frame": "the interval of a breaking impulse (the bake steps with RedMax's Substeps)",
        "point_cache": "baked objects leave Blender's simulation; the bake has its own frame range",
        "effector_weights": "the fields' weights and the gravity weight",
    },
    "EffectorWeights": {
        "collection": "only its fields push the bodies", "gravity": "scales gravity", "all": "scales every field",
        **{k: "scales its fields" for k in ("force", "vortex", "wind", "harmonic", "turbulence", "drag")},
        **{k: "weight of a field type the bake does not simulate (that field is named)"
           for k in ("magnetic", "curve_guide", "texture", "charge", "lennardjones", "boid", "smokeflow")},
        "apply_to_hair_growing": "hair only",
    },
    "FieldSettings": {
        "type": "Force, Wind, Vortex, Harmonic, Turbulence, Drag (others named)", "shape": "Point, Line, Plane",
        "falloff_type": "sphere, tube, cone", "z_direction": "both, +Z, −Z", "strength": "per frame",
        "linear_drag": "Drag", "quadratic_drag": "Drag", "harmonic_damping": "Harmonic", "flow": "air damping",
        "size": "Turbulence size", "rest_length": "Harmonic", "falloff_power": "falloff",
        "distance_min": "falloff", "distance_max": "falloff", "radial_min": "falloff", "radial_max": "falloff",
        "radial_falloff": "falloff", "use_min_distance": "falloff", "use_max_distance": "falloff",
        "use_radial_min": "falloff", "use_radial_max": "falloff", "use_gravity_falloff": "Force: 1/d²",
        "use_global_coords": "Turbulence", "apply_to_location": "off: the field pushes nothing",
        "seed": "Turbulence noise seed",
        # settings Blender reads only for particles, cloth, soft bodies or hair (rigid bodies never see them)
        **{k: "not read for rigid bodies" for k in ("apply_to_rotation", "wind_factor", "inflow", "use_2d_force",
                                                    "use_root_coords", "use_object_coords", "use_multiple_springs",
                                                    "texture_mode", "texture_nabla", "texture", "source_object",
                                                    "use_smoke_density", "guide_minimum", "guide_free",
                                                    "use_guide_path_add", "use_guide_path_weight", "guide_clump_amount",
                                                    "guide_clump_shape", "guide_kink_type", "guide_kink_axis",
                                                    "guide_kink_frequency", "guide_kink_shape",
                                                    "guide_kink_amplitude")},
    },
}
IGNORED = {
    "RigidBodyObject": {
        **{k: COLLISIONS + "no effect" for k in ("collision_shape", "mesh_source", "use_deform", "friction",
                                                 "restitution", "use_margin", "collision_margin",
                                                 "collision_collections")},
        "use_deactivation": "RedMax does not put slow bodies to sleep",
        "deactivate_linear_velocity": "RedMax does not put slow bodies to sleep",
        "deactivate_angular_velocity": "RedMax does not put slow bodies to sleep",
    },
    "RigidBodyConstraint": {
        "use_override_solver_iterations": "RedMax solves constraints exactly each step",
        "solver_iterations": "RedMax solves constraints exactly each step",
    },
    "RigidBodyWorld": {
        "solver_iterations": "RedMax solves constraints exactly each step, not by a number of iterations",
        "use_split_impulse": "RedMax's contacts never push bodies apart with velocity: nothing to split",
    },
    "FieldSettings": {
        "noise": "the random strength of each frame is not simulated",
        "use_absorption": "colliders do not shadow the field in the bake",
    },
}
BLENDER_DEFAULTS = {("RigidBodyWorld", "solver_iterations"): 10}
COLLISION_SETTINGS = ("collision_shape", "mesh_source", "use_deform", "friction", "restitution", "use_margin",
                      "collision_margin", "collision_collections")
DEACTIVATION_SETTINGS = ("use_deactivation", "deactivate_linear_velocity", "deactivate_angular_velocity")


def ui_names(struct: str, keys) -> str:
    """The names Blender's panels show for the properties ``keys`` of RNA struct ``struct``, joined."""
    props = getattr(bpy.types, struct).bl_rna.properties
    return ", ".join(props[k].name for k in keys)


def world_settings(b, bscene) -> tuple:
    """(gravity (3,), frame_time s): the scene's gravity times the world's gravity weight, and the simulated
    seconds per frame (Speed / fps); names the world's settings the bake does not honour."""
    fps = bscene.render.fps / bscene.render.fps_base
    gravity = tuple(bscene.gravity) if bscene.use_gravity else (0.0, 0.0, 0.0)
    w = bscene.rigidbody_world
    if w is None:
        return gravity, 1.0 / fps
    ew = w.effector_weights
    gravity = tuple(g * ew.gravity * ew.all for g in gravity)
    if w.solver_iterations != BLENDER_DEFAULTS[("RigidBodyWorld", "solver_iterations")]:
        b.ignore("rigid body world", ui_names("RigidBodyWorld", ["solver_iterations"]),
                 IGNORED["RigidBodyWorld"]["solver_iterations"])
    if w.use_split_impulse:
        b.ignore("rigid body world", ui_names("RigidBodyWorld", ["use_split_impulse"]),
                 IGNORED["RigidBodyWorld"]["use_split_impulse"])
    return gravity, float(w.time_scale) / fps


def scan(b, bscene, objects) -> None:
    """Name the ignored settings of the rigid bodies and fields among ``objects`` (the world's in
    ``world_settings``; the per-body ones that depend on the mapping in ``rigid_settings``)."""
    collide = [ob for ob in objects if ob.rigid_body is not None]
    if len(collide) > 1:
        b.ignore(f"{len(collide)} rigid bodies", f"Collisions ({ui_names('RigidBodyObject', COLLISION_SETTINGS)})",
                 COLLISIONS + "bodies pass through each other")
    for ob in field_objects(bscene):
        f = ob.field
        if f.type in FIELD_KINDS:
            for key in IGNORED["FieldSettings"]:
                if getattr(f, key):
                    b.ignore(f"force field '{ob.name}'", ui_names("FieldSettings", [key]), IGNORED["FieldSettings"][key])
