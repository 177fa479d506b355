"""The "RedMax" N-panel tab: scene settings, the selected body or bone, links, bake."""
from __future__ import annotations

import bpy

from . import bake, mapping
from ._engine import engine

_SUMMARY: dict = {"key": None, "value": None}


def _summary_key(context):
    """What the scene summary depends on (cheap to compute at every redraw)."""
    bscene = context.scene
    s = bscene.redmax
    obs = []
    for ob in bscene.objects:
        rb, c, f = ob.rigid_body, ob.rigid_body_constraint, ob.field
        obs.append((ob.name, ob.type, ob.redmax.simulate, ob.redmax.collide, rb.type if rb else "", tuple(ob.scale),
                    (c.type, c.enabled, getattr(c.object1, "name", ""), getattr(c.object2, "name", "")) if c else (),
                    ob.select_get() if s.selected_only else False, _settings_key(rb), _settings_key(c),
                    (f.type, f.shape, f.noise, f.use_absorption) if f is not None else ()))
    items = tuple((i.kind, getattr(i.object_a, "name", ""), getattr(i.object_b, "name", "")) for i in s.links)
    w = bscene.rigidbody_world
    world = (w.solver_iterations, w.use_split_impulse, w.time_scale) if w is not None else ()
    return bscene.name, s.selected_only, s.collisions, s.collide_with_ground, tuple(obs), items, world


SUMMARY_SETTINGS = {  # what the summary's counts and its "ignored" list read of a rigid body or a constraint
    "RigidBodyObject": ("enabled", "kinematic", "use_deactivation", "use_start_deactivated", "collision_shape",
                        "use_deform", "mesh_source", "use_margin", "collision_margin", "friction", "restitution"),
    "RigidBodyConstraint": ("use_override_solver_iterations", "spring_type", "use_breaking", "disable_collisions",
                            "use_motor_lin", "use_motor_ang", *(f"use_limit_{k}_{a}" for k in ("lin", "ang")
                                                               for a in "xyz")),
}


def _settings_key(struct) -> tuple:
    """The values of a rigid body's or constraint's settings that the Scene Summary depends on."""
    if struct is None:
        return ()
    values = tuple(getattr(struct, k) for k in SUMMARY_SETTINGS[struct.bl_rna.identifier])
    return values + (tuple(struct.collision_collections),) if struct.bl_rna.identifier == "RigidBodyObject" else values


def scene_summary(context) -> dict:
    """``mapping.summary`` of the scene, recomputed only when something it depends on changed."""
    key = _summary_key(context)
    if key != _SUMMARY["key"]:
        objects = bake.selection(context) if context.scene.redmax.selected_only else None
        try:
            value = mapping.summary(context, objects)
        except Exception as err:  # a panel must draw whatever the scene holds; the bake reports it in full
            value = {"bodies": 0, "joints": 0, "links": 0, "closures": 0, "dof": 0, "left_out": {},
                     "anchors": 0, "motors": 0, "fields": 0, "ignored": [], "collisions": [],
                     "error": f"{type(err).__name__}: {err}"}
        _SUMMARY["key"], _SUMMARY["value"] = key, value
    return _SUMMARY["value"]


class _Tab(bpy.types.Panel):
    """Base of the tab's panels (never registered itself)."""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "RedMax"


class REDMAX_PT_main(_Tab):
    bl_label = "RedMax"
    bl_idname = "REDMAX_PT_main"

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        s = context.scene.redmax
        col = layout.column()
        col.prop(s, "solver")
        col.prop(s, "substeps")
        col.prop(s, "integrator")
        col.operator("redmax.suggest_settings", icon="LIGHT")
        col.prop(s, "density")
        col.prop(s, "body_damping")
        layout.prop(s, "live_preview", icon="PLAY")
        row = layout.row(align=True)
        row.scale_y = 1.4
        row.operator("redmax.bake", icon="PHYSICS")
        row.operator("redmax.clear_bake", text="", icon="TRASH")
        if s.last_message:
            layout.label(text=s.last_message, icon="ERROR" if s.last_message.startswith(("failed", "Live preview stopped")) else "INFO")
        if s.last_timings:
            layout.label(text=s.last_timings, icon="TIME")
        if s.last_steps:
            layout.label(text=f"PCG iterations: {s.last_iterations:.1f} mean, {s.last_max_iterations} max")
        if engine.JIT_ENABLED:
            layout.label(text=f"Engine {engine.__version__}, numba on", icon="CHECKMARK")
        else:
            layout.label(text=f"Engine {engine.__version__}: numba missing, pure-Python path (slow)", icon="INFO")


class REDMAX_PT_bake_options(_Tab):
    bl_label = "Bake Options"
    bl_parent_id = "REDMAX_PT_main"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        s = context.scene.redmax
        layout.prop(s, "use_bake_range")
        col = layout.column(align=True)
        if s.use_bake_range:
            col.prop(s, "bake_frame_start")
            col.prop(s, "bake_frame_end")
        else:
            col.label(text=f"Scene range {context.scene.frame_start}–{context.scene.frame_end}")
        layout.prop(s, "frame_step")
        layout.prop(s, "preroll")
        layout.prop(s, "selected_only")


class REDMAX_PT_summary(_Tab):
    bl_label = "Scene Summary"
    bl_parent_id = "REDMAX_PT_main"

    def draw(self, context):
        layout = self.layout
        info = scene_summary(context)
        col = layout.column(align=True)
        col.label(text=f"{info['bodies']} bodies, {info['joints']} joints, {info['dof']} DoF")
        col.label(text=f"{info['links']} cables/springs, {info['closures']} loop closures")
        if info["anchors"] or info["motors"] or info["fields"]:
            col.label(text=f"{info['anchors']} moving anchors, {info['motors']} motors, {info['fields']} force fields")
        if info["error"]:
            col.label(text=f"Cannot bake: {info['error']}", icon="ERROR")
        for reason, names in info["left_out"].items():
            shown = ", ".join(names[:3]) + (f" (+{len(names) - 3})" if len(names) > 3 else "")
            col.label(text=f"Left out: {shown} — {reason}", icon="INFO")
        for line in info["collisions"]:
            col.label(text=f"Collisions: {line}", icon="MOD_PHYSICS")
        for element, setting, why in info["ignored"]:
            col.label(text=f"Ignored: {element}: {setting} — {why}", icon="ERROR")


class REDMAX_PT_ground(_Tab):
    bl_label = "Collisions"
    bl_parent_id = "REDMAX_PT_main"

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        s = context.scene.redmax
        layout.prop(s, "collisions")
        layout.prop(s, "collide_with_ground")
        col = layout.column()
        col.active = s.collide_with_ground
        col.prop(s, "ground_height")
        col.prop(s, "ground_friction")
        col.prop(s, "ground_restitution")
        col.prop(s, "contact_method")


class REDMAX_PT_body(_Tab):
    bl_label = "Body"
    bl_parent_id = "REDMAX_PT_main"

    @classmethod
    def poll(cls, context):
        return context.active_object is not None

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        ob = context.active_object
        pb = context.active_pose_bone if ob.type == "ARMATURE" else None
        if pb is not None and context.mode == "POSE":
            bs = pb.bone.redmax
            layout.label(text=f"Bone '{pb.name}'", icon="BONE_DATA")
            layout.prop(bs, "joint")
            if bs.joint in ("REVOLUTE", "UNIVERSAL", "PRISMATIC"):
                layout.prop(bs, "axis")
            layout.prop(bs, "mass")
            layout.prop(bs, "stiffness")
            layout.prop(bs, "damping")
            layout.prop(bs, "collide")
            row = layout.row()
            row.active = bs.collide
            row.prop(bs, "contact_radius")
            if ob.redmax.follow_animation:
                col = layout.column(heading="Follow Animation")
                col.active = ob.redmax.follow_gains == "MANUAL"
                col.prop(bs, "follow_kp")
                col.prop(bs, "follow_kd")
            return
        os_ = ob.redmax
        layout.label(text=f"'{ob.name}'", icon="OBJECT_DATA")
        reason = mapping.simulated_reason(ob, context.scene)
        if reason and not os_.simulate:  # simulated anyway: show it ticked, and why
            row = layout.row()
            row.enabled = False
            row.label(text=f"Simulate: yes ({reason})", icon="CHECKBOX_HLT")
        else:
            layout.prop(os_, "simulate")
        if ob.type == "ARMATURE":
            layout.prop(os_, "root")
            layout.prop(os_, "linear_density")
            layout.prop(os_, "follow_animation")
            if os_.follow_animation:
                layout.prop(os_, "follow_gains")
                layout.prop(os_, "follow_scale")
                if ob.animation_data is None or ob.animation_data.action is None:
                    layout.label(text="No action to follow", icon="ERROR")
        else:
            layout.prop(os_, "mass")
            linear = _attached_by_slider(ob, context.scene)
            if linear:
                layout.prop(os_, "joint_stiffness", text="Joint Stiffness (N/m)")
                layout.prop(os_, "joint_damping", text="Joint Damping (N·s/m)")
            else:
                layout.prop(os_, "joint_stiffness")
                layout.prop(os_, "joint_damping")
            layout.prop(os_, "collide")
        if os_.is_baked:
            layout.label(text="baked (Clear Bake restores the previous animation)", icon="KEYFRAME")


def _attached_by_slider(ob, bscene) -> bool:
    """True if a SLIDER constraint holds ``ob`` (its joint stiffness is then N/m, not N·m/rad)."""
    return any(h.rigid_body_constraint is not None and h.rigid_body_constraint.type == "SLIDER"
               and ob in (h.rigid_body_constraint.object1, h.rigid_body_constraint.object2) for h in bscene.objects)


class REDMAX_UL_links(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index=0, flt_flag=0):
        icons = {"CABLE": "CON_TRACKTO", "SPRING": "FORCE_HARMONIC", "CLOSURE": "LINKED"}
        layout.prop(item, "name", text="", emboss=False, icon=icons[item.kind])
        if item.object_a is None or item.object_b is None:
            layout.label(text="", icon="ERROR")


class REDMAX_PT_links(_Tab):
    bl_label = "Cables, Springs, Loop Closures"
    bl_parent_id = "REDMAX_PT_main"

    def draw(self, context):
        layout = self.layout
        s = context.scene.redmax
        row = layout.row(align=True)
        row.operator("redmax.add_cable", text="Cable")
        row.operator("redmax.add_spring", text="Spring")
        row.operator("redmax.add_loop_closure", text="Closure")
        row = layout.row()
        row.template_list("REDMAX_UL_links", "", s, "links", s, "active_link", rows=4)
        row.operator("redmax.remove_link", text="", icon="X")
        if 0 <= s.active_link < len(s.links):
            item = s.links[s.active_link]
            col = layout.column()
            col.use_property_split = True
            col.prop(item, "kind")
            for end in "ab":
                col.prop(item, f"object_{end}")
                ob = getattr(item, f"object_{end}")
                if ob is not None and ob.type == "ARMATURE":
                    col.prop_search(item, f"bone_{end}", ob.data, "bones")
                col.prop(item, f"point_{end}")
            if item.kind == "CLOSURE":
                col.prop(item, "closure_kind")
                col.prop(item, "closure_axis")
            else:
                col.prop(item, "stiffness")
                col.prop(item, "damping")
                col.prop(item, "use_current_length")
                if not item.use_current_length:
                    col.prop(item, "rest_length")


class REDMAX_PT_tools(_Tab):
    bl_label = "Demos and Benchmarks"
    bl_parent_id = "REDMAX_PT_main"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        col = self.layout.column(align=True)
        for key, label in (("BRIDGE", "Bridge"), ("UMBRELLA", "Umbrella"), ("TREE", "Tree"), ("CHAIN", "Chain")):
            col.operator("redmax.add_demo_scene", text=f"Add {label}").scene = key
        self.layout.operator("redmax.run_benchmark")


CLASSES = (REDMAX_PT_main, REDMAX_PT_bake_options, REDMAX_PT_summary, REDMAX_PT_ground, REDMAX_PT_body,
           REDMAX_UL_links, REDMAX_PT_links, REDMAX_PT_tools)
