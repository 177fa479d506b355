"""Bake: read the scene, simulate the whole frame range, then write every F-curve in one pass.

``BakeJob`` is driven by the operator through ``stages()``, one generator over the whole bake that
yields its stage and progress: reading the scene (``read``), simulating one frame per ``next()``
(``steps``), writing the keys (``write_steps``), then committing them (assign the actions, save the
snapshot, take the baked objects out of Blender's rigid body simulation) in one go. The UI shows
progress and ESC cancels; under ``blender -b`` it is a plain loop. ``BakeJob(context)`` reads at
once, ``run()`` simulates and ``finish()`` writes and commits. A bake never edits existing F-curves:
each baked object gets a new action, assigned only after all keys are written, and the action it had
before is kept for ``clear_bake``. Cancelling or failing at any stage (a diverging simulation, a cable
to a deleted object, an object deleted meanwhile, an error while committing) puts back exactly what
was there before (``abort``).
"""
from __future__ import annotations

import json
import time
from contextlib import contextmanager

import bpy
import numpy as np

from . import follow, keyframes, mapping, snapshot
from .keying import TRANSLATING, BakeError, continuous, keyed_poses, local_bases, quaternions, rigid_inverse  # noqa: F401
from .run import SPECULATIVE_SPEED, SimulationRun, frame_time, simulator_options  # noqa: F401 (re-exported)

from ._engine import engine

BAKE_PREFIX = "RedMax bake"
LONG_FRAME = 0.05  # s: a frame's substeps yield after this long (modal.SLICE), so that ESC acts inside a frame
STAGES = (("reading the scene", 0.1), ("simulating", 0.7), ("writing keys", 0.2))  # (stage, share of the bar)
WRITE_CHUNK = 50  # objects keyed between two progress reports


def alive(ob) -> bool:
    """Whether ``ob`` still exists (an object removed from ``bpy.data`` raises ReferenceError on access)."""
    try:
        ob.name
    except ReferenceError:
        return False
    return ob is not None


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


def _unbake_live(context, bscene, only=None, baked=None):
    """Show the scene (or the objects in ``only``) as it was before the bake (previous actions, rigid
    bodies, constraints, transforms) but keep the bake's records, so ``_rebake_live`` can put the
    bake back; returns (the objects unbaked, messages about what could not be restored). ``baked``:
    the objects to unbake, when the caller needs them before (to put them back if this fails)."""
    if baked is None:
        baked = [ob for ob in _baked_objects(bscene) if only is None or ob in only]
    for ob in baked:
        keyframes.assign(ob, ob.redmax.previous_action, ob.redmax.previous_slot)
        _restore_rotation_modes(ob, ob.redmax.previous_rotation_modes)
    saved = snapshot.stored(bscene)
    problems = snapshot.restore(context, bscene, saved, only) if saved is not None else []
    return baked, problems


def _rebake_live(bscene, baked):
    """Undo ``_unbake_live``: the baked objects leave the rigid body simulation and play their bake (those
    deleted meanwhile are skipped)."""
    baked = [ob for ob in baked if alive(ob)]
    snapshot.detach(bscene, baked)
    slots: dict = {}  # action → {identifier: slot} (one bake's action holds a slot per object)
    for ob in baked:
        s = ob.redmax
        action = s.baked_action
        if action not in slots:
            slots[action] = keyframes.slots_by_identifier(action)
        keyframes.assign_slot(ob, action, slots[action].get(s.baked_slot) or _first_slot(action))
        _quaternion_modes(ob, s.previous_rotation_modes)


def _first_slot(action):
    """(A bake by an older version made an action with one slot per object.)"""
    return action.slots[0] if action is not None and len(action.slots) else None


def _forget_bake(bscene, objects=None):
    """Drop the records of the current bake (after ``_unbake_live``): actions, flags and, unless
    only some ``objects`` are forgotten, the snapshot."""
    cleared, actions = 0, []
    for ob in _baked_objects(bscene) if objects is None else objects:
        s = ob.redmax
        actions.append(s.baked_action)
        s.baked_action, s.baked_slot, s.previous_action, s.previous_slot = None, "", None, ""
        s.previous_rotation_modes = ""
        s.is_baked = False
        cleared += 1
    remove_unused(actions)
    if objects is None:
        snapshot.forget(bscene)
    return cleared


def _drop_slots(replaced) -> None:
    """Remove the actions of replaced bakes that no object plays any more; from one that others still play (a
    *Selected Only* re-bake), the replaced objects' slots."""
    remove_unused(action for action, _ in replaced.values())
    for ob, (action, identifier) in replaced.items():
        if alive(action) and identifier and ob.redmax.baked_action != action:
            slot = keyframes.slots_by_identifier(action).get(identifier)
            if slot is not None and not slot.users():  # (what no object plays: its slot and F-curves)
                action.slots.remove(slot)


def remove_unused(actions) -> None:
    """Remove the actions no one uses any more, in one call (removing IDs one by one scans all data each time)."""
    unused = {a for a in actions if a is not None and alive(a) and a.users == 0}
    if unused:
        bpy.data.batch_remove(unused)


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
    st.last_stages = ""
    st.last_message = "; ".join(problems)
    st.last_timings = ""
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

    in_world = snapshot.world_members(bscene)  # (objects an earlier bake took out keep their settings)

    def dynamic(ob):
        rb = ob.rigid_body
        return ob in in_world and rb.type == "ACTIVE" and rb.enabled and not rb.kinematic

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
    frames before the first key; ``selected_only`` maps only the selected objects (others hold).
    ``read=False`` leaves reading the scene to ``stages()`` (the operator's progress covers it)."""

    def __init__(self, context, *, solver=None, substeps=None, frame_start=None, frame_end=None,
                 frame_step=None, preroll=None, selected_only=None, read=True):
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
        self._objects = objects
        self._only = set(objects) if objects is not None else None
        self.frame_time = frame_time(bscene)  # simulated seconds per frame (the rigid body world's Speed)
        self.dt = self.frame_time / self.substeps
        self.run_: SimulationRun | None = None
        self.snapshot = None
        self._frame_before = None
        self._rebake = None
        self._baked_state = None
        self._watched: list = []   # (object, name) the bake will write into or restore
        self._written: list = []   # (object, action, slot) written, not committed yet
        self._actions: list = []   # the actions this job made (one per bake), not committed yet
        self.qs: list = []
        self.models: list = []
        self.seconds = 0.0  # simulation
        self.timings = dict.fromkeys(("read", "simulate", "write keys", "detach", "scene update"), 0.0)  # wall s
        self.cpu_timings = dict.fromkeys(self.timings, 0.0)  # this process's CPU seconds
        self.warning = ""  # set by finish: what the user should know about the bake
        self.result: dict | None = None
        self._by_object: dict | None = None
        self._frames = None
        if read:
            for _ in self._timed("read", self.read):
                pass

    # -------------------------------------------------------------- views
    @property
    def mapping(self):
        return self.run_.mapping

    @property
    def sim(self):
        return self.run_.sim

    @property
    def follow(self):
        return self.run_.follow

    @property
    def n_frames(self) -> int:
        """Simulated frames, preroll included."""
        return self.frame_end - self.sim_start + 1

    # ------------------------------------------------------------- stages
    def stages(self):
        """Generator over the whole bake: yields (stage, fraction of the stage done, fraction of the bake
        done); ends with the bake committed (``result``)."""
        done = 0.0
        for (stage, share), steps in zip(STAGES, (self._timed("read", self.read) if self.run_ is None else iter(()),
                                                  self.steps(), self._timed("write keys", self.write_steps))):
            for fraction in steps:
                yield stage, fraction, done + share * fraction
            done += share
        self.commit()

    def _timed(self, stage, make):
        """Run the generator ``make()`` adding the time spent inside it (not between ``next()`` calls) to the
        stage's ``timings`` (wall) and ``cpu_timings`` (this process's CPU: steadier on a busy machine)."""
        steps = make()
        while True:
            with self._clock(stage):
                try:
                    value = next(steps)
                except StopIteration:
                    return
            yield value

    @contextmanager
    def _clock(self, stage):
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.timings[stage] += time.perf_counter() - wall
            self.cpu_timings[stage] += time.process_time() - cpu

    def read(self):
        """Generator: map the scene as built at the first simulated frame (and sample what follows an
        animation at each later frame, one frame change each); yields the fraction done."""
        bscene, settings = self.bscene, self.bscene.redmax
        if settings.live_preview:
            settings.live_preview = False  # the preview's handler would move bodies under the bake; rest pose back
        self._frame_before = bscene.frame_current
        self._rebake = [ob for ob in _baked_objects(bscene) if self._only is None or ob in self._only]
        self._baked_state = snapshot.take(bscene, self._rebake)  # (un-keyed transforms as the bake shows them)
        try:
            # simulate from the scene as it was before the bake (Selected Only: other objects keep their bake)
            _unbake_live(self.context, bscene, self._only, self._rebake)
            # before any frame change moves animated values (objects the bake will not key are dropped in commit)
            self.snapshot = snapshot.take(bscene, snapshot.objects_to_save(bscene, self._objects or bscene.objects))
            self._watched = [(ob, ob.name) for ob, _ in self.snapshot[1]]
            objects = list(bscene.objects) if self._objects is None else self._objects
            armatures = follow.followed_armatures(objects)
            poses = follow.PoseSampler(armatures, self.n_frames) if armatures else None
            with as_built(bscene, self.sim_start):  # the start pose does not depend on what playback cached
                # what moves, follows or drives something, read at each frame once, the start last
                timeline = mapping.sample_timeline(bscene, objects, range(self.sim_start, self.frame_end + 1),
                                                   self.frame_time, [poses] if poses else [])
                if not timeline.read:
                    bscene.frame_set(self.sim_start)
                self.run_ = SimulationRun(bscene, self.context.evaluated_depsgraph_get(), solver=self.solver,
                                          substeps=self.substeps, objects=self._objects,
                                          poses=poses.samples if poses else None, timeline=timeline)
            why = snapshot.uneditable(bscene, dict.fromkeys(t.object for t in self.run_.mapping.targets if t.keyed))
            if why:
                raise BakeError(why)
        except mapping.MappingError as err:
            self.abort()
            raise BakeError(str(err)) from None
        except Exception:
            self.abort()
            raise
        self.qs = [self.run_.q.copy()]
        self.models = [self.run_.model]  # per frame: the model q belongs to (a broken joint changes it mid-bake)
        yield 1.0

    def steps(self):
        """Generator: simulates one frame per ``next()`` and yields the fraction done; a frame that takes longer
        than ``LONG_FRAME`` s also yields between its substeps, so that ESC acts inside it."""
        for f in range(self.sim_start + 1, self.frame_end + 1):
            done = False
            while not done:
                t0 = time.perf_counter()
                try:
                    with self._clock("simulate"):
                        done = self.run_.substep()  # (at least one substep between two yields)
                        while not done and time.perf_counter() - t0 <= LONG_FRAME:
                            done = self.run_.substep()
                except engine.SimulationError as err:
                    raise BakeError(f"frame {f}: {err}") from None
                self.seconds = self.timings["simulate"]
                if not done:
                    yield (f - 1 - self.sim_start + self.run_.done / self.substeps) / (self.n_frames - 1)
            self.qs.append(self.run_.q.copy())
            self.models.append(self.run_.model)
            yield (f - self.sim_start) / (self.n_frames - 1)

    def run(self, report=None):
        """Simulate everything (headless): prints progress every 10 %."""
        last = -1
        for frac in self.steps():
            if report is not None and int(frac * 10) != last:
                last = int(frac * 10)
                report(frac)

    def abort(self):
        """Put back the scene as it was before the job started (an earlier bake included); safe to call
        again and at any stage."""
        written, self._written, self._actions = {a for a in self._actions if alive(a)}, [], []
        if written:  # (never assigned, or the assignment undone)
            bpy.data.batch_remove(written)
        if self._rebake is not None:
            _rebake_live(self.bscene, self._rebake)
            # (rotation modes switched there and back convert rotation values: the exact ones come back)
            snapshot.restore(self.context, self.bscene, self._baked_state, only=set(self._rebake))
            self._rebake = None
        if self._frame_before is not None:
            self.bscene.frame_set(self._frame_before)

    def finish(self) -> dict:
        """Check and write the keys (all or nothing), take the baked objects out of Blender's rigid
        body simulation and record the bake; returns statistics."""
        try:
            for _ in self._timed("write keys", self.write_steps):
                pass
            return self.commit()
        except BaseException:
            self.abort()
            raise

    def write_steps(self):
        """Generator: check the simulated states and write each object's keys into a new action (not assigned
        yet); yields the fraction of objects done."""
        if len(self.qs) != self.n_frames:
            raise BakeError("the simulation did not reach the last frame")
        self._check_alive()
        frames = keyed_frames(self.frame_start, self.frame_end, self.frame_step)
        keyed = frames - self.sim_start
        for k, f in zip(keyed, frames):
            self._check_finite(self.qs[k][None], [f], self.models[k])
        n = self.mapping.scene.model.n_bodies
        R, p = np.empty((len(keyed), n, 3, 3)), np.empty((len(keyed), n, 3))  # link frames per keyed frame
        for j, k in enumerate(keyed):
            R[j], p[j] = engine.link_poses(self.models[k], self.qs[k])
        plans = self._channels(R, p, frames)
        with keyframes.ActionWriter(BAKE_PREFIX) as writer:
            self._actions.append(writer.action)
            for k, (ob, channels) in enumerate(plans.items(), 1):
                self._written.append((ob, writer.action, writer.write(ob, frames, channels)))
                if k % WRITE_CHUNK == 0 or k == len(plans):
                    yield k / len(plans)
        self._frames = frames

    def commit(self) -> dict:
        """Assign the written actions, keep the snapshot and take the baked objects out of Blender's rigid
        body simulation, all or nothing; then drop the records of the bake this one replaces. Returns
        statistics (also shown in the panel)."""
        bscene = self.bscene
        wall, cpu = time.perf_counter(), time.process_time()
        replaced = {ob: (ob.redmax.baked_action, ob.redmax.baked_slot) for ob in (self._rebake or ()) if alive(ob)}
        old_snapshot, lists = snapshot.stored(bscene), snapshot.world_lists(bscene)
        undo: list = []
        removed: dict = {}
        try:
            for ob, action, slot in self._written:
                s = ob.redmax
                undo.append((ob, keyframes.current(ob), s.baked_action, s.baked_slot, s.is_baked, s.previous_action,
                             s.previous_slot, s.previous_rotation_modes))
                s.previous_action, s.previous_slot = keyframes.current(ob)
                s.previous_rotation_modes = self._rotation_modes(ob)
                _quaternion_modes(ob, s.previous_rotation_modes)
                keyframes.assign_slot(ob, action, slot)
                s.baked_action, s.baked_slot, s.is_baked = action, slot.identifier, True
            baked = {ob for ob, _, _ in self._written}
            held = held_partners(bscene, baked) if self._only is not None else []  # before detach drops the joints
            snapshot.store(bscene, self.snapshot, baked, self._only)
            with self._clock("detach"):
                snapshot.detach(bscene, baked, removed)
        except Exception:
            lists[snapshot.REMOVED] = removed  # (the constraints detach removed come back with their settings)
            self._undo_commit(undo, lists, old_snapshot)
            raise
        _forget_bake(bscene, [ob for ob in replaced if ob not in baked])  # the older bake of these objects is replaced
        _drop_slots(replaced)
        self._rebake, self._written, self._actions = None, [], []
        self.timings["write keys"] += time.perf_counter() - wall - self.timings["detach"]
        self.cpu_timings["write keys"] += time.process_time() - cpu - self.cpu_timings["detach"]
        with self._clock("scene update"):  # Blender re-evaluates the scene with its new relations (and Bullet's world)
            bscene.frame_set(self._frame_before)
        self.result = self._record(held)
        return self.result

    def _undo_commit(self, undo, lists, old_snapshot):
        """Put back what ``commit`` did before it failed: assignments, flags, rotation modes and transforms
        (from the snapshot), the world's collections (``lists``: their objects before) and the scene's snapshot."""
        snapshot.reattach(self.bscene, lists)
        snapshot.put(self.bscene, old_snapshot)
        for ob, (action, slot), baked_action, baked_slot, is_baked, previous_action, previous_slot, modes in reversed(undo):
            keyframes.assign(ob, action, slot)
            s = ob.redmax
            s.baked_action, s.baked_slot, s.is_baked, s.previous_action, s.previous_slot = (
                baked_action, baked_slot, is_baked, previous_action, previous_slot)
            s.previous_rotation_modes = modes
        touched = {ob for ob, *_ in undo}
        snapshot.restore(self.context, self.bscene, self.snapshot, only=touched)  # rotation modes convert values

    def _record(self, held) -> dict:
        """Statistics of the committed bake, also written into the panel's lines."""
        stats = self.sim.stats
        its = np.asarray(stats.iterations, float)
        t = self.timings
        result = {"frames": len(self._frames), "steps": (self.n_frames - 1) * self.substeps,
                  "seconds": self.seconds, "read_seconds": t["read"], "write_seconds": t["write keys"],
                  "detach_seconds": t["detach"], "timings": dict(t), "cpu_timings": dict(self.cpu_timings),
                  "mean_iterations": float(its.mean()) if its.size else 0.0,
                  "max_iterations": int(its.max()) if its.size else 0, "objects": len(self.mapping.targets)}
        st = self.bscene.redmax
        st.last_frames, st.last_steps, st.last_seconds = result["frames"], result["steps"], result["seconds"]
        st.last_iterations, st.last_max_iterations = result["mean_iterations"], result["max_iterations"]
        st.last_stages = json.dumps({"wall": t, "cpu": self.cpu_timings})
        st.last_message = f"{result['frames']} keyed frames, {result['steps']} steps"
        st.last_timings = timing_line(t)
        self.warning = ""
        if held:
            names = ", ".join(f"'{n}'" for n in held[:5]) + (" …" if len(held) > 5 else "")
            self.warning = (f"Selected Only: {len(held)} rigid bod{'y' if len(held) == 1 else 'ies'} joined to the baked "
                            f"objects ({names}) held still in this bake but stay in Blender's rigid body simulation, "
                            "which moves them on playback; select them too, or make them passive or animated")
            st.last_message += f"; {self.warning}"
        result["warning"] = self.warning
        return result

    def _check_alive(self):
        """Refuse to write when an object the bake reads or keys was deleted (purged) while it simulated."""
        for ob, name in self._watched:
            if not alive(ob):
                raise BakeError(f"object '{name}' was deleted while the bake ran; nothing was written "
                                "(bake again)")

    def _check_finite(self, qs, frames, model=None):
        """Refuse states (F, nq) (of ``model``: the scene's, or the one a broken joint left) with a NaN or infinity,
        naming the body and the frame."""
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

    def _rotation_modes(self, ob):
        """The rotation modes of the object and the bones the bake keys, as JSON ({"": object, bone: mode})."""
        saved = {}
        for t in self._targets_of().get(ob, ()):
            if t.bone:
                saved[t.bone] = ob.pose.bones[t.bone].rotation_mode
            else:
                saved[""] = ob.rotation_mode
        return json.dumps(saved)

    def _targets_of(self) -> dict:
        """{object: its targets} of the mapping."""
        if self._by_object is None:
            self._by_object = {}
            for t in self.mapping.targets:
                if not t.keyed:  # (a moving anchor plays its own animation; a connector is no object)
                    continue
                self._by_object.setdefault(t.object, []).append(t)
        return self._by_object

    def _channels(self, R, p, frames):
        """{object: channels} from the simulated link frames (R (F, n, 3, 3), p (F, n, 3)), all targets at once;
        refuses non-finite keys, naming the first object or bone and the frame."""
        keys, q, location = keyed_poses(self.mapping, R, p)  # (F, k, 4), (F, k, 3)
        if not keys:
            return {}
        keyed = np.array([with_location for *_, with_location in keys])
        bad = ~np.isfinite(q).all(axis=-1) | (~np.isfinite(location).all(axis=-1) & keyed)
        if bad.any():
            j = int(np.argmax(bad.any(axis=0)))
            ob, bone = keys[j][:2]
            channel = "rotation_quaternion" if not np.isfinite(q[:, j]).all() else "location"
            frame = np.argmax(~np.isfinite(q[:, j] if channel == "rotation_quaternion" else location[:, j]).all(axis=-1))
            what = f"bone '{bone}' of '{ob.name}'" if bone else f"object '{ob.name}'"
            raise BakeError(f"{what}: non-finite {channel} at frame {int(frames[frame])}; nothing was written")
        plans: dict = {}
        for j, (ob, bone, with_location) in enumerate(keys):
            if bone:  # (ungrouped: grouping F-curves by bone takes time in their number, for each one)
                path, group = f'pose.bones["{bpy.utils.escape_identifier(bone)}"].', ""
            else:
                path, group = "", "Object Transforms"
            channels = [(f"{path}rotation_quaternion", i, group, q[:, j, i]) for i in range(4)]
            if with_location:
                channels += [(f"{path}location", i, group, location[:, j, i]) for i in range(3)]
            plans.setdefault(ob, []).extend(channels)
        return plans


def timing_line(timings) -> str:
    """The panel's line: what each stage of the last bake took."""
    return "Time: " + ", ".join(f"{stage} {seconds:.2f} s" for stage, seconds in timings.items())
