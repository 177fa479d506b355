"""Follow animation: simulated bones track their armature's current action (stable PD).

For an armature with *Follow Animation* on, the bake reads every bone's world
matrix at each frame of the range (one frame change each, with everything else
it reads there: ``mapping.sample_timeline``), then turns those
poses into joint targets q̄(t) with ``engine.configuration_from_poses`` (the
inverse of forward kinematics, projected onto each joint's motion). Each
following bone gets a joint spring (kp, kd) whose rest value moves with q̄(t),
interpolated on the joint manifold between frames at every substep.

Gains: *Automatic* (the default) gives every joint the same natural frequency
ω = 2 / frame time (rad/s; 19 Hz at 60 fps) and critical damping on the inertia
it carries (``engine.control.tracking_gains``): a tail's base joint, which moves
the whole tail, gets as much more stiffness as it carries more. *Per Bone* takes
each bone's Follow Stiffness and Damping. *Gain Scale* multiplies either.

The spring's rest is not q̄ itself but ``engine.control.tracking_rest``: q̄ moved
by what following it exactly takes (inverse dynamics: gravity, inertia) and by
kd/kp times its velocity, so the spring holds the bone on its animation instead
of letting it sag under gravity and lag behind by kd/kp seconds.

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

FREQUENCY_PER_FRAME_RATE = 1.0 / np.pi  # Automatic gains: ω = 2π f = 2 / frame time


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


class PoseSampler:
    """Reads the followed armatures' poses at frame k of ``n_frames`` when called (a sampler of
    ``mapping.sample_timeline``, which changes the frame once for everything a bake reads); ``samples``:
    {armature name: (F, n_bones, 4, 4)}."""

    def __init__(self, armatures, n_frames: int):
        check_actions(armatures)
        self.armatures = armatures
        self.samples = {ob.name: np.empty((n_frames, len(ob.pose.bones), 4, 4)) for ob in armatures}

    def __call__(self, k: int) -> None:
        for name, pose in read_poses(self.armatures).items():
            self.samples[name][k] = pose


def sample_poses(bscene, armatures, frames) -> dict:
    """{armature name: (F, n_bones, 4, 4) world matrices of its pose bones} over ``frames`` (one frame change
    each)."""
    sampler = PoseSampler(armatures, len(frames))
    for k, f in enumerate(frames):
        bscene.frame_set(f)
        sampler(k)
    return sampler.samples


class Follow:
    """Joint targets q̄ per frame and the gains for the following bones of mapping ``m``; ``frame_time``: the
    simulated seconds between two samples (the rigid body world's Speed / fps)."""

    def __init__(self, m, samples: dict, frame_time: float = 1.0 / 24.0):
        model = m.scene.model
        n_frames = next(iter(samples.values())).shape[0]
        links0 = m.link_frames(m.scene.q0)
        links = np.repeat(links0[None], n_frames, axis=0)  # (F, n, 4, 4); unfollowed bodies stay as at the start
        self.frame_time = float(frame_time)
        joints = []  # (joint name, armature settings, bone settings)
        for i, t in enumerate(m.targets):
            if not t.bone or t.object.name not in samples:
                continue
            b = t.object.pose.bones.find(t.bone)
            links[:, i] = samples[t.object.name][:, b] @ np.linalg.inv(m.offsets[i])
            if int(model.joint_type[i]) not in (engine.joints.FIXED, engine.joints.FREE):
                joints.append((model.joint_names[i], t.object.redmax, t.object.data.bones[t.bone].redmax))
        self.model = model
        # q̄ per frame, interpolated on the joint manifold between frames by the engine
        self.motion = engine.control.SampledMotion(
            model, [engine.configuration_from_poses(model, L[:, :3, :3], L[:, :3, 3]) for L in links])
        self.targets = self.motion.samples
        auto = [name for name, arm, _ in joints if arm.follow_gains == "AUTO"]
        kp_auto, kd_auto = engine.control.tracking_gains(model, self.targets[0],
                                                         FREQUENCY_PER_FRAME_RATE / self.frame_time, joints=auto)
        self.kp, self.kd = np.zeros(model.nv), np.zeros(model.nv)
        self.gains = []  # (joint name, kp per dof, kd per dof)
        for name, arm, bone in joints:
            vs = model.v_slice(name)
            if arm.follow_gains == "AUTO":
                kp, kd = kp_auto[vs] * arm.follow_scale, kd_auto[vs] * arm.follow_scale
            else:
                kp = np.full(vs.stop - vs.start, bone.follow_kp * arm.follow_scale)
                kd = np.full(vs.stop - vs.start, bone.follow_kd * arm.follow_scale)
            if np.all(kp <= 0) and np.all(kd <= 0):
                continue
            self.kp[vs], self.kd[vs] = kp, kd
            self.gains.append((name, kp, kd))
        # per frame: q̄'s velocity (central differences on the manifold) per simulated second
        s = self.targets
        steps = np.array([engine.integrators.configuration_difference(model, a, b)
                          for a, b in zip(s[:-1], s[1:])]).reshape(-1, model.nv) / self.frame_time
        self._velocity = (np.concatenate([steps[:1], 0.5 * (steps[:-1] + steps[1:]), steps[-1:]])
                          if len(steps) else np.zeros((len(s), model.nv)))
        self._scene_model = None
        self._slices: list = []  # (q slice here, q slice in the simulated scene's model) per followed joint

    def configure(self, scene) -> None:
        """Add the tracking springs (replacing a bone's own joint spring) at the first frame's targets."""
        for name, kp, kd in self.gains:
            scene.add_joint_spring(name, kp, kd, rest=self.targets[0][scene.model.q_slice(name)])

    def rest(self, frame_index: int, alpha: float) -> np.ndarray:
        """The springs' rest (nq,) at ``alpha`` ∈ [0, 1] of the way from frame ``frame_index`` to the next
        (``engine.control.tracking_rest`` of the interpolated q̄ and its velocity and acceleration)."""
        k = min(frame_index, len(self.targets) - 1)
        k1 = min(k + 1, len(self.targets) - 1)
        q = self.motion.at(k, alpha)
        v = (1.0 - alpha) * self._velocity[k] + alpha * self._velocity[k1]
        a = (self._velocity[k1] - self._velocity[k]) / self.frame_time
        return engine.control.tracking_rest(self.model, q, v, a, self.kp, self.kd)

    def set_targets(self, scene, frame_index: int, alpha: float) -> None:
        """Move the springs' rest of ``scene`` (the simulator's: a broken joint replaces its model) along the
        animation, joint by joint."""
        if scene.model is not self._scene_model:
            self._scene_model = scene.model
            self._slices = [(self.model.q_slice(name), scene.model.q_slice(name)) for name, _, _ in self.gains]
        rest = self.rest(frame_index, alpha)
        for mine, theirs in self._slices:
            scene.joint_rest[theirs] = rest[mine]
