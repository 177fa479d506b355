"""Live preview: playing the timeline simulates on the fly, for quick tuning before a bake.

A ``frame_change_post`` handler (registered with the add-on) keeps one preview
session per scene while ``scene.redmax.live_preview`` is on. The session starts
at the scene's start frame from the rest pose (what a bake would start from),
steps forward as frames advance (jumps forward are simulated through, capped at
``MAX_CATCH_UP`` frames), and resets when the timeline jumps back. It drives the
same simulation run as a bake (``run.SimulationRun``): with Follow Animation it
first reads the followed poses over the scene's range, as a bake does. It writes
``matrix_basis`` of the simulated objects and pose bones, the same local
matrices a bake would key (``keying.local_bases``), and no keyframes. Turning the
preview off, loading a file or a bake puts the saved rest transforms back. A
mapping error or a diverging simulation stops the preview with a message in
``scene.redmax.last_message``.
"""
from __future__ import annotations

import bpy
import numpy as np
from bpy.app.handlers import persistent
from mathutils import Matrix

from . import follow, mapping
from ._engine import engine
from .keying import BakeError, local_bases
from .run import SimulationRun

MAX_CATCH_UP = 600  # frames simulated at most in one handler call (a long jump forward)


class PreviewSession:
    """The simulation run (``run.SimulationRun``, the one a bake drives) and saved rest transforms for one scene.
    With Follow Animation the session first reads the followed poses over the scene's range, as a bake does
    (one frame change each, this handler ignoring them), so the preview follows exactly what a bake would."""

    def __init__(self, bscene, depsgraph):
        settings = bscene.redmax
        self.scene_name = bscene.name
        self.frame_start = bscene.frame_start
        armatures = follow.followed_armatures(bscene.objects)
        frame = bscene.frame_current
        poses = _sample_followed(bscene, armatures) if armatures else None  # (ends at the start frame)
        self.run = SimulationRun(bscene, depsgraph, solver=settings.solver, substeps=settings.substeps, poses=poses)
        if armatures and frame != bscene.frame_current:
            _quietly(bscene.frame_set, frame)
        self.mapping = self.run.mapping
        self.frame = self.frame_start
        self.saved = {}  # (object name, bone) → matrix_basis (4, 4) at the start
        for t in self.mapping.targets:
            if not t.keyed:  # (moving anchors are held in the preview; connectors are no objects)
                continue
            owner = t.object.pose.bones[t.bone] if t.bone else t.object
            self.saved[(t.object.name, t.bone)] = np.array(owner.matrix_basis, dtype=float)

    @property
    def sim(self):
        return self.run.sim

    def advance_to(self, frame: int) -> None:
        """Simulate up to ``frame`` (at most MAX_CATCH_UP frames)."""
        frames = min(frame - self.frame, MAX_CATCH_UP)
        if frames > 0:
            self.run.advance(frames)
            self.frame += frames

    def apply(self) -> None:
        """Pose the Blender objects and bones at the simulated state."""
        keys, bases = local_bases(self.mapping, self.mapping.link_frames(self.run.q, self.run.model)[None])
        for (ob, bone, _), basis in zip(keys, bases[0]):
            owner = ob.pose.bones[bone] if bone else ob
            owner.matrix_basis = Matrix(basis.tolist())  # (a bare nested list would be read column-major)

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
_reading = False  # True while a session reads the followed poses frame by frame: this handler does nothing then


def _quietly(fn, *args):
    global _reading
    _reading = True
    try:
        return fn(*args)
    finally:
        _reading = False


def _sample_followed(bscene, armatures) -> dict:
    """The followed armatures' poses over the scene's range from its start, the scene left at the start."""
    frames = list(range(bscene.frame_start + 1, bscene.frame_end + 1)) + [bscene.frame_start]
    samples = _quietly(follow.sample_poses, bscene, armatures, frames)
    return {name: np.roll(poses, 1, axis=0) for name, poses in samples.items()}  # (the start first)


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
    if settings is None or _reading:
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
        session.advance_to(frame)
        session.apply()
    except (mapping.MappingError, BakeError, engine.SimulationError, engine.ModelError) as err:
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
