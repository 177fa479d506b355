"""Follow animation: simulated bones track their armature's current action (stable PD).

For an armature with *Follow Animation* on, the bake first plays the action
over the frame range and records every bone's world matrix, then turns those
poses into joint targets q̄(t) with ``engine.configuration_from_poses`` (the
inverse of forward kinematics, projected onto each joint's motion). Each
following bone gets a joint spring with kp and kd (per bone, times the
armature's gain scale) whose rest value moves along q̄(t), interpolated on the
joint manifold between frames at every substep.

The RedMax step treats joint springs linearly implicitly, (M̃ + hD + h²K) q̇⁺ = …
(thesis Eq. 2.13), so the PD forces are evaluated at the end of the step: the
stable PD idea of seed 001 (Tan et al., Eq. 6–7), which keeps stiff gains stable
at animation frame rates. A free root is not tracked (free joints take no
stiffness); the armature then moves only through its bones' reactions.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import mapping
from ._engine import engine


def followed_armatures(objects) -> list:
    return [ob for ob in objects if ob.type == "ARMATURE" and ob.redmax.simulate and ob.redmax.follow_animation]


def check_actions(armatures) -> None:
    """Refuse a followed armature without an action to follow, by name."""
    for ob in armatures:
        ad = ob.animation_data
        if ad is None or ad.action is None:
            raise mapping.MappingError(f"armature '{ob.name}': Follow Animation needs an action to follow")


def read_poses(armatures) -> dict:
    """{armature name: (n_bones, 4, 4) world matrices of its pose bones} at the frame Blender shows."""
    out = {}
    for ob in armatures:
        buf = np.empty(16 * len(ob.pose.bones), dtype=np.float32)
        ob.pose.bones.foreach_get("matrix", buf)  # column-major 4×4 per bone (recipes §3)
        out[ob.name] = mapping.matrix(ob.matrix_world) @ buf.reshape(-1, 4, 4).transpose(0, 2, 1)
    return out


def sample_poses(bscene, armatures, frames) -> dict:
    """{armature name: (F, n_bones, 4, 4) world matrices of its pose bones} over ``frames`` (one frame
    change each)."""
    check_actions(armatures)
    out = {ob.name: np.empty((len(frames), len(ob.pose.bones), 4, 4)) for ob in armatures}
    for k, f in enumerate(frames):
        bscene.frame_set(f)
        for name, pose in read_poses(armatures).items():
            out[name][k] = pose
    return out


class Follow:
    """Joint targets q̄ at sampled frames and the gains for the following bones of mapping ``m``.

    poses: the followed armatures' poses at the start (``read_poses``); ``add_sample`` adds later frames.
    Between samples q̄ is interpolated on the joint manifold (``engine.control.SampledMotion``).
    """

    def __init__(self, m, poses: dict):
        model = m.scene.model
        self.model = model
        self._links0 = m.link_frames(m.scene.q0)  # unfollowed bodies stay as at the start
        self._followed = []  # (body index, armature name, bone index, offset⁻¹)
        self.gains = []  # (joint name, kp, kd)
        mask = np.zeros(model.nq, dtype=bool)
        for i, t in enumerate(m.targets):
            if not t.bone or t.object.name not in poses:
                continue
            self._followed.append((i, t.object.name, t.object.pose.bones.find(t.bone), np.linalg.inv(m.offsets[i])))
            jt = int(model.joint_type[i])
            bs = t.object.data.bones[t.bone].redmax
            scale = t.object.redmax.follow_scale
            kp, kd = bs.follow_kp * scale, bs.follow_kd * scale
            if jt in (engine.joints.FIXED, engine.joints.FREE) or (kp <= 0 and kd <= 0):
                continue
            name = model.joint_names[i]
            self.gains.append((name, kp, kd))
            mask[model.q_slice(name)] = True
        self.mask = mask
        self.frames: list = []   # frame (from the start) of each sample
        self.samples: list = []  # q̄ (nq,) of each sample
        self._motion: Any = None  # engine.control.SampledMotion of the samples, made when first used
        self.add_sample(poses, 0)

    @property
    def targets(self) -> np.ndarray:
        """(S, nq) q̄ at the sampled frames."""
        return np.array(self.samples)

    def add_sample(self, poses: dict, frame: int, keep: int | None = None) -> None:
        """Add the poses (``read_poses``) at ``frame`` (after the last sample); ``keep``: drop all but the last
        ``keep`` samples (the live preview only steps forward)."""
        L = self._links0.copy()
        for i, name, b, offset_inv in self._followed:
            L[i] = poses[name][b] @ offset_inv
        self.frames.append(frame)
        self.samples.append(engine.configuration_from_poses(self.model, L[:, :3, :3], L[:, :3, 3]))
        if keep is not None:
            del self.frames[:-keep], self.samples[:-keep]
        self._motion = None

    def configure(self, scene) -> None:
        """Add the tracking springs (replacing a bone's own joint spring) at the first frame's targets."""
        for name, kp, kd in self.gains:
            scene.add_joint_spring(name, kp, kd, rest=self.samples[0][scene.model.q_slice(name)])

    def set_targets(self, scene, frame: int, alpha: float) -> None:
        """Rest values at ``alpha`` ∈ [0, 1] of the way from ``frame`` (from the start) to the next frame;
        across a gap between samples (a jump of the live preview) the targets move evenly."""
        if self._motion is None:
            self._motion = engine.control.SampledMotion(self.model, self.samples)
        k = max(0, min(int(np.searchsorted(self.frames, frame, side="right")) - 1, len(self.frames) - 2))
        if len(self.frames) > 1:
            span = self.frames[k + 1] - self.frames[k]
            alpha = alpha if span == 1 and frame == self.frames[k] else (frame - self.frames[k] + alpha) / span
        q = self._motion.at(k, float(min(max(alpha, 0.0), 1.0)))
        scene.joint_rest[self.mask] = q[self.mask]
