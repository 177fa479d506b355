"""The "RedMax" N-panel tab: scene settings, the selected body or bone, links, bake."""
from __future__ import annotations

import bpy

from ._engine import engine


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
        if s.last_steps:
            layout.label(text=f"PCG iterations: {s.last_iterations:.1f} mean, {s.last_max_iterations} max")
        if engine.JIT_ENABLED:
            layout.label(text=f"Engine {engine.__version__}, numba on", icon="CHECKMARK")
        else:
            layout.label(text=f"Engine {engine.__version__}: numba missing, pure-Python path (slow)", icon="INFO")


class REDMAX_PT_ground(_Tab):
    bl_label = "Ground Contact"
    bl_parent_id = "REDMAX_PT_main"

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        s = context.scene.redmax
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
                col.prop(bs, "follow_kp")
                col.prop(bs, "follow_kd")
            return
        os_ = ob.redmax
        layout.label(text=f"'{ob.name}'", icon="OBJECT_DATA")
        layout.prop(os_, "simulate")
        if ob.type == "ARMATURE":
            layout.prop(os_, "root")
            layout.prop(os_, "linear_density")
            layout.prop(os_, "follow_animation")
            if os_.follow_animation:
                layout.prop(os_, "follow_scale")
                if ob.animation_data is None or ob.animation_data.action is None:
                    layout.label(text="No action to follow", icon="ERROR")
        else:
            layout.prop(os_, "mass")
            layout.prop(os_, "joint_stiffness")
            layout.prop(os_, "joint_damping")
            layout.prop(os_, "collide")
        if os_.is_baked:
            layout.label(text="baked (Clear Bake restores the previous animation)", icon="KEYFRAME")


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


CLASSES = (REDMAX_PT_main, REDMAX_PT_ground, REDMAX_PT_body, REDMAX_UL_links, REDMAX_PT_links, REDMAX_PT_tools)
