"""The whole mapping: armatures, rigid objects and links of a Blender scene → one ``engine.Scene`` and its
``Mapping``; and the facts that decide which kernels its bake compiles, read without building it."""
from __future__ import annotations

import numpy as np

from .. import loads
from .._engine import engine
from . import anchors, rigid_settings
from .armatures import add_armature
from .common import WORLD, Builder, Mapping, MappingError
from .fields import FieldSampler, add_fields
from .links import add_link
from .rigid_objects import (LiveRig, add_constraint_closure, add_rigid_objects, constraint_hosts, is_dynamic,
                            limits_a_joint)
from .settings import scan, world_settings


def build(context, objects=None, timeline=None) -> Mapping:
    """Map the Blender scene (or the given objects) to an engine scene at the current frame; ``timeline``: what the
    bake sampled over its frames (``anchors.sample``; default: the current frame only, anchors held)."""
    return build_scene(context.scene, context.evaluated_depsgraph_get(), objects, timeline)


def build_scene(bscene, depsgraph, objects=None, timeline=None, contact_shapes=True) -> Mapping:
    """``build`` for a scene and its evaluated depsgraph (as frame-change handlers receive them);
    ``contact_shapes=False`` gives the bodies no contact shapes unless the ground collides (a simulation without
    contact reads none: the bake skips making them)."""
    settings = bscene.redmax
    objects = list(bscene.objects if objects is None else objects)
    b = Builder((0.0, 0.0, 0.0), contact_shapes or settings.collide_with_ground)
    gravity, frame_time = world_settings(b, bscene)
    b.mb = engine.ModelBuilder(gravity=gravity)
    timeline = timeline if timeline is not None else anchors.still(frame_time)
    for ob in objects:
        if ob.type == "ARMATURE" and ob.redmax.simulate:
            add_armature(b, ob)
    closures: list = []
    add_rigid_objects(b, bscene, objects, settings.density, depsgraph, closures, timeline)
    if not b.targets:
        raise MappingError(f"nothing to simulate: {_why_nothing_moves(objects)}")
    for link in settings.links:  # link ends on things Blender moves: anchors before the model is frozen
        add_link_anchors(b, link, timeline)
    scan(b, bscene, objects)
    model = b.mb.finalize()
    scene = engine.Scene(model, name=bscene.name)
    for body, k, d, what in b.joint_springs:
        try:
            scene.add_joint_spring(body, k, d)
        except engine.ModelError as err:
            raise MappingError(f"{what}: {err}") from None
    if settings.body_damping > 0:
        scene.set_body_damping(settings.body_damping)
    rigid_settings.apply_decay(scene, b.decay)
    for name, trajectory, release in b.prescriptions:
        scene.prescribe(name, trajectory, until=release)
    for h in closures:
        add_constraint_closure(scene, h, b.targets, b.anchor_bodies)
        c = h.rigid_body_constraint
        rigid_settings.other_settings(b, c, f"rigid body constraint on '{h.name}'")
        if c.use_breaking:
            b.breakable.append((h.name, float(c.breaking_threshold), f"rigid body constraint on '{h.name}'"))
    interval = rigid_settings.substep_interval(bscene)
    for name, threshold, what in b.breakable:
        try:
            scene.set_breakable(name, threshold, interval)
        except engine.ModelError as err:
            raise MappingError(f"{what}: {err}") from None
    for spec in b.motors:
        spec = dict(spec)
        what = spec.pop("what")
        try:
            scene.add_motor(**spec)
        except engine.ModelError as err:
            raise MappingError(f"{what}: {err}") from None
    scene_objects = set(bscene.objects)
    for link in settings.links:
        add_link(scene, bscene, link, b.targets, scene_objects, partial=objects is not None)
    try:  # a demo's car
        loads.add_moving_loads(objects, scene, {t.object.name: n for n, t in b.targets.items() if not t.bone and t.keyed})
        add_fields(b, scene, bscene, b.targets, timeline)
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
    m = Mapping(scene, targets, np.zeros((model.n_bodies, 4, 4)), ignored=list(b.ignored),
                no_collision=rigid_settings.body_names_of(b.no_collision))
    m.offsets = np.linalg.inv(m.link_frames(scene.q0)) @ np.array([t.world0 for t in targets])
    return m


def _why_nothing_moves(objects) -> str:
    """Why ``build`` found no body: the first enabled Rigid Body Constraint and its ends, none of which moves
    (a curve, an empty, a mesh without an active rigid body), or that there is no such constraint either."""
    for h in objects:
        c = h.rigid_body_constraint
        ends = [o for o in (c.object1, c.object2) if o is not None] if c is not None and c.enabled else []
        if ends:
            kinds = ", ".join(f"'{o.name}' ({_kind(o)})" for o in ends)
            return (f"the rigid body constraint on '{h.name}' joins {kinds}, and none of them moves: only meshes "
                    "move (give one an active rigid body or turn on Simulate; convert a curve to a mesh)")
    return "no simulated armature, rigid body constraint or active rigid body"


def _kind(ob) -> str:
    if ob.type != "MESH":
        kind = ob.type.lower().replace("_", " ")
        return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"
    return "a passive rigid body" if ob.rigid_body is not None and ob.rigid_body.type == "PASSIVE" else "a mesh"


def sample_timeline(bscene, objects, frames, frame_time: float, samplers=()):
    """What a bake of ``objects`` over ``frames`` needs from Blender's animation, read frame by frame before
    the mapping (``anchors.Timeline``): the moving anchors' poses, the rigid bodies' simulated flags, the
    force fields' numbers, and what the ``samplers`` (callables of the frame's index) read. frame_time:
    simulated seconds per frame. Each frame is read once (one frame change), the first (the simulation's
    start) last, so that the scene is there for the mapping when the pass ends (``timeline.read``: whether
    the frame changed at all: not when nothing moves, follows or is driven)."""
    frames = list(frames)
    sampler = FieldSampler(bscene, len(frames))
    natural = [(lambda k, s=s: s((k + 1) % len(frames))) for s in ([sampler] if sampler.objects else []) + list(samplers)]
    keys = anchors.anchor_keys(bscene, list(objects))
    timeline = anchors.sample(bscene, keys, frames[1:] + frames[:1], frame_time, natural)
    timeline.frames = frames  # (back to the frames' order: the start first)
    timeline.poses = {k: np.roll(v, 1, axis=0) for k, v in timeline.poses.items()}
    timeline.simulated = {k: np.roll(v, 1) for k, v in timeline.simulated.items()}
    timeline.fields = sampler.samples
    timeline.read = bool(keys or natural)
    return timeline


def add_link_anchors(b, link, timeline) -> None:
    """Anchor bodies for the ends of a link on an object or bone that Blender moves (``anchors``)."""
    for ob, bone in ((link.object_a, link.bone_a), (link.object_b, link.bone_b)):
        if ob is None:
            continue
        name = f"{ob.name}:{bone}" if bone else ob.name
        if name in b.targets:
            continue
        if bone and ob.type == "ARMATURE" and not ob.redmax.simulate and bone in ob.pose.bones and anchors.moves(ob):
            anchors.add_anchor(b, ob, bone, timeline, None)
        elif not bone and anchors.moving_anchor(ob):
            b.anchor_bodies[ob] = anchors.add_anchor(b, ob, "", timeline, None)


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
    facts = {"closures": None, "limits": None,
             "body_damping": settings.body_damping > 0 or any(
                 rig.rigid_body(ob) is not None and (rig.rigid_body(ob).linear_damping > 0
                                                     or rig.rigid_body(ob).angular_damping > 0)
                 for ob in bscene.objects)}
    try:
        hosts = constraint_hosts(bscene, list(bscene.objects), rig)
    except MappingError:
        return facts
    if not any(ob.type == "ARMATURE" and ob.redmax.simulate for ob in bscene.objects) and not any(
            limits_a_joint(rig.constraint(h)) for h in hosts):
        facts["limits"] = False
    if any(link.kind == "CLOSURE" for link in settings.links) or anchors.anchor_keys(bscene, list(bscene.objects)):
        facts["closures"] = True  # (a moving anchor's prescribed rows take the step the closures take)
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
        if c.type == "MOTOR" or not any(o is not None and dynamic(o) for o in (c.object1, c.object2)):
            continue  # a motor, or a constraint between two objects that are not simulated
        a, b = find(c.object1), find(c.object2)
        if a == b:
            facts["closures"] = True
            break
        if a == WORLD:
            a, b = b, a
        parent[a] = b
    return facts
