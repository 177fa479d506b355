"""The first-bake compile stage: numba kernels compiled in a worker thread, with progress.

On a cold numba cache the first bake would spend most of a minute compiling
inside Blender's event loop (frozen window, ESC ignored). ``engine.apps.warmup``
knows which kernels a solver needs and compiles them group by group on a tiny
model; here that runs in a daemon thread so the UI keeps drawing: the bake
operator polls ``KernelCompile`` from its modal timer, shows
``TITLE`` with "k of N" in the status bar and header, and ESC cancels before the
scene was touched. Headless (``blender -b``, the bpy wheel) the same thread is
joined with a printed line per group; Ctrl+C cancels. The compile cannot be
interrupted inside a group (numba), so a cancelled thread finishes its group in
the background and a new bake or *Compile Now* waits for that same thread.
"""
from __future__ import annotations

import threading
import time

import bpy

from . import mapping, snapshot
from ._engine import warmup

TITLE = "Compiling solver kernels — first run only"


def options(settings) -> dict:
    """``engine.apps.warmup`` options for the scene settings ``scene.redmax`` (solver, ground contact) and the
    facts of its scene that decide which step the bake runs (``mapping.scene_facts``: loop closures, joint
    limits, body damping), so the compile covers that step and no other. A baked scene is read as the
    re-bake maps it: with the rigid bodies and constraints the bake took out of Blender's world put back."""
    bscene = settings.id_data
    return {"solver": settings.solver.lower(), "contact": bool(settings.collide_with_ground),
            "contact_method": settings.contact_method.lower(), **mapping.scene_facts(bscene, snapshot.Restored(bscene))}


def needed(settings) -> bool:
    """True when a bake with these settings would compile kernels first (a cold numba cache)."""
    return not warmup.is_warm(**options(settings))


class KernelCompile:
    """``engine.apps.warmup.compile_kernels`` in a daemon thread; poll ``done``/``message``/``fraction``."""

    def __init__(self, opts: dict):
        self.options = dict(opts)
        groups = warmup.kernel_groups(**self.options)
        self.group, self.total, self.name = 0, len(groups), groups[0].name
        self.started = time.perf_counter()
        self.error: BaseException | None = None
        self.result = None
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, name="redmax-compile", daemon=True)

    def start(self) -> KernelCompile:
        self._thread.start()
        return self

    def _progress(self, done, total, name):
        self.group, self.total, self.name = done, total, name

    def _run(self):
        try:
            self.result = warmup.compile_kernels(**self.options, progress=self._progress, cancel=self._cancel.is_set)
        except BaseException as err:  # handed to the main thread (WarmupCancelled included)
            self.error = err

    @property
    def done(self) -> bool:
        return not self._thread.is_alive()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def cancel(self) -> None:
        """Stop after the group that is compiling now (the caller carries on at once)."""
        self._cancel.set()

    def wait(self, timeout: float | None = None) -> bool:
        self._thread.join(timeout)
        return self.done

    @property
    def fraction(self) -> float:
        return self.group / max(self.total, 1)

    @property
    def message(self) -> str:
        """"TITLE: group k of N (what) — s" for the status bar and the console."""
        seconds = time.perf_counter() - self.started
        if self.group >= self.total:
            return f"{TITLE}: done, {self.total} kernel groups in {seconds:.0f} s"
        return f"{TITLE}: {self.group + 1} of {self.total} kernel groups ({self.name}), {seconds:.0f} s"


_current: KernelCompile | None = None


def start(settings) -> KernelCompile:
    """A running compile for these settings: the one under way is reused when it has the same
    options and was not cancelled, else a new thread starts (numba's compiler lock makes it wait in
    the background for a cancelled thread's last group)."""
    global _current
    opts = options(settings)
    if _current is not None and not _current.done and _current.options == opts and not _current.cancelled:
        return _current
    _current = KernelCompile(opts).start()
    return _current


def run_blocking(settings, echo=print) -> bool:
    """Compile with a printed line per group (headless bakes and *Compile Now* there).

    Returns False when cancelled by Ctrl+C (KeyboardInterrupt), True when compiled; a failing
    compile raises its error."""
    job = start(settings)
    shown = job.group
    try:
        echo(f"{job.message} (Ctrl+C cancels)")
        while not job.wait(0.1):
            if job.group != shown:
                shown = job.group
                echo(job.message)
    except KeyboardInterrupt:
        job.cancel()
        echo(f"{TITLE}: cancelled; nothing was changed")
        return False
    if job.error is not None:
        if isinstance(job.error, warmup.WarmupCancelled):
            return False
        raise job.error
    echo(job.message)
    return True


class REDMAX_OT_compile_kernels(bpy.types.Operator):
    """Compile the solver kernels now (a first bake otherwise does it; once per install and engine version)"""

    bl_idname = "redmax.compile_kernels"
    bl_label = "Compile Now"

    _job: KernelCompile | None = None
    _timer = None

    def execute(self, context):
        ok = run_blocking(context.scene.redmax)
        self.report({"INFO"} if ok else {"WARNING"}, "RedMax: kernels compiled" if ok else "RedMax: compile cancelled")
        return {"FINISHED"} if ok else {"CANCELLED"}

    def invoke(self, context, event):
        if bpy.app.background:
            return self.execute(context)
        self._job = start(context.scene.redmax)
        wm = context.window_manager
        self._timer = wm.event_timer_add(0.1, window=context.window)
        wm.modal_handler_add(self)
        wm.progress_begin(0, 100)
        show(context, self._job)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        return modal_step(self, context, event, self._finish)

    def _finish(self, context, job):
        ok = job.error is None
        self.report({"INFO"} if ok else {"ERROR"}, "RedMax: kernels compiled" if ok else f"RedMax: compile failed: {job.error}")
        return {"FINISHED"} if ok else {"CANCELLED"}


def modal_step(op, context, event, finish):
    """One modal event of an operator waiting for ``op._job``: ESC cancels, a timer shows progress,
    a finished compile calls ``finish(context, job)`` (returns the operator's result)."""
    job = op._job
    if event.type == "ESC":
        job.cancel()
        end_modal(op, context)
        op.report({"WARNING"}, f"{TITLE}: cancelled; the scene is unchanged")
        return {"CANCELLED"}
    if event.type != "TIMER":
        return {"PASS_THROUGH"}
    if job.done:
        end_modal(op, context)
        return finish(context, job)
    show(context, job)
    return {"RUNNING_MODAL"}


def show(context, job):
    """Progress bar and status text of a running compile."""
    context.window_manager.progress_update(int(100 * job.fraction))
    if context.workspace is not None:
        context.workspace.status_text_set(f"{job.message} (ESC to cancel)")


def end_modal(op, context):
    """Remove a modal operator's timer (``op._timer``), progress bar and status text."""
    wm = context.window_manager
    if op._timer is not None:
        wm.event_timer_remove(op._timer)
        op._timer = None
    wm.progress_end()
    if context.workspace is not None:
        context.workspace.status_text_set(None)


def _addon_id() -> str:
    """The add-on's module name (what AddonPreferences.bl_idname must be): the extension's root
    package when installed (``bl_ext.<repo>.redmax``), ``addon`` from a checkout."""
    package = __package__ or "addon"
    return package.rsplit(".", 1)[0] if package.startswith("bl_ext.") else package


class REDMAX_AP_preferences(bpy.types.AddonPreferences):
    bl_idname = _addon_id()

    def draw(self, context):
        layout = self.layout
        warm = context.scene is None or not needed(context.scene.redmax)
        row = layout.row()
        row.label(text="Solver kernels: compiled" if warm else "Solver kernels: not compiled yet "
                       "(the first bake compiles them, about a minute)", icon="CHECKMARK" if warm else "INFO")
        row.operator(REDMAX_OT_compile_kernels.bl_idname, icon="SETTINGS")


CLASSES = (REDMAX_OT_compile_kernels, REDMAX_AP_preferences)
