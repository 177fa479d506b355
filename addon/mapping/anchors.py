"""Moving anchors: what Blender moves by its animation while simulated bodies hang from it.

An animated passive rigid body (Animated on), an active rigid body with Animated on, an animated object
without a rigid body (an Empty) and a bone of an armature that is not simulated (its action poses it) stay
where the animation puts them on playback. A joint, cable, spring or loop closure that attaches a simulated
body to one of them then has a moving anchor: the bake gives the anchor an engine body on a free joint whose
motion is prescribed (``engine.Scene.prescribe``): its world pose sampled at every frame of the bake from
Blender's evaluated animation (``Timeline``), interpolated smoothly between frames by
``engine.control.JointTrajectory`` (C¹ cubic; Blender's own rigid body world interpolates animated bodies
linearly per substep). The chain attached to it moves with it exactly, at every step.

An active rigid body that Blender starts holding — Animated on, or Dynamic off — and lets go of during the bake
(the flag keyed) is prescribed until the last frame Blender holds it, then released and simulated, as Bullet
does: an Animated one moving with the speed of its last frame (Bullet moves an animated body linearly from
frame to frame, so its trajectory here is the linear one), a Dynamic-off one from rest where it was at the
start (Bullet ignores the animation of a body it holds that way). Anchors that do not move stay part of the
world, as before.

The anchor's body is not keyed (``Target.keyed`` False): playback shows the animation itself. Its collision
shape is left to the collision mapping (a moving collider).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import bpy
import numpy as np

from .. import keyframes
from .._engine import engine
from .common import WORLD, Target, matrix, rigid_part

TRANSFORM_CHANNELS = {"location", "rotation_euler", "rotation_quaternion", "rotation_axis_angle", "scale",
                      "delta_location", "delta_rotation_euler", "delta_rotation_quaternion", "delta_scale"}
FLAG_PATHS = ("rigid_body.kinematic", "rigid_body.enabled")
EMPTY_MASS = 1.0  # kg of an Empty's anchor body (it only matters once released, which an Empty never is)


def moves(ob, seen=()) -> str:
    """Why ``ob`` moves over time in Blender, "" if it does not: keys on its (or, through ``pose.bones``, its
    bones') transforms that change or have modifiers, drivers on them, NLA strips, or a parent or an
    enabled constraint's target that moves."""
    if ob in seen:
        return ""
    seen = (*seen, ob)
    ad = ob.animation_data
    if ad is not None:
        for fc in keyframes.fcurves(ob):
            if fc.data_path.rsplit(".", 1)[-1] in TRANSFORM_CHANNELS and len(fc.keyframe_points):
                values = np.empty(2 * len(fc.keyframe_points))
                fc.keyframe_points.foreach_get("co", values)
                if len(fc.modifiers) or np.ptp(values[1::2]) > 0:  # (one key, or equal keys, hold it still)
                    return "it has keys"
        if any(fc.data_path.rsplit(".", 1)[-1] in TRANSFORM_CHANNELS for fc in ad.drivers):
            return "it has drivers"
        if any(not track.mute and len(track.strips) for track in ad.nla_tracks):
            return "it has NLA strips"
    if ob.parent is not None and moves(ob.parent, seen):
        return f"its parent '{ob.parent.name}' is animated"
    for c in ob.constraints:
        target = getattr(c, "target", None)
        if c.enabled and isinstance(target, bpy.types.Object) and moves(target, seen):
            return f"its constraint '{c.name}' follows '{target.name}', which is animated"
    return ""


def flags_animated(ob) -> bool:
    """Whether the rigid body's Animated or Dynamic flag is keyed or driven."""
    ad = ob.animation_data
    if ad is None or ob.rigid_body is None:
        return False
    paths = [fc.data_path for fc in keyframes.fcurves(ob)] + [fc.data_path for fc in ad.drivers]
    return any(p in FLAG_PATHS for p in paths)


def held_by_blender(ob) -> bool:
    """An active rigid body that Blender does not simulate at the current frame: Animated on or Dynamic off."""
    rb = ob.rigid_body
    return rb is not None and rb.type == "ACTIVE" and (rb.kinematic or not rb.enabled)


def moving_anchor(ob) -> str:
    """Why the anchor ``ob`` (an object some simulated body is attached to) moves on playback, "" when it
    holds still: Blender moves a passive or active rigid body by its animation only with Animated on (a passive
    one with Animated off ignores its keys, as in Bullet), and anything without a rigid body always."""
    rb = ob.rigid_body
    if rb is not None and not rb.kinematic:
        return "its Dynamic flag is keyed" if flags_animated(ob) else ""
    why = moves(ob)
    if not why and rb is not None and flags_animated(ob):
        why = "its Animated flag is keyed"
    return why


@dataclass
class Timeline:
    """What the bake samples before it maps the scene: ``frames`` (the simulation's, first = its start), the
    simulated seconds per frame (``frame_time`` = the rigid body world's Speed / fps), world matrices (F, 4, 4)
    per anchor key (object name, bone name or "") and, per object, whether Blender simulates it at each frame."""

    frames: list
    frame_time: float
    poses: dict = field(default_factory=dict)
    simulated: dict = field(default_factory=dict)
    fields: dict = field(default_factory=dict)  # force field name → its numbers per frame (``fields.FieldSampler``)
    read: bool = False  # whether sampling changed the frame (``build.sample_timeline``)

    def release_time(self, name):
        """Simulation time (s) of the last frame before the first at which Blender simulates object ``name``
        (Bullet simulates the step into that frame), or None."""
        flags = self.simulated.get(name)
        if flags is None or not np.any(flags):
            return None
        return float(max(int(np.argmax(flags)) - 1, 0)) * self.frame_time


def still(frame_time: float = 1.0) -> Timeline:
    """A timeline of one frame: every anchor holds its pose as it is now (Scene Summary, live preview)."""
    return Timeline([0], frame_time)


def anchor_keys(bscene, objects) -> list:
    """(object, bone name or "") of every object or bone that may be a moving anchor of a bake of ``objects``: ends
    of enabled Rigid Body Constraints and of links that Blender moves or holds and may release."""
    keys = {}
    for ob in objects:  # active bodies Blender holds and lets go of (or the reverse) during the bake
        if ob.rigid_body is not None and ob.rigid_body.type == "ACTIVE" and flags_animated(ob):
            keys[(ob, "")] = True
    for h in objects:
        c = h.rigid_body_constraint
        if c is None or not c.enabled:
            continue
        for o in (c.object1, c.object2):
            if o is not None and (moving_anchor(o) or held_by_blender(o)):
                keys[(o, "")] = True
    for link in bscene.redmax.links:
        for ob, bone in ((link.object_a, link.bone_a), (link.object_b, link.bone_b)):
            if ob is None:
                continue
            if bone and ob.type == "ARMATURE" and not ob.redmax.simulate and moves(ob):
                keys[(ob, bone)] = True
            elif not bone and (moving_anchor(ob) or held_by_blender(ob)):
                keys[(ob, "")] = True
    return list(keys)


def sample(bscene, keys, frames, frame_time: float, samplers=()) -> Timeline:
    """World matrices of each key at each frame (``frame_set``), each rigid body's simulated flag, and whatever
    the ``samplers`` (callables of the frame's index) read at each frame."""
    tl = Timeline(list(frames), float(frame_time))
    poses = {(ob.name, bone): np.empty((len(tl.frames), 4, 4)) for ob, bone in keys}
    flags = {ob.name: np.zeros(len(tl.frames), bool) for ob, bone in keys if not bone and ob.rigid_body is not None}
    world = bscene.rigidbody_world
    if not keys and not samplers:
        return tl
    off = world is not None and world.enabled
    if off:  # the animation as Blender evaluates it, not where its rigid body world moved the bodies
        world.enabled = False
    try:
        _sample_frames(bscene, tl, keys, poses, flags, samplers)
    finally:
        if off:
            world.enabled = True
    tl.poses, tl.simulated = poses, flags
    return tl


def _sample_frames(bscene, tl, keys, poses, flags, samplers):
    for k, f in enumerate(tl.frames):
        bscene.frame_set(f)
        for ob, bone in keys:
            W = matrix(ob.matrix_world)
            poses[(ob.name, bone)][k] = W @ matrix(ob.pose.bones[bone].matrix) if bone else W
            if ob.name in flags:
                rb = ob.rigid_body
                flags[ob.name][k] = rb.type == "ACTIVE" and rb.enabled and not rb.kinematic
        for sampler in samplers:
            sampler(k)


def add_anchor(b, ob, bone, timeline, mass_properties, shape_world=None) -> str:
    """Add the anchor body of ``ob`` (or its pose bone ``bone``) to builder ``b`` with its prescribed motion;
    returns its body name. mass_properties: (mass, com world, inertia world) of a mesh that Blender releases.
    shape_world: its collision shape (``common.Builder.add``) — the hook for moving colliders: a prescribed body
    with a shape is one; the collision mapping passes it (None until collisions are mapped)."""
    name = f"{ob.name}:{bone}" if bone else ob.name
    if name in b.targets:
        return name
    W0 = matrix(ob.matrix_world) @ matrix(ob.pose.bones[bone].matrix) if bone else matrix(ob.matrix_world)
    R0, p0 = rigid_part(W0)
    mass, com, inertia = mass_properties if mass_properties is not None else (
        EMPTY_MASS, p0, np.eye(3) * 0.4 * EMPTY_MASS * 0.05 ** 2)
    release = None if bone else timeline.release_time(ob.name)
    b.add(name, Target(name, ob, bone, W0, keyed=release is not None), WORLD, "free", R0, p0, (0, 0, 1),
          mass, com, inertia, shape_world=shape_world)
    poses = timeline.poses.get((ob.name, bone))
    if poses is None or len(poses) == 0:
        poses = W0[None]
    elif ob.rigid_body is not None and not ob.rigid_body.kinematic and len(poses) > 1:
        # Bullet holds a body with Dynamic off where it is, whatever its animation says — where it is on the
        # first simulated frame: Blender rebuilds its world there from the animated pose (playback, Blender 5.0)
        poses = np.concatenate([poses[:2], np.repeat(poses[1:2], len(poses) - 2, axis=0)])
    elif ob.rigid_body is not None and not ob.rigid_body.kinematic:
        poses = W0[None]
    samples = np.empty((len(poses), 7))
    for k, W in enumerate(poses):
        R, p = rigid_part(W)
        samples[k] = np.concatenate([R0.T @ (p - p0), engine.joints.matrix_to_quat(R0.T @ R)])
    for k in range(1, len(samples)):  # one hemisphere, so the interpolation takes the short way
        if samples[k, 3:] @ samples[k - 1, 3:] < 0:
            samples[k, 3:] *= -1
    trajectory = engine.control.JointTrajectory("free", samples, 0.0, timeline.frame_time,
                                                "cubic" if release is None else "linear")
    b.prescriptions.append((name, trajectory, release))
    return name
