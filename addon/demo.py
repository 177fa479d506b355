"""Demo scenes: the engine's scenes (``engine.scenes``) rebuilt as ordinary Blender data.

Every body becomes a box mesh with the body's mass and inertia (the solid box
with the same principal moments, centred on the centre of mass), every joint
an Empty carrying a Rigid Body Constraint (HINGE, SLIDER, POINT, FIXED, or
GENERIC with locked axes for universal joints), every spring, cable and loop
closure a RedMax link. The add-on then maps them back like any user rig, so a
demo bakes exactly what an artist could have built by hand. The bridge's car is
a moving load (``loads.py``) carried by a box keyed along the deck; it weighs
``CAR_SHOW_FACTOR`` × a 1.5 t car — exaggerated for show and named so: a real car
deflects the deck by well under a centimetre. A slider spring that rests away
from the start (the umbrella's runner) becomes a SPRING link along the slide.
Other point forces have no Blender counterpart and are left out (a warning says so).
"""
from __future__ import annotations

import bmesh
import bpy
import numpy as np
from mathutils import Matrix

from . import keyframes, links, loads

from ._engine import engine, geometry


DEMO_ITEMS = [
    ("BRIDGE", "Bridge", "Cable-stayed bridge with flexible towers and a car crossing it, 500× heavier than a "
                         "real one for show (thesis Fig. 1b)", 0),
    ("UMBRELLA", "Umbrella", "Umbrella that opens (thesis Fig. 1c)", 1),
    ("TREE", "Tree", "Binary tree of hinges with sibling springs, swaying as springs pull its corner leaves "
                     "down and out (thesis Fig. 1a)", 2),
    ("CHAIN", "Chain", "Hanging chain of hinges", 3),
    ("ROPE", "Rope", "Rope of 48 links with a weight on its end, swinging (bakes at 30 fps without substeps)", 4),
    ("ROPE_PINNED", "Pinned Rope", "Rope of 48 links pinned at both ends, falling into a catenary", 5),
]
DEFAULT_SIZE = {"BRIDGE": 20, "UMBRELLA": 3, "TREE": 4, "CHAIN": 10, "ROPE": 48, "ROPE_PINNED": 48}  # bridge 20: 61 bodies
MIN_EDGE = 0.01  # m: boxes thinner than this are drawn (and weighed) at this thickness
CAR_SHOW_FACTOR = 500  # the bridge's car: 500 × 1.5 t (the thesis's heavy car), so the deck visibly sags
CAR_SIZE = (4.0, 2.0, 1.5)  # m, the box that shows where the car is
REAL_CAR = 1500.0  # kg, a normal car (NORMAL_CAR of engine/scenes/bridge.py)


# the largest size of each demo (about 1000 Blender objects at most: building more takes minutes)
MAX_SIZE = {"BRIDGE": 300, "UMBRELLA": 60, "TREE": 8, "CHAIN": 1000, "ROPE": 1000, "ROPE_PINNED": 1000}


def engine_scene(kind: str, size: int | None):
    n = size or DEFAULT_SIZE[kind]
    if kind in MAX_SIZE and not 1 <= n <= MAX_SIZE[kind]:
        raise ValueError(f"{kind.lower().replace('_', ' ')} demo: size must be 1 … {MAX_SIZE[kind]} "
                         f"(0 for the default, {DEFAULT_SIZE[kind]}), got {n}")
    if kind == "BRIDGE":
        return engine.scenes.bridge(n, n, car_mass=CAR_SHOW_FACTOR * REAL_CAR)
    if kind == "UMBRELLA":
        return engine.scenes.umbrella(n)
    if kind == "TREE":
        return engine.scenes.tree(n)
    if kind == "CHAIN":
        return engine.scenes.chain(n)
    if kind in ("ROPE", "ROPE_PINNED"):  # 10 cm, 0.5 kg links
        return engine.scenes.rope(n, 0.1 * n, 0.5 * n, end="weight" if kind == "ROPE" else "pinned")
    raise ValueError(f"unknown demo scene {kind!r}; expected one of {', '.join(k for k, *_ in DEMO_ITEMS)}")


def _box_mesh(name, size):
    me = bpy.data.meshes.new(name)
    bm = bmesh.new()
    bmesh.ops.create_cube(bm, size=1.0)
    bmesh.ops.scale(bm, vec=[float(s) for s in size], verts=bm.verts)
    bm.to_mesh(me)
    bm.free()
    return me


def _matrix(R, p):
    M = np.eye(4)
    M[:3, :3], M[:3, 3] = R, p
    return Matrix(M.tolist())


def _axis_frame(axis, along):
    """Rotation whose column ``along`` (0 = x, 2 = z) is the unit ``axis``."""
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    helper = np.array([1.0, 0, 0]) if abs(a[0]) < 0.9 else np.array([0, 1.0, 0])
    u = np.cross(a, helper)
    u /= np.linalg.norm(u)
    v = np.cross(a, u)
    cols = [u, v, a] if along == 2 else [a, u, np.cross(a, u)]
    return np.column_stack(cols)


def _constraint(context, host, kind, parent_ob, child_ob):
    view_layer = context.view_layer
    if bpy.context.scene.rigidbody_world is None:  # constraints live in a rigid body world
        bpy.ops.rigidbody.world_add()
    view_layer.objects.active = host  # constraint_add ignores overrides (recipes §8)
    bpy.ops.rigidbody.constraint_add(type=kind)
    c = host.rigid_body_constraint
    c.object1, c.object2 = parent_ob, child_ob
    return c


def build_demo(context, kind: str, size: int | None = None) -> dict:
    """Create the demo in a new collection of the current scene; returns counts and warnings."""
    sc = engine_scene(kind, size)
    model = sc.model
    bscene = context.scene
    coll = bpy.data.collections.new(f"RedMax {kind.capitalize()}")
    bscene.collection.children.link(coll)
    ground = bpy.data.objects.new(f"{coll.name} ground", None)
    ground.empty_display_size = 0.2
    coll.objects.link(ground)
    R_link, p_link = engine.link_poses(model, sc.q0)
    obs = []
    for i, name in enumerate(model.body_names):
        mass = float(model.body_mass[i])
        size3 = np.maximum(geometry.equivalent_box(mass, model.body_principal_inertia[i]), MIN_EDGE)
        Rb = R_link[i] @ model.body_rotation[i]
        pb = p_link[i] + R_link[i] @ model.body_com[i]
        ob = bpy.data.objects.new(name, _box_mesh(name, size3))
        ob.matrix_world = _matrix(Rb, pb)
        ob.redmax.simulate = True  # type: ignore[attr-defined]  # a registered PointerProperty
        ob.redmax.mass = mass  # type: ignore[attr-defined]  # a registered PointerProperty
        coll.objects.link(ob)
        obs.append(ob)
    warnings: list[str] = []
    rest_springs = 0
    for i, name in enumerate(model.body_names):
        jt = int(model.joint_type[i])
        parent = int(model.body_parent[i])
        parent_ob = obs[parent] if parent >= 0 else ground
        if jt == engine.joints.FREE:
            continue
        host = bpy.data.objects.new(f"{name} joint", None)
        host.empty_display_size = 0.05
        coll.objects.link(host)
        Rj, pj = R_link[i], p_link[i]  # joint frame = link frame at the start
        axis = Rj @ model.joint_axis[i]
        kind_bl, frame = {  # the host frame: HINGE turns about its z, SLIDER slides along its x
            engine.joints.REVOLUTE: ("HINGE", _axis_frame(axis, 2)),
            engine.joints.PRISMATIC: ("SLIDER", _axis_frame(axis, 0)),
            engine.joints.SPHERICAL: ("POINT", Rj),
            engine.joints.FIXED: ("FIXED", Rj),
            engine.joints.UNIVERSAL: ("GENERIC", Rj),
        }[jt]
        host.matrix_world = _matrix(frame, pj)
        c = _constraint(context, host, kind_bl, parent_ob, obs[i])
        if kind_bl == "GENERIC":  # universal: all translations and the twist about z locked
            for a in "xyz":
                setattr(c, f"use_limit_lin_{a}", True)
                setattr(c, f"limit_lin_{a}_lower", 0.0)
                setattr(c, f"limit_lin_{a}_upper", 0.0)
            c.use_limit_ang_z, c.limit_ang_z_lower, c.limit_ang_z_upper = True, 0.0, 0.0
        vs = model.v_slice(model.joint_names[i])
        if vs.stop > vs.start and _rest_spring(bscene, sc, i, obs, parent_ob, axis, pj, warnings) is not None:
            rest_springs += 1
        elif vs.stop > vs.start:
            obs[i].redmax.joint_stiffness = float(sc.joint_stiffness[vs.start])  # type: ignore[attr-defined]
            obs[i].redmax.joint_damping = float(sc.joint_damping[vs.start])  # type: ignore[attr-defined]
    if np.ptp(sc.body_damping) == 0 and sc.body_damping.size:
        bscene.redmax.body_damping = float(sc.body_damping[0])  # type: ignore[attr-defined]  # a registered PointerProperty
    n_links = rest_springs + _add_links(bscene, sc, model, obs, ground, R_link, p_link)
    for load in sc.moving_loads:
        _add_car(context, coll, sc, load, obs, ground, model, R_link, p_link)
    if sc.point_forces:
        warnings.append("point forces are not part of Blender demos")
    bscene.gravity = tuple(model.gravity)
    return {"collection": coll, "bodies": len(obs), "links": n_links, "warnings": warnings}


REST_SPRING_REACH = 0.5  # m: a slide's spring anchor sits this far below the lowest travel it needs


def _rest_spring(bscene, sc, i, obs, parent_ob, axis, origin, warnings):
    """A joint spring whose rest is not the starting pose (the umbrella's runner is pushed open).

    Object joint springs in the add-on rest at the starting pose, so a slider's spring becomes a
    SPRING link along the slide axis: anchored on the parent at travel s_A below both the start q0
    and the rest, with rest length (rest − s_A); its force −k (q − rest) and damping along the axis
    are the joint spring's. Returns the link, or None when the joint spring rests where it starts
    (a revolute one that does not gets a warning: it would be baked as resting at the start)."""
    model = sc.model
    qs, vs = model.q_slice(model.joint_names[i]), model.v_slice(model.joint_names[i])
    k, d = float(sc.joint_stiffness[vs.start]), float(sc.joint_damping[vs.start])
    q0, rest = sc.q0[qs], sc.joint_rest[qs]
    if k == 0 or np.allclose(q0, rest, atol=1e-9):
        return None
    if int(model.joint_type[i]) != engine.joints.PRISMATIC:
        warnings.append(f"joint '{model.joint_names[i]}': its spring rests away from the start, which an "
                        "object joint spring cannot say; it rests at the start here")
        return None
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    s_a = min(float(q0[0]), float(rest[0])) - REST_SPRING_REACH
    anchor = np.asarray(origin, float) + (s_a - float(q0[0])) * a  # joint origin sits at travel q0
    M_parent = np.array(parent_ob.matrix_world)
    M_child = np.array(obs[i].matrix_world)
    pa = tuple(np.linalg.solve(M_parent[:3, :3], anchor - M_parent[:3, 3]))
    pb = tuple(np.linalg.solve(M_child[:3, :3], np.asarray(origin, float) - M_child[:3, 3]))
    item = links.add_link(bscene, "SPRING", ((parent_ob, ""), (obs[i], "")), pa, pb,
                          name=f"{model.joint_names[i]} spring", stiffness=k, damping=d)
    item.use_current_length = False
    item.rest_length = float(rest[0]) - s_a
    return item


def _add_car(context, coll, sc, load, obs, ground, model, R_link, p_link):
    """A box keyed along the load's path (where the load is, on the undeformed deck) carrying the
    moving load itself (``loads.attach``), named with how much heavier than a real car it is."""
    mass = sc.metadata.get("car_mass", 0.0)
    factor = mass / REAL_CAR
    name = f"Car ({mass / 1000:.0f} t = {factor:.0f}× a real car, exaggerated for show)"
    ob = bpy.data.objects.new(name, _box_mesh(name, CAR_SIZE))
    coll.objects.link(ob)
    path, stops = [], []
    for body, start, end in load.path:
        host, s_local = _local(obs, ground, model, body, start, R_link, p_link)
        _, e_local = _local(obs, ground, model, body, end, R_link, p_link)
        path.append((host, s_local, e_local))
        stops.append(p_link[body] + R_link[body] @ start)
    stops.append(p_link[load.path[-1][0]] + R_link[load.path[-1][0]] @ load.path[-1][1])
    loads.attach(ob, load.force, path, load.t_start, load.t_end)
    bscene = context.scene
    fps = bscene.render.fps / bscene.render.fps_base
    lift = np.array([0.0, 0.0, CAR_SIZE[2] / 2])
    for k, p in enumerate(stops):  # constant speed over the path, like the load
        t = load.t_start + (load.t_end - load.t_start) * k / (len(stops) - 1)
        ob.location = tuple(p + lift)
        ob.keyframe_insert("location", frame=bscene.frame_start + t * fps)
    for fc in keyframes.fcurves(ob):
        for kp in fc.keyframe_points:
            kp.interpolation = "LINEAR"
    return ob


def _local(obs, ground, model, body, point_link, R_link, p_link):
    """(object, point in the object's local frame) of a link-frame point (world for body −1)."""
    if body < 0:
        return ground, tuple(point_link)
    world = p_link[body] + R_link[body] @ point_link
    M = np.array(obs[body].matrix_world)
    return obs[body], tuple(np.linalg.solve(M[:3, :3], world - M[:3, 3]))


def _add_links(bscene, sc, model, obs, ground, R_link, p_link):
    count = 0
    for s, (a, b, la, lb, k, d, rest, tension_only) in enumerate(sc.pairs):
        ob_a, pa = _local(obs, ground, model, a, la, R_link, p_link)
        ob_b, pb = _local(obs, ground, model, b, lb, R_link, p_link)
        item = links.add_link(bscene, "CABLE" if tension_only else "SPRING", ((ob_a, ""), (ob_b, "")), pa, pb,
                              name=sc.pair_names[s], stiffness=k, damping=d)
        item.use_current_length = False
        item.rest_length = rest
        count += 1
    kinds = {"point": "POINT", "ball": "POINT", "hinge": "HINGE", "universal": "UNIVERSAL", "fixed": "FIXED"}
    for lc in sc.loop_closures:
        ob_a, pa = _local(obs, ground, model, lc.body_a, lc.point_a, R_link, p_link)
        ob_b, pb = _local(obs, ground, model, lc.body_b, lc.point_b, R_link, p_link)
        item = links.add_link(bscene, "CLOSURE", ((ob_a, ""), (ob_b, "")), pa, pb, name=lc.name,
                              closure_kind=kinds[lc.kind])
        Ra = np.array(ob_a.matrix_world)[:3, :3]
        world_axis = (R_link[lc.body_a] @ lc.axis_a) if lc.body_a >= 0 else lc.axis_a
        item.closure_axis = tuple(np.linalg.solve(Ra, world_axis))
        count += 1
    return count
