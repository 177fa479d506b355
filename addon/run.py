"""One simulation of the mapped Blender scene, shared by the bake (``bake.BakeJob``) and the live preview
(``preview.PreviewSession``): the mapping, the Follow Animation targets and the engine's Simulator with the
scene's solver, substeps, Speed and contact options, advanced substep by substep or frame by frame."""
from __future__ import annotations

from . import follow, mapping
from .properties import INTEGRATOR_NAMES
from ._engine import engine

SPECULATIVE_SPEED = 10.0  # m/s: contacts are looked for this far ahead of a step (no tunnelling below it)


def simulator_options(settings, dt: float) -> dict:
    """Options of ``engine.Simulator`` from the scene settings: the time integrator (``integrator=``), the
    contact-space method, and a detection margin that grows with the step so a body falling at up to
    SPECULATIVE_SPEED m/s is caught by a speculative contact before it passes through the ground."""
    return {"integrator": INTEGRATOR_NAMES[settings.integrator],
            "contact_method": settings.contact_method.lower(),
            "contact_options": {"speculative_speed": SPECULATIVE_SPEED}}


def frame_time(bscene) -> float:
    """Simulated seconds per frame: the rigid body world's Speed over the frame rate."""
    world = bscene.rigidbody_world
    return (world.time_scale if world is not None else 1.0) / (bscene.render.fps / bscene.render.fps_base)


class SimulationRun:
    """The scene ``bscene`` (or its ``objects``) mapped at the current frame and simulated from there.

    poses: Follow Animation's sampled poses ({armature name: (F, n_bones, 4, 4)} world matrices per frame from
    the current one, ``follow.sample_poses``), or None when nothing follows an animation. timeline: what the bake
    sampled of Blender's animation (``mapping.sample_timeline``; None: anchors hold where they are). ``frame``
    counts the frames simulated so far; ``substep()`` simulates one substep, ``advance(n)`` n frames.
    """

    def __init__(self, bscene, depsgraph, *, solver: str, substeps: int, objects=None, poses=None, timeline=None):
        settings = bscene.redmax
        self.substeps = int(substeps)
        self.frame_time = frame_time(bscene)
        self.dt = self.frame_time / self.substeps
        self.mapping = mapping.build_scene(bscene, depsgraph, objects, timeline, contact_shapes=False)
        self.follow = None
        if poses:
            self.follow = follow.Follow(self.mapping, poses, self.frame_time)
            self.follow.configure(self.mapping.scene)
        self.sim = engine.Simulator(self.mapping.scene, solver.lower(), dt=self.dt,
                                    **simulator_options(settings, self.dt))
        self.frame = 0
        self.done = 0  # substeps of the frame being simulated

    @property
    def q(self):
        return self.sim.state.q

    @property
    def model(self):
        """The simulated model (a broken joint replaces the scene's: ``engine.Simulator.model``)."""
        return self.sim.model

    def substep(self) -> bool:
        """Simulate one substep (the followed bones' targets moving along the animation); True when it ends a
        frame. Raises ``engine.SimulationError``."""
        if self.follow is not None:
            self.follow.set_targets(self.sim.scene, self.frame, (self.done + 1) / self.substeps)
        self.sim.step()
        self.done += 1
        if self.done < self.substeps:
            return False
        self.frame, self.done = self.frame + 1, 0
        return True

    def advance(self, frames: int = 1) -> None:
        """Simulate ``frames`` whole frames."""
        for _ in range(frames):
            while not self.substep():
                pass
