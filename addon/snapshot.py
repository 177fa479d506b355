"""What a bake changes outside its own actions, saved before the bake and put back by Clear Bake.

A bake takes the baked objects out of Blender's rigid body simulation the way Blender's own
*Bake to Keyframes* does (``rigidbody.objects_remove``; otherwise Bullet would place them on
playback inside the rigid body cache range and freeze them past its end), with the Rigid Body
Constraints on them (``detach``). That deletes their rigid body and constraint settings, and
the baked actions overwrite the un-keyed transforms on every frame change. So before the first
key is written the snapshot records, as JSON in Blender properties (it survives save and reload):

* per object (``scene.redmax.snapshot_objects``: a pointer, so renames are followed, and JSON):
  location, rotation (all modes), scale, the pose bones' transforms, whether it had animation
  data, whether it was in the scene, every writable setting of its rigid body and of its Rigid
  Body Constraint;
* the rigid body world (``scene.redmax.snapshot``): enabled, collection, constraints collection,
  the order of both collections' objects, solver settings, point cache range.

Object pointers inside settings (a constraint's ends) are stored as indices into the
snapshot's objects, names only for objects the snapshot does not hold.

An object deleted (X) after the bake stays alive through the snapshot's pointer; Clear Bake leaves
it deleted, as Blender's own delete does: nothing of it is restored, nor linked back into the rigid
body world, and the restored constraint ends that held it are empty.
"""
from __future__ import annotations

import json
from types import SimpleNamespace

import bpy

from .mapping import in_scene

TRANSFORMS = ("location", "rotation_mode", "rotation_quaternion", "rotation_euler", "rotation_axis_angle", "scale")
POSE_TRANSFORMS = TRANSFORMS
WORLD_SKIP = ("collection", "constraints", "point_cache", "effector_weights")
CACHE_SETTINGS = ("frame_start", "frame_end", "frame_step")


def _value(v, refs):
    if isinstance(v, bpy.types.Object):
        return {"object": refs.get(v.name_full, v.name_full)}
    if isinstance(v, bpy.types.ID):
        return {"id": v.name_full}
    if isinstance(v, set):
        return sorted(v)
    if hasattr(v, "__len__") and not isinstance(v, str):
        return [_value(x, refs) for x in v]
    return v


def rna_settings(struct, refs, skip=()) -> dict:
    """Every writable property of ``struct`` (not collections) as JSON values."""
    out = {}
    for p in struct.bl_rna.properties:
        name = p.identifier
        if name == "rna_type" or name in skip or p.is_readonly or p.type == "COLLECTION":
            continue
        out[name] = _value(getattr(struct, name), refs)
    return out


def _resolve(v, objects):
    if isinstance(v, dict):
        if "object" in v:
            ref = v["object"]
            return objects[ref] if isinstance(ref, int) else bpy.data.objects.get(ref)
        return None
    if isinstance(v, list) and v and isinstance(v[0], str):
        return set(v)
    return v


def set_rna_settings(struct, settings: dict, objects) -> None:
    """Assign saved settings (twice: an enum such as a collision shape can reset a dependent value)."""
    for _ in range(2):
        for name, v in settings.items():
            value = _resolve(v, objects)
            try:
                if getattr(struct, name) != value:
                    setattr(struct, name, value)
            except (AttributeError, TypeError, ValueError):
                pass  # a setting this Blender version does not accept in this state


# ------------------------------------------------------------------------- take
def objects_to_save(bscene, objects) -> list:
    """The baked objects plus everything of the rigid body simulation: objects with a rigid body,
    constraint hosts and the constraints' ends."""
    out = dict.fromkeys(objects)
    for ob in bscene.objects:
        if ob.rigid_body is not None or ob.rigid_body_constraint is not None:
            out[ob] = None
            c = ob.rigid_body_constraint
            for end in (c.object1, c.object2) if c is not None else ():
                if end is not None:
                    out[end] = None
    return list(out)


def take(bscene, objects) -> tuple:
    """(world JSON, [(object, JSON)]) for ``objects`` (see ``objects_to_save``) and the world."""
    refs = {ob.name_full: i for i, ob in enumerate(objects)}
    entries = []
    for ob in objects:
        d = {"transforms": {k: _value(getattr(ob, k), refs) for k in TRANSFORMS},
             "animation_data": ob.animation_data is not None, "in_scene": in_scene(bscene, ob)}
        if ob.pose is not None:
            d["pose"] = {pb.name: {k: _value(getattr(pb, k), refs) for k in POSE_TRANSFORMS} for pb in ob.pose.bones}
        if ob.rigid_body is not None:
            d["rigid_body"] = rna_settings(ob.rigid_body, refs)
        if ob.rigid_body_constraint is not None:
            d["rigid_body_constraint"] = rna_settings(ob.rigid_body_constraint, refs)
        entries.append((ob, json.dumps(d)))
    w = bscene.rigidbody_world
    world: dict | None = None
    if w is not None:
        world = {"settings": rna_settings(w, refs, skip=WORLD_SKIP),
                 "cache": {k: getattr(w.point_cache, k) for k in CACHE_SETTINGS},
                 "effector_weights": rna_settings(w.effector_weights, refs)}
        for key in ("collection", "constraints"):
            coll = getattr(w, key)
            world[key] = None if coll is None else {"name": coll.name_full,
                                                    "objects": [_value(o, refs) for o in coll.objects]}
    return json.dumps({"world": world}), entries


OWN_STATE = ("transforms", "pose", "animation_data")  # kept for the keyed objects only


def store(bscene, saved, keyed, only=None) -> None:
    """Keep a snapshot from ``take`` in the scene; transforms and animation data only of the
    ``keyed`` objects (Clear Bake leaves other objects where they are). A bake of ``only`` some
    objects (Selected Only) while an earlier bake stays in place keeps the earlier snapshot's
    entries of every other object: they hold the state before that bake."""
    world, entries = saved
    fresh = []
    for ob, data in entries:
        if ob not in keyed:
            d = json.loads(data)
            for key in OWN_STATE:
                d.pop(key, None)
            data = json.dumps(d)
        fresh.append((ob, data))
    old = stored(bscene)
    if old is not None and only is not None:
        world, fresh = _merge(old, [ob for ob, _ in old[1] if ob not in only], fresh)
    s = bscene.redmax
    s.snapshot_objects.clear()
    for ob, data in fresh:
        item = s.snapshot_objects.add()
        item.object, item.data = ob, data
    s.snapshot = world


def _merge(old, keep, fresh):
    """(old world, the ``old`` entries of the objects in ``keep``, then the ``fresh`` entries of
    other objects), object references re-indexed into the merged list."""
    old_world, old = old
    kept = [(ob, data) for ob, data in old if ob in keep]
    taken = {ob for ob, _ in kept}
    out = kept + [(ob, data) for ob, data in fresh if ob not in taken]
    index = {ob: i for i, (ob, _) in enumerate(out) if ob is not None}

    def reindex(v, source):
        if isinstance(v, dict):
            ref = v.get("object")
            if isinstance(ref, int):
                ob = source[ref]
                return {"object": index[ob] if ob in index else getattr(ob, "name_full", "")}
            return {k: reindex(x, source) for k, x in v.items()}
        if isinstance(v, list):
            return [reindex(x, source) for x in v]
        return v

    old_objects, fresh_objects = [ob for ob, _ in old], [ob for ob, _ in fresh]
    world = json.dumps(reindex(json.loads(old_world), old_objects))
    return world, [(ob, json.dumps(reindex(json.loads(data), old_objects if i < len(kept) else fresh_objects)))
                   for i, (ob, data) in enumerate(out)]


def saved_hosts(bscene, objects) -> list:
    """Objects whose saved Rigid Body Constraint (one a bake removed) holds one of ``objects``."""
    saved = stored(bscene)
    if saved is None:
        return []
    entries = saved[1]
    out = []
    for host, data in entries:
        c = json.loads(data).get("rigid_body_constraint")
        if host is None or c is None:
            continue
        ends = [_resolve(c.get(k), [ob for ob, _ in entries]) for k in ("object1", "object2")]
        if host in objects or any(e in objects for e in ends if e is not None):
            out.append(host)
    return out


def _present(bscene, entries, data) -> list:
    """The snapshot's objects, None for those deleted since the bake (in the scene then, in none now), so
    references to them resolve to None, as Blender's delete leaves them."""
    return [None if ob is not None and d.get("in_scene", True) and not in_scene(bscene, ob) else ob
            for (ob, _), d in zip(entries, data)]


class Restored:
    """Reads each object's rigid body and Rigid Body Constraint as Clear Bake will have put them back, and so
    as a re-bake (which restores first) maps them: the live ones, else the settings the bake removed (as
    namespaces, object ends resolved). Changes nothing: ``mapping.scene_facts`` reads a baked scene with it."""

    KINDS = ("rigid_body", "rigid_body_constraint")

    def __init__(self, bscene) -> None:
        self.saved: dict = {}
        saved = stored(bscene)
        if saved is None:
            return
        data = [json.loads(d) for _, d in saved[1]]
        objects = _present(bscene, saved[1], data)
        for ob, d in zip(objects, data):
            if ob is not None:
                self.saved[ob] = {kind: SimpleNamespace(**{k: _resolve(v, objects) for k, v in d[kind].items()})
                                  for kind in self.KINDS if kind in d}

    def rigid_body(self, ob):
        return ob.rigid_body if ob.rigid_body is not None else self.saved.get(ob, {}).get("rigid_body")

    def constraint(self, ob):
        live = ob.rigid_body_constraint
        return live if live is not None else self.saved.get(ob, {}).get("rigid_body_constraint")


def stored(bscene):
    """The scene's snapshot in the form ``take`` returns, or None."""
    s = bscene.redmax
    if not s.snapshot:
        return None
    return s.snapshot, [(item.object, item.data) for item in s.snapshot_objects]


def forget(bscene) -> None:
    s = bscene.redmax
    s.snapshot_objects.clear()
    s.snapshot = ""


# ---------------------------------------------------------------------- detach
def detach(context, objects) -> None:
    """Take ``objects`` out of Blender's rigid body simulation (what Bake to Keyframes does), and
    the Rigid Body Constraints on them first: ``objects_remove`` alone leaves Bullet a constraint
    to the freed body, and the next simulated frame crashes Blender (seen with a hinge chain)."""
    objects = set(objects)
    view_layer = context.view_layer
    hosts = [h for h in context.scene.objects if h.rigid_body_constraint is not None
             and (h in objects or h.rigid_body_constraint.object1 in objects
                  or h.rigid_body_constraint.object2 in objects)
             and any(o is not None and o.rigid_body is not None and o in objects
                     for o in (h.rigid_body_constraint.object1, h.rigid_body_constraint.object2))
             and view_layer.objects.get(h.name) == h]
    if hosts:
        before = view_layer.objects.active
        for h in hosts:
            view_layer.objects.active = h  # constraint_remove ignores overrides (recipes §8)
            bpy.ops.rigidbody.constraint_remove()
        view_layer.objects.active = before
    removed = [ob for ob in objects if ob.rigid_body is not None]
    if removed:
        with context.temp_override(selected_objects=removed, selected_editable_objects=removed,
                                   object=removed[0], active_object=removed[0]):
            bpy.ops.rigidbody.objects_remove()


# --------------------------------------------------------------------- restore
def restore(context, bscene, saved, only=None) -> list:
    """Put back what ``take`` recorded (for the objects in ``only`` and not the world, if given);
    returns messages about what could not be restored."""
    world_json, entries = saved
    problems = []
    data = [json.loads(d) for _, d in entries]
    objects = _present(bscene, entries, data)  # deleted since the bake: left out
    deleted = {i for i, (ob, _) in enumerate(entries) if ob is not None and objects[i] is None}
    world = json.loads(world_json)["world"]
    if world is not None and bscene.rigidbody_world is None:
        with context.temp_override(scene=bscene):
            bpy.ops.rigidbody.world_add()
    if only is not None:
        world = None
    for i, (ob, d) in enumerate(zip(objects, data)):
        if ob is None:
            if i not in deleted:
                problems.append("an object saved before the bake no longer exists")
            continue
        if only is not None and ob not in only:
            continue
        # what the bake removed comes back with its saved settings; what it left is not touched
        if "rigid_body" in d and ob.rigid_body is None:
            with context.temp_override(object=ob, active_object=ob, scene=bscene):
                bpy.ops.rigidbody.object_add(type=d["rigid_body"].get("type", "ACTIVE"))
            set_rna_settings(ob.rigid_body, d["rigid_body"], objects)
        if "rigid_body_constraint" in d and ob.rigid_body_constraint is None:
            problems.extend(_add_constraint(context, ob, d["rigid_body_constraint"].get("type", "FIXED")))
            if ob.rigid_body_constraint is not None:
                set_rna_settings(ob.rigid_body_constraint, d["rigid_body_constraint"], objects)
    for ob, d in zip(objects, data):
        if ob is None or (only is not None and ob not in only):
            continue
        if "transforms" not in d:
            continue
        if ob.animation_data is not None and not d["animation_data"] and ob.animation_data.action is None:
            ob.animation_data_clear()
        for k, v in d["transforms"].items():
            setattr(ob, k, v)
        for name, values in d.get("pose", {}).items():
            pb = ob.pose.bones.get(name) if ob.pose is not None else None
            if pb is not None:
                for k, v in values.items():
                    setattr(pb, k, v)
    w = bscene.rigidbody_world
    if world is not None and w is not None:
        set_rna_settings(w, world["settings"], objects)
        set_rna_settings(w.effector_weights, world["effector_weights"], objects)
        for k, v in world["cache"].items():
            setattr(w.point_cache, k, v)
        for key in ("collection", "constraints"):
            saved_coll = world[key]
            if saved_coll is None:
                continue
            coll = bpy.data.collections.get(saved_coll["name"])
            if coll is None:
                problems.append(f"rigid body world: collection '{saved_coll['name']}' no longer exists")
                continue
            if getattr(w, key) != coll:
                setattr(w, key, coll)
            _order(coll, [_resolve(v, objects) for v in saved_coll["objects"]])
    return problems


def _add_constraint(context, host, kind):
    view_layer = context.view_layer
    if view_layer.objects.get(host.name) != host:  # constraint_add works on the active object only
        return [f"rigid body constraint on '{host.name}': cannot be re-added (the object is not in the view layer)"]
    before = view_layer.objects.active
    view_layer.objects.active = host  # constraint_add ignores overrides (recipes §8)
    try:
        bpy.ops.rigidbody.constraint_add(type=kind)
    finally:
        view_layer.objects.active = before
    return []


def _order(coll, wanted) -> None:
    """Give ``coll`` its saved objects in the saved order (objects added since stay, first)."""
    wanted = [ob for ob in wanted if ob is not None]
    if [ob for ob in coll.objects if ob in wanted] == wanted:
        return
    for ob in wanted:
        if coll.objects.get(ob.name) is not None:
            coll.objects.unlink(ob)
        coll.objects.link(ob)
