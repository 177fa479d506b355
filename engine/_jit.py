"""The one place that decides whether kernels are compiled with numba.

Set the environment variable ``ENGINE_DISABLE_JIT=1`` (or run without numba
installed) to execute every kernel as plain Python on numpy arrays: slow, but
the same arithmetic, which is how the property tests check the fallback.

Numba's on-disk cache (``cache=True``) lives where numba puts it by default
(``__pycache__`` beside each module) unless ``NUMBA_CACHE_DIR`` is set; the
Blender add-on points that at its user extension folder.
"""
from __future__ import annotations

import os

_DISABLED = os.environ.get("ENGINE_DISABLE_JIT", "").strip().lower() in ("1", "true", "yes", "on")

try:  # pragma: no cover - exercised by whichever environment runs the tests
    if _DISABLED:
        raise ImportError("disabled by ENGINE_DISABLE_JIT")
    import numba as _numba

    HAVE_NUMBA = True
    NUMBA_VERSION = _numba.__version__
except ImportError:  # pragma: no cover
    _numba = None
    HAVE_NUMBA = False
    NUMBA_VERSION = None

JIT_ENABLED = HAVE_NUMBA

# Let LLVM contract to FMA, but keep IEEE NaN/inf semantics so divergence checks still see them.
# No "reassoc": with it LLVM vectorises a sum in a loop that also stores (PCG's `p[k] = z[k];
# rz += r[k] * z[k]`) behind a run-time alias check that is conservative (it takes the scalar loop
# when two arrays start less than 256 bytes apart, overlapping or not), so the sum's rounding, and
# with it the whole trajectory, depended on where the allocator had put the arrays: the same step
# on the same inputs gave different bits from one run to the next. Without it both loops add in
# source order. Step times measured the same either way.
_FASTMATH = {"contract", "arcp", "nsz"}


def kernel(fn=None, *, parallel: bool = False, inline: bool | str = False):
    """Compile ``fn`` with ``numba.njit(cache=True, fastmath=_FASTMATH)`` when numba is on.

    Without numba the function is returned unchanged, so a kernel must be
    valid Python over numpy arrays and scalars (no numba-only constructs).
    Kernels release the GIL (``nogil``), so Python threads can run them in
    parallel on separate workspaces. Small helpers on hot paths, where a call
    that passes array structs by value costs more than the arithmetic, are inlined:

    * ``inline=True`` inlines at numba-IR level: the helper's body is translated, typed and
      lowered again inside every caller, at every call site (the ABA/CRBA inner loops);
    * ``inline="llvm"`` compiles the helper once and has LLVM inline it into its callers
      (``alwaysinline``): the same arithmetic in the same order, for a fraction of the compile
      time when a helper has several call sites (numba's passes grow faster than linearly with
      a function's size).

    No kernel gets numba's C-ABI wrapper (``no_cfunc_wrapper``): it only serves kernels passed
    as first-class function objects, which the engine never does, and costs compile time.
    """

    if inline not in (True, False, "llvm"):
        raise ValueError(f"kernel: inline must be True, False or 'llvm', got {inline!r}")
    inlining = {"forceinline": True} if inline == "llvm" else {"inline": "always" if inline else "never"}

    def wrap(f):
        if not JIT_ENABLED:
            return f
        return _numba.njit(cache=True, parallel=parallel, nogil=True, error_model="numpy", fastmath=_FASTMATH,
                           no_cfunc_wrapper=True, **inlining)(f)

    return wrap if fn is None else wrap(fn)


if JIT_ENABLED:
    prange = _numba.prange
else:
    prange = range


def set_num_threads(n: int) -> None:
    """Set how many threads parallel kernels use (no-op without numba)."""
    if JIT_ENABLED:
        _numba.set_num_threads(int(n))


def get_num_threads() -> int:
    return _numba.get_num_threads() if JIT_ENABLED else 1
