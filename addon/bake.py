"""Bake: simulate the whole frame range first, then write every F-curve in one pass.

``BakeJob`` is driven by the operator: ``steps()`` advances one frame per
``next()`` (progress and ESC in the UI, a plain loop under ``blender -b``),
``finish()`` writes the keys, ``abort()`` puts everything back. A bake never
edits existing F-curves: each baked object gets a new action, assigned only
after all keys are written, and the action it had before is kept for
``clear_bake``. Cancelling or failing (a diverging simulation, a cable to a
deleted object) leaves the user's animation exactly as it was.
"""
from __future__ import annotations

import json
import time
from contextlib import contextmanager

import bpy
import numpy as np

from . import follow, keyframes, mapping, snapshot
from .properties import INTEGRATOR_NAMES

from ._engine import engine

BAKE_PREFIX = "RedMax bake"
TRANSLATING = (engine.joints.PRISMATIC, engine.joints.FREE)  # bones keyed with location as well


LONG_FRAME = 0.05  # s: a frame's substeps yield after this long (modal.SLICE), so that ESC acts inside a frame
SPECULATIVE_SPEED = 10.0  # m/s: contacts are looked for this far ahead of a step (no tunnelling below it)


def simulator_options(settings, dt: float) -> dict:
    """Options of ``engine.Simulator`` from the scene settings: the time integrator (``integrator=``), the
    contact-space method, and a detection margin that grows with the step so a body falling at up to
    SPECULATIVE_SPEED m/s is caught by a speculative contact before it passes through the ground."""
    return {"integrator": INTEGRATOR_NAMES[settings.integrator],
            "contact_method": settings.contact_method.lower(),
            "contact_options": {"speculative_speed": SPECULATIVE_SPEED}}


class BakeError(RuntimeError):
    """A bake that cannot run or finish; the message says why and names the element."""


def quaternions(R):
    """Unit quaternions (…, 4) as (w, x, y, z) of rotation matrices R (…, 3, 3) (the engine's Shepperd method)."""
    return engine.joints.matrix_to_quat(R)


def continuous(q):
    """Flip signs along the first axis so consecutive quaternions (F, …, 4) stay on one hemisphere."""
    flips = np.sum(q[1:] * q[:-1], axis=-1) < 0  # sign changes between raw neighbours
    parity = np.cumsum(flips, axis=0) % 2 == 1   # flipped an odd number of times so far
    out = q.copy()
    out[1:][parity] *= -1
    return out


def rigid_inverse(L):
    """Inverse of rigid transforms L (…, 4, 4)."""
    out = np.zeros_like(L)
    Rt = np.swapaxes(L[..., :3, :3], -1, -2)
    out[..., :3, :3] = Rt
    out[..., :3, 3] = -np.einsum("...ij,...j->...i", Rt, L[..., :3, 3])
    out[..., 3, 3] = 1.0
    return out


def _basis_channels(M, path_prefix, group, with_location):
    """F-curve channels of local matrices M (F, 4, 4): location (optional) and rotation_quaternion."""
    R = M[:, :3, :3] / np.linalg.norm(M[:, :3, :3], axis=1, keepdims=True)  # drop scale (columns)
    q = continuous(quaternions(R))
    out = [(f"{path_prefix}rotation_quaternion", i, group, q[:, i]) for i in range(4)]
    if with_location:
        out += [(f"{path_prefix}location", i, group, M[:, i, 3]) for i in range(3)]
    return out


# ----------------------------------------------------------------- bake state
def _baked_objects(bscene):
    return [ob for ob in bscene.objects if ob.redmax.is_baked]


def _quaternion_modes(ob, saved_json):
    """Quaternion rotation on the object and the bones a bake keyed (named in its saved modes)."""
    for name in json.loads(saved_json) if saved_json else {}:
        if name == "":
            ob.rotation_mode = "QUATERNION"
        elif ob.pose and name in ob.pose.bones:
            ob.pose.bones[name].rotation_mode = "QUATERNION"


def _unbake_live(context, bscene, only=None):
    """Show the scene (or the objects in ``only``) as it was before the bake (previous actions, rigid
    bodies, constraints, transforms) but keep the bake's records, so ``_rebake_live`` can put the
    bake back; returns (the objects unbaked, messages about what could not be restored)."""
    baked = [ob for ob in _baked_objects(bscene) if only is None or ob in only]
    for ob in baked:
        keyframes.assign(ob, ob.redmax.previous_action, ob.redmax.previous_slot)
        _restore_rotation_modes(ob, ob.redmax.previous_rotation_modes)
    saved = snapshot.stored(bscene)
    problems = snapshot.restore(context, bscene, saved, only) if saved is not None else []
    return baked, problems


def _rebake_live(context, baked):
    """Undo ``_unbake_live``: the baked objects leave the rigid body simulation and play their bake."""
    snapshot.detach(context, baked)
    for ob in baked:
        s = ob.redmax
        keyframes.assign(ob, s.baked_action, _slot_of(s.baked_action))
        _quaternion_modes(ob, s.previous_rotation_modes)


def _slot_of(action):
    return action.slots[0].identifier if action is not None and len(action.slots) else ""


def _forget_bake(bscene, objects=None):
    """Drop the records of the current bake (after ``_unbake_live``): actions, flags and, unless
    only some ``objects`` are forgotten, the snapshot."""
    cleared = 0
    for ob in _baked_objects(bscene) if objects is None else objects:
        s = ob.redmax
        baked = s.baked_action
        s.baked_action, s.previous_action, s.previous_slot, s.previous_rotation_modes = None, None, "", ""
        if baked is not None and baked.users == 0:  # (the pointer above counted as a user)
            bpy.data.actions.remove(baked)
        s.is_baked = False
        cleared += 1
    if objects is None:
        snapshot.forget(bscene)
    return cleared


def clear_bake(context, bscene=None) -> int:
    """Put everything a bake changed back as it was before it (previous animation, rotation modes,
    un-keyed transforms, rigid bodies, constraints, the rigid body world), remove the baked actions
    and the bake's statistics; returns the number of objects cleared."""
    bscene = bscene or context.scene
    frame = bscene.frame_current
    _, problems = _unbake_live(context, bscene)
    cleared = _forget_bake(bscene)
    st = bscene.redmax
    st.last_frames = st.last_steps = st.last_max_iterations = 0
    st.last_seconds = st.last_iterations = 0.0
    st.last_message = "; ".join(problems)
    bscene.frame_set(frame)
    return cleared


def _restore_rotation_modes(ob, saved):
    modes = json.loads(saved) if saved else {}
    for name, mode in modes.items():
        if name == "":
            ob.rotation_mode = mode
        elif ob.pose and name in ob.pose.bones:
            ob.pose.bones[name].rotation_mode = mode


def selection(context):
    """The objects a *Selected Only* bake maps: the selected ones and the constraints on them."""
    chosen = set(context.selected_objects)
    hosts = [ob for ob in context.scene.objects if ob.rigid_body_constraint is not None
             and (ob in chosen or ob.rigid_body_constraint.object1 in chosen
                  or ob.rigid_body_constraint.object2 in chosen)]
    saved = snapshot.saved_hosts(context.scene, chosen)  # constraints an earlier bake took out
    return list(dict.fromkeys([*context.selected_objects, *hosts, *saved]))


def held_partners(bscene, baked) -> list[str]:
    """Names of the dynamic rigid bodies a *Selected Only* bake leaves in Blender's simulation although
    Rigid Body Constraints join them to a baked object (directly or through each other): the bake
    held them in place, but on playback Blender's own simulation moves them."""
    edges: dict = {}
    for h in bscene.objects:
        c = h.rigid_body_constraint
        if c is not None and c.enabled and c.object1 is not None and c.object2 is not None:
            edges.setdefault(c.object1, set()).add(c.object2)
            edges.setdefault(c.object2, set()).add(c.object1)

    def dynamic(ob):
        rb = ob.rigid_body
        return rb is not None and rb.type == "ACTIVE" and rb.enabled and not rb.kinematic

    found: set = set()
    stack = list(baked)
    while stack:
        for other in edges.get(stack.pop(), ()):
            if other not in baked and other not in found and dynamic(other):
                found.add(other)
                stack.append(other)
    return sorted(ob.name for ob in found)


@contextmanager
def as_built(bscene, frame):
    """Read the scene at ``frame`` as the artist built it: object poses from their own transforms,
    animation, parents and constraints, not where Bullet's cache put an active body (past the cache start
    a frame shows the last pose playback simulated there). Only past the cache start (before it Blender
    places nothing) is the rigid body world turned off meanwhile, then on again; that discards an unbaked
    cache, which playback simulates again (a baked one is kept)."""
    world = bscene.rigidbody_world
    if world is None or not world.enabled or frame <= world.point_cache.frame_start:
        yield
        return
    world.enabled = False
    try:
        yield
    finally:
        world.enabled = True


def keyed_frames(frame_start, frame_end, step):
    """Frames that get keys: every ``step``-th from the start, and always the last one."""
    frames = list(range(frame_start, frame_end + 1, step))
    if frames[-1] != frame_end:
        frames.append(frame_end)
    return np.array(frames)


# ------------------------------------------------------------------------ job
class BakeJob:
    """One bake of ``scene.redmax`` settings over [frame_start, frame_end] (the scene range unless
    the bake's own range is on), keys every ``frame_step`` frames, after ``preroll`` simulated
    frames before the first key; ``selected_only`` maps only the selected objects (others hold)."""

    def __init__(self, context, *, solver=None, substeps=None, frame_start=None, frame_end=None,
                 frame_step=None, preroll=None, selected_only=None):
        bscene = context.scene
        settings = bscene.redmax
        self.context, self.bscene = context, bscene
        self.solver = (solver or settings.solver).lower()
        self.substeps = int(substeps or settings.substeps)
        own = settings.use_bake_range
        self.frame_start = int(frame_start if frame_start is not None
                               else settings.bake_frame_start if own else bscene.frame_start)
        self.frame_end = int(frame_end if frame_end is not None
                             else settings.bake_frame_end if own else bscene.frame_end)
        self.frame_step = int(frame_step if frame_step is not None else settings.frame_step)
        self.preroll = int(preroll if preroll is not None else settings.preroll)
        selected_only = settings.selected_only if selected_only is None else selected_only
        if self.frame_end <= self.frame_start:
            raise BakeError(f"frame range {self.frame_start}–{self.frame_end} is empty")
        if self.frame_step < 1 or self.preroll < 0:
            raise BakeError(f"key step {self.frame_step} must be ≥ 1 and preroll {self.preroll} ≥ 0")
        self.sim_start = self.frame_start - self.preroll  # the simulation starts here, keys at frame_start
        objects = selection(context) if selected_only else None
        if selected_only and not objects:
            raise BakeError("Selected Only: nothing is selected")
        fps = bscene.render.fps / bscene.render.fps_base
        world = bscene.rigidbody_world
        self.frame_time = (world.time_scale if world is not None else 1.0) / fps  # simulated seconds per frame (Speed)
        self.dt = self.frame_time / self.substeps
        if settings.live_preview:
            settings.live_preview = False  # the preview's handler would move bodies under the bake; rest pose back
        self._frame_before = bscene.frame_current
        # simulate from the scene as it was before the bake (Selected Only: other objects keep their bake)
        self._only = set(objects) if objects is not None else None
        self._rebake, _ = _unbake_live(context, bscene, self._only)
        # before any frame change moves animated values (objects the bake will not key are dropped in finish)
        self.snapshot = snapshot.take(bscene, snapshot.objects_to_save(bscene, objects or bscene.objects))
        self.follow = None
        self.warning = ""  # set by finish: what the user should know about the bake
        try:
            armatures = follow.followed_armatures(bscene.objects if objects is None else objects)
            with as_built(bscene, self.sim_start):  # the start pose does not depend on what playback cached
                samples = follow.sample_poses(bscene, armatures, range(self.sim_start, self.frame_end + 1))
                timeline = mapping.sample_timeline(bscene, objects or list(bscene.objects),
                                                   range(self.sim_start, self.frame_end + 1), self.frame_time)
                bscene.frame_set(self.sim_start)
                self.mapping = mapping.build(context, objects, timeline)
            if armatures:
                self.follow = follow.Follow(self.mapping, samples, self.frame_time)
                self.follow.configure(self.mapping.scene)
            self.sim = engine.Simulator(self.mapping.scene, self.solver, dt=self.dt,
                                        **simulator_options(settings, self.dt))
        except mapping.MappingError as err:
            self.abort()
            raise BakeError(str(err)) from None
        except Exception:
            self.abort()
            raise
        self.qs = [self.sim.state.q.copy()]
        self.models = [self.sim.model]  # per frame: the model q belongs to (a broken joint changes it mid-bake)
        self.seconds = 0.0

    @property
    def n_frames(self) -> int:
        """Simulated frames, preroll included."""
        return self.frame_end - self.sim_start + 1

    def steps(self):
        """Generator: simulates one frame per ``next()`` and yields the fraction done; a frame that takes longer
        than ``LONG_FRAME`` s also yields between its substeps, so that ESC acts inside it."""
        for f in range(self.sim_start + 1, self.frame_end + 1):
            done = 0
            while done < self.substeps:
                t0 = time.perf_counter()
                try:
                    while done < self.substeps:
                        if self.follow is not None:  # targets move with the animation, substep by substep
                            self.follow.set_targets(self.sim.scene, f - 1 - self.sim_start, (done + 1) / self.substeps)
                        self.sim.step()
                        done += 1
                        if time.perf_counter() - t0 > LONG_FRAME:
                            break
                except engine.SimulationError as err:
                    raise BakeError(f"frame {f}: {err}") from None
                self.seconds += time.perf_counter() - t0
                if done < self.substeps:
                    yield (f - 1 - self.sim_start + done / self.substeps) / (self.n_frames - 1)
            self.qs.append(self.sim.state.q.copy())
            self.models.append(self.sim.model)
            yield (f - self.sim_start) / (self.n_frames - 1)

    def run(self, report=None):
        """Simulate everything (headless): prints progress every 10 %."""
        last = -1
        for frac in self.steps():
            if report is not None and int(frac * 10) != last:
                last = int(frac * 10)
                report(frac)

    def abort(self):
        """Put back the scene as it was before the job started (an earlier bake included)."""
        if self._rebake is not None:
            _rebake_live(self.context, self._rebake)
            self._rebake = None
        self.bscene.frame_set(self._frame_before)

    def finish(self) -> dict:
        """Check and write the keys (all or nothing), take the baked objects out of Blender's rigid
        body simulation and record the bake; returns statistics."""
        if len(self.qs) != self.n_frames:
            raise BakeError("the simulation did not reach the last frame")
        t0 = time.perf_counter()
        frames = keyed_frames(self.frame_start, self.frame_end, self.frame_step)
        keyed = frames - self.sim_start
        qs = [self.qs[k] for k in keyed]
        for q, k, f in zip(qs, keyed, frames):
            self._check_finite(q[None], [f], self.models[k])
        links = np.array([self.mapping.link_frames(self.qs[k], self.models[k]) for k in keyed])  # (F, n, 4, 4), rigid
        plans = self._channels(links, frames)
        written = []
        try:
            for ob, channels in plans.items():
                written.append((ob, *keyframes.write_action(ob, f"{BAKE_PREFIX} {ob.name}", frames, channels)))
        except Exception:
            for _, action, _ in written:
                bpy.data.actions.remove(action)
            self.abort()
            raise
        if self._rebake is not None:  # the older bake of these objects is replaced
            _forget_bake(self.bscene, self._rebake)
            self._rebake = None
        for ob, action, slot in written:
            s = ob.redmax
            s.previous_action, s.previous_slot = keyframes.current(ob)
            s.previous_rotation_modes = self._set_rotation_modes(ob)
            keyframes.assign(ob, action, slot.identifier)
            s.baked_action, s.is_baked = action, True
        baked = {ob for ob, _, _ in written}
        held = held_partners(self.bscene, baked) if self._only is not None else []  # before detach drops the joints
        snapshot.store(self.bscene, self.snapshot, baked, self._only)
        snapshot.detach(self.context, [ob for ob, _, _ in written])
        self.bscene.frame_set(self._frame_before)
        stats = self.sim.stats
        its = np.asarray(stats.iterations, float)
        result = {"frames": len(frames), "steps": (self.n_frames - 1) * self.substeps,
                  "seconds": self.seconds, "write_seconds": time.perf_counter() - t0,
                  "mean_iterations": float(its.mean()) if its.size else 0.0,
                  "max_iterations": int(its.max()) if its.size else 0, "objects": len(written)}
        st = self.bscene.redmax
        st.last_frames, st.last_steps, st.last_seconds = result["frames"], result["steps"], result["seconds"]
        st.last_iterations, st.last_max_iterations = result["mean_iterations"], result["max_iterations"]
        st.last_message = (f"{result['frames']} keyed frames, {result['steps']} steps in {result['seconds']:.2f} s "
                           f"(+{result['write_seconds']:.2f} s keys)")
        self.warning = ""
        if held:
            names = ", ".join(f"'{n}'" for n in held[:5]) + (" …" if len(held) > 5 else "")
            self.warning = (f"Selected Only: {len(held)} rigid bod{'y' if len(held) == 1 else 'ies'} joined to the baked "
                            f"objects ({names}) held still in this bake but stay in Blender's rigid body simulation, "
                            "which moves them on playback; select them too, or make them passive or animated")
            st.last_message += f"; {self.warning}"
        result["warning"] = self.warning
        return result

    def _check_finite(self, qs, frames, model=None):
        """Refuse states (F, nq) with a NaN or infinity, naming the body and the frame."""
        bad = ~np.isfinite(qs)
        if not bad.any():
            return
        k, i = np.argwhere(bad)[0]
        model = self.mapping.scene.model if model is None else model
        j = next(j for j, name in enumerate(model.joint_names)
                 if model.q_slice(name).start <= i < model.q_slice(name).stop)
        what = mapping.describe(self.mapping.targets[j])
        raise BakeError(f"{what}: the simulation gave a non-finite state at frame {int(frames[k])}; "
                        "nothing was written")

    def _set_rotation_modes(self, ob):
        """Quaternion rotation on the baked object and bones; returns the previous modes as JSON."""
        saved = {}
        if any(t.object == ob and not t.bone and t.keyed for t in self.mapping.targets):
            saved[""] = ob.rotation_mode
            ob.rotation_mode = "QUATERNION"
        for t in self.mapping.targets:
            if t.object == ob and t.bone and t.keyed:
                pb = ob.pose.bones[t.bone]
                saved[t.bone] = pb.rotation_mode
                pb.rotation_mode = "QUATERNION"
        return json.dumps(saved)

    def _channels(self, links, frames):
        """{object: channels} from the simulated link frames (F, n, 4, 4); refuses non-finite keys."""
        plans: dict = {}
        for ob, bone, basis, with_location in local_bases(self.mapping, links):
            if bone:
                path, group = f'pose.bones["{bpy.utils.escape_identifier(bone)}"].', bone
            else:
                path, group = "", "Object Transforms"
            channels = _basis_channels(basis, path, group, with_location)
            for data_path, _, _, values in channels:
                bad = ~np.isfinite(values)
                if bad.any():
                    what = f"bone '{bone}' of '{ob.name}'" if bone else f"object '{ob.name}'"
                    raise BakeError(f"{what}: non-finite {data_path.rsplit('.', 1)[-1]} at frame "
                                    f"{int(frames[np.argmax(bad)])}; nothing was written")
            plans.setdefault(ob, []).extend(channels)
        return plans


def local_bases(m, links):
    """What Blender keys for simulated link frames ``links`` (F, n, 4, 4) of mapping ``m``.

    Yields (object, bone name or "", basis matrices (F, 4, 4), keys location): the object's
    matrix_basis (relative to its parent) or the pose bone's matrix_basis (relative to its rest
    pose and parent). The bake keys these; the live preview assigns them.
    """
    targets = m.targets
    offsets = m.offsets
    worlds = links @ offsets
    index = {(t.object.name, t.bone): i for i, t in enumerate(targets) if t.keyed}
    for i, t in enumerate(targets):
        ob = t.object
        if t.bone or not t.keyed:  # (a moving anchor plays its own animation; a connector is no object)
            continue
        parent = ob.parent
        if parent is not None and ob.parent_type != "OBJECT":
            raise BakeError(f"object '{ob.name}': parented to a {ob.parent_type.lower()}, which a bake "
                            "cannot key; parent it to an object")
        if parent is None:
            local = worlds[:, i]
        else:
            j = index.get((parent.name, ""))
            pw = worlds[:, j] if j is not None else np.broadcast_to(mapping.matrix(parent.matrix_world),
                                                                    worlds[:, i].shape)
            local = np.linalg.inv(pw @ mapping.matrix(ob.matrix_parent_inverse)) @ worlds[:, i]
        yield ob, "", local, True
    for ob in {t.object for t in targets if t.bone and t.keyed}:
        A_inv = np.linalg.inv(mapping.matrix(ob.matrix_world))
        for bone in ob.data.bones:
            i = index[(ob.name, bone.name)]
            ML = mapping.matrix(bone.matrix_local)
            if bone.parent is None:
                basis = np.linalg.inv(ML) @ A_inv @ worlds[:, i]
            else:  # P_p⁻¹ P = O_p⁻¹ L_p⁻¹ L O (the armature matrix cancels)
                j = index[(ob.name, bone.parent.name)]
                rel = np.linalg.inv(offsets[j]) @ rigid_inverse(links[:, j]) @ links[:, i] @ offsets[i]
                basis = np.linalg.inv(ML) @ mapping.matrix(bone.parent.matrix_local) @ rel
            yield ob, bone.name, basis, int(m.scene.model.joint_type[i]) in TRANSLATING
