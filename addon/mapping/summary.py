"""The Scene Summary: what a bake would simulate, what it leaves out and why."""
from __future__ import annotations

from typing import Any

from .._engine import engine
from .build import build
from .common import MappingError


def simulated_reason(ob, bscene) -> str:
    """Why ``ob`` will be simulated by a bake of ``bscene`` ("" if it will not): what the *Simulate*
    checkbox shows (active rigid bodies and constrained meshes are simulated whatever it says)."""
    if ob.type == "ARMATURE":
        return "Simulate is on (its bones)" if ob.redmax.simulate else ""
    if ob.rigid_body is not None:
        rb = ob.rigid_body
        return "active rigid body" if rb.type == "ACTIVE" and rb.enabled and not rb.kinematic else ""
    if ob.redmax.simulate:
        return "Simulate is on"
    if ob.type == "MESH":
        for h in bscene.objects:
            c = h.rigid_body_constraint
            if c is not None and c.enabled and ob in (c.object1, c.object2):
                return f"in the Rigid Body Constraint on '{h.name}'"
    return ""


def _left_out(bscene, m, objects):
    """{reason: [object names]} for scene objects a bake does not simulate."""
    mapped = {t.object for t in m.targets if t.keyed} if m is not None else set()
    anchored = {t.object for t in m.targets if not t.keyed} if m is not None else set()
    chosen = set(objects) if objects is not None else None
    curves = {item.curve for item in bscene.redmax.links}
    out: dict = {}
    for ob in bscene.objects:
        if ob in mapped or ob in curves:
            continue
        reason = ""
        if ob in anchored:
            reason = "moves by its animation: a moving anchor of what hangs from it"
        elif chosen is not None and ob not in chosen and simulated_reason(ob, bscene):
            reason = "not selected (Selected Only): holds its place"
        elif ob.rigid_body is not None and ob.rigid_body.type == "PASSIVE":
            reason = "passive rigid body: part of the world"
        elif ob.rigid_body is not None and (ob.rigid_body.kinematic or not ob.rigid_body.enabled):
            reason = "active rigid body that Blender holds (Animated on or Dynamic off): part of the world"
        elif ob.type == "ARMATURE" and not ob.redmax.simulate:
            reason = "armature with Simulate off"
        elif ob.rigid_body_constraint is not None and not ob.rigid_body_constraint.enabled:
            reason = "Rigid Body Constraint disabled"
        elif ob.type == "MESH" and ob.rigid_body_constraint is None and not simulated_reason(ob, bscene):
            reason = "no rigid body, constraint or Simulate"
        if reason:
            out.setdefault(reason, []).append(ob.name)
    return out


def summary(context, objects=None) -> dict:
    """What a bake of the scene (or of ``objects``) would simulate: counts of bodies (those it keys), joints
    (not free), links (cables and springs), loop closures, moving anchors, motors, force fields and degrees of
    freedom, what is left out and why, the settings it does not honour ("ignored": (element, setting, why)),
    and the error that would refuse the bake ("" if none)."""
    bscene = context.scene
    out = {"bodies": 0, "joints": 0, "links": 0, "closures": 0, "dof": 0, "anchors": 0, "motors": 0, "fields": 0,
           "error": "", "ignored": []}
    m = None
    try:
        m = build(context, objects)
    except (MappingError, engine.ModelError) as err:
        out["error"] = str(err)
    if m is not None:
        model: Any = m.scene.model
        anchors = {p.joint for p in m.scene.prescribed}
        out.update(bodies=sum(t.keyed for t in m.targets), dof=model.nv, links=len(m.scene.pairs),
                   closures=len(m.scene.loop_closures), anchors=len(anchors), motors=len(m.scene.motors),
                   fields=len(m.scene.force_fields), ignored=list(m.ignored),
                   joints=int(sum(int(t) != engine.joints.FREE for t in model.joint_type)))
    out["left_out"] = _left_out(bscene, m, objects)
    return out
