"""Operators: bake / clear, authoring links, demo scenes, benchmarks (pinned ids in DESIGN.md)."""
from __future__ import annotations

import os
import sys
import traceback

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatVectorProperty, IntProperty, StringProperty

from bpy_extras.io_utils import ExportHelper

from . import bake, demo, kernels, links, mapping, modal
from .properties import CLOSURE_ITEMS

from ._engine import bench, engine


class REDMAX_OT_bake(bpy.types.Operator):
    """Simulate the frame range with RedMax and write keyframes (ESC cancels; nothing changes until the end)"""

    bl_idname = "redmax.bake"
    bl_label = "Bake RedMax"
    bl_options = {"REGISTER", "UNDO"}

    _job = None
    _steps = None
    _timer = None

    def execute(self, context):
        if kernels.needed(context.scene.redmax) and not kernels.run_blocking(context.scene.redmax):
            self.report({"WARNING"}, "RedMax bake cancelled while compiling; the scene is unchanged")
            return {"CANCELLED"}
        try:
            job = bake.BakeJob(context, read=False)
        except bake.BakeError as err:
            self._fail(context, None, err)
            return {"CANCELLED"}
        try:
            last = None
            for stage, fraction, _ in job.stages():  # headless: a plain loop, progress printed per 10 %
                if bpy.app.background and (stage, int(fraction * 10)) != last:
                    last = (stage, int(fraction * 10))
                    print(f"redmax.bake: {stage} {100 * fraction:3.0f} %", flush=True)
        except bake.BakeError as err:
            self._fail(context, job, err)
            return {"CANCELLED"}
        except BaseException:  # KeyboardInterrupt included: leave the scene as it was
            job.abort()
            raise
        self._report_done(context, job)
        return {"FINISHED"}

    def invoke(self, context, event):
        if bpy.app.background:
            return self.execute(context)
        wm = context.window_manager
        if kernels.needed(context.scene.redmax):  # first run: compile in a thread before touching the scene
            self._job = kernels.start(context.scene.redmax)
            self._timer = wm.event_timer_add(0.1, window=context.window)
            wm.modal_handler_add(self)
            wm.progress_begin(0, 100)
            kernels.show(context, self._job)
            self.report({"INFO"}, f"RedMax: {kernels.TITLE} (ESC cancels)")
            return {"RUNNING_MODAL"}
        if self._start(context) == {"CANCELLED"}:
            return {"CANCELLED"}
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def _start(self, context):
        try:
            self._job = bake.BakeJob(context, read=False)  # reading the scene is the progress's first stage
        except bake.BakeError as err:
            self._fail(context, None, err)
            return {"CANCELLED"}
        self._steps = self._job.stages()
        modal.begin(self, context)
        return {"RUNNING_MODAL"}

    def _compiled(self, context, compile_job):
        if compile_job.error is not None:
            self._fail(context, None, compile_job.error)
            return {"CANCELLED"}
        return self._start(context)

    def modal(self, context, event):
        if isinstance(self._job, kernels.KernelCompile):
            return kernels.modal_step(self, context, event, self._compiled)
        return modal.drive(self, context, event, self._steps,
                           status=lambda value: (value[2], f"RedMax bake: {value[0]} {100 * value[1]:.0f} %"),
                           cancel=self._cancelled, finish=lambda: self._finished(context),
                           errors=(Exception,), fail=lambda err: self._failed(context, err))

    def _cancelled(self):
        self._steps.close()  # (a stage suspended inside a context, e.g. the world turned off, leaves it)
        self._job.abort()
        self.report({"WARNING"}, "RedMax bake cancelled; the animation is unchanged")
        return {"CANCELLED"}

    def _finished(self, context):
        self._report_done(context, self._job)
        return {"FINISHED"}

    def _report_done(self, context, job):
        if job.warning:
            self.report({"WARNING"}, f"RedMax: {job.warning}")
        s = context.scene.redmax
        self.report({"INFO"}, f"RedMax: {s.last_message}; {s.last_timings}")

    def _failed(self, context, err):
        if not isinstance(err, bake.BakeError):  # a bug: the scene is put back, the console has the traceback
            traceback.print_exception(err)
        self._fail(context, self._job, err)
        return {"CANCELLED"}

    def _fail(self, context, job, err):
        if job is not None:
            job.abort()
        context.scene.redmax.last_message = f"failed: {err}"
        self.report({"ERROR"}, f"RedMax bake failed: {err}")


class REDMAX_OT_clear_bake(bpy.types.Operator):
    """Remove the baked keyframes and give objects their previous animation back"""

    bl_idname = "redmax.clear_bake"
    bl_label = "Clear RedMax Bake"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        n = bake.clear_bake(context)
        self.report({"INFO"}, f"RedMax: cleared the bake of {n} object(s)")
        return {"FINISHED"}


class _AddLink:
    """Shared by the three link operators: ends from the properties or from the selection
    (two objects, two pose bones, or an object and a pose bone; the active one is B)."""

    kind = "CABLE"

    name: StringProperty(name="Name", default="")  # type: ignore[valid-type]
    object_a: StringProperty(name="Object A", default="")  # type: ignore[valid-type]
    bone_a: StringProperty(name="Bone A", default="")  # type: ignore[valid-type]
    point_a: FloatVectorProperty(name="Point A", size=3, description="Local point on A")  # type: ignore[valid-type]
    object_b: StringProperty(name="Object B", default="")  # type: ignore[valid-type]
    bone_b: StringProperty(name="Bone B", default="")  # type: ignore[valid-type]
    point_b: FloatVectorProperty(name="Point B", size=3, description="Local point on B")  # type: ignore[valid-type]
    stiffness: bpy.props.FloatProperty(name="Stiffness", default=1e5, min=0.0)  # type: ignore[valid-type]
    damping: bpy.props.FloatProperty(name="Damping", default=100.0, min=0.0)  # type: ignore[valid-type]

    def execute(self, context):
        try:
            ends = links.ends_from(context, self.object_a, self.bone_a, self.object_b, self.bone_b)
        except ValueError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        item = links.add_link(context.scene, self.kind, ends, tuple(self.point_a), tuple(self.point_b),
                              name=self.name, stiffness=self.stiffness, damping=self.damping, **self._extra())
        self.report({"INFO"}, f"RedMax: added {item.name}")
        return {"FINISHED"}

    def _extra(self):
        return {}


class REDMAX_OT_add_cable(_AddLink, bpy.types.Operator):
    """Add a tension-only cable between the two selected objects or pose bones"""

    bl_idname = "redmax.add_cable"
    bl_options = {"REGISTER", "UNDO"}
    bl_label = "Add Cable"
    kind = "CABLE"


class REDMAX_OT_add_spring(_AddLink, bpy.types.Operator):
    """Add a spring between the two selected objects or pose bones"""

    bl_idname = "redmax.add_spring"
    bl_options = {"REGISTER", "UNDO"}
    bl_label = "Add Spring"
    kind = "SPRING"


class REDMAX_OT_add_loop_closure(_AddLink, bpy.types.Operator):
    """Close a loop: the point on A and the same place on B stay together"""

    bl_idname = "redmax.add_loop_closure"
    bl_options = {"REGISTER", "UNDO"}
    bl_label = "Add Loop Closure"
    kind = "CLOSURE"

    closure_kind: EnumProperty(name="Closure", items=CLOSURE_ITEMS, default="POINT")  # type: ignore[valid-type]

    def _extra(self):
        return {"closure_kind": self.closure_kind}


class REDMAX_OT_remove_link(bpy.types.Operator):
    """Remove the active cable, spring or loop closure (and its curve)"""

    bl_idname = "redmax.remove_link"
    bl_label = "Remove Link"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        s = context.scene.redmax
        return 0 <= s.active_link < len(s.links)

    def execute(self, context):
        links.remove_link(context.scene, context.scene.redmax.active_link)
        return {"FINISHED"}


class REDMAX_OT_add_demo_scene(bpy.types.Operator):
    """Build one of the engine's scenes as Blender objects, ready to bake"""

    bl_idname = "redmax.add_demo_scene"
    bl_label = "Add RedMax Demo Scene"
    bl_options = {"REGISTER", "UNDO"}

    scene: EnumProperty(name="Scene", items=demo.DEMO_ITEMS, default="BRIDGE")  # type: ignore[valid-type]
    size: IntProperty(name="Size", default=0, min=0, soft_max=64,  # type: ignore[valid-type]
                      description="Deck pieces / rib links / tree levels / chain links (0: the demo default; "
                                  "at most bridge 300, umbrella 60, tree 8, chain and rope 1000)")

    def execute(self, context):
        try:
            info = demo.build_demo(context, self.scene, self.size or None)
        except (ValueError, engine.ModelError) as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        for w in info["warnings"]:
            self.report({"WARNING"}, w)
        self.report({"INFO"}, f"RedMax: {self.scene.lower()} demo with {info['bodies']} bodies, "
                              f"{info['links']} links")
        return {"FINISHED"}


SUITE_TITLES = {"redmax": "RedMax (thesis Sec. 4)", "algorithms": "Algorithms (ABA, RNEA, CRBA, M⁻¹)",
                "spd": "Stable PD (MABA)"}
SUITE_ITEMS = [(name, SUITE_TITLES.get(name, name.title()), f"python -m engine bench {name}", i)
               for i, name in enumerate(bench.SUITES)]


class REDMAX_OT_run_benchmark(bpy.types.Operator):
    """Run an engine benchmark suite inside Blender's Python (writes CSV, markdown and plots)"""

    bl_idname = "redmax.run_benchmark"
    bl_label = "Run RedMax Benchmark"

    suite: EnumProperty(name="Suite", items=SUITE_ITEMS, default="redmax")  # type: ignore[valid-type]
    quick: BoolProperty(name="Quick", default=True)  # type: ignore[valid-type]
    sim_time: bpy.props.FloatProperty(name="Scene Seconds", default=0.0, min=0.0,  # type: ignore[valid-type]
                                      description="Scene time per run (redmax suite; 0 = the suite default)")
    output_dir: StringProperty(name="Output", subtype="DIR_PATH", default="//redmax_bench")  # type: ignore[valid-type]

    def execute(self, context):
        out = bpy.path.abspath(self.output_dir or "//redmax_bench")
        if out.startswith("//"):  # unsaved file: relative to the working directory
            out = os.path.join(os.getcwd(), out[2:])
        options = {"sim_time": self.sim_time} if self.suite == "redmax" and self.sim_time > 0 else {}
        try:
            result = bench.run_suite(self.suite, out, quick=self.quick, **options)
        except Exception as err:  # a failing suite is reported, not raised into Blender's UI
            self.report({"ERROR"}, f"RedMax benchmark '{self.suite}' failed: {err}")
            return {"CANCELLED"}
        with open(result["markdown"], "a", encoding="utf-8") as fh:
            fh.write(f"\nRun inside Blender {bpy.app.version_string} (Python {sys.version.split()[0]}, "
                     f"numba {'on' if engine.JIT_ENABLED else 'off'}) by `redmax.run_benchmark`.\n")
        self.report({"INFO"}, f"RedMax: benchmark written to {result['markdown']}")
        return {"FINISHED"}


class REDMAX_OT_export_scene(bpy.types.Operator, ExportHelper):  # type: ignore[misc]  # stubs differ on invoke
    """Export the simulated bodies, joints, cables, springs and loop closures as a RedMax scene file
    (JSON, docs/viewer.md), to open in the desktop viewer: python -m engine view --scene-file FILE"""

    bl_idname = "redmax.export_scene"
    bl_label = "Export RedMax Scene"
    filename_ext = ".json"
    filter_glob: StringProperty(default="*.json", options={"HIDDEN"})  # type: ignore[valid-type]

    def execute(self, context):
        try:
            engine.output_file(self.filepath, "the export file")  # before the scene is mapped
            m = mapping.build(context)
            path = engine.save_scene(m.scene, self.filepath)
        except (mapping.MappingError, engine.SceneFileError, OSError) as err:  # (moving anchors, motors, breakables
            self.report({"ERROR"}, f"RedMax export failed: {err}")  # and fields stay in Blender)
            return {"CANCELLED"}
        for w in m.warnings:
            self.report({"WARNING"}, w)
        self.report({"INFO"}, f"RedMax: scene written to {path} ({m.scene.model.n_bodies} bodies)")
        return {"FINISHED"}


def menu_export(self, context):
    self.layout.operator(REDMAX_OT_export_scene.bl_idname, text="RedMax Scene (.json)")


CLASSES = (REDMAX_OT_bake, REDMAX_OT_clear_bake, REDMAX_OT_add_cable, REDMAX_OT_add_spring,
           REDMAX_OT_add_loop_closure, REDMAX_OT_remove_link, REDMAX_OT_add_demo_scene, REDMAX_OT_run_benchmark,
           REDMAX_OT_export_scene)
