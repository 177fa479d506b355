"""Rigid objects → bodies: Rigid Body Constraints form the joint tree (object1 = parent, object2 = child);
constraints that close a loop become loop closures, GENERIC_SPRING a spring; mass from the mesh."""
from __future__ import annotations

import bpy
import numpy as np

from .. import keyframes
from .._engine import engine, geometry
from .common import (WORLD, MappingError, Target, axis_limits, check_matrix, in_scene, joint_from_locks, matrix,
                     rigid_part)

HOSTED_JOINTS = {"HINGE": "revolute", "SLIDER": "prismatic", "POINT": "spherical", "FIXED": "fixed"}
CLOSURE_OF_JOINT = engine.scene.CLOSURE_KIND_OF_JOINT  # joint type name → loop-closure kind


def _object_mass(ob, density, depsgraph):
    """(mass, com (3,), inertia (3, 3)) in world coordinates at the start, from the evaluated mesh."""
    what = f"object '{ob.name}'"
    W = matrix(ob.matrix_world)
    override = ob.redmax.mass if ob.redmax.mass > 0 else (ob.rigid_body.mass if ob.rigid_body else 0.0)
    if ob.type == "MESH":
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
        extent = np.ptp(co.reshape(n, 3), axis=0) if n else np.zeros(3)
        if m == 0 or extent.min() <= 1e-9 * max(1.0, extent.max()):
            raise MappingError(f"{what}: its mesh is degenerate (zero volume: flat, a line or empty); "
                               "give it thickness")
        world = co.reshape(n, 3) @ W[:3, :3].T + W[:3, 3]
        if np.linalg.det(W[:3, :3]) < 0:
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


def check_fixed_anchor(ob) -> None:
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


def is_dynamic(ob, constrained, rig=LiveRig):
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
        jtype, axis, jrot = joint_from_locks(ang)
        return jtype, axis if axis is not None else (0.0, 0.0, 1.0), jrot
    raise MappingError(f"{what}: type {c.type} is not supported (use HINGE, SLIDER, POINT, FIXED, GENERIC "
                       "or GENERIC_SPRING)")


def _constraint_limits(host, jtype, axis, jrot, flip):
    """Joint limits of a Rigid Body Constraint: HINGE ``limit_ang_z``, SLIDER ``limit_lin_x``, GENERIC
    angular limits of its free axes (as ``axis_limits``). Blender's angle is that of object1 relative
    to object2 (checked against Blender's own rigid body solver in tests/test_addon_limits.py); when the
    tree has object2 as the child (flip), the bounds change sign and swap."""
    axes = limit_axes(host.rigid_body_constraint)
    limits = None if axes is None else axis_limits(axes, jtype, np.asarray(axis), jrot)
    if limits is not None and flip:
        limits = (-limits[1], -limits[0])
    return limits


def limit_axes(c):
    """(use, lower, upper) per axis of the limits a Rigid Body Constraint ``c`` sets (``axis_limits``'s
    input): HINGE ``limit_ang_z``, SLIDER ``limit_lin_x``, GENERIC ``limit_ang_x/y/z``; None for other types."""
    if c.type == "HINGE":
        return [(False, 0, 0), (False, 0, 0), (c.use_limit_ang_z, c.limit_ang_z_lower, c.limit_ang_z_upper)]
    if c.type == "SLIDER":
        return [(c.use_limit_lin_x, c.limit_lin_x_lower, c.limit_lin_x_upper), (False, 0, 0), (False, 0, 0)]
    if c.type == "GENERIC":
        return [(getattr(c, f"use_limit_ang_{a}"), getattr(c, f"limit_ang_{a}_lower"), getattr(c, f"limit_ang_{a}_upper"))
                for a in "xyz"]
    return None


def limits_a_joint(c) -> bool:
    """Whether a Rigid Body Constraint may limit its joint (``_constraint_limits``): a limit that is on, other
    than a GENERIC 0..0 lock (a locked axis, not a limit)."""
    return any(use and not (c.type == "GENERIC" and lower == 0.0 and upper == 0.0)
               for use, lower, upper in limit_axes(c) or ())


def constraint_hosts(bscene, objects, rig=LiveRig):
    """The enabled Rigid Body Constraint hosts among ``objects`` (constraints read by ``rig``), checked: both
    ends set and in the scene (an object deleted with X stays alive through the pointer), a usable host frame."""
    hosts = [ob for ob in objects if rig.constraint(ob) is not None and rig.constraint(ob).enabled]
    for h in hosts:
        c = rig.constraint(h)
        what = f"rigid body constraint on '{h.name}'"
        for i, o in enumerate((c.object1, c.object2), 1):
            if o is None:
                raise MappingError(f"{what}: needs both objects (object {i} is empty)")
            if not in_scene(bscene, o):
                raise MappingError(f"{what}: object {i} '{o.name}' is not in the scene (deleted?)")
        check_matrix(matrix(h.matrix_world), what)
    return hosts


def add_rigid_objects(b, bscene, objects, density, depsgraph, closures, springs):
    """Joint tree from Rigid Body Constraints; loop-closing constraints go to ``closures``."""
    hosts = constraint_hosts(bscene, objects)
    constrained = {o for h in hosts for o in (h.rigid_body_constraint.object1, h.rigid_body_constraint.object2) if o}
    dynamic = sorted((ob for ob in objects if is_dynamic(ob, constrained)), key=lambda o: o.name)
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
                    check_fixed_anchor(o)

    def place(ob, parent_ob, host):
        check_matrix(matrix(ob.matrix_world), f"object '{ob.name}'")
        mass, com, inertia = _object_mass(ob, density, depsgraph)
        target = Target(ob.name, ob, "", matrix(ob.matrix_world))
        shape = _object_shape(ob)
        if host is None:  # free-floating root: link frame = the object's frame
            R, p = rigid_part(target.world0)
            b.add(ob.name, target, WORLD, "free", R, p, (0, 0, 1), mass, com, inertia, shape_world=shape)
        else:
            jtype, axis, jrot = _constraint_joint(host)
            limits = _constraint_limits(host, jtype, axis, jrot, flip=ob == host.rigid_body_constraint.object2)
            R, p = rigid_part(matrix(host.matrix_world))  # (the host's matrix was checked in constraint_hosts)
            b.add(ob.name, target, parent_ob.name if parent_ob is not None else WORLD, jtype, R @ jrot, p, axis,
                  mass, com, inertia, limits, shape_world=shape)
            if ob.redmax.joint_stiffness > 0 or ob.redmax.joint_damping > 0:
                b.joint_springs.append((ob.name, ob.redmax.joint_stiffness, ob.redmax.joint_damping, f"object '{ob.name}'"))
        placed.add(ob)

    def grow(roots):  # breadth first from bodies (or world objects) already placed
        queue = list(roots)
        while queue:
            cur = queue.pop(0)
            for h in edges:
                c = h.rigid_body_constraint
                if h in used or cur not in (c.object1, c.object2):
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


def add_constraint_closure(scene, host, targets):
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


def add_constraint_spring(scene, host, targets):
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
