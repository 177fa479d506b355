"""Links (``scene.redmax.links``) → scene forces and closures: cables, springs and loop closures between two
objects or pose bones; an end on an object that is not simulated is anchored in the world, or on its moving
anchor body when Blender moves it (``anchors``; ``build.add_link_anchors`` adds those first)."""
from __future__ import annotations

import numpy as np

from .._engine import engine
from .common import WORLD, MappingError, check_matrix, matrix, rigid_part


def _end(bscene, link, which, targets, scene_objects):
    """(engine body or WORLD, world point at the start) of one end of a link; ``scene_objects``: the set of
    ``bscene``'s objects."""
    ob, bone, point = ((link.object_a, link.bone_a, link.point_a) if which == "a"
                       else (link.object_b, link.bone_b, link.point_b))
    what = f"{'loop closure' if link.kind == 'CLOSURE' else link.kind.lower()} '{link.name}'"
    if ob is None:  # (removed from the file: Blender empties the pointer)
        raise MappingError(f"{what}: object {which.upper()} is missing (deleted?)")
    if ob not in scene_objects:
        raise MappingError(f"{what}: object {which.upper()} '{ob.name}' is not in the scene (deleted?)")
    check_matrix(matrix(ob.matrix_world), f"{what}: object {which.upper()} '{ob.name}'")
    local = np.array([*point, 1.0])
    if bone:
        if ob.type != "ARMATURE" or bone not in ob.pose.bones:
            raise MappingError(f"{what}: '{ob.name}' has no bone '{bone}'")
        W = matrix(ob.matrix_world) @ matrix(ob.pose.bones[bone].matrix)
        name = f"{ob.name}:{bone}"
    else:
        W, name = matrix(ob.matrix_world), ob.name
    return (name if name in targets else WORLD), (W @ local)[:3], W


def add_link(scene, bscene, link, targets, scene_objects, partial=False):
    """Add one cable, spring or loop closure; ``partial`` (a *Selected Only* bake): a link between two
    objects that are not simulated holds with them and is left out."""
    what = f"{'loop closure' if link.kind == 'CLOSURE' else link.kind.lower()} '{link.name}'"
    a, pa, Wa = _end(bscene, link, "a", targets, scene_objects)
    bb, pb, _ = _end(bscene, link, "b", targets, scene_objects)
    if not any(end != WORLD and targets[end].keyed for end in (a, bb)):  # (anchors are not simulated)
        if partial:
            return
        raise MappingError(f"{what}: neither end is on a simulated object or bone")
    try:
        if link.kind == "CLOSURE":
            Ra, _ = rigid_part(Wa)
            scene.add_loop_closure(a, bb, pa, kind=link.closure_kind.lower(), axis=Ra @ np.array(link.closure_axis),
                                   name=link.name)
        else:
            if np.linalg.norm(pb - pa) < 1e-9 and link.use_current_length:
                raise MappingError(f"{what}: its two points coincide, so it has no direction")
            rest = None if link.use_current_length else link.rest_length
            add = scene.add_cable if link.kind == "CABLE" else scene.add_spring
            add(a, pa, bb, pb, link.stiffness, damping=link.damping, rest_length=rest, name=link.name)
    except engine.ModelError as err:
        raise MappingError(f"{what}: {err}") from None


# ------------------------------------------------------------------ summary
