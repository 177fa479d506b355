"""What a bake changes outside its own actions, saved before the bake and put back by Clear Bake.

A bake takes the baked objects out of Blender's rigid body simulation (otherwise Bullet would place
them on playback inside the rigid body cache range and freeze them past its end), with the Rigid Body
Constraints on them (``detach``): it unlinks them from the rigid body world's collection in one pass through
the data API, their rigid body settings untouched, and removes the constraints that hold them with Blender's
own operator (no data-level way frees Bullet's constraint; the snapshot keeps their settings), so Clear Bake
links them back and gives the constraints their settings again (``reattach``, ``restore``). (Blender's own
*Bake to Keyframes* deletes the settings with ``rigidbody.objects_remove``, one operator call and view-layer
update per object.) The baked actions overwrite the un-keyed transforms on every frame change, so before the
first key is written the snapshot records, as JSON in Blender properties (it survives save and reload):

* per object (``scene.redmax.snapshot_objects``: a pointer, so renames are followed, and JSON):
  location, rotation (all modes), scale, the pose bones' transforms, whether it had animation
  data, whether it was in the scene;
* the rigid body world (``scene.redmax.snapshot``): settings, point cache range, the collection and
  constraints collection with their objects in order (as indices into the snapshot's objects).

Bakes made before the data-API detach deleted the rigid bodies and constraints; their snapshots also
hold every writable setting of them. Linking an object back into the world's collection makes Blender
create a rigid body (a mesh) or a constraint (a host) with default settings, and ``restore`` gives
them the saved ones, so those files still clear bit for bit.

An object deleted (X) after the bake stays alive through the snapshot's pointer; Clear Bake leaves
it deleted, as Blender's own delete does: nothing of it is restored, nor linked back into the rigid
body world, and the constraint ends that held it stay empty.
"""
from __future__ import annotations

import json
from types import SimpleNamespace

import bpy

TRANSFORMS = ("location", "rotation_mode", "rotation_quaternion", "rotation_euler", "rotation_axis_angle", "scale")
POSE_TRANSFORMS = TRANSFORMS
WORLD_SKIP = ("collection", "constraints", "point_cache", "effector_weights")
CACHE_SETTINGS = ("frame_start", "frame_end", "frame_step")
WORLD_COLLECTIONS = ("collection", "constraints")  # bodies, constraint hosts


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


def _transforms(owner) -> dict:
    """An object's or pose bone's own transform channels as JSON values (floats exact)."""
    return {k: (v if isinstance(v, str) else list(v)) for k in TRANSFORMS for v in (getattr(owner, k),)}


def world_members(bscene) -> set:
    """The objects Blender's rigid body simulation of ``bscene`` moves or holds: its world's collection."""
    w = bscene.rigidbody_world
    return set(w.collection.objects) if w is not None and w.collection is not None else set()


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
    scene_objects = set(bscene.objects)
    entries = []
    for ob in objects:
        d = {"transforms": _transforms(ob), "animation_data": ob.animation_data is not None,
             "in_scene": ob in scene_objects}
        if ob.pose is not None:
            d["pose"] = {pb.name: _transforms(pb) for pb in ob.pose.bones}
        if ob.rigid_body_constraint is not None:  # (``detach`` removes the constraints of the baked bodies)
            d["rigid_body_constraint"] = rna_settings(ob.rigid_body_constraint, refs)
        entries.append((ob, json.dumps(d)))
    w = bscene.rigidbody_world
    world: dict | None = None
    if w is not None:
        world = {"settings": rna_settings(w, refs, skip=WORLD_SKIP),
                 "cache": {k: getattr(w.point_cache, k) for k in CACHE_SETTINGS},
                 "effector_weights": rna_settings(w.effector_weights, refs)}
        for key in WORLD_COLLECTIONS:
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
    put(bscene, (world, fresh))


def put(bscene, saved) -> None:
    """Write a snapshot in ``stored``'s form into the scene (None: no snapshot)."""
    s = bscene.redmax
    s.snapshot_objects.clear()
    if saved is None:
        s.snapshot = ""
        return
    world, entries = saved
    for ob, data in entries:
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
    """Objects whose saved Rigid Body Constraint (one an older bake deleted) holds one of ``objects``."""
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
    scene_objects = set(bscene.objects)
    return [None if ob is not None and (not _alive(ob) or d.get("in_scene", True) and ob not in scene_objects)
            else ob for (ob, _), d in zip(entries, data)]


def _alive(ob) -> bool:
    """Whether ``ob`` still exists (removed from the file, its Python reference raises ReferenceError)."""
    try:
        ob.name
    except ReferenceError:
        return False
    return True


class Restored:
    """Reads each object's rigid body and Rigid Body Constraint as Clear Bake will have put them back, and so
    as a re-bake (which restores first) maps them: the live ones, else (a bake by an older version deleted
    them) the saved settings, as namespaces with object ends resolved. Changes nothing:
    ``mapping.scene_facts`` reads a baked scene with it."""

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
    put(bscene, None)


def uneditable(bscene, keyed) -> str:
    """Why a bake cannot change what it would have to ("" if it can): an object in ``keyed`` linked from a
    library or a non-editable override, or a rigid body world collection it would take such an object out of
    that is linked itself. The bake refuses it by name before anything is written."""
    for ob in keyed:
        if ob.library is not None or not ob.is_editable:
            source = ob.library or (ob.override_library.reference.library if ob.override_library else None)
            where = f"linked from the library '{source.filepath}'" if source is not None else "not editable"
            return (f"object '{ob.name}' is {where}: a bake keys it and cannot; make it local "
                    "(Object › Relations › Make Local) or bake it in the file it comes from")
    w = bscene.rigidbody_world
    for key in WORLD_COLLECTIONS:
        coll = getattr(w, key) if w is not None else None
        if coll is not None and (coll.library is not None or not coll.is_editable) \
                and any(ob in keyed for ob in coll.objects):
            return (f"rigid body world collection '{coll.name}' is linked from a library: a bake takes the baked "
                    "objects out of it and cannot; make it local")
    return ""


# ---------------------------------------------------------------------- detach
def detach(bscene, objects, removed: dict | None = None) -> dict:
    """Take ``objects`` out of Blender's rigid body simulation, with every Rigid Body Constraint that holds
    one of them: unlink them from the world's collection; their rigid body settings stay. The constraints
    are removed (``rigidbody.constraint_remove``; the snapshot keeps their settings and Clear Bake puts them
    back): a constraint only unlinked from the world kept Bullet's constraint on bodies that Blender rebuilds
    or frees, and Blender crashed freeing it (File › New, quitting; 3 of 3 runs of 20 bakes, 0 of 4 with
    the removal). Returns the collections' object lists before, and the removed constraints' settings (also
    written into ``removed`` as they go, for a caller that must undo after a failure), for ``reattach``."""
    w = bscene.rigidbody_world
    if w is None:
        return {}
    objects = set(objects)
    before = world_lists(bscene)
    bodies = [ob for ob in before.get("collection", ()) if ob in objects]
    leaving = set(bodies)
    hosts = [h for h in before.get("constraints", ()) if h.rigid_body_constraint is not None
             and (h.rigid_body_constraint.object1 in leaving or h.rigid_body_constraint.object2 in leaving)]
    before[REMOVED] = removed if removed is not None else {}
    try:
        # bodies first: the one view-layer update after the constraints' removal then rebuilds the depsgraph's
        # relations for both, and the bake's scene update that follows only evaluates (a relations rebuild
        # takes time in n^1.2–1.5 in Blender itself: scripts/studies/blender_scene_update.py)
        for ob in bodies:
            w.collection.objects.unlink(ob)
        _remove_constraints(hosts, before[REMOVED])
    except Exception:
        reattach(bscene, before)
        raise
    return before


REMOVED = "removed constraints"  # detach's record: {host name: its constraint's settings}


def _remove_constraints(hosts, removed: dict) -> None:
    """Remove the hosts' Rigid Body Constraints with Blender's own operator, keeping their settings in ``removed``;
    the view layer's active object stays. The operator is called as ``bpy.ops`` calls it but without the wrapper's
    view-layer evaluation before and after each call (``bpy.ops`` cost ~22 ms a constraint, growing with the scene:
    4.4 s for a 200-link chain); the view layer is evaluated once after all of them.

    No data-level way is safe: the Python API cannot free a constraint (only this operator does), and a host only
    unlinked from the world's constraints collection keeps its Bullet constraint, which nothing in Blender removes
    from the world any more (rigidbody.cc removes or rebuilds only those of the collection's objects); it outlives
    the bodies it holds and Blender crashes freeing it (``RB_constraint_delete`` →
    ``btRigidBody::removeConstraintRef`` on File › New or quit; ``tests/test_addon_detach.py``)."""
    if not hosts:
        return
    from _bpy import ops as _ops  # type: ignore[import-not-found]  # (the function bpy.ops itself calls)

    view_layer = bpy.context.view_layer
    if view_layer is None:
        raise RuntimeError("no view layer to remove the baked bodies' Rigid Body Constraints in")
    active = view_layer.objects.active
    in_view_layer = set(view_layer.objects)
    try:
        for h in hosts:
            removed[h.name_full] = rna_settings(h.rigid_body_constraint, {})
            if h not in in_view_layer:
                raise RuntimeError(f"object '{h.name}': its Rigid Body Constraint holds a baked body but it is not "
                                   "in the view layer (enable its collection to bake)")
            view_layer.objects.active = h
            result = _ops.call("rigidbody.constraint_remove", {})
            if "FINISHED" not in result:
                raise RuntimeError(f"object '{h.name}': Blender did not remove its Rigid Body Constraint "
                                   f"({sorted(result)})")
    finally:
        view_layer.objects.active = active
        view_layer.update()


def world_lists(bscene) -> dict:
    """{"collection"/"constraints": the objects of the rigid body world's collection, in order}."""
    w = bscene.rigidbody_world
    if w is None:
        return {}
    return {key: list(getattr(w, key).objects) for key in WORLD_COLLECTIONS if getattr(w, key) is not None}


def reattach(bscene, before) -> None:
    """Undo ``detach``: the world's collections get back the objects, in the order, of ``before``, and the
    removed constraints their settings (linking a host makes Blender create its constraint)."""
    w = bscene.rigidbody_world
    for key in WORLD_COLLECTIONS:
        coll = getattr(w, key) if w is not None and key in before else None
        if coll is not None:
            _order(coll, before[key])
    removed = before.get(REMOVED, {})
    if removed and any(bpy.data.objects.get(n) is not None and bpy.data.objects[n].rigid_body_constraint is None
                       for n in removed):
        view_layer = bpy.context.view_layer
        if view_layer is not None:
            view_layer.update()  # (Blender gives a linked host its constraint when it evaluates)
    for name, settings in removed.items():
        host = bpy.data.objects.get(name)
        if host is not None and host.rigid_body_constraint is not None:
            set_rna_settings(host.rigid_body_constraint, settings, [])


# --------------------------------------------------------------------- restore
def restore(context, bscene, saved, only=None) -> list:
    """Put back what ``take`` recorded (for the objects in ``only`` and not the world's settings, if
    given); returns messages about what could not be restored."""
    world_json, entries = saved
    problems = []
    data = [json.loads(d) for _, d in entries]
    objects = _present(bscene, entries, data)  # deleted since the bake: left out
    deleted = {i for i, (ob, _) in enumerate(entries) if ob is not None and objects[i] is None}
    for i, ob in enumerate(objects):
        if ob is None and i not in deleted:
            problems.append("an object saved before the bake no longer exists")
    world = json.loads(world_json)["world"]
    if world is not None and bscene.rigidbody_world is None:  # removed since the bake: one operator call
        with context.temp_override(scene=bscene):
            bpy.ops.rigidbody.world_add()
    chosen = [(ob, d) for ob, d in zip(objects, data) if ob is not None and (only is None or ob in only)]
    w = bscene.rigidbody_world
    if world is not None and w is not None:
        problems += _relink(w, world, objects, chosen, only)
    gone = {entries[i][0] for i in deleted if _alive(entries[i][0])}  # (a removed one's ends are emptied already)
    for ob, _ in chosen:  # Blender's delete empties the ends of the constraints in its world; these were out
        c = ob.rigid_body_constraint
        if c is not None and gone:
            for end in ("object1", "object2"):
                if getattr(c, end) in gone:
                    setattr(c, end, None)
    for ob, d in chosen:
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
    if world is not None and w is not None and only is None:
        set_rna_settings(w, world["settings"], objects)
        set_rna_settings(w.effector_weights, world["effector_weights"], objects)
        for k, v in world["cache"].items():
            setattr(w.point_cache, k, v)
    return problems


def _relink(w, world, objects, chosen, only) -> list:
    """Give the world's collections their saved objects back (all of them in the saved order, or with ``only``
    the chosen ones that are missing), then the saved settings to rigid bodies and constraints that linking
    created (snapshots of older bakes, which deleted them)."""
    problems = []
    missing = {kind: {ob for ob, d in chosen if kind in d and getattr(ob, kind) is None}
               for kind in ("rigid_body", "rigid_body_constraint")}
    chosen_set = {ob for ob, _ in chosen}
    for key in WORLD_COLLECTIONS:
        saved_coll = world[key]
        if saved_coll is None:
            continue
        coll = bpy.data.collections.get(saved_coll["name"])
        if coll is None:
            problems.append(f"rigid body world: collection '{saved_coll['name']}' no longer exists")
            continue
        wanted = [o for o in (_resolve(v, objects) for v in saved_coll["objects"]) if o is not None]
        if only is None:
            if getattr(w, key) != coll:
                setattr(w, key, coll)
            _order(coll, wanted)
        else:
            present = set(coll.objects)
            for ob in wanted:
                if ob in chosen_set and ob not in present:
                    coll.objects.link(ob)
    for ob, d in chosen:
        for kind in ("rigid_body", "rigid_body_constraint"):
            if ob in missing[kind] and getattr(ob, kind) is not None:
                set_rna_settings(getattr(ob, kind), d[kind], objects)
            elif ob in missing[kind]:
                problems.append(f"object '{ob.name}': its {kind.replace('_', ' ')} could not be re-created")
    return problems


def _order(coll, wanted) -> None:
    """Give ``coll`` its saved objects in the saved order (objects added since stay, first). Usually the
    objects still there are the first ones, in order (a bake takes out the baked ones), and the others are
    appended; otherwise all of them are unlinked and linked again in order."""
    wanted = [ob for ob in wanted if ob is not None]
    wanted_set = set(wanted)
    kept = [ob for ob in coll.objects if ob in wanted_set]
    if kept != wanted[:len(kept)]:
        for ob in kept:
            coll.objects.unlink(ob)
        kept = []
    for ob in wanted[len(kept):]:
        coll.objects.link(ob)
