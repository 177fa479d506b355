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

import numpy as np

from . import mapping
from ._engine import engine


def followed_armatures(objects) -> list:
    return [ob for ob in objects if ob.type == "ARMATURE" and ob.redmax.simulate and ob.redmax.follow_animation]


def sample_poses(bscene, armatures, frames) -> dict:
    """{armature name: (F, n_bones, 4, 4) world matrices of its pose bones} over ``frames``."""
    for ob in armatures:
        ad = ob.animation_data
        if ad is None or ad.action is None:
            raise mapping.MappingError(f"armature '{ob.name}': Follow Animation needs an action to follow")
    out = {ob.name: np.empty((len(frames), len(ob.pose.bones), 4, 4)) for ob in armatures}
    buf = {ob.name: np.empty(16 * len(ob.pose.bones), dtype=np.float32) for ob in armatures}
    for k, f in enumerate(frames):
        bscene.frame_set(f)
        for ob in armatures:
            ob.pose.bones.foreach_get("matrix", buf[ob.name])  # column-major 4×4 per bone (recipes §3)
            pose = buf[ob.name].reshape(-1, 4, 4).transpose(0, 2, 1)
            out[ob.name][k] = mapping.matrix(ob.matrix_world) @ pose
    return out


class Follow:
    """Joint targets q̄ per frame and the gains for the following bones of mapping ``m``."""

    def __init__(self, m, samples: dict):
        model = m.scene.model
        n_frames = next(iter(samples.values())).shape[0]
        links0 = m.link_frames(m.scene.q0)
        links = np.repeat(links0[None], n_frames, axis=0)  # (F, n, 4, 4); unfollowed bodies stay as at the start
        self.gains = []  # (joint name, kp, kd)
        mask = np.zeros(model.nq, dtype=bool)
        for i, t in enumerate(m.targets):
            if not t.bone or t.object.name not in samples:
                continue
            b = t.object.pose.bones.find(t.bone)
            links[:, i] = samples[t.object.name][:, b] @ np.linalg.inv(m.offsets[i])
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
        self.model = model
        # q̄ per frame, interpolated on the joint manifold between frames by the engine
        self.motion = engine.control.SampledMotion(
            model, [engine.configuration_from_poses(model, L[:, :3, :3], L[:, :3, 3]) for L in links])
        self.targets = self.motion.samples

    def configure(self, scene) -> None:
        """Add the tracking springs (replacing a bone's own joint spring) at the first frame's targets."""
        for name, kp, kd in self.gains:
            scene.add_joint_spring(name, kp, kd, rest=self.targets[0][scene.model.q_slice(name)])

    def set_targets(self, scene, frame_index: int, alpha: float) -> None:
        """Rest values at ``alpha`` ∈ [0, 1] of the way from frame ``frame_index`` to the next."""
        scene.joint_rest[self.mask] = self.motion.at(frame_index, alpha)[self.mask]
