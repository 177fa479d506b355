"""Armatures → bodies: one body per bone, joints from the IK locks or the bone's RedMax setting, limits from
its Limit Rotation constraint, a capsule along the bone for contact."""
from __future__ import annotations

import numpy as np

from .._engine import geometry
from .common import (AXES, AXIS_INDEX, WORLD, MappingError, Target, axis_limits, check_matrix, describe,
                     joint_from_locks, matrix, rigid_part)


def _bone_joint(bone, pose_bone):
    """Joint type, axis and joint-frame rotation (bone frame) of one bone."""
    s = bone.redmax
    if s.joint == "AUTO":
        locks = (pose_bone.lock_ik_x, pose_bone.lock_ik_y, pose_bone.lock_ik_z)
        return joint_from_locks(locks)
    if s.joint in ("REVOLUTE", "PRISMATIC"):
        return s.joint.lower(), AXES[AXIS_INDEX[s.axis]], np.eye(3)
    if s.joint == "UNIVERSAL":
        locks = [i == AXIS_INDEX[s.axis] for i in range(3)]
        return joint_from_locks(locks)
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
            limits = axis_limits(axes, jtype, axis_rot, jrot)
            if jtype == "spherical" and limits is not None:
                # _bone_joint gives a ball joint the bone's own frame: the bone's Euler angles are the joint's
                return limits, limit_euler_order(c)
            return limits, "rotation_vector"
    return None, "rotation_vector"


def add_armature(b, arm_ob):
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
            raise MappingError(f"{describe(target)}: {err}") from None
        length = float(bone.length) * float(np.cbrt(abs(np.linalg.det(A[:3, :3]))))
        if length <= 0:
            raise MappingError(f"{describe(target)}: has zero length")
        mass = bone.redmax.mass if bone.redmax.mass > 0 else settings.linear_density * length
        com = p + R[:, 1] * (0.5 * length)
        inertia = R @ np.diag(geometry.rod_inertia(mass, length, 0.1 * length)) @ R.T
        parent = f"{arm_ob.name}:{bone.parent.name}" if bone.parent else WORLD
        if parent == WORLD and settings.root == "FREE":
            jtype, axis, jrot, limits, limit_angles = "free", None, np.eye(3), None, "rotation_vector"
        else:
            jtype, axis, jrot = _bone_joint(bone, pb)
            if jtype == "prismatic" and bone.use_connect:
                raise MappingError(f"{describe(target)}: a slider joint needs a bone that is not connected to "
                                   "its parent (a connected bone cannot move away from the parent's tail)")
            limits, limit_angles = _bone_limits(pb, jtype, axis, jrot)
        radius = bone.redmax.contact_radius if bone.redmax.contact_radius > 0 else 0.1 * length
        shape = {"type": "capsule", "radius": float(radius), "length": length, "axis": R[:, 1], "center": com}
        if not bone.redmax.collide:
            shape["collide"] = False
        b.add(target.body, target, parent, jtype, R @ jrot, p, axis if axis is not None else (0, 0, 1),
              mass, com, inertia, limits, shape, limit_angles)
        if bone.redmax.stiffness > 0 or bone.redmax.damping > 0:
            b.joint_springs.append((target.body, bone.redmax.stiffness, bone.redmax.damping, describe(target)))
