"""Settings stored in the .blend file: per scene, per object, per bone, and the list of links
(cables, springs, loop closures). Enum items carry explicit numbers because Blender stores
enum values by index (recipes §9): never renumber an item."""
from __future__ import annotations

import bpy
from bpy.props import (
    BoolProperty,
    CollectionProperty,
    EnumProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)

MAX_SUBSTEPS = 1000  # per frame: with more, a bake of a few hundred frames runs for hours (ESC still acts)
SOLVER_ITEMS = [
    ("PCG", "PCG", "RedMax: projected block Jacobi preconditioned CG (fast for cables and springs)", 0),
    ("DIRECT", "Sparse direct", "RedMax with a sparse LDLᵀ factorization each step", 1),
    ("DENSE", "Dense", "RedMax with a dense Cholesky factorization (small rigs only)", 2),
]
# the engine's integrator= names (engine.solvers.steppers.redmax_schemes); the enum ids are Blender's
INTEGRATOR_ITEMS = [
    ("BDF2", "BDF2 (lively)", "Second-order implicit step that keeps the energy of the motion, less what the "
                              "dampers take: swings, springs and chains keep moving (the default)", 0),
    ("EULER", "Implicit Euler (damped)", "The implicit Euler step of earlier versions: every swing and spring slows "
                                         "down and comes to rest, faster at fewer substeps", 1),
    ("TR_BDF2", "TR-BDF2", "Two solves per step: the closest to the exact motion, at twice the cost", 2),
    ("BLEND", "Midpoint blend", "Implicit midpoint, blended towards implicit Euler where it would gain energy", 3),
]
INTEGRATOR_NAMES = {"BDF2": "bdf2", "EULER": "euler", "TR_BDF2": "tr-bdf2", "BLEND": "blend"}
JOINT_ITEMS = [
    ("AUTO", "Auto", "Bones: from the IK locks. Objects: from the Rigid Body Constraint", 0),
    ("FIXED", "Fixed", "Welded to the parent", 1),
    ("REVOLUTE", "Hinge", "Rotation about one axis", 2),
    ("UNIVERSAL", "Universal", "Rotation about two axes", 3),
    ("SPHERICAL", "Ball", "Free rotation", 4),
    ("PRISMATIC", "Slider", "Translation along one axis (the Axis setting)", 5),
]
AXIS_ITEMS = [("X", "X", "Local X", 0), ("Y", "Y", "Local Y (along the bone)", 1), ("Z", "Z", "Local Z", 2)]
ROOT_ITEMS = [
    ("FIXED", "Fixed", "The root bone is pinned to the world at its head (rotates about it per its joint)", 0),
    ("FREE", "Free", "The root bone flies freely (6 degrees of freedom)", 1),
]
LINK_ITEMS = [
    ("CABLE", "Cable", "Tension-only spring between two points", 0),
    ("SPRING", "Spring", "Spring between two points (pushes and pulls)", 1),
    ("CLOSURE", "Loop closure", "Hard constraint: the two points stay together", 2),
]
CLOSURE_ITEMS = [
    ("POINT", "Point", "The points coincide; rotation is free", 0),
    ("HINGE", "Hinge", "The points coincide and the bodies share a hinge axis", 1),
    ("UNIVERSAL", "Universal", "The points coincide and two axes stay perpendicular", 2),
    ("FIXED", "Fixed", "The bodies are welded together", 3),
]
FOLLOW_GAIN_ITEMS = [
    ("AUTO", "Automatic", "Every joint's kp and kd from the inertia it carries and the frame step: the same "
                          "natural frequency and critical damping for a tail's base joint and its tip", 0),
    ("MANUAL", "Per Bone", "Each bone's Follow Stiffness and Follow Damping", 1),
]
CONTACT_METHOD_ITEMS = [
    ("AUTO", "Automatic", "Impulse Response for a few contacts on many bodies, M⁻¹ Propagation for many contacts "
                          "(picked at every step by the contacts' count)", 3),
    ("MINV", "M⁻¹ Propagation", "Contact-space inertia through the whole inverse inertia M⁻¹, by Θ(n²) "
                                "impulse propagation", 0),
    ("CHOLESKY", "Cholesky", "Contact-space inertia from the mass matrix by CRBA and a dense Cholesky "
                             "factorization", 1),
    ("IMPULSE", "Impulse Response", "Contact-space inertia by propagating each contact's test impulse, "
                                    "without M⁻¹ (Θ(nk): fastest for many bodies and few contacts)", 2),
]


class REDMAX_PG_link(bpy.types.PropertyGroup):
    """A cable, spring or loop closure between two objects or pose bones (points in their local frames)."""

    kind: EnumProperty(name="Kind", items=LINK_ITEMS, default="CABLE")  # type: ignore[valid-type]
    object_a: PointerProperty(name="Object A", type=bpy.types.Object)  # type: ignore[valid-type]
    bone_a: StringProperty(name="Bone A", description="Pose bone of Object A (armatures), empty for the object")  # type: ignore[valid-type]
    point_a: FloatVectorProperty(name="Point A", size=3, subtype="TRANSLATION",  # type: ignore[valid-type]
                                 description="Attachment in A's local frame (bones: head at 0, Y along the bone)")
    object_b: PointerProperty(name="Object B", type=bpy.types.Object)  # type: ignore[valid-type]
    bone_b: StringProperty(name="Bone B")  # type: ignore[valid-type]
    point_b: FloatVectorProperty(name="Point B", size=3, subtype="TRANSLATION")  # type: ignore[valid-type]
    stiffness: FloatProperty(name="Stiffness (N/m)", default=1e5, min=0.0, soft_max=1e8,  # type: ignore[valid-type]
                             description="Force per metre of stretch, N/m (Blender has no unit for stiffness)")
    damping: FloatProperty(name="Damping (N·s/m)", default=100.0, min=0.0,  # type: ignore[valid-type]
                           description="Force per metre per second of stretching speed, N·s/m")
    use_current_length: BoolProperty(name="Rest Length from Pose", default=True,  # type: ignore[valid-type]
                                     description="Rest length = the distance at the first frame of the bake")
    rest_length: FloatProperty(name="Rest Length", default=1.0, min=0.0, unit="LENGTH")  # type: ignore[valid-type]
    closure_kind: EnumProperty(name="Closure", items=CLOSURE_ITEMS, default="POINT")  # type: ignore[valid-type]
    closure_axis: FloatVectorProperty(name="Axis", size=3, default=(0.0, 0.0, 1.0),  # type: ignore[valid-type]
                                      description="Hinge (or first universal) axis in A's local frame")
    curve: PointerProperty(name="Curve", type=bpy.types.Object,  # type: ignore[valid-type]
                           description="The curve object that shows this link in the viewport and renders")


class REDMAX_PG_bone(bpy.types.PropertyGroup):
    """Per-bone joint settings (registered on Bone and EditBone, which share storage)."""

    joint: EnumProperty(name="Joint", items=JOINT_ITEMS, default="AUTO")  # type: ignore[valid-type]
    axis: EnumProperty(name="Axis", items=AXIS_ITEMS, default="X",  # type: ignore[valid-type]
                       description="Hinge or slider axis (for a universal joint: the locked axis)")
    mass: FloatProperty(name="Mass", default=0.0, min=0.0, unit="MASS",  # type: ignore[valid-type]
                        description="kg; 0 = bone length × the armature's linear density")
    stiffness: FloatProperty(name="Joint Stiffness (N·m/rad)", default=0.0, min=0.0,  # type: ignore[valid-type]
                             description="N·m/rad pulling the joint back to its pose at the first frame "
                                         "(N/m for a slider)")
    damping: FloatProperty(name="Joint Damping (N·m·s/rad)", default=0.0, min=0.0,  # type: ignore[valid-type]
                           description="N·m·s/rad (N·s/m for a slider)")
    follow_kp: FloatProperty(name="Follow Stiffness (N·m/rad)", default=500.0, min=0.0, soft_max=1e6,  # type: ignore[valid-type]
                             description="kp (N·m/rad) pulling the joint to the animated pose when the armature "
                                         "follows its animation (× the armature's gain scale); 0 with kd = 0: "
                                         "this bone does not follow")
    follow_kd: FloatProperty(name="Follow Damping (N·m·s/rad)", default=5.0, min=0.0, soft_max=1e5,  # type: ignore[valid-type]
                             description="kd (N·m·s/rad) of the follow controller (× the armature's gain scale); "
                                         "the bone lags the animation by about kd/kp seconds")
    collide: BoolProperty(name="Collide", default=True,  # type: ignore[valid-type]
                          description="This bone's capsule collides (with objects and the ground plane)")
    contact_radius: FloatProperty(name="Contact Radius", default=0.0, min=0.0, unit="LENGTH",  # type: ignore[valid-type]
                                  description="Radius of the bone's contact capsule (m); 0 = 10 % of the bone length")


class REDMAX_PG_object(bpy.types.PropertyGroup):
    """Per-object settings: rigid bodies and armatures."""

    simulate: BoolProperty(name="Simulate", default=False,  # type: ignore[valid-type]
                           description="Simulate this object or this armature's bones (active rigid bodies and "
                                       "meshes in Rigid Body Constraints are simulated anyway; the panel says so)")
    mass: FloatProperty(name="Mass", default=0.0, min=0.0, unit="MASS",  # type: ignore[valid-type]
                        description="kg; 0 = the Rigid Body mass, else mesh volume × the scene density")
    joint_stiffness: FloatProperty(name="Joint Stiffness (N·m/rad)", default=0.0, min=0.0,  # type: ignore[valid-type]
                                   description="Stiffness of the joint that attaches this object, about its pose "
                                               "at the first frame: N·m/rad for hinges and balls, N/m for sliders")
    joint_damping: FloatProperty(name="Joint Damping (N·m·s/rad)", default=0.0, min=0.0,  # type: ignore[valid-type]
                                 description="N·m·s/rad for hinges and balls, N·s/m for sliders")
    root: EnumProperty(name="Root", items=ROOT_ITEMS, default="FIXED")  # type: ignore[valid-type]
    linear_density: FloatProperty(name="Bone Density", default=2.0, min=1e-6,  # type: ignore[valid-type]
                                  description="kg per metre of bone length (bones without their own mass)")
    follow_animation: BoolProperty(name="Follow Animation", default=False,  # type: ignore[valid-type]
                                   description="Bones track this armature's current action with stable PD "
                                               "(per-bone kp/kd) while reacting to gravity, cables and contacts")
    follow_scale: FloatProperty(name="Gain Scale", default=1.0, min=0.0, soft_max=100.0,  # type: ignore[valid-type]
                                description="Multiplies every bone's follow kp and kd")
    follow_gains: EnumProperty(name="Gains", items=FOLLOW_GAIN_ITEMS, default="AUTO",  # type: ignore[valid-type]
                               description="How the follow controller's gains are chosen")
    collide: BoolProperty(name="Collide", default=True,  # type: ignore[valid-type]
                          description="This object collides (its rigid body Shape; without a rigid body its "
                                      "bounding box)")
    # what a bake replaced, restored by Clear Bake
    baked_action: PointerProperty(type=bpy.types.Action)  # type: ignore[valid-type]
    baked_slot: StringProperty()  # type: ignore[valid-type]  # its slot for this object ("": the first; older bakes)
    previous_action: PointerProperty(type=bpy.types.Action)  # type: ignore[valid-type]
    previous_slot: StringProperty()  # type: ignore[valid-type]
    previous_rotation_modes: StringProperty()  # type: ignore[valid-type]  # JSON: "" (object) / bone name → mode
    is_baked: BoolProperty(default=False)  # type: ignore[valid-type]


def _live_preview_changed(settings, context):
    from . import preview  # (imports the engine; properties stay importable on their own)

    preview.live_preview_changed(settings, context)


class REDMAX_PG_saved(bpy.types.PropertyGroup):
    """One object of the pre-bake snapshot (addon/snapshot.py): a pointer (follows renames) and JSON."""

    object: PointerProperty(type=bpy.types.Object)  # type: ignore[valid-type]
    data: StringProperty()  # type: ignore[valid-type]


class REDMAX_PG_scene(bpy.types.PropertyGroup):
    solver: EnumProperty(name="Solver", items=SOLVER_ITEMS, default="PCG")  # type: ignore[valid-type]
    substeps: IntProperty(name="Substeps", default=2, min=1, soft_max=64, max=MAX_SUBSTEPS,  # type: ignore[valid-type]
                          description=f"Simulation steps per animation frame (1 … {MAX_SUBSTEPS})")
    integrator: EnumProperty(name="Integrator", items=INTEGRATOR_ITEMS, default="BDF2",  # type: ignore[valid-type]
                             description="How each step advances the motion in time")
    density: FloatProperty(name="Density", default=1000.0, min=1e-6,  # type: ignore[valid-type]
                           description="kg/m³ for meshes without a Rigid Body mass")
    body_damping: FloatProperty(name="Air Damping", default=0.0, min=0.0,  # type: ignore[valid-type]
                                description="Damping of every body's motion (N·s/m on its twist)")
    links: CollectionProperty(type=REDMAX_PG_link)  # type: ignore[valid-type]
    active_link: IntProperty(default=0)  # type: ignore[valid-type]
    live_preview: BoolProperty(name="Live Preview", default=False, update=_live_preview_changed,  # type: ignore[valid-type]
                               description="Simulate while the timeline plays (reset when it jumps back); "
                                           "turning it off restores the rest pose")
    collisions: BoolProperty(name="Collisions", default=True,  # type: ignore[valid-type]
                             description="Rigid bodies collide as in Blender's Rigid Body: their Shape, Margin, "
                                         "Friction, Bounciness and Collision Collections; passive ones are "
                                         "colliders, bones collide with objects")
    collide_with_ground: BoolProperty(name="Collide with ground plane", default=False,  # type: ignore[valid-type]
                                      description="Bodies (object bounding boxes, bone capsules) rest on and slide "
                                                  "over a horizontal plane")
    ground_height: FloatProperty(name="Height", default=0.0, unit="LENGTH",  # type: ignore[valid-type]
                                 description="World Z of the ground plane (m)")
    ground_friction: FloatProperty(name="Friction", default=0.8, min=0.0, soft_max=2.0,  # type: ignore[valid-type]
                                   description="Coulomb friction coefficient μ of the ground")
    ground_restitution: FloatProperty(name="Restitution", default=0.0, min=0.0, max=1.0,  # type: ignore[valid-type]
                                      subtype="FACTOR", description="Bounciness: 0 = no bounce, 1 = elastic")
    contact_method: EnumProperty(name="Contact Method", items=CONTACT_METHOD_ITEMS,  # type: ignore[valid-type]
                                 default="AUTO", description="How the contact-space inertia is computed")
    # bake options
    use_bake_range: BoolProperty(name="Own Frame Range", default=False,  # type: ignore[valid-type]
                                 description="Bake the range below instead of the scene's frame range")
    bake_frame_start: IntProperty(name="Start", default=1,  # type: ignore[valid-type]
                                  description="First keyed frame")
    bake_frame_end: IntProperty(name="End", default=250,  # type: ignore[valid-type]
                                description="Last keyed frame")
    frame_step: IntProperty(name="Key Every", default=1, min=1, soft_max=120,  # type: ignore[valid-type]
                            description="Write a key every N frames (the last frame is always keyed); "
                                        "the simulation still steps every frame")
    preroll: IntProperty(name="Preroll", default=0, min=0, soft_max=10000,  # type: ignore[valid-type]
                         description="Frames simulated before the first keyed frame, so the motion has settled")
    selected_only: BoolProperty(name="Selected Only", default=False,  # type: ignore[valid-type]
                                description="Simulate and key only the selected objects (and the constraints on "
                                            "them); other objects hold their place")
    # what the bake changed outside its actions, for Clear Bake (addon/snapshot.py)
    snapshot: StringProperty()  # type: ignore[valid-type]
    snapshot_objects: CollectionProperty(type=REDMAX_PG_saved)  # type: ignore[valid-type]
    # statistics of the last bake (read-only in the UI)
    last_frames: IntProperty(default=0)  # type: ignore[valid-type]
    last_steps: IntProperty(default=0)  # type: ignore[valid-type]
    last_seconds: FloatProperty(default=0.0)  # type: ignore[valid-type]
    last_iterations: FloatProperty(default=0.0)  # type: ignore[valid-type]
    last_max_iterations: IntProperty(default=0)  # type: ignore[valid-type]
    last_message: StringProperty(default="")  # type: ignore[valid-type]
    last_stages: StringProperty(default="")  # type: ignore[valid-type]  # JSON: the last bake's stages, wall and CPU s
    last_timings: StringProperty(default="")  # type: ignore[valid-type]  # the panel's line naming the stages


CLASSES = (REDMAX_PG_link, REDMAX_PG_bone, REDMAX_PG_object, REDMAX_PG_saved, REDMAX_PG_scene)
POINTERS = (
    (bpy.types.Scene, "redmax", REDMAX_PG_scene),
    (bpy.types.Object, "redmax", REDMAX_PG_object),
    (bpy.types.Bone, "redmax", REDMAX_PG_bone),
    (bpy.types.EditBone, "redmax", REDMAX_PG_bone),
)


def register_pointers():
    for owner, name, group in POINTERS:
        setattr(owner, name, PointerProperty(type=group))


def unregister_pointers():
    for owner, name, _ in POINTERS:
        if hasattr(owner, name):
            delattr(owner, name)
