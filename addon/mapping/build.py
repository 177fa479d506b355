"""The whole mapping: armatures, rigid objects and links of a Blender scene → one ``engine.Scene`` and its
``Mapping``; and the facts that decide which kernels its bake compiles, read without building it."""
from __future__ import annotations

import numpy as np

from .. import loads
from .._engine import engine
from .armatures import add_armature
from .common import WORLD, Builder, Mapping, MappingError
from .links import add_link
from .rigid_objects import (LiveRig, add_constraint_closure, add_constraint_spring, add_rigid_objects, constraint_hosts,
                            is_dynamic, limits_a_joint)


def build(context, objects=None) -> Mapping:
    """Map the Blender scene (or the given objects) to an engine scene at the current frame."""
    return build_scene(context.scene, context.evaluated_depsgraph_get(), objects)


def build_scene(bscene, depsgraph, objects=None) -> Mapping:
    """``build`` for a scene and its evaluated depsgraph (as frame-change handlers receive them)."""
    settings = bscene.redmax
    objects = list(bscene.objects if objects is None else objects)
    gravity = tuple(bscene.gravity) if bscene.use_gravity else (0.0, 0.0, 0.0)
    b = Builder(gravity)
    for ob in objects:
        if ob.type == "ARMATURE" and ob.redmax.simulate:
            add_armature(b, ob)
    closures: list[tuple] = []
    springs: list[tuple] = []
    add_rigid_objects(b, bscene, objects, settings.density, depsgraph, closures, springs)
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
        add_constraint_closure(scene, h, b.targets)
    for h in springs:
        add_constraint_spring(scene, h, b.targets)
    for link in settings.links:
        add_link(scene, bscene, link, b.targets, partial=objects is not None)
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


def scene_facts(bscene, rig=LiveRig) -> dict:
    """What decides which solver kernels a bake of ``bscene`` compiles (``engine.apps.warmup.scene_facts`` of
    the scene ``build`` would make), found without building it (which runs kernels): {"closures",
    "limits", "body_damping"}; None where not known (the warm-up then compiles both kinds): all three
    when nothing is simulated yet, closures and limits when the rig cannot be read (the bake then says
    why). Loop closures are the closure links and the rigid body constraints that ``add_rigid_objects``
    leaves out of the tree: those joining two bodies that other constraints already connect (objects
    that are not simulated all count as the world). Limits: False when no simulated armature (whose
    bones may carry Limit Rotation constraints) and no constraint limits a joint, else None. ``rig`` reads
    the rigid bodies and constraints (of a baked scene: as the re-bake will put them back)."""
    settings = bscene.redmax
    facts = {"closures": None, "limits": None, "body_damping": settings.body_damping > 0}
    try:
        hosts = constraint_hosts(bscene, list(bscene.objects), rig)
    except MappingError:
        return facts
    if not any(ob.type == "ARMATURE" and ob.redmax.simulate for ob in bscene.objects) and not any(
            limits_a_joint(rig.constraint(h)) for h in hosts):
        facts["limits"] = False
    if any(link.kind == "CLOSURE" for link in settings.links):
        facts["closures"] = True
        return facts
    constrained = {o for h in hosts for o in (rig.constraint(h).object1, rig.constraint(h).object2) if o}

    def dynamic(ob):
        return is_dynamic(ob, constrained, rig)

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
