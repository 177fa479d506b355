"""Rigid objects → bodies: Rigid Body Constraints form the joint tree (object1 = parent, object2 = child, each
constraint a chain of engine joints, ``constraint_joints``); constraints that close a loop become loop
closures; MOTOR constraints motors; mass from the mesh; what Blender moves by animation, moving anchors
(``anchors``); the per-body and per-constraint settings of ``rigid_settings``."""
from __future__ import annotations

import collections

import numpy as np

from .._engine import engine, geometry
from . import anchors, rigid_settings
from .common import WORLD, MappingError, Target, check_matrix, matrix, rigid_part
from .constraint_joints import JOINT_TYPES, closable_kind, constraint_parts

CONNECTOR_MASS = 1e-6  # of the child's mass: the bodies between a chain's joints (a GENERIC's slides) weigh nothing


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


def _masses_at_once(objects, density, depsgraph) -> tuple:
    """({object: ``_object_mass``}, {object: local bounding box (lo (3,), hi (3,))}) for the meshes among
    ``objects`` that give a volume, from one read of each mesh and computed for all of them in one pass
    (``geometry.mesh_mass_properties_many``); the others are left to ``_object_mass`` and its messages, in the
    order the tree places them."""
    items, vertices, triangles, bounds, offset = [], [], [], {}, 0
    for ob in objects:
        if ob.type != "MESH":
            continue
        W = matrix(ob.matrix_world)
        co, tris = _mesh_triangles(ob, depsgraph)
        if not len(tris) or not np.isfinite(W).all() or not np.isfinite(co).all():
            continue
        lo, hi = co.min(axis=0), co.max(axis=0)
        bounds[ob] = (lo, hi)  # (what ``bound_box`` gives for the evaluated mesh)
        extent = hi - lo
        if extent.min() <= 1e-9 * max(1.0, extent.max()):
            continue
        vertices.append(co @ W[:3, :3].T + W[:3, 3])
        triangles.append((tris[:, ::-1] if geometry.det3(W[:3, :3]) < 0 else tris) + offset)
        offset += len(co)
        items.append(ob)
    if not items:
        return {}, bounds
    mass, com, inertia, _ = geometry.mesh_mass_properties_many(np.concatenate(vertices), np.concatenate(triangles),
                                                               [len(t) for t in triangles], density)
    out = {}
    for k, ob in enumerate(items):
        if np.isfinite(mass[k]):
            override = ob.redmax.mass if ob.redmax.mass > 0 else (ob.rigid_body.mass if ob.rigid_body else 0.0)
            scale = override / mass[k] if override > 0 else 1.0
            out[ob] = (float(mass[k] * scale), com[k], inertia[k] * scale)
    return out, bounds


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


def _polar_rotations(A):
    """Rotations (k, 3, 3) of the polar decompositions of A (k, 3, 3) (``rigid_part``, all at once) and whether
    each is proper (not mirrored)."""
    U, _, Vt = np.linalg.svd(A)
    R = U @ Vt
    return R, np.linalg.det(R) > 0


def _shapes_at_once(objects, bounds) -> dict:
    """{object: ``_object_shape``} for the ``objects`` with a finite, unmirrored matrix, all at once (their
    rotations in one decomposition; ``bounds``: the local bounding boxes of meshes already read); the others
    are left to ``_object_shape``."""
    obs, Ws, boxes = [], [], []
    for ob in objects:
        W = matrix(ob.matrix_world)
        box = bounds[ob] if ob in bounds else [tuple(c) for c in ob.bound_box]
        if len(box) in (2, 8) and np.isfinite(W).all():
            obs.append(ob)
            Ws.append(W)
            boxes.append(np.array(box, dtype=float).reshape(-1, 3))
    if not obs:
        return {}
    W = np.array(Ws)
    lo, hi = np.array([b.min(axis=0) for b in boxes]), np.array([b.max(axis=0) for b in boxes])
    size = (hi - lo) * np.linalg.norm(W[:, :3, :3], axis=1)  # scale along the objects' own axes
    R, proper = _polar_rotations(W[:, :3, :3])
    center = np.einsum("kij,kj->ki", W[:, :3, :3], 0.5 * (lo + hi)) + W[:, :3, 3]
    out: dict = {}
    for k, ob in enumerate(obs):
        if not proper[k]:
            continue
        if not np.all(size[k] > 1e-9):
            out[ob] = None
            continue
        out[ob] = {"type": "box", "size": size[k], "center": center[k], "rotation": R[k]}
        if not ob.redmax.collide:
            out[ob]["collide"] = False
    return out


def _frames_at_once(hosts) -> dict:
    """{host: ``rigid_part`` of its world matrix} for the ``hosts`` (checked by ``constraint_hosts``), all at once."""
    if not hosts:
        return {}
    W = np.array([matrix(h.matrix_world) for h in hosts])
    R, proper = _polar_rotations(W[:, :3, :3])
    return {h: (R[k], W[k, :3, 3].copy()) for k, h in enumerate(hosts) if proper[k]}


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
    """Whether a bake simulates ``ob``: an active rigid body Blender simulates (Dynamic on, Animated off), a mesh
    in a Rigid Body Constraint or an object with *Simulate* on. Armatures are their bones."""
    if ob.type == "ARMATURE":
        return False
    rb = rig.rigid_body(ob)
    if rb is not None:
        return rb.type == "ACTIVE" and rb.enabled and not rb.kinematic
    return ob.redmax.simulate or (ob in constrained and ob.type == "MESH")  # empties anchor to the world


def limit_axes(c):
    """(use, lower, upper) per limited axis of a Rigid Body Constraint ``c`` (HINGE ``limit_ang_z``, SLIDER
    ``limit_lin_x``, PISTON both x, GENERIC and GENERIC_SPRING all six); None for other types."""
    kinds = {"HINGE": (("ang", "z"),), "SLIDER": (("lin", "x"),), "PISTON": (("lin", "x"), ("ang", "x")),
             "GENERIC": tuple((k, a) for k in ("lin", "ang") for a in "xyz")}
    kinds["GENERIC_SPRING"] = kinds["GENERIC"]
    if c.type not in kinds:
        return None
    return [(getattr(c, f"use_limit_{k}_{a}"), getattr(c, f"limit_{k}_{a}_lower"), getattr(c, f"limit_{k}_{a}_upper"))
            for k, a in kinds[c.type]]


def limits_a_joint(c) -> bool:
    """Whether a Rigid Body Constraint may limit its joint: a limit that is on with lower < upper (equal
    limits lock the axis, and lower > upper leaves it free, as in Bullet)."""
    return any(use and lower < upper for use, lower, upper in limit_axes(c) or ())


def constraint_hosts(bscene, objects, rig=LiveRig):
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


def _held_islands(dynamic, edges):
    """The dynamic bodies Bullet never wakes: those whose whole island (bodies joined by constraints) starts
    deactivated (Deactivation and Start Deactivated on). One active body in an island wakes all of it."""
    island = {ob: ob for ob in dynamic}

    def find(o):
        while island[o] is not o:
            o = island[o]
        return o

    for h in edges:
        c = h.rigid_body_constraint
        if c.object1 in island and c.object2 in island:
            island[find(c.object1)] = find(c.object2)
    members: dict = {}
    for ob in dynamic:
        members.setdefault(find(ob), []).append(ob)
    held = set()
    for group in members.values():
        if all(ob.rigid_body is not None and ob.rigid_body.use_deactivation and ob.rigid_body.use_start_deactivated
               for ob in group):
            held.update(group)
    return held


def add_rigid_objects(b, bscene, objects, density, depsgraph, closures, timeline):
    """Joint tree from Rigid Body Constraints (moving anchors as prescribed roots, ``timeline``); loop-closing
    constraints go to ``closures``, MOTORs to ``b.motors``."""
    hosts = constraint_hosts(bscene, objects)
    constrained = {o for h in hosts for o in (h.rigid_body_constraint.object1, h.rigid_body_constraint.object2) if o}
    edges = [h for h in sorted(hosts, key=lambda o: o.name) if h.rigid_body_constraint.type in JOINT_TYPES]
    motors = [h for h in sorted(hosts, key=lambda o: o.name) if h.rigid_body_constraint.type == "MOTOR"]
    dynamic = sorted((ob for ob in objects if is_dynamic(ob, constrained)), key=lambda o: o.name)
    for ob in sorted(_held_islands(dynamic, edges), key=lambda o: o.name):
        b.ignore(f"object '{ob.name}'", "Start Deactivated",
                 "held where it starts for the whole bake: Bullet wakes it when something touches it, and the "
                 "bake does not simulate collisions yet")
        dynamic.remove(ob)
    dynamic_set, placed, used = set(dynamic), set(), set()
    masses, bounds = _masses_at_once(dynamic, density, depsgraph)  # (all at once; errors wait for ``place``)
    shapes, frames = _shapes_at_once(dynamic, bounds) if b.contact_shapes else {}, _frames_at_once(edges)
    incident: dict = {}  # object → the constraint hosts at it, in ``edges`` order
    for h in edges:
        c = h.rigid_body_constraint
        for o in dict.fromkeys((c.object1, c.object2)):
            incident.setdefault(o, []).append(h)

    def mass_of(ob):
        return _object_mass(ob, density, depsgraph) if ob.type == "MESH" else None

    def anchor_of(o):
        """The anchor body of a non-simulated constraint end that Blender moves or releases, else None."""
        released = timeline.release_time(o.name) is not None
        if not (anchors.moving_anchor(o) or released):
            return None
        return anchors.add_anchor(b, o, "", timeline, mass_of(o) if released else None)

    def place(ob, parent_ob, host):
        check_matrix(matrix(ob.matrix_world), f"object '{ob.name}'")
        mass, com, inertia = masses[ob] if ob in masses else _object_mass(ob, density, depsgraph)
        target = Target(ob.name, ob, "", matrix(ob.matrix_world))
        shape = None if not b.contact_shapes else shapes[ob] if ob in shapes else _object_shape(ob)
        if host is None:  # free-floating root: link frame = the object's frame
            R, p = rigid_part(target.world0)
            b.add(ob.name, target, WORLD, "free", R, p, (0, 0, 1), mass, com, inertia, shape_world=shape)
        else:
            c = host.rigid_body_constraint
            parts = constraint_parts(c, flip=ob == c.object1)
            R, p = frames[host] if host in frames else rigid_part(matrix(host.matrix_world))  # (checked in constraint_hosts)
            parent = parent_ob.name if parent_ob is not None else WORLD
            parent = b.anchor_bodies.get(parent_ob, parent)
            for k, part in enumerate(parts):
                last = k == len(parts) - 1
                name = ob.name if last else f"{ob.name}:{host.name}:{k}"
                tgt = target if last else Target(name, ob, "", target.world0, keyed=False)
                m = mass if last else CONNECTOR_MASS * mass
                b.add(name, tgt, parent, part.jtype, R @ part.frame, p, part.axis, m, com,
                      inertia if last else inertia * CONNECTOR_MASS, part.limits, shape_world=shape if last else None,
                      limit_angles=part.limit_angles)
                if part.springs and any(sp is not None for sp in part.springs):
                    k_, d_ = zip(*[(sp or (0.0, 0.0)) for sp in part.springs])
                    b.joint_springs.append((name, list(k_), list(d_), f"rigid body constraint on '{host.name}'"))
                parent = name
            if ob.redmax.joint_stiffness > 0 or ob.redmax.joint_damping > 0:
                b.joint_springs.append((ob.name, ob.redmax.joint_stiffness, ob.redmax.joint_damping, f"object '{ob.name}'"))
            rigid_settings.constraint_settings(b, host, ob.name, parent_ob)
        rigid_settings.body_settings(b, ob)
        placed.add(ob)

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
                    place(other, cur if (cur in dynamic_set or cur in b.anchor_bodies) else None, h)
                    used.add(h)
                    queue.append(other)

    world_ends = dict.fromkeys(o for h in edges for o in (h.rigid_body_constraint.object1, h.rigid_body_constraint.object2)
                               if o not in dynamic_set)
    for o in world_ends:  # moving anchors first: the chains that hang from them grow from their bodies
        if any(x in dynamic_set for h in incident.get(o, ())
               for x in (h.rigid_body_constraint.object1, h.rigid_body_constraint.object2)):
            name = anchor_of(o)
            if name is not None:
                b.anchor_bodies[o] = name
                if timeline.release_time(o.name) is not None:
                    rigid_settings.body_settings(b, o)
    for ob in objects:  # bodies Blender lets go of during the bake, tied to nothing: prescribed, then free
        if ob not in b.anchor_bodies and anchors.held_by_blender(ob) and timeline.release_time(ob.name) is not None:
            name = anchor_of(ob)
            b.anchor_bodies[ob] = name
            rigid_settings.body_settings(b, ob)
    grow(world_ends)
    for ob in dynamic:  # what no joint chain ties to the world floats freely
        if ob not in placed:
            place(ob, None, None)
            grow([ob])
    closures += [h for h in edges if h not in used
                 and (h.rigid_body_constraint.object1 in dynamic_set or h.rigid_body_constraint.object2 in dynamic_set)]
    for h in motors:
        rigid_settings.add_motor(b, h, dynamic_set, anchor_of)


def end_body(o, targets, anchor_bodies):
    """The engine body of a constraint end: its own, its anchor's, or the world."""
    if o is None:
        return WORLD
    if o in anchor_bodies:
        return anchor_bodies[o]
    return o.name if o.name in targets and targets[o.name].bone == "" else WORLD


def add_constraint_closure(scene, host, targets, anchor_bodies):
    c = host.rigid_body_constraint
    what = f"rigid body constraint on '{host.name}'"
    parts = constraint_parts(c, flip=False)
    kind = closable_kind(parts)
    if kind is None:
        raise MappingError(f"{what}: closes a loop, which a {c.type} constraint with a free or limited linear "
                           "axis cannot (make one of its objects part of no other chain, or lock its linear axes)")
    part = parts[0]
    R, p = rigid_part(matrix(host.matrix_world))
    ends = [end_body(o, targets, anchor_bodies) for o in (c.object1, c.object2)]
    frame = R @ part.frame
    axis = frame[:, 0] if kind == "universal" else frame @ np.asarray(part.axis, float)
    try:
        scene.add_loop_closure(ends[0], ends[1], p, kind=kind, axis=axis, axis_b=frame[:, 1], name=host.name)
    except engine.ModelError as err:
        raise MappingError(f"{what}: {err}") from None
