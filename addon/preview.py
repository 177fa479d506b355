"""Live preview: playing the timeline simulates on the fly, for quick tuning before a bake.

A ``frame_change_post`` handler (registered with the add-on) keeps one preview
session per scene while ``scene.redmax.live_preview`` is on. The session starts
at the scene's start frame from the rest pose (what a bake would start from),
steps forward as frames advance (jumps forward are simulated through, capped at
``MAX_CATCH_UP`` frames), and resets when the timeline jumps back. It writes
``matrix_basis`` of the simulated objects and pose bones, the same local
matrices a bake would key (``bake.local_bases``), and no keyframes. Turning the
preview off, loading a file or a bake puts the saved rest transforms back. A
mapping error or a diverging simulation stops the preview with a message in
``scene.redmax.last_message``.
"""
from __future__ import annotations

import bpy
import numpy as np
from bpy.app.handlers import persistent
from mathutils import Matrix

from . import bake, follow, mapping
from ._engine import engine

MAX_CATCH_UP = 600  # frames simulated at most in one handler call (a long jump forward)


class PreviewSession:
    """Simulator and saved rest transforms for one scene."""

    def __init__(self, bscene, depsgraph):
        settings = bscene.redmax
        self.scene_name = bscene.name
        self.frame_start = bscene.frame_start
        self.substeps = int(settings.substeps)
        fps = bscene.render.fps / bscene.render.fps_base
        self.mapping = mapping.build_scene(bscene, depsgraph)
        world = bscene.rigidbody_world
        dt = (world.time_scale if world is not None else 1.0) / fps / self.substeps  # (Speed)
        self.sim = engine.Simulator(self.mapping.scene, settings.solver.lower(), dt=dt,
                                    **bake.simulator_options(settings, dt))
        self.frame = self.frame_start
        self.saved = {}  # (object name, bone) → matrix_basis (4, 4) at the start
        for t in self.mapping.targets:
            if not t.keyed:  # (moving anchors are held in the preview; connectors are no objects)
                continue
            owner = t.object.pose.bones[t.bone] if t.bone else t.object
            self.saved[(t.object.name, t.bone)] = np.array(owner.matrix_basis, dtype=float)

    def advance_to(self, frame: int) -> None:
        frames = min(frame - self.frame, MAX_CATCH_UP)
        if frames > 0:
            self.sim.step(frames * self.substeps)
            self.frame += frames

    def apply(self) -> None:
        """Pose the Blender objects and bones at the simulated state."""
        links = self.mapping.link_frames(self.sim.state.q, self.sim.model)[None]
        for ob, bone, basis, _ in bake.local_bases(self.mapping, links):
            owner = ob.pose.bones[bone] if bone else ob
            owner.matrix_basis = Matrix(basis[0].tolist())  # (a bare nested list would be read column-major)

    def restore(self) -> None:
        """Put the rest transforms back (objects that were deleted meanwhile are skipped)."""
        for (name, bone), M in self.saved.items():
            ob = bpy.data.objects.get(name)
            if ob is None:
                continue
            owner = ob.pose.bones.get(bone) if bone else ob
            if owner is not None:
                owner.matrix_basis = Matrix(M.tolist())


_sessions: dict[str, PreviewSession] = {}


def stop(scene_name: str | None = None) -> None:
    """End the preview of one scene (all scenes if None) and restore the rest transforms."""
    for name in list(_sessions) if scene_name is None else [scene_name]:
        session = _sessions.pop(name, None)
        if session is not None:
            session.restore()


def _fail(bscene, message: str) -> None:
    stop(bscene.name)
    bscene.redmax.last_message = f"Live preview stopped: {message}"
    bscene.redmax.live_preview = False
    print(f"RedMax: live preview stopped: {message}")


@persistent
def on_frame_change(bscene, depsgraph=None):
    settings = getattr(bscene, "redmax", None)
    if settings is None:
        return
    if not settings.live_preview:
        if bscene.name in _sessions:
            stop(bscene.name)
        return
    frame = bscene.frame_current
    session = _sessions.get(bscene.name)
    try:
        if session is None or frame < session.frame or frame <= bscene.frame_start:
            if depsgraph is None:
                depsgraph = bpy.context.evaluated_depsgraph_get()
            if session is not None:
                stop(bscene.name)  # rest transforms back, then world matrices re-evaluated before mapping
                depsgraph.view_layer.update()
            session = _sessions[bscene.name] = PreviewSession(bscene, depsgraph)
            if follow.followed_armatures(bscene.objects):
                bscene.redmax.last_message = "Live preview: Follow Animation is not previewed (bake to see it)"
        session.advance_to(frame)
        session.apply()
    except (mapping.MappingError, bake.BakeError, engine.SimulationError, engine.ModelError) as err:
        _fail(bscene, str(err))


@persistent
def on_load_pre(*_args):
    _sessions.clear()  # the objects belong to the file being closed


def live_preview_changed(settings, context):
    """Update callback of ``scene.redmax.live_preview``: turning it off restores the rest pose."""
    if not settings.live_preview:
        stop(settings.id_data.name)


HANDLERS = ((bpy.app.handlers.frame_change_post, on_frame_change), (bpy.app.handlers.load_pre, on_load_pre))


def register():
    for handlers, fn in HANDLERS:
        if fn not in handlers:
            handlers.append(fn)


def unregister():
    stop()
    for handlers, fn in HANDLERS:
        while fn in handlers:
            handlers.remove(fn)
