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
  object2 = child, joint frame = the constraint host's frame): HINGE (local Z)
  → revolute, SLIDER (local X) → prismatic, POINT → ball, FIXED → fixed,
  GENERIC by its locked angular axes like bones, GENERIC_SPRING → a spring
  between the two origins. Constraints that close a loop become loop closures.
  Objects without a joint to the world float freely. Passive rigid bodies,
  empties (unless marked Simulate) and any object that is not simulated are
  part of the world.
* Contact shapes (used when the scene's *Collide with ground plane* is on): an
  object's local bounding box (scaled, in the object's axes), a bone's capsule
  along Y (bone length; the bone's contact radius or 10 % of the length); the
  per-object/per-bone *Collide* off gives the shape ``"collide": False``. Mass
  and inertia do not depend on them.
* Links (``scene.redmax.links``): cables, springs and loop closures between
  two objects or pose bones; an end on a non-simulated object is anchored in
  the world.

Errors are ``MappingError`` naming the object, bone, constraint or link.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Any

import bpy
import numpy as np

from . import keyframes, loads
from ._engine import engine, geometry


WORLD = -1
AXES = np.eye(3)
AXIS_INDEX = {"X": 0, "Y": 1, "Z": 2}
HOSTED_JOINTS = {"HINGE": "revolute", "SLIDER": "prismatic", "POINT": "spherical", "FIXED": "fixed"}
CLOSURE_OF_JOINT = engine.scene.CLOSURE_KIND_OF_JOINT  # joint type name → loop-closure kind


class MappingError(ValueError):
    """Blender data that cannot become an engine scene; the message names the element."""


@dataclass
class Target:
    """What an engine body drives in Blender: an object, or a pose bone of an armature object."""

    body: str                # engine body name
    object: bpy.types.Object
    bone: str = ""           # pose bone name, "" for the object itself
    world0: np.ndarray = field(default_factory=lambda: np.eye(4))  # Blender world matrix at the start


@dataclass
class Mapping:
    """The engine scene and, per engine body (model order), the Blender element it drives."""

    scene: engine.Scene
    targets: list            # Target per engine body index
    offsets: np.ndarray      # (n, 4, 4) link frame → Blender world matrix, constant: W(t) = L(t) @ offset
    warnings: list = field(default_factory=list)

    def link_frames(self, q) -> np.ndarray:
        """(n, 4, 4) rigid world transforms of the engine's link frames at q (nq,)."""
        R, p = engine.link_poses(self.scene.model, q)
        L = np.zeros((len(R), 4, 4))
        L[:, :3, :3], L[:, :3, 3], L[:, 3, 3] = R, p, 1.0
        return L

    def world_matrices(self, q) -> np.ndarray:
        """(n, 4, 4) Blender world matrices of all targets at generalized positions q (nq,)."""
        return self.link_frames(q) @ self.offsets


def matrix(m) -> np.ndarray:
    return np.array(m, dtype=float).reshape(4, 4)


MIN_SCALE = 1e-6  # below this an axis of an object's matrix counts as collapsed (zero scale)


def in_scene(bscene, ob) -> bool:
    """Whether ``ob`` is in ``bscene``: an object deleted with X stays alive (in no scene) as long as a
    pointer (a link's end, a constraint's end, the bake's snapshot) holds it, so existence says nothing."""
    return bscene.objects.get(ob.name) == ob


def check_matrix(W, what: str) -> None:
    """Refuse a world matrix that cannot give a rigid frame: non-finite, a collapsed axis (zero
    scale) or a mirrored one (negative scale); ``what`` names the element in the message."""
    W = np.asarray(W, float)
    if not np.isfinite(W).all():
        raise MappingError(f"{what}: non-finite transform (scale, rotation or location is NaN or infinite)")
    scale = np.sqrt((W[:3, :3] ** 2).sum(axis=0))
    if scale.min() < MIN_SCALE * max(1.0, scale.max()):
        raise MappingError(f"{what}: zero scale on its local {'XYZ'[int(np.argmin(scale))]} axis; "
                           "give it a non-zero scale")
    if geometry.det3(W[:3, :3]) < 0:
        raise MappingError(f"{what}: negative scale (mirrored object); apply the scale or make it positive")


def rigid_part(W):
    """(R, p): the rotation (scale and shear removed by polar decomposition) and translation of W."""
    U, _, Vt = np.linalg.svd(W[:3, :3])
    R = U @ Vt
    if geometry.det3(R) < 0:
        raise MappingError("negative scale (mirrored object)")
    return R, W[:3, 3].copy()


def frame_in(parent_R, parent_p, R, p):
    """(origin, rotation) of frame (R, p) in the frame (parent_R, parent_p); world if parent_R is None."""
    if parent_R is None:
        return p, R
    return parent_R.T @ (p - parent_p), parent_R.T @ R


# ------------------------------------------------------------------ bodies
class _Builder:
    """Collects bodies in parent-first order with their world link frames."""

    def __init__(self, gravity):
        self.mb = engine.ModelBuilder(gravity=gravity)
        self.frames = {}     # body name → (R, p) link frame at the start
        self.targets = {}    # body name → Target
        self.joint_springs = []

    def add(self, name, target, parent, joint, R, p, axis, mass, com_world, inertia_world, limits=None,
            shape_world=None, limit_angles="rotation_vector"):
        """Add a body whose joint frame (= link frame at the start) is (R, p) in world coordinates.

        shape_world: contact shape dict with "center", "rotation" and "axis" in world coordinates
        (converted to the link frame here), or None. limit_angles: what a ball joint's limits bound
        (``engine.ModelBuilder.add_body``).
        """
        pR, pp = self.frames[parent] if parent != WORLD else (None, None)
        origin, rot = frame_in(pR, pp, R, p)
        com = R.T @ (com_world - p)
        inertia = R.T @ inertia_world @ R
        shape = None
        if shape_world is not None:
            shape = dict(shape_world)
            if "center" in shape:
                shape["center"] = R.T @ (np.asarray(shape["center"], float) - p)
            if "rotation" in shape:
                shape["rotation"] = R.T @ np.asarray(shape["rotation"], float)
            if "axis" in shape:
                shape["axis"] = R.T @ np.asarray(shape["axis"], float)
        try:
            self.mb.add_body(name, parent=parent, joint=joint, axis=axis, joint_origin=origin, joint_rotation=rot,
                             mass=mass, com=com, inertia=inertia, joint_name=name, limits=limits, shape=shape,
                             limit_angles=limit_angles)
        except engine.ModelError as err:
            raise MappingError(f"{_describe(target)}: {err}") from None
        self.frames[name] = (R, p)
        self.targets[name] = target


def _describe(target):
    return f"bone '{target.bone}' of '{target.object.name}'" if target.bone else f"object '{target.object.name}'"


def _locked_axes(locks):
    return [i for i in range(3) if locks[i]]


def _joint_from_locks(locks):
    """(joint type, axis or None, joint rotation in the bone frame) from three lock flags."""
    locked = _locked_axes(locks)
    free = [i for i in range(3) if i not in locked]
    if len(locked) == 3:
        return "fixed", None, np.eye(3)
    if len(locked) == 2:
        return "revolute", AXES[free[0]], np.eye(3)
    if len(locked) == 1:  # universal: Rx(θ1) Ry(θ2) of a joint frame whose x, y are the free axes
        x, y = AXES[free[0]], AXES[free[1]]
        return "universal", None, np.column_stack([x, y, np.cross(x, y)])
    return "spherical", None, np.eye(3)


def _bone_joint(bone, pose_bone):
    """Joint type, axis and joint-frame rotation (bone frame) of one bone."""
    s = bone.redmax
    if s.joint == "AUTO":
        locks = (pose_bone.lock_ik_x, pose_bone.lock_ik_y, pose_bone.lock_ik_z)
        return _joint_from_locks(locks)
    if s.joint in ("REVOLUTE", "PRISMATIC"):
        return s.joint.lower(), AXES[AXIS_INDEX[s.axis]], np.eye(3)
    if s.joint == "UNIVERSAL":
        locks = [i == AXIS_INDEX[s.axis] for i in range(3)]
        return _joint_from_locks(locks)
    return s.joint.lower(), None, np.eye(3)


# Blender's Euler rotation modes; a Limit Rotation's 'AUTO' order is the owner's mode if it is one of these
EULER_MODES = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")


def limit_euler_order(constraint, rotation_mode="QUATERNION") -> str:
    """The Euler order a Limit Rotation constraint clamps in: its ``euler_order``, or for 'AUTO' the
    owner's ``rotation_mode`` if that is an Euler mode, else 'XYZ' (Blender's constraint evaluation).
    A baked bone plays back in quaternion mode (the bake keys quaternions), hence the default."""
    order = constraint.euler_order
    if order == "AUTO":
        return rotation_mode if rotation_mode in EULER_MODES else "XYZ"
    return order


def _bone_limits(pose_bone, jtype, axis_rot, jrot):
    """(per-dof (lower, upper) limits (rad) or None, what a ball joint's limits bound) from the bone's
    first enabled Limit Rotation constraint, read as bone-local angles: a hinge takes the bound of its
    axis; a universal joint the bounds of its two free axes (dofs about the joint frame's x and y, in
    that order); a ball joint the three per-axis bounds on the Euler angles the constraint clamps (its
    order, ``limit_euler_order``; the ball joint's frame is the bone's, ``_bone_joint``), exactly.
    Unused axes are unbounded. A muted constraint is ignored (as on playback); one that limits an axis
    in another owner space than Local is refused: playback applies it in that space, which no joint
    limit can follow."""
    for c in pose_bone.constraints:
        if c.type == "LIMIT_ROTATION" and c.enabled:
            axes = ((c.use_limit_x, c.min_x, c.max_x), (c.use_limit_y, c.min_y, c.max_y),
                    (c.use_limit_z, c.min_z, c.max_z))
            if c.owner_space != "LOCAL" and any(used for used, _, _ in axes):
                space = c.bl_rna.properties["owner_space"].enum_items.get(c.owner_space)
                raise MappingError(f"bone '{pose_bone.name}' of '{pose_bone.id_data.name}': its Limit Rotation "
                                   f"constraint '{c.name}' works in {space.name if space else c.owner_space}; set "
                                   "its Owner Space to Local Space (only Local Space maps to the joint's limits)")
            limits = _axis_limits(axes, jtype, axis_rot, jrot)
            if jtype == "spherical" and limits is not None:
                # _bone_joint gives a ball joint the bone's own frame: the bone's Euler angles are the joint's
                return limits, limit_euler_order(c)
            return limits, "rotation_vector"
    return None, "rotation_vector"


def _axis_limits(axes, jtype, axis, jrot):
    """Per-dof limits of a joint from per-axis (used, lower, upper) of its frame's x, y, z; None if none."""
    def bound(i):
        used, lo, hi = axes[i]
        return (float(lo), float(hi)) if used else (-np.inf, np.inf)

    if jtype in ("revolute", "prismatic"):
        dofs = [bound(int(np.argmax(np.abs(axis))))]
    elif jtype == "universal":  # the joint frame's x and y are two of the bone's axes
        dofs = [bound(int(np.argmax(np.abs(jrot[:, k])))) for k in (0, 1)]
    elif jtype == "spherical":
        dofs = [bound(i) for i in range(3)]
    else:
        return None
    if all(np.isinf(lo) and np.isinf(hi) for lo, hi in dofs):
        return None
    return (np.array([d[0] for d in dofs]), np.array([d[1] for d in dofs]))


def _add_armature(b, arm_ob):
    A = matrix(arm_ob.matrix_world)
    check_matrix(A, f"armature '{arm_ob.name}'")
    settings = arm_ob.redmax
    for bone in arm_ob.data.bones:  # parents come before children (recipes §3)
        pb = arm_ob.pose.bones[bone.name]
        W = A @ matrix(pb.matrix)
        target = Target(f"{arm_ob.name}:{bone.name}", arm_ob, bone.name, W)
        try:
            check_matrix(W, "pose")
            R, p = rigid_part(W)
        except MappingError as err:
            raise MappingError(f"{_describe(target)}: {err}") from None
        length = float(bone.length) * float(np.cbrt(abs(np.linalg.det(A[:3, :3]))))
        if length <= 0:
            raise MappingError(f"{_describe(target)}: has zero length")
        mass = bone.redmax.mass if bone.redmax.mass > 0 else settings.linear_density * length
        com = p + R[:, 1] * (0.5 * length)
        inertia = R @ np.diag(geometry.rod_inertia(mass, length, 0.1 * length)) @ R.T
        parent = f"{arm_ob.name}:{bone.parent.name}" if bone.parent else WORLD
        if parent == WORLD and settings.root == "FREE":
            jtype, axis, jrot, limits, limit_angles = "free", None, np.eye(3), None, "rotation_vector"
        else:
            jtype, axis, jrot = _bone_joint(bone, pb)
            if jtype == "prismatic" and bone.use_connect:
                raise MappingError(f"{_describe(target)}: a slider joint needs a bone that is not connected to "
                                   "its parent (a connected bone cannot move away from the parent's tail)")
            limits, limit_angles = _bone_limits(pb, jtype, axis, jrot)
        radius = bone.redmax.contact_radius if bone.redmax.contact_radius > 0 else 0.1 * length
        shape = {"type": "capsule", "radius": float(radius), "length": length, "axis": R[:, 1], "center": com}
        if not bone.redmax.collide:
            shape["collide"] = False
        b.add(target.body, target, parent, jtype, R @ jrot, p, axis if axis is not None else (0, 0, 1),
              mass, com, inertia, limits, shape, limit_angles)
        if bone.redmax.stiffness > 0 or bone.redmax.damping > 0:
            b.joint_springs.append((target.body, bone.redmax.stiffness, bone.redmax.damping, _describe(target)))


def _object_mass(ob, density, depsgraph):
    """(mass, com (3,), inertia (3, 3)) in world coordinates at the start, from the evaluated mesh."""
    what = f"object '{ob.name}'"
    W = matrix(ob.matrix_world)
    override = ob.redmax.mass if ob.redmax.mass > 0 else (ob.rigid_body.mass if ob.rigid_body else 0.0)
    if ob.type == "MESH":
        co, tris = _mesh_triangles(ob, depsgraph)
        n, m = len(co), len(tris)
        extent = co.max(axis=0) - co.min(axis=0) if n else np.zeros(3)
        if m == 0 or extent.min() <= 1e-9 * max(1.0, extent.max()):
            raise MappingError(f"{what}: its mesh is degenerate (zero volume: flat, a line or empty); "
                               "give it thickness")
        world = co @ W[:3, :3].T + W[:3, 3]
        if geometry.det3(W[:3, :3]) < 0:
            tris = tris.reshape(m, 3)[:, ::-1]
        try:
            mp = geometry.mesh_mass_properties(world, tris, density)
        except ValueError as err:
            if override <= 0:
                raise MappingError(f"{what}: cannot compute mass from its mesh ({err}); "
                                   "close the mesh or set a RedMax mass") from None
        else:
            scale = override / mp.mass if override > 0 else 1.0
            return mp.mass * scale, mp.com, mp.inertia * scale
    if override <= 0:
        raise MappingError(f"{what}: has no mesh to compute its mass from; set a RedMax mass")
    return override, W[:3, 3].copy(), np.eye(3) * (0.4 * override * 0.05**2)  # small sphere


def _mesh_triangles(ob, depsgraph):
    """(vertices (n, 3) in the object's frame, triangles (m, 3)) of the object's evaluated mesh."""
    ev = ob.evaluated_get(depsgraph)
    mesh = ev.to_mesh()
    try:
        mesh.calc_loop_triangles()
        n, m = len(mesh.vertices), len(mesh.loop_triangles)
        co = np.empty(3 * n)
        mesh.vertices.foreach_get("co", co)
        tris = np.empty(3 * m, dtype=np.int32)
        mesh.loop_triangles.foreach_get("vertices", tris)
    finally:
        ev.to_mesh_clear()
    return co.reshape(n, 3), tris.reshape(m, 3)


def _masses_at_once(objects, density, depsgraph) -> dict:
    """{object: ``_object_mass``} for the meshes among ``objects`` that give a volume, computed for all of them
    in one pass (``geometry.mesh_mass_properties_many``); the others are left to ``_object_mass`` and its
    messages, in the order the tree places them."""
    items, vertices, triangles, offset = [], [], [], 0
    for ob in objects:
        if ob.type != "MESH":
            continue
        W = matrix(ob.matrix_world)
        co, tris = _mesh_triangles(ob, depsgraph)
        if not len(tris) or not np.isfinite(W).all() or not np.isfinite(co).all():
            continue
        extent = co.max(axis=0) - co.min(axis=0)
        if extent.min() <= 1e-9 * max(1.0, extent.max()):
            continue
        vertices.append(co @ W[:3, :3].T + W[:3, 3])
        triangles.append((tris[:, ::-1] if geometry.det3(W[:3, :3]) < 0 else tris) + offset)
        offset += len(co)
        items.append(ob)
    if not items:
        return {}
    mass, com, inertia, _ = geometry.mesh_mass_properties_many(np.concatenate(vertices), np.concatenate(triangles),
                                                               [len(t) for t in triangles], density)
    out = {}
    for k, ob in enumerate(items):
        if np.isfinite(mass[k]):
            override = ob.redmax.mass if ob.redmax.mass > 0 else (ob.rigid_body.mass if ob.rigid_body else 0.0)
            scale = override / mass[k] if override > 0 else 1.0
            out[ob] = (float(mass[k] * scale), com[k], inertia[k] * scale)
    return out


def _object_shape(ob):
    """World-frame contact box of an object: its local bounding box (scaled), or None if it is empty."""
    W = matrix(ob.matrix_world)
    corners = np.array([tuple(c) for c in ob.bound_box], dtype=float).reshape(-1, 3)
    if corners.shape != (8, 3):
        return None
    lo, hi = corners.min(axis=0), corners.max(axis=0)
    size = (hi - lo) * np.linalg.norm(W[:3, :3], axis=0)  # scale along the object's own axes
    if not np.all(size > 1e-9):
        return None
    R, _ = rigid_part(W)
    center = W[:3, :3] @ (0.5 * (lo + hi)) + W[:3, 3]
    shape = {"type": "box", "size": size, "center": center, "rotation": R}
    if not ob.redmax.collide:
        shape["collide"] = False
    return shape


TRANSFORM_CHANNELS = {"location", "rotation_euler", "rotation_quaternion", "rotation_axis_angle", "scale",
                      "delta_location", "delta_rotation_euler", "delta_rotation_quaternion", "delta_scale"}


def _moves(ob, seen=()) -> str:
    """Why ``ob`` moves over time in Blender, "" if it does not: keys on its (or, through ``pose.bones``, its
    bones') transforms that change or have modifiers, drivers on them, NLA strips, or a parent or an
    enabled constraint's target that moves."""
    if ob in seen:
        return ""
    seen = (*seen, ob)
    ad = ob.animation_data
    if ad is not None:
        for fc in keyframes.fcurves(ob):
            if fc.data_path.rsplit(".", 1)[-1] in TRANSFORM_CHANNELS and len(fc.keyframe_points):
                values = np.empty(2 * len(fc.keyframe_points))
                fc.keyframe_points.foreach_get("co", values)
                if len(fc.modifiers) or np.ptp(values[1::2]) > 0:  # (one key, or equal keys, hold it still)
                    return "it has keys"
        if any(fc.data_path.rsplit(".", 1)[-1] in TRANSFORM_CHANNELS for fc in ad.drivers):
            return "it has drivers"
        if any(not track.mute and len(track.strips) for track in ad.nla_tracks):
            return "it has NLA strips"
    if ob.parent is not None and _moves(ob.parent, seen):
        return f"its parent '{ob.parent.name}' is animated"
    for c in ob.constraints:
        target = getattr(c, "target", None)
        if c.enabled and isinstance(target, bpy.types.Object) and _moves(target, seen):
            return f"its constraint '{c.name}' follows '{target.name}', which is animated"
    return ""


def _check_fixed_anchor(ob) -> None:
    """Refuse an object a body is anchored to that Blender moves on playback while the bake holds it: a
    passive rigid body with Animated (kinematic) on, or an object without a rigid body (an Empty), that is
    animated. The engine holds the world fixed. (A passive body with Animated off ignores its keys in
    Blender's simulation too, so it bakes as Bullet runs it.)"""
    rb = ob.rigid_body
    if rb is not None and (rb.type != "PASSIVE" or not rb.kinematic):
        return
    why = _moves(ob)
    if why and rb is not None:
        raise MappingError(f"object '{ob.name}' is an animated passive rigid body (Animated is on and {why}): "
                           "RedMax bakes hold passive objects fixed; turn Animated off or remove its animation")
    if why:
        raise MappingError(f"object '{ob.name}' anchors a simulated body and is animated ({why}): RedMax bakes "
                           "hold anchors fixed; remove its animation or anchor to an object that holds still")


def _check_not_kinematic(ob) -> None:
    """Refuse an active rigid body with Animated on: Blender moves it by its animation instead of simulating
    it, and the bake would simulate it (an active body only follows keys in Blender's own simulation)."""
    rb = ob.rigid_body
    if rb is not None and rb.type == "ACTIVE" and rb.kinematic:
        raise MappingError(f"object '{ob.name}' is an active rigid body with Animated on: Blender moves it by "
                           "its animation, RedMax would simulate it; turn Animated off to simulate it, or make it "
                           "Passive to anchor to it")


class LiveRig:
    """Reads each object's rigid body and Rigid Body Constraint as they are in the scene. ``scene_facts`` takes
    another reader for a baked scene (``snapshot.Restored``: as the re-bake will put them back)."""

    @staticmethod
    def rigid_body(ob):
        return ob.rigid_body

    @staticmethod
    def constraint(ob):
        return ob.rigid_body_constraint


def _is_dynamic(ob, constrained, rig=LiveRig):
    if ob.type == "ARMATURE":
        return False
    rb = rig.rigid_body(ob)
    if rb is not None:
        return rb.type == "ACTIVE"
    return ob.redmax.simulate or (ob in constrained and ob.type == "MESH")  # empties anchor to the world


def _constraint_joint(host):
    """(joint type, axis in the host frame) of a Rigid Body Constraint."""
    c = host.rigid_body_constraint
    what = f"rigid body constraint on '{host.name}'"
    if c.type in HOSTED_JOINTS:
        return HOSTED_JOINTS[c.type], (1.0, 0.0, 0.0) if c.type == "SLIDER" else (0.0, 0.0, 1.0), np.eye(3)
    if c.type == "GENERIC":
        lin = [(getattr(c, f"use_limit_lin_{a}") and getattr(c, f"limit_lin_{a}_lower") == 0.0
                and getattr(c, f"limit_lin_{a}_upper") == 0.0) for a in "xyz"]
        if not all(lin):
            raise MappingError(f"{what}: GENERIC constraints must lock all linear axes (limits 0..0)")
        ang = [(getattr(c, f"use_limit_ang_{a}") and getattr(c, f"limit_ang_{a}_lower") == 0.0
                and getattr(c, f"limit_ang_{a}_upper") == 0.0) for a in "xyz"]
        jtype, axis, jrot = _joint_from_locks(ang)
        return jtype, axis if axis is not None else (0.0, 0.0, 1.0), jrot
    raise MappingError(f"{what}: type {c.type} is not supported (use HINGE, SLIDER, POINT, FIXED, GENERIC "
                       "or GENERIC_SPRING)")


def _constraint_limits(host, jtype, axis, jrot, flip):
    """Joint limits of a Rigid Body Constraint: HINGE ``limit_ang_z``, SLIDER ``limit_lin_x``, GENERIC
    angular limits of its free axes (as ``_axis_limits``). Blender's angle is that of object1 relative
    to object2 (checked against Blender's own rigid body solver in tests/test_addon_limits.py); when the
    tree has object2 as the child (flip), the bounds change sign and swap."""
    axes = _limit_axes(host.rigid_body_constraint)
    limits = None if axes is None else _axis_limits(axes, jtype, np.asarray(axis), jrot)
    if limits is not None and flip:
        limits = (-limits[1], -limits[0])
    return limits


def _limit_axes(c):
    """(use, lower, upper) per axis of the limits a Rigid Body Constraint ``c`` sets (``_axis_limits``'s
    input): HINGE ``limit_ang_z``, SLIDER ``limit_lin_x``, GENERIC ``limit_ang_x/y/z``; None for other types."""
    if c.type == "HINGE":
        return [(False, 0, 0), (False, 0, 0), (c.use_limit_ang_z, c.limit_ang_z_lower, c.limit_ang_z_upper)]
    if c.type == "SLIDER":
        return [(c.use_limit_lin_x, c.limit_lin_x_lower, c.limit_lin_x_upper), (False, 0, 0), (False, 0, 0)]
    if c.type == "GENERIC":
        return [(getattr(c, f"use_limit_ang_{a}"), getattr(c, f"limit_ang_{a}_lower"), getattr(c, f"limit_ang_{a}_upper"))
                for a in "xyz"]
    return None


def _hosts(bscene, objects, rig=LiveRig):
    """The enabled Rigid Body Constraint hosts among ``objects`` (constraints read by ``rig``), checked: both
    ends set and in the scene (an object deleted with X stays alive through the pointer), a usable host frame."""
    hosts = [ob for ob in objects if rig.constraint(ob) is not None and rig.constraint(ob).enabled]
    scene_objects = set(bscene.objects)  # (one pass: ``in_scene`` per end would scan the scene each time)
    for h in hosts:
        c = rig.constraint(h)
        what = f"rigid body constraint on '{h.name}'"
        for i, o in enumerate((c.object1, c.object2), 1):
            if o is None:
                raise MappingError(f"{what}: needs both objects (object {i} is empty)")
            if o not in scene_objects:
                raise MappingError(f"{what}: object {i} '{o.name}' is not in the scene (deleted?)")
        check_matrix(matrix(h.matrix_world), what)
    return hosts


def _add_rigid_objects(b, bscene, objects, density, depsgraph, closures, springs):
    """Joint tree from Rigid Body Constraints; loop-closing constraints go to ``closures``."""
    hosts = _hosts(bscene, objects)
    constrained = {o for h in hosts for o in (h.rigid_body_constraint.object1, h.rigid_body_constraint.object2) if o}
    dynamic = sorted((ob for ob in objects if _is_dynamic(ob, constrained)), key=lambda o: o.name)
    edges = []
    for h in sorted(hosts, key=lambda o: o.name):
        c = h.rigid_body_constraint
        if c.type == "GENERIC_SPRING":
            springs.append(h)
            continue
        edges.append(h)
    dynamic_set, placed, used = set(dynamic), set(), set()
    for ob in dynamic:
        _check_not_kinematic(ob)
    for h in hosts:  # what a simulated body hangs from must hold still
        ends = (h.rigid_body_constraint.object1, h.rigid_body_constraint.object2)
        if any(o in dynamic_set for o in ends):
            for o in ends:
                if o not in dynamic_set:
                    _check_fixed_anchor(o)

    masses = _masses_at_once(dynamic, density, depsgraph)

    def place(ob, parent_ob, host):
        check_matrix(matrix(ob.matrix_world), f"object '{ob.name}'")
        mass, com, inertia = masses[ob] if ob in masses else _object_mass(ob, density, depsgraph)
        target = Target(ob.name, ob, "", matrix(ob.matrix_world))
        shape = _object_shape(ob)
        if host is None:  # free-floating root: link frame = the object's frame
            R, p = rigid_part(target.world0)
            b.add(ob.name, target, WORLD, "free", R, p, (0, 0, 1), mass, com, inertia, shape_world=shape)
        else:
            jtype, axis, jrot = _constraint_joint(host)
            limits = _constraint_limits(host, jtype, axis, jrot, flip=ob == host.rigid_body_constraint.object2)
            R, p = rigid_part(matrix(host.matrix_world))  # (the host's matrix was checked in _hosts)
            b.add(ob.name, target, parent_ob.name if parent_ob is not None else WORLD, jtype, R @ jrot, p, axis,
                  mass, com, inertia, limits, shape_world=shape)
            if ob.redmax.joint_stiffness > 0 or ob.redmax.joint_damping > 0:
                b.joint_springs.append((ob.name, ob.redmax.joint_stiffness, ob.redmax.joint_damping, f"object '{ob.name}'"))
        placed.add(ob)

    incident: dict = {}  # object → the constraint hosts at it, in ``edges`` order
    for h in edges:
        c = h.rigid_body_constraint
        for o in dict.fromkeys((c.object1, c.object2)):
            incident.setdefault(o, []).append(h)

    def grow(roots):  # breadth first from bodies (or world objects) already placed
        queue = collections.deque(roots)
        while queue:
            cur = queue.popleft()
            for h in incident.get(cur, ()):
                c = h.rigid_body_constraint
                if h in used:
                    continue
                other = c.object2 if c.object1 == cur else c.object1
                if other in dynamic_set and other not in placed:
                    place(other, cur if cur in dynamic_set else None, h)
                    used.add(h)
                    queue.append(other)

    grow(dict.fromkeys(o for h in edges for o in (h.rigid_body_constraint.object1, h.rigid_body_constraint.object2)
                       if o not in dynamic_set))
    for ob in dynamic:  # what no joint chain ties to the world floats freely
        if ob not in placed:
            place(ob, None, None)
            grow([ob])
    closures += [h for h in edges if h not in used
                 and (h.rigid_body_constraint.object1 in dynamic_set or h.rigid_body_constraint.object2 in dynamic_set)]


def scene_facts(bscene, rig=LiveRig) -> dict:
    """What decides which solver kernels a bake of ``bscene`` compiles (``engine.warmup.scene_facts`` of
    the scene ``build`` would make), found without building it (which runs kernels): {"closures",
    "limits", "body_damping"}; None where not known (the warm-up then compiles both kinds): all three
    when nothing is simulated yet, closures and limits when the rig cannot be read (the bake then says
    why). Loop closures are the closure links and the rigid body constraints that ``_add_rigid_objects``
    leaves out of the tree: those joining two bodies that other constraints already connect (objects
    that are not simulated all count as the world). Limits: False when no simulated armature (whose
    bones may carry Limit Rotation constraints) and no constraint limits a joint, else None. ``rig`` reads
    the rigid bodies and constraints (of a baked scene: as the re-bake will put them back)."""
    settings = bscene.redmax
    facts = {"closures": None, "limits": None, "body_damping": settings.body_damping > 0}
    try:
        hosts = _hosts(bscene, list(bscene.objects), rig)
    except MappingError:
        return facts
    if not any(ob.type == "ARMATURE" and ob.redmax.simulate for ob in bscene.objects) and not any(
            _limits_a_joint(rig.constraint(h)) for h in hosts):
        facts["limits"] = False
    if any(link.kind == "CLOSURE" for link in settings.links):
        facts["closures"] = True
        return facts
    constrained = {o for h in hosts for o in (rig.constraint(h).object1, rig.constraint(h).object2) if o}

    def dynamic(ob):
        return _is_dynamic(ob, constrained, rig)

    if not any(dynamic(ob) or (ob.type == "ARMATURE" and ob.redmax.simulate) for ob in bscene.objects):
        return {"closures": None, "limits": None, "body_damping": None}  # e.g. Compile Now before a rig exists
    parent: dict = {}  # union-find over the simulated objects; every other object is the world (WORLD)

    def find(ob):
        node = ob if ob is not None and dynamic(ob) else WORLD
        while parent.get(node, node) != node:
            node = parent[node]
        return node

    facts["closures"] = False
    for h in hosts:
        c = rig.constraint(h)
        if c.type == "GENERIC_SPRING" or not any(o is not None and dynamic(o) for o in (c.object1, c.object2)):
            continue  # a spring, or a constraint between two objects that are not simulated
        a, b = find(c.object1), find(c.object2)
        if a == b:
            facts["closures"] = True
            break
        if a == WORLD:
            a, b = b, a
        parent[a] = b
    return facts


def _limits_a_joint(c) -> bool:
    """Whether a Rigid Body Constraint may limit its joint (``_constraint_limits``): a limit that is on, other
    than a GENERIC 0..0 lock (a locked axis, not a limit)."""
    return any(use and not (c.type == "GENERIC" and lower == 0.0 and upper == 0.0)
               for use, lower, upper in _limit_axes(c) or ())


def _end(bscene, link, which, targets, scene_objects):
    """(engine body or WORLD, world point at the start) of one end of a link; ``scene_objects``: the set of
    ``bscene``'s objects."""
    ob, bone, point = ((link.object_a, link.bone_a, link.point_a) if which == "a"
                       else (link.object_b, link.bone_b, link.point_b))
    what = f"{'loop closure' if link.kind == 'CLOSURE' else link.kind.lower()} '{link.name}'"
    if ob is None:  # (removed from the file: Blender empties the pointer)
        raise MappingError(f"{what}: object {which.upper()} is missing (deleted?)")
    if ob not in scene_objects:
        raise MappingError(f"{what}: object {which.upper()} '{ob.name}' is not in the scene (deleted?)")
    check_matrix(matrix(ob.matrix_world), f"{what}: object {which.upper()} '{ob.name}'")
    local = np.array([*point, 1.0])
    if bone:
        if ob.type != "ARMATURE" or bone not in ob.pose.bones:
            raise MappingError(f"{what}: '{ob.name}' has no bone '{bone}'")
        W = matrix(ob.matrix_world) @ matrix(ob.pose.bones[bone].matrix)
        name = f"{ob.name}:{bone}"
    else:
        W, name = matrix(ob.matrix_world), ob.name
    return (name if name in targets else WORLD), (W @ local)[:3], W


def build(context, objects=None) -> Mapping:
    """Map the Blender scene (or the given objects) to an engine scene at the current frame."""
    return build_scene(context.scene, context.evaluated_depsgraph_get(), objects)


def build_scene(bscene, depsgraph, objects=None) -> Mapping:
    """``build`` for a scene and its evaluated depsgraph (as frame-change handlers receive them)."""
    settings = bscene.redmax
    objects = list(bscene.objects if objects is None else objects)
    gravity = tuple(bscene.gravity) if bscene.use_gravity else (0.0, 0.0, 0.0)
    b = _Builder(gravity)
    for ob in objects:
        if ob.type == "ARMATURE" and ob.redmax.simulate:
            _add_armature(b, ob)
    closures: list[tuple] = []
    springs: list[tuple] = []
    _add_rigid_objects(b, bscene, objects, settings.density, depsgraph, closures, springs)
    if not b.targets:
        raise MappingError("nothing to simulate: no simulated armature, rigid body constraint or active rigid body")
    model = b.mb.finalize()
    scene = engine.Scene(model, name=bscene.name)
    for body, k, d, what in b.joint_springs:
        try:
            scene.add_joint_spring(body, k, d)
        except engine.ModelError as err:
            raise MappingError(f"{what}: {err}") from None
    if settings.body_damping > 0:
        scene.set_body_damping(settings.body_damping)
    for h in closures:
        _add_constraint_closure(scene, h, b.targets)
    for h in springs:
        _add_constraint_spring(scene, h, b.targets)
    scene_objects = set(bscene.objects)
    for link in settings.links:
        _add_link(scene, bscene, link, b.targets, scene_objects, partial=objects is not None)
    try:  # a demo's car
        loads.add_moving_loads(objects, scene, {t.object.name: n for n, t in b.targets.items() if not t.bone})
    except ValueError as err:
        raise MappingError(str(err)) from None
    if settings.collide_with_ground:
        if not any(sh and sh.get("collide", True) for sh in model.body_shapes):
            raise MappingError("ground plane: no simulated object or bone collides (turn Collide on for one, "
                               "or turn off 'Collide with ground plane')")
        try:
            scene.set_ground(settings.ground_height, (0.0, 0.0, 1.0), settings.ground_friction,
                             settings.ground_restitution)
        except engine.ModelError as err:
            raise MappingError(f"ground plane: {err}") from None
    targets = [b.targets[name] for name in model.body_names]
    m = Mapping(scene, targets, np.zeros((model.n_bodies, 4, 4)))
    m.offsets = np.linalg.inv(m.link_frames(scene.q0)) @ np.array([t.world0 for t in targets])
    return m


def _add_constraint_closure(scene, host, targets):
    c = host.rigid_body_constraint
    what = f"rigid body constraint on '{host.name}'"
    jtype, axis, jrot = _constraint_joint(host)
    if jtype not in CLOSURE_OF_JOINT:
        raise MappingError(f"{what}: closes a loop, which a {c.type} constraint cannot (use HINGE, POINT or FIXED)")
    R, p = rigid_part(matrix(host.matrix_world))
    ends = [o.name if o is not None and o.name in targets else WORLD for o in (c.object1, c.object2)]
    frame = R @ jrot
    try:
        scene.add_loop_closure(ends[0], ends[1], p, kind=CLOSURE_OF_JOINT[jtype], axis=R @ np.asarray(axis, float),
                               axis_b=frame[:, 1], name=host.name)
    except engine.ModelError as err:
        raise MappingError(f"{what}: {err}") from None


def _add_constraint_spring(scene, host, targets):
    c = host.rigid_body_constraint
    on = [a for a in "xyz" if getattr(c, f"use_spring_{a}")]
    if not on:
        return
    k = float(np.mean([getattr(c, f"spring_stiffness_{a}") for a in on]))
    d = float(np.mean([getattr(c, f"spring_damping_{a}") for a in on]))
    ends = [o.name if o.name in targets else WORLD for o in (c.object1, c.object2)]
    pts = [np.array(o.matrix_world.translation) for o in (c.object1, c.object2)]
    if np.linalg.norm(pts[1] - pts[0]) < 1e-9:
        raise MappingError(f"generic spring on '{host.name}': its two objects' origins coincide")
    scene.add_spring(ends[0], pts[0], ends[1], pts[1], k, damping=d, name=host.name)


def _add_link(scene, bscene, link, targets, scene_objects, partial=False):
    """Add one cable, spring or loop closure; ``partial`` (a *Selected Only* bake): a link between two
    objects that are not simulated holds with them and is left out."""
    what = f"{'loop closure' if link.kind == 'CLOSURE' else link.kind.lower()} '{link.name}'"
    a, pa, Wa = _end(bscene, link, "a", targets, scene_objects)
    bb, pb, _ = _end(bscene, link, "b", targets, scene_objects)
    if a == WORLD and bb == WORLD:
        if partial:
            return
        raise MappingError(f"{what}: neither end is on a simulated object or bone")
    for end, ob in ((a, link.object_a), (bb, link.object_b)):
        if end == WORLD:
            _check_fixed_anchor(ob)
    try:
        if link.kind == "CLOSURE":
            Ra, _ = rigid_part(Wa)
            scene.add_loop_closure(a, bb, pa, kind=link.closure_kind.lower(), axis=Ra @ np.array(link.closure_axis),
                                   name=link.name)
        else:
            if np.linalg.norm(pb - pa) < 1e-9 and link.use_current_length:
                raise MappingError(f"{what}: its two points coincide, so it has no direction")
            rest = None if link.use_current_length else link.rest_length
            add = scene.add_cable if link.kind == "CABLE" else scene.add_spring
            add(a, pa, bb, pb, link.stiffness, damping=link.damping, rest_length=rest, name=link.name)
    except engine.ModelError as err:
        raise MappingError(f"{what}: {err}") from None


# ------------------------------------------------------------------ summary
def simulated_reason(ob, bscene) -> str:
    """Why ``ob`` will be simulated by a bake of ``bscene`` ("" if it will not): what the *Simulate*
    checkbox shows (active rigid bodies and constrained meshes are simulated whatever it says)."""
    if ob.type == "ARMATURE":
        return "Simulate is on (its bones)" if ob.redmax.simulate else ""
    if ob.rigid_body is not None:
        return "active rigid body" if ob.rigid_body.type == "ACTIVE" else ""
    if ob.redmax.simulate:
        return "Simulate is on"
    if ob.type == "MESH":
        for h in bscene.objects:
            c = h.rigid_body_constraint
            if c is not None and c.enabled and ob in (c.object1, c.object2):
                return f"in the Rigid Body Constraint on '{h.name}'"
    return ""


def _left_out(bscene, m, objects):
    """{reason: [object names]} for scene objects a bake does not simulate."""
    mapped = {t.object for t in m.targets} if m is not None else set()
    chosen = set(objects) if objects is not None else None
    curves = {item.curve for item in bscene.redmax.links}
    out: dict = {}
    for ob in bscene.objects:
        if ob in mapped or ob in curves:
            continue
        reason = ""
        if chosen is not None and ob not in chosen and simulated_reason(ob, bscene):
            reason = "not selected (Selected Only): holds its place"
        elif ob.rigid_body is not None and ob.rigid_body.type == "PASSIVE":
            reason = "passive rigid body: part of the world"
        elif ob.type == "ARMATURE" and not ob.redmax.simulate:
            reason = "armature with Simulate off"
        elif ob.rigid_body_constraint is not None and not ob.rigid_body_constraint.enabled:
            reason = "Rigid Body Constraint disabled"
        elif ob.type == "MESH" and ob.rigid_body_constraint is None and not simulated_reason(ob, bscene):
            reason = "no rigid body, constraint or Simulate"
        if reason:
            out.setdefault(reason, []).append(ob.name)
    return out


def summary(context, objects=None) -> dict:
    """What a bake of the scene (or of ``objects``) would simulate: counts of bodies, joints (not
    free), links (cables and springs), loop closures and degrees of freedom, what is left out and
    why, and the error that would refuse the bake ("" if none)."""
    bscene = context.scene
    out = {"bodies": 0, "joints": 0, "links": 0, "closures": 0, "dof": 0, "error": ""}
    m = None
    try:
        m = build(context, objects)
    except (MappingError, engine.ModelError) as err:
        out["error"] = str(err)
    if m is not None:
        model: Any = m.scene.model
        out.update(bodies=model.n_bodies, dof=model.nv, links=len(m.scene.pairs),
                   closures=len(m.scene.loop_closures),
                   joints=int(sum(int(t) != engine.joints.FREE for t in model.joint_type)))
    out["left_out"] = _left_out(bscene, m, objects)
    return out
