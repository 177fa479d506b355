"""Cables, springs and loop closures as Blender data: the ``scene.redmax.links`` items and the
curve objects (two hooked points, recipes §10) that show them in the viewport and in renders."""
from __future__ import annotations

import bpy
from mathutils import Matrix

COLLECTION = "RedMax Links"
COLOURS = {"CABLE": (0.9, 0.55, 0.1, 1.0), "SPRING": (0.2, 0.6, 0.9, 1.0), "CLOSURE": (0.9, 0.15, 0.15, 1.0)}


def ends_from(context, object_a="", bone_a="", object_b="", bone_b=""):
    """((object, bone), (object, bone)) from names, or from the selection when names are empty:
    two pose bones, an object and the active pose bone, or two objects (the active one is B)."""
    if object_a or object_b:
        obs = []
        for name, bone in ((object_a, bone_a), (object_b, bone_b)):
            ob = bpy.data.objects.get(name)
            if ob is None:
                raise ValueError(f"no object named '{name}'")
            if bone and (ob.type != "ARMATURE" or bone not in ob.data.bones):
                raise ValueError(f"'{name}' has no bone '{bone}'")
            obs.append((ob, bone))
        return tuple(obs)
    bones = list(getattr(context, "selected_pose_bones", None) or [])
    active_bone = getattr(context, "active_pose_bone", None)
    if len(bones) == 2:
        a, b = (bones[0], bones[1]) if bones[1] == active_bone else (bones[1], bones[0])
        return (a.id_data, a.name), (b.id_data, b.name)
    selected = [ob for ob in context.selected_objects]
    active = context.active_object
    if len(bones) == 1 and len(selected) == 2:
        other = next(ob for ob in selected if ob != bones[0].id_data)
        return (other, ""), (bones[0].id_data, bones[0].name)
    if len(selected) == 2 and active in selected:
        other = next(ob for ob in selected if ob != active)
        return (other, ""), (active, "")
    raise ValueError("select two objects, two pose bones, or an object and a pose bone (the active one is B)")


def add_link(bscene, kind, ends, point_a=(0.0, 0.0, 0.0), point_b=(0.0, 0.0, 0.0), *, name="", stiffness=1e5,
             damping=100.0, closure_kind="POINT"):
    """Append a link item and its curve; returns the item."""
    (ob_a, bone_a), (ob_b, bone_b) = ends
    item = bscene.redmax.links.add()
    item.kind = kind
    item.name = name or _unique_name(bscene, f"{kind.capitalize()} {ob_a.name}{':' + bone_a if bone_a else ''}"
                                             f" – {ob_b.name}{':' + bone_b if bone_b else ''}")
    item.object_a, item.bone_a, item.point_a = ob_a, bone_a, point_a
    item.object_b, item.bone_b, item.point_b = ob_b, bone_b, point_b
    item.stiffness, item.damping = stiffness, damping
    if kind == "CLOSURE":
        item.closure_kind = closure_kind
    item.curve = _make_curve(bscene, item)
    bscene.redmax.active_link = len(bscene.redmax.links) - 1
    return item


def remove_link(bscene, index):
    links = bscene.redmax.links
    curve = links[index].curve
    if curve is not None:
        data = curve.data
        bpy.data.objects.remove(curve)
        if data is not None and data.users == 0:
            bpy.data.curves.remove(data)
    links.remove(index)
    bscene.redmax.active_link = min(index, len(links) - 1)


def _unique_name(bscene, base):
    names = {item.name for item in bscene.redmax.links}
    name, k = base, 1
    while name in names:
        k += 1
        name = f"{base} {k}"
    return name


def _collection(bscene):
    coll = bpy.data.collections.get(COLLECTION)
    if coll is None:
        coll = bpy.data.collections.new(COLLECTION)
    if coll.name not in bscene.collection.children:
        bscene.collection.children.link(coll)
    return coll


def _make_curve(bscene, item):
    """A two-point poly curve at the identity, each point hooked to its end (object or bone)."""
    data = bpy.data.curves.new(item.name, "CURVE")
    data.dimensions = "3D"
    data.bevel_depth = 0.01 if item.kind != "CLOSURE" else 0.03
    spline = data.splines.new("POLY")
    spline.points.add(1)
    for i, p in enumerate((item.point_a, item.point_b)):
        spline.points[i].co = (*p, 1.0)
    ob = bpy.data.objects.new(item.name, data)
    ob.color = COLOURS[item.kind]
    ob.hide_select = True
    _collection(bscene).objects.link(ob)
    for i, (target, bone) in enumerate(((item.object_a, item.bone_a), (item.object_b, item.bone_b))):
        m = ob.modifiers.new(f"end {'AB'[i]}", "HOOK")
        m.object = target
        if bone:
            m.subtarget = bone
        m.vertex_indices_set([i])
        m.matrix_inverse = Matrix.Identity(4)
        m.falloff_type = "NONE"
    return ob
