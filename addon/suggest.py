"""Suggest Settings: run the engine's settings advisor (``engine.apps.advise``) on the rig and fill in the
scene's solver and substeps. In the UI it runs in steps under a timer (progress, ESC cancels and
changes nothing); under ``blender -b`` it is a plain loop with printed progress."""
from __future__ import annotations

import bpy

from . import bake, modal
from .properties import SOLVER_ITEMS

from ._engine import advise


def make_advisor(context):
    """An Advisor for the rig as the bake would simulate it: the scene's frame range and frame rate,
    the add-on's solver choices and contact options. Leaves the Blender scene as it was."""
    settings = context.scene.redmax
    job = bake.BakeJob(context)  # maps the rig exactly as a bake does (baked objects shown unbaked meanwhile)
    job.abort()  # ... and puts everything back: only the engine scene is kept
    solvers = [key.lower() for key, *_ in SOLVER_ITEMS]
    nv = job.mapping.scene.model.nv
    solvers = [s for s in solvers if s != "dense" or nv <= advise.DENSE_MAX_DOFS]
    return advise.Advisor(job.mapping.scene, fps=1.0 / (job.dt * job.substeps), frames=job.n_frames, solvers=solvers,
                          options=lambda dt: bake.simulator_options(settings, dt))


def apply_advice(context, advice) -> str:
    """Fill in solver and substeps from ``advice``; returns the message shown (the measured reasons)."""
    s = context.scene.redmax
    if advice.pick is None:
        s.last_message = "Suggest Settings: " + advice.reasons[0]
        return s.last_message
    s.solver, s.substeps = advice.solver.upper(), advice.substeps
    s.last_message = (f"Suggested {advice.solver} × {advice.substeps} substeps "
                      f"(≈ {advice.estimated_bake_seconds():.2g} s bake, energy kept "
                      f"{100 * advice.pick.energy_kept:.0f} % over it); " + "; ".join(advice.reasons[1:3]))
    return s.last_message


class REDMAX_OT_suggest_settings(bpy.types.Operator):
    """Try each solver and substep count on the first frames of the rig's motion and fill in the cheapest
    stable setting (ESC cancels and changes nothing)"""

    bl_idname = "redmax.suggest_settings"
    bl_label = "Suggest Settings"
    bl_options = {"REGISTER", "UNDO"}

    _advisor = None
    _steps = None
    _timer = None

    def execute(self, context):
        try:
            advisor = make_advisor(context)
        except bake.BakeError as err:
            self.report({"ERROR"}, f"RedMax: {err}")
            return {"CANCELLED"}
        last = None
        for _, message in advisor.steps():
            trial = message.split(":")[0]  # one line per setting tried
            if bpy.app.background and trial != last:
                last = trial
                print(f"redmax.suggest_settings: {trial}", flush=True)
        return self._done(context, advisor.advice)

    def invoke(self, context, event):
        if bpy.app.background:
            return self.execute(context)
        try:
            self._advisor = make_advisor(context)
        except bake.BakeError as err:
            self.report({"ERROR"}, f"RedMax: {err}")
            return {"CANCELLED"}
        self._steps = self._advisor.steps()
        context.window_manager.modal_handler_add(self)
        modal.begin(self, context)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        return modal.drive(self, context, event, self._steps,
                           status=lambda value: (value[0], f"RedMax Suggest Settings: {value[1]}"),
                           cancel=self._cancelled, finish=lambda: self._done(context, self._advisor.advice))

    def _cancelled(self):
        self.report({"WARNING"}, "RedMax: Suggest Settings cancelled; settings unchanged")
        return {"CANCELLED"}

    def _done(self, context, advice):
        message = apply_advice(context, advice)
        self.report({"INFO"} if advice.pick is not None else {"WARNING"}, f"RedMax: {message}")
        return {"FINISHED"} if advice.pick is not None else {"CANCELLED"}


CLASSES = (REDMAX_OT_suggest_settings,)
