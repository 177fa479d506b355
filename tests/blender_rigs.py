"""Rigs and checks shared by the add-on tests (import after ``bpy``; conftest.py sets up Blender).

Builders make objects from data (``box``, ``empty``, ``armature``) or the way an artist does, with
Blender's operators (``artist_*``: ``mesh.primitive_cube_add``, ``rigidbody.object_add``,
``rigidbody.constraint_add``). ``rna_dump`` walks every RNA property of a datablock (a full
snapshot to compare bit for bit); ``fcurve_world`` evaluates baked F-curves into world matrices
independently of Blender's own evaluation.
"""
import math

import bpy
import numpy as np
from mathutils import Matrix, Quaternion, Vector

X_TO_Z = np.array([[0.0, 0, 1], [0, 1, 0], [-1, 0, 0]])  # columns: local x, y, z; local z = world x


def _place(ob, location, rotation):
    M = np.eye(4)
    if rotation is not None:
        M[:3, :3] = rotation
    M[:3, 3] = location
    ob.matrix_world = Matrix(M.tolist())


def box(name, size, location, rotation=None):
    """A closed box mesh of edge lengths ``size`` (its mesh, not its scale) linked to the scene."""
    import bmesh

    me = bpy.data.meshes.new(name)
    bm = bmesh.new()
    bmesh.ops.create_cube(bm, size=1.0)
    bmesh.ops.scale(bm, vec=size, verts=bm.verts)
    bm.to_mesh(me)
    bm.free()
    ob = bpy.data.objects.new(name, me)
    bpy.context.scene.collection.objects.link(ob)
    _place(ob, location, rotation)
    return ob


def empty(name, location=(0, 0, 0), rotation=None):
    ob = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(ob)
    _place(ob, location, rotation)
    return ob


def constraint(host, kind, a, b):
    """A Rigid Body Constraint of type ``kind`` on ``host`` between a (object 1) and b (object 2)."""
    if bpy.context.scene.rigidbody_world is None:  # constraints live in a rigid body world
        bpy.ops.rigidbody.world_add()
    bpy.context.view_layer.objects.active = host  # constraint_add works on the active object (recipes §8)
    bpy.ops.rigidbody.constraint_add(type=kind)
    c = host.rigid_body_constraint
    c.object1, c.object2 = a, b
    return c


def armature(ctx, name, bones):
    """Armature object ``name`` with bones (name, head, tail, parent name or None[, connected]), in object mode;
    a bone is connected when its head is its parent's tail unless told otherwise."""
    arm = bpy.data.armatures.new(name)
    ob = bpy.data.objects.new(name, arm)
    ctx.scene.collection.objects.link(ob)
    ctx.view_layer.objects.active = ob
    bpy.ops.object.mode_set(mode="EDIT")
    for bone, head, tail, parent, *connect in bones:
        eb = arm.edit_bones.new(bone)
        eb.head, eb.tail = head, tail
        if parent is not None:
            eb.parent = arm.edit_bones[parent]
            eb.use_connect = connect[0] if connect else tuple(eb.head) == tuple(eb.parent.tail)
    bpy.ops.object.mode_set(mode="OBJECT")
    return ob


def keys(ob):
    """Sorted (data path, index, key bytes) of every F-curve of the object's action, in its slot."""
    out = []
    ad = ob.animation_data
    for layer in ad.action.layers:
        for strip in layer.strips:
            for bag in strip.channelbags:
                if ad.action_slot is not None and bag.slot != ad.action_slot:
                    continue
                for fc in bag.fcurves:
                    co = np.empty(2 * len(fc.keyframe_points), np.float32)
                    fc.keyframe_points.foreach_get("co", co)
                    out.append((fc.data_path, fc.array_index, co.tobytes()))
    return sorted(out)


# ------------------------------------------------------------- the artist's way
def artist_cube(name, size, location, rigid_body=None, rotation=(0.0, 0.0, 0.0)):
    """Add > Mesh > Cube, then Object > Rigid Body > Add Active/Passive (``rigid_body``)."""
    bpy.ops.mesh.primitive_cube_add(size=size, location=location, rotation=rotation)
    ob = bpy.context.active_object
    ob.name = ob.data.name = name
    if rigid_body:
        bpy.ops.rigidbody.object_add(type=rigid_body)
    return ob


def artist_constraint(name, kind, a, b, location, rotation=(0.0, 0.0, 0.0)):
    """Add > Empty, then Physics > Rigid Body Constraint of type ``kind`` between a and b."""
    bpy.ops.object.empty_add(location=location, rotation=rotation)
    host = bpy.context.active_object
    host.name = name
    bpy.ops.rigidbody.constraint_add(type=kind)
    c = host.rigid_body_constraint
    c.object1, c.object2 = a, b
    return host


HINGE_ABOUT_X = (0.0, math.pi / 2, 0.0)  # an empty rotated so its local Z (the hinge axis) is world X


def artist_pendulum(theta0=0.5, L=1.0, side=0.1):
    """A passive cube at the origin and an active box hanging from it on a HINGE about world X."""
    top = artist_cube("top", 0.2, (0, 0, 0), "PASSIVE")
    bob = artist_cube("bob", side, (0, L * math.sin(theta0), -L * math.cos(theta0)), "ACTIVE")
    artist_constraint("hinge", "HINGE", top, bob, (0, 0, 0), HINGE_ABOUT_X)
    return top, bob


def artist_chain(n=5, link=0.3):
    """A passive anchor and ``n`` active cubes in a horizontal row along +Y, each hinged (about world X)
    to the previous one at their shared face; returns (anchor, cubes)."""
    anchor = artist_cube("anchor", link, (0, 0, 0), "PASSIVE")
    cubes, prev = [], anchor
    for i in range(n):
        cube = artist_cube(f"link{i + 1}", link * 0.9, (0, (i + 1) * link, 0), "ACTIVE")
        artist_constraint(f"hinge{i + 1}", "HINGE", prev, cube, (0, (i + 0.5) * link, 0), HINGE_ABOUT_X)
        cubes.append(cube)
        prev = cube
    return anchor, cubes


def artist_connected_chain(n=4, size=0.5, spacing=0.6):
    """A passive cube and ``n`` active cubes in a row along +X, joined the quick way: all selected, the
    passive one active, *Object › Rigid Body › Connect* (HINGE, chain by distance); the hinge empties are
    turned so their local Z (the hinge axis) is world Y and the chain swings down. Returns (anchor, cubes)."""
    cubes = [artist_cube(f"C{i}", size, (spacing * i, 0, 0), "PASSIVE" if i == 0 else "ACTIVE") for i in range(n + 1)]
    for ob in bpy.context.view_layer.objects:
        ob.select_set(ob in cubes)
    bpy.context.view_layer.objects.active = cubes[0]
    assert bpy.ops.rigidbody.connect(con_type="HINGE", pivot_type="CENTER",
                                     connection_pattern="CHAIN_DISTANCE") == {"FINISHED"}
    for h in bpy.context.scene.objects:
        if h.rigid_body_constraint is not None:
            h.rotation_euler = (-math.pi / 2, 0.0, 0.0)
    bpy.context.view_layer.update()
    return cubes[0], cubes[1:]


def in_world(ob):
    """Whether Blender's rigid body simulation of the current scene holds ``ob``: it is in the rigid body world's
    collection (a body) or constraints collection (a constraint host). A bake takes baked objects out of both
    and leaves their settings on them."""
    w = bpy.context.scene.rigidbody_world
    return w is not None and any(coll is not None and ob.name in coll.objects and coll.objects[ob.name] == ob
                                 for coll in (w.collection, w.constraints))


# ------------------------------------------------------------------ snapshots
def rna_dump(struct, depth=0, seen=None):
    """Every RNA property of ``struct`` (pointers to IDs by name, nested structs and collections
    walked) as plain Python values; floats kept exact (the comparison is bit for bit)."""
    seen = set() if seen is None else seen
    out = {}
    for p in struct.bl_rna.properties:
        name = p.identifier
        if name in ("rna_type", "session_uid"):  # (session_uid: a runtime number, new after a reload)
            continue
        try:
            v = getattr(struct, name)
        except Exception as err:  # some properties raise in background mode
            out[name] = f"<{type(err).__name__}>"
            continue
        out[name] = _dump_value(p, v, depth, seen)
    return out


def _dump_value(p, v, depth, seen):
    if p.type == "POINTER":
        if v is None:
            return None
        if isinstance(v, bpy.types.ID):
            return ("ID", type(v).__name__, v.name_full)
        key = v.as_pointer()
        if depth > 4 or key in seen:
            return ("struct", type(v).__name__)
        seen.add(key)
        return rna_dump(v, depth + 1, seen)
    if p.type == "COLLECTION":
        items = list(v)
        if items and isinstance(items[0], bpy.types.ID):
            return [("ID", type(x).__name__, x.name_full) for x in items]
        if depth > 4:
            return len(items)
        return [rna_dump(x, depth + 1, seen) for x in items]
    if isinstance(v, set):
        return sorted(v)
    if hasattr(v, "__len__") and not isinstance(v, str):
        return [tuple(x) if hasattr(x, "__len__") else x for x in v]
    return v


CACHE_STATUS = ("info", "is_outdated", "is_frame_skip", "is_baking")  # runtime status text of a point cache


def scene_snapshot(bscene, objects):
    """What A2 compares: each object's own RNA, its rigid body, constraint, animation data and pose
    bones, and the rigid body world with its collections and point cache."""
    out = {}
    for ob in objects:
        d = {"object": {k: v for k, v in rna_dump(ob).items() if k not in ("rigid_body", "rigid_body_constraint",
                                                                            "animation_data", "pose")},
             "rigid_body": rna_dump(ob.rigid_body) if ob.rigid_body else None,
             "rigid_body_constraint": rna_dump(ob.rigid_body_constraint) if ob.rigid_body_constraint else None,
             "animation_data": rna_dump(ob.animation_data) if ob.animation_data else None}
        if ob.pose is not None:
            d["pose"] = {pb.name: rna_dump(pb) for pb in ob.pose.bones}
        out[ob.name] = d
    w = bscene.rigidbody_world
    if w is not None:
        world = rna_dump(w)
        world["point_cache"] = {k: v for k, v in rna_dump(w.point_cache).items()
                                if k not in CACHE_STATUS and k != "point_caches"}
        for key in ("collection", "constraints"):
            coll = getattr(w, key)
            world[f"{key} objects"] = [o.name for o in coll.objects] if coll else None
        out["rigidbody_world"] = world
    out["actions"] = sorted(a.name for a in bpy.data.actions)
    return out


# ---------------------------------------------------------- F-curve playback
def _fcurves(ob):
    ad = ob.animation_data
    if ad is None or ad.action is None:
        return {}
    out = {}
    for layer in ad.action.layers:
        for strip in layer.strips:
            for bag in strip.channelbags:
                if ad.action_slot is not None and bag.slot != ad.action_slot:
                    continue
                for fc in bag.fcurves:
                    out[(fc.data_path, fc.array_index)] = fc
    return out


def _basis(curves, prefix, owner, frame):
    """matrix_basis of an object or pose bone from its F-curves (un-keyed channels from ``owner``)."""
    def value(path, i, default):
        fc = curves.get((prefix + path, i))
        return fc.evaluate(frame) if fc is not None else default[i]

    loc = Vector([value("location", i, owner.location) for i in range(3)])
    q = Quaternion([value("rotation_quaternion", i, owner.rotation_quaternion) for i in range(4)])
    q.normalize()  # Blender normalizes quaternion channels when it builds the matrix
    scale = owner.scale
    return Matrix.LocRotScale(loc, q, scale)


def fcurve_world(ob, frame, bone=""):
    """World matrix (4, 4) of an object or pose bone at ``frame`` from its baked F-curves and rest data."""
    curves = _fcurves(ob)
    if not bone:
        M = _basis(curves, "", ob, frame)
        if ob.parent is not None:
            M = fcurve_world(ob.parent, frame) @ ob.matrix_parent_inverse @ M
        return M
    chain = []
    b = ob.data.bones[bone]
    while b is not None:
        chain.append(b)
        b = b.parent
    pose = Matrix.Identity(4)
    for b in reversed(chain):  # root first: P = P_parent @ (L_parent⁻¹ L) @ basis
        rel = b.matrix_local if b.parent is None else b.parent.matrix_local.inverted() @ b.matrix_local
        basis = _basis(curves, f'pose.bones["{bpy.utils.escape_identifier(b.name)}"].', ob.pose.bones[b.name],
                       frame)
        pose = pose @ rel @ basis
    return fcurve_world(ob, frame) @ pose


def differences(a, b, path=""):
    """Paths where two ``scene_snapshot`` values differ (for assertion messages)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            out += differences(a.get(k, "<missing>"), b.get(k, "<missing>"), f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += differences(x, y, f"{path}[{i}]")
        return out
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return [] if all(not differences(x, y) for x, y in zip(a, b)) else [(path, a, b)]
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return []  # NaN kept as NaN
    return [] if a == b else [(path, a, b)]


HINGE_ABOUT_Y = (-math.pi / 2, 0.0, 0.0)  # an empty rotated so its local Z (the hinge axis) is world Y


def rope_bridge_deck(n, plank, slack):
    """(x, z, tilt) of each plank's centre and its turn about world Y (rad, +: its far end down), and the hinge
    points (n + 1, 3): the deck of ``engine.scenes.rope_bridge`` (a V that closes the loop when slack > 0)."""
    from engine.scenes.rope_bridge import _v_angles

    tilt = np.zeros(n)
    if slack > 0:
        down, up = _v_angles(n, n // 2, slack)
        tilt[:n // 2], tilt[n // 2:] = down, -up
    pins = [np.zeros(3)]
    for a in tilt:
        pins.append(pins[-1] + plank[0] * np.array([math.cos(a), 0.0, -math.sin(a)]))
    pins = np.array(pins)
    return [(*(0.5 * (pins[i] + pins[i + 1]))[[0, 2]], tilt[i]) for i in range(n)], pins


def artist_rope_bridge(n=30, plank=(0.5, 1.0, 0.05), mass=8.0, slack=0.0):
    """A rope bridge built the artist's way: two passive posts (cubes whose top edges are the deck's ends, the
    far one ``(1 − slack)`` × the deck's length from the near one), ``n`` active planks (Add > Cube, scaled) of
    ``mass`` kg each, and HINGE constraints about world Y at every joint — post, plank, …, plank, post, so the
    deck closes a loop. Returns (posts, planks, hinge empties)."""
    deck, pins = rope_bridge_deck(n, plank, slack)
    posts = [artist_cube(name, 0.2, (x, 0.0, -0.1), "PASSIVE") for name, x in
             (("post_near", pins[0][0] - 0.1), ("post_far", pins[-1][0] + 0.1))]
    planks = []
    for i, (x, z, tilt) in enumerate(deck):
        ob = artist_cube(f"plank{i:02d}", 1.0, (x, 0.0, z), "ACTIVE", rotation=(0.0, tilt, 0.0))
        ob.scale = plank
        ob.rigid_body.mass = mass
        planks.append(ob)
    chain = [posts[0], *planks, posts[1]]
    hinges = [artist_constraint(f"hinge{i:02d}", "HINGE", chain[i], chain[i + 1], tuple(pins[i]), HINGE_ABOUT_Y)
              for i in range(n + 1)]
    return posts, planks, hinges


def hinge_gap(host):
    """Distance (m) between the hinge pivot as carried by object 1 and as carried by object 2 now: each object
    keeps the pivot where it was in its own frame when the rig was built (``hinge_pivots``; a bake takes the
    constraint off its host, so the objects are found by name)."""
    a, b = (np.array(bpy.data.objects[host[key]].matrix_world) for key in ("object1", "object2"))
    la, lb = host["pivot_in_1"], host["pivot_in_2"]
    return float(np.linalg.norm((a @ np.array([*la, 1.0]))[:3] - (b @ np.array([*lb, 1.0]))[:3]))


def hinge_pivots(hosts):
    """Record each hinge's pivot in the frames of its two objects (before anything moves), for ``hinge_gap``."""
    for host in hosts:
        c = host.rigid_body_constraint
        host["object1"], host["object2"] = c.object1.name, c.object2.name
        p = np.array([*host.matrix_world.translation, 1.0])
        host["pivot_in_1"] = list((np.linalg.inv(np.array(c.object1.matrix_world)) @ p)[:3])
        host["pivot_in_2"] = list((np.linalg.inv(np.array(c.object2.matrix_world)) @ p)[:3])
