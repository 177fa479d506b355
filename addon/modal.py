"""Modal progress shared by the long operators (Bake, Suggest Settings): a generator of work is run
in slices under a window timer, with a progress bar and status text; ESC cancels. The compile stage
(``kernels``) polls a thread instead and has its own ``modal_step``; all of them end through
``kernels.end_modal``."""
from __future__ import annotations

import time

from . import kernels

SLICE = 0.05  # s of work per timer event: the window keeps drawing and sees ESC in between


def begin(op, context) -> None:
    """Start ``op``'s timer (``op._timer``) and the progress bar (the caller adds the modal handler)."""
    wm = context.window_manager
    op._timer = wm.event_timer_add(0.0, window=context.window)
    wm.progress_begin(0, 100)


def drive(op, context, event, steps, *, status, cancel, finish, errors=(), fail=None):
    """One modal event of ``op`` running the generator ``steps``. ESC: ends the modal state and returns
    ``cancel()``; a timer event runs ``steps`` for SLICE s, then shows ``status(value)`` = (fraction done,
    text) of the last value yielded; when ``steps`` is exhausted, ends and returns ``finish()``; an
    exception of ``errors`` ends and returns ``fail(err)``. Other events pass through."""
    if event.type == "ESC":
        kernels.end_modal(op, context)
        return cancel()
    if event.type != "TIMER":
        return {"PASS_THROUGH"}
    t_end = time.perf_counter() + SLICE
    try:
        while time.perf_counter() < t_end:
            value = next(steps)
    except StopIteration:
        kernels.end_modal(op, context)
        return finish()
    except errors as err:
        kernels.end_modal(op, context)
        return fail(err)
    fraction, text = status(value)
    context.window_manager.progress_update(int(100 * fraction))
    if context.workspace is not None:
        context.workspace.status_text_set(f"{text} (ESC to cancel)")
    return {"RUNNING_MODAL"}
