"""One simulation of the mapped Blender scene, shared by the bake (``bake.BakeJob``) and the live preview
(``preview.PreviewSession``): the mapping, the Follow Animation targets and the engine's Simulator with the
scene's solver, substeps and contact options, advanced frame by frame."""
from __future__ import annotations

from . import follow, mapping
from ._engine import engine

SPECULATIVE_SPEED = 10.0  # m/s: contacts are looked for this far ahead of a step (no tunnelling below it)


def simulator_options(settings, dt: float) -> dict:
    """Contact options of ``engine.Simulator`` from the scene settings: the contact-space method, and a
    detection margin that grows with the step so a body falling at up to SPECULATIVE_SPEED m/s is
    caught by a speculative contact before it passes through the ground."""
    return {"contact_method": settings.contact_method.lower(),
            "contact_options": {"speculative_speed": SPECULATIVE_SPEED}}


class SimulationRun:
    """The scene ``bscene`` (or its ``objects``) mapped at the current frame and simulated from there.

    poses: Follow Animation's sampled poses ({armature name: (F, n_bones, 4, 4)} world matrices, the
    first at the current frame; ``follow.sample_poses``), or None when nothing follows an animation.
    ``frame`` counts the frames simulated so far; ``advance(n)`` simulates n more, the following bones'
    targets moving along the samples (``add_poses`` appends samples as the preview reaches frames).
    """

    def __init__(self, bscene, depsgraph, *, solver: str, substeps: int, objects=None, poses=None):
        settings = bscene.redmax
        self.substeps = int(substeps)
        fps = bscene.render.fps / bscene.render.fps_base
        self.dt = 1.0 / fps / self.substeps
        self.mapping = mapping.build_scene(bscene, depsgraph, objects, contact_shapes=False)  # (but with ground)
        self.follow = None
        if poses:
            self.follow = follow.Follow(self.mapping, poses)
            self.follow.configure(self.mapping.scene)
        self.sim = engine.Simulator(self.mapping.scene, solver.lower(), dt=self.dt,
                                    **simulator_options(settings, self.dt))
        self.frame = 0

    @property
    def q(self):
        return self.sim.state.q

    def add_poses(self, poses: dict, frame: int, keep: int | None = None) -> None:
        """Follow Animation: the poses (``follow.read_poses``) at ``frame`` (frames from the start), ahead of
        the simulation; ``keep``: how many samples to keep (``follow.Follow.add_sample``)."""
        if self.follow is not None:
            self.follow.add_sample(poses, frame, keep)

    def advance(self, frames: int = 1) -> None:
        """Simulate ``frames`` frames; raises ``engine.SimulationError``."""
        for _ in range(frames):
            if self.follow is None:
                self.sim.step(self.substeps)
            else:  # targets move with the animation, substep by substep
                for k in range(1, self.substeps + 1):
                    self.follow.set_targets(self.sim.scene, self.frame, k / self.substeps)
                    self.sim.step()
            self.frame += 1
