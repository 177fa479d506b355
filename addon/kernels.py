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

When the add-on is enabled in Blender's UI, a timer starts a background compile of what the
default bake (PCG, with and without ground contact) is missing — nothing when the shipped
kernels serve this CPU — so the first bake rarely waits; its status is in the add-on's
preferences. Not in background mode (``blender -b``, the bpy wheel): there a bake compiles what it needs
with printed progress, and a thread compiling beside a batch job only competes with it.
"""
from __future__ import annotations

import threading
import time

import bpy

from . import mapping, snapshot
from ._engine import warmup

TITLE = "Compiling solver kernels — first run only"


def options(settings) -> dict:
    """``engine.apps.warmup`` options for the scene settings ``scene.redmax`` (solver, contact: the ground or
    colliding rigid bodies) and the facts of its scene that decide which step the bake runs
    (``mapping.scene_facts``: loop closures, joint limits, body damping), so the compile covers that step and no other. A baked scene is read as the
    re-bake maps it: with the rigid bodies and constraints the bake took out of Blender's world put back."""
    bscene = settings.id_data
    rig = snapshot.Restored(bscene)
    contact = bool(settings.collide_with_ground) or mapping.collisions.scene_collides(bscene, rig)
    return {"solver": settings.solver.lower(), "contact": contact,
            "contact_method": settings.contact_method.lower(), **mapping.scene_facts(bscene, rig)}


def needed(settings) -> bool:
    """True when a bake with these settings would compile kernels first (a cold numba cache)."""
    return not warmup.is_warm(**options(settings))


class KernelCompile:
    """``engine.apps.warmup.compile_kernels`` in a daemon thread; poll ``done``/``message``/``fraction``.

    ``opts``: the options of one compile, or a list of them run in turn (progress counts all their groups);
    with ``skip_warm`` a run whose kernels are already cached is skipped (not even loaded)."""

    def __init__(self, opts: dict | list | tuple, skip_warm: bool = False):
        self.runs = [dict(o) for o in opts] if isinstance(opts, (list, tuple)) else [dict(opts)]
        self.options = self.runs[0] if len(self.runs) == 1 else self.runs
        self.skip_warm = skip_warm
        self._sizes = [len(warmup.kernel_groups(**r)) for r in self.runs]
        self.group, self.total, self.name = 0, sum(self._sizes), warmup.kernel_groups(**self.runs[0])[0].name
        self.started = time.perf_counter()
        self.error: BaseException | None = None
        self.result = None
        self.compiled_any = False
        self._offset = 0
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, name="redmax-compile", daemon=True)

    def start(self) -> KernelCompile:
        self._thread.start()
        return self

    def _progress(self, done, total, name):
        self.group, self.name = self._offset + done, name

    def _run(self):
        try:
            for run, size in zip(self.runs, self._sizes):
                if not (self.skip_warm and warmup.is_warm(**run)):
                    self.compiled_any = True
                    self.result = warmup.compile_kernels(**run, progress=self._progress, cancel=self._cancel.is_set)
                self._offset += size
                self.group = self._offset
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


# ------------------------------------------------------------ compile when enabled
BACKGROUND_RUNS = ({"solver": "pcg", "contact": False}, {"solver": "pcg", "contact": True, "contact_method": "auto"})
_background: KernelCompile | None = None


def start_background() -> KernelCompile:
    """Compile what the default bake (``BACKGROUND_RUNS``) misses, in a daemon thread (the one running is kept)."""
    global _background
    if _background is None or (_background.done and _background.error is not None):
        _background = KernelCompile(BACKGROUND_RUNS, skip_warm=True).start()
    return _background


def _start_background_timer():
    start_background()
    return None  # run once


def schedule_background() -> bool:
    """On enabling the add-on in Blender's UI: start ``start_background`` from a timer, once Blender is up.
    Returns False in background mode, where nothing is started (module doc)."""
    if bpy.app.background:
        return False
    if not bpy.app.timers.is_registered(_start_background_timer):
        bpy.app.timers.register(_start_background_timer, first_interval=1.0, persistent=True)
    return True


def cancel_background() -> None:
    """On disabling: drop the pending timer; a running compile stops after its group."""
    if bpy.app.timers.is_registered(_start_background_timer):
        bpy.app.timers.unregister(_start_background_timer)
    if _background is not None and not _background.done:
        _background.cancel()


def status_lines(settings) -> list[tuple[str, str]]:
    """(text, icon) lines for the preferences: the compile in the background, whether this scene's bake would
    compile first, and where the kernels come from (shipped or this machine's cache; engine._jit.describe)."""
    from ._engine import engine

    lines = []
    job = _background
    if job is not None and not job.done:
        lines.append((f"Compiling in the background: {job.group + 1} of {job.total} kernel groups ({job.name}), "
                      f"{time.perf_counter() - job.started:.0f} s", "SORTTIME"))
    elif job is not None and job.error is not None and not isinstance(job.error, warmup.WarmupCancelled):
        lines.append((f"Background compile failed: {job.error}", "ERROR"))
    elif job is not None and job.compiled_any:
        lines.append((f"Compiled in the background in {time.perf_counter() - job.started:.0f} s", "CHECKMARK"))
    if settings is not None:
        warm = not _needed_recently(settings)
        lines.append(("Solver kernels for this scene's bake: ready" if warm else
                      "Solver kernels for this scene's bake: not compiled yet (the first bake compiles them)",
                      "CHECKMARK" if warm else "INFO"))
    jit = engine._jit
    target = jit.TARGET
    if jit.JIT_ENABLED and target is not None:
        lines.append((f"Kernels for {target.cpu_name}: " + ("shipped with the add-on" if target.shipped
                      else f"compiled on this machine ({target.reason})"), "SETTINGS"))
        counts = jit.kernel_counts()
        lines.append((f"This session: {counts['compiled']} compiled, {counts['loaded_shipped']} loaded from the "
                      f"shipped kernels, {counts['loaded_user']} from {jit.cache_folder()}", "INFO"))
    else:
        lines.append(("numba is not available: the engine runs as plain Python (slow)", "ERROR"))
    return lines


_needed_memo: dict = {}


def _needed_recently(settings, seconds: float = 2.0) -> bool:
    """``needed(settings)``, re-checked at most every ``seconds`` (the preferences redraw often; the check
    reads the scene and the cache's index files)."""
    key = settings.as_pointer()
    at, value = _needed_memo.get(key, (-1e9, None))
    if time.perf_counter() - at > seconds:
        value = needed(settings)
        _needed_memo[key] = (time.perf_counter(), value)
    return value


class REDMAX_AP_preferences(bpy.types.AddonPreferences):
    bl_idname = _addon_id()

    def draw(self, context):
        layout = self.layout
        col = layout.column()
        for text, icon in status_lines(context.scene.redmax if context.scene is not None else None):
            col.label(text=text, icon=icon)
        layout.operator(REDMAX_OT_compile_kernels.bl_idname, icon="SETTINGS")


CLASSES = (REDMAX_OT_compile_kernels, REDMAX_AP_preferences)
