"""The one place that decides whether kernels are compiled with numba, for which CPU, and where they are cached.

Set the environment variable ``ENGINE_DISABLE_JIT=1`` (or run without numba
installed) to execute every kernel as plain Python on numpy arrays: slow, but
the same arithmetic, which is how the property tests check the fallback.

Kernels are cached on disk in two layers (``_kernel_store`` says where and for which CPU,
``_kernel_cache`` reads and writes them): the kernels shipped inside the package, built for a portable
CPU baseline (used when this CPU has the baseline's features), then the user's own cache,
``engine-<digest>`` under ``NUMBA_CACHE_DIR`` (the Blender add-on points that at its user extension
folder), a source checkout's ``engine/__pycache__/numba`` or the platform's user cache folder — never the
installed package. ``<digest>`` hashes the engine's source files: numba checks a cached kernel only
against its own file, so a kernel that inlines or calls code from another file would otherwise keep
the old machine code after that file changed (an edit, a pull, an add-on upgrade) — it happened
twice (MABA no longer equal to ABA; kernels compiled under older fastmath flags).
"""
from __future__ import annotations

import os
import shutil
import sys
import types
from pathlib import Path

import numpy as np

from . import _kernel_store

_DISABLED = os.environ.get("ENGINE_DISABLE_JIT", "").strip().lower() in ("1", "true", "yes", "on")

TARGET: _kernel_store.KernelTarget | None = None  # the CPU target and caches chosen at import (None: no numba)
try:  # pragma: no cover - exercised by whichever environment runs the tests
    if _DISABLED:
        raise ImportError("disabled by ENGINE_DISABLE_JIT")
    _numba_was_imported = "numba" in sys.modules
    TARGET = _kernel_store.choose_target()  # before numba reads NUMBA_CPU_NAME / NUMBA_CPU_FEATURES
    import numba as _numba

    HAVE_NUMBA = True
    NUMBA_VERSION = _numba.__version__
except ImportError as _missing:  # pragma: no cover
    _numba = None
    HAVE_NUMBA = False
    NUMBA_VERSION = None
    TARGET = None
    if not _DISABLED:  # numba missing (not turned off on purpose): say so once, or a run is just mysteriously slow
        import warnings

        warnings.warn(f"engine: numba could not be imported ({_missing}); every kernel runs as plain Python, "
                      "10 to 1000 times slower (results are the same). Install it (pip install numba) or use the "
                      "project's virtual environment; set ENGINE_DISABLE_JIT=1 to run without it on purpose.",
                      RuntimeWarning, stacklevel=2)

JIT_ENABLED = HAVE_NUMBA

KEEP_CACHES = 3  # engine versions whose compiled kernels stay on disk (the newest by use)


def source_digest() -> str:
    """Hash of the engine's source files' contents (and of Python's and numba's versions)."""
    return _kernel_store.source_digest(NUMBA_VERSION)


def _apply_target() -> None:
    """numba was imported before the engine: make it read the chosen CPU target now, unless it has
    compiled already (its CPU codegen is then fixed to this CPU: compile natively, shipped kernels unused)."""
    global TARGET
    from numba.core import config
    from numba.core.registry import cpu_target

    if "_toplevel_target_context" in vars(cpu_target) and TARGET.mode in ("shipped", "baseline"):
        for name in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", _kernel_store._OURS):
            os.environ.pop(name, None)
        config.reload_config()
        TARGET = _kernel_store.KernelTarget("native", None, None, None, "numba had compiled before the engine was "
                                            "imported (its CPU target was fixed then)")
    else:
        config.reload_config()


class UserCache:
    """The user layer: ``folder`` (``engine-<digest>``), whether files can be written there, and why not."""

    def __init__(self):
        base, self.chosen_by = _kernel_store.user_cache_base()
        self.folder = base / f"engine-{source_digest()}"
        self.writable, self.problem = _kernel_cache.writable_folder(self.folder)
        if self.writable:
            self._prune(base)

    def _prune(self, base: Path) -> None:
        """Mark this folder as newest by use and drop all but the KEEP_CACHES newest ``engine-*`` folders."""
        try:
            os.utime(self.folder)
            old = sorted((p for p in base.glob("engine-*") if p.is_dir() and p != self.folder),
                         key=lambda p: p.stat().st_mtime)
            for p in old[:max(0, len(old) - (KEEP_CACHES - 1))]:
                shutil.rmtree(p, ignore_errors=True)
        except OSError:
            pass


USER_CACHE: UserCache | None = None
if JIT_ENABLED:
    from . import _kernel_cache

    if _numba_was_imported:
        _apply_target()
    USER_CACHE = UserCache()
    _kernel_cache.configure(USER_CACHE.folder, USER_CACHE.writable, USER_CACHE.problem, TARGET.shipped,
                            TARGET.shipped_package)


def cache_folder() -> Path | None:
    """The user cache folder this process writes compiled kernels to (None without numba)."""
    return USER_CACHE.folder if USER_CACHE is not None else None


def kernel_counts() -> dict:
    """What this process's engine kernels did so far: ``compiled`` (numba compiled them), ``loaded_shipped``
    and ``loaded_user`` (machine code read from the shipped and the user cache), ``damaged`` (cache files
    that could not be read back and were compiled again). All zero without numba."""
    return dict(_kernel_cache.COUNTS) if JIT_ENABLED else {"compiled": 0, "loaded_shipped": 0, "loaded_user": 0,
                                                             "damaged": 0}


def describe() -> str:
    """One line: the CPU target the kernels are compiled for, the shipped cache used or why not, the user cache."""
    if not JIT_ENABLED:
        return "numba is off: kernels run as plain Python"
    shipped = f"shipped kernels used ({TARGET.reason})" if TARGET.shipped else f"shipped kernels not used ({TARGET.reason})"
    cpu = TARGET.cpu_name or "this CPU"
    write = "" if USER_CACHE.writable else f", not writable: {USER_CACHE.problem}"
    return f"kernels for {cpu}; {shipped}; user cache {USER_CACHE.folder} ({USER_CACHE.chosen_by}{write})"


class _FirstCompileNotice:
    """One line on stderr when the process first compiles an engine kernel (a cold numba cache: the first
    call of a fresh install pauses for seconds to a minute, which without it looks like a hang). Callers
    that report compile progress themselves (``warmup.compile_kernels``) call ``given()`` first."""

    def __init__(self):
        self.said = False

    def given(self) -> None:
        self.said = True

    def on_start(self) -> None:
        if not self.said:
            self.said = True
            where = (f"they are cached in {USER_CACHE.folder}" if USER_CACHE.writable
                     else "kept for this process only, see below")
            print(f"engine: compiling numba kernels for first use, a pause of seconds to a minute that happens once "
                  f"({where})", file=sys.stderr, flush=True)


first_compile_notice = _FirstCompileNotice()


def _listen_for_compiles() -> None:
    """Count the engine's kernels numba compiles (``kernel_counts``) and give the first-compile notice."""
    from numba.core import event

    package = __name__.rsplit(".", 1)[0]  # "engine", or "<extension>.engine" inside Blender

    class _Listener(event.Listener):
        def on_start(self, ev):
            if ev.data["dispatcher"].py_func.__module__.startswith(package):
                _kernel_cache.COUNTS["compiled"] += 1
                if not first_compile_notice.said:
                    first_compile_notice.on_start()

        def on_end(self, ev):
            pass

    event.register("numba:compile", _Listener())


if JIT_ENABLED:
    _listen_for_compiles()

# Let LLVM contract to FMA, but keep IEEE NaN/inf semantics so divergence checks still see them.
# No "reassoc": with it LLVM vectorises a sum in a loop that also stores (PCG's `p[k] = z[k];
# rz += r[k] * z[k]`) behind a run-time alias check that is conservative (it takes the scalar loop
# when two arrays start less than 256 bytes apart, overlapping or not), so the sum's rounding, and
# with it the whole trajectory, depended on where the allocator had put the arrays: the same step
# on the same inputs gave different bits from one run to the next. Without it both loops add in
# source order. Step times measured the same either way.
_FASTMATH = {"contract", "arcp", "nsz"}


def kernel(fn=None, *, parallel: bool = False, inline: bool | str = False, simd_lanes: bool = False,
           refcounts: bool = True):
    """Compile ``fn`` with ``numba.njit(fastmath=_FASTMATH)`` and the engine's disk cache when numba is on.

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
    ``simd_lanes=True`` compiles the kernel (and what it calls) with LLVM's SLP vectorizer, which numba
    leaves off by default: for kernels written in ``algorithms._lanes`` style.

    ``refcounts=False`` compiles without numba's reference counting (``_nrt=False``): no increment and
    decrement around every array view, argument and tuple of arrays (a ``Workspace`` is 21 of them), which
    was much of the IR numba builds and LLVM compiles for the ABA path, and a third of a small model's
    call. Only for kernels that neither allocate nor return arrays (numba refuses to compile an allocation
    then) and whose views live no longer than the call; every argument is borrowed from the caller.
    """

    if inline not in (True, False, "llvm"):
        raise ValueError(f"kernel: inline must be True, False or 'llvm', got {inline!r}")
    inlining = {"forceinline": True} if inline == "llvm" else {"inline": "always" if inline else "never"}

    def wrap(f):
        if not JIT_ENABLED:
            return f
        options = dict(parallel=parallel, nogil=True, error_model="numpy", fastmath=_FASTMATH,
                       no_cfunc_wrapper=True, _nrt=refcounts, **inlining)
        if inline == "llvm":
            d = _cached_njit(f, no_cpython_wrapper=True, **options)
            d.__class__ = _KernelHelper
            d._twin_options = options
        else:
            d = _cached_njit(f, **options)
        return _with_slp_vectorizer(d) if simd_lanes else d

    return wrap if fn is None else wrap(fn)


if JIT_ENABLED:
    class _KernelHelper(_numba.core.registry.CPUDispatcher):
        """An ``inline="llvm"`` helper: compiled for the kernels that call it without numba's CPython wrapper
        (the code that unboxes every argument from Python; for a helper that takes a model's grouped arrays
        it is larger than the helper, and each helper compiled during a first call paid for one). A call
        from Python (tests, set-up code) goes to a twin compiled with a wrapper on its first such call,
        cached on disk under its own name."""

        def __call__(self, *args, **kwargs):
            twin = self.__dict__.get("_python_twin")
            if twin is None:
                f = self.py_func
                g = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
                g.__qualname__ = f.__qualname__ + "__called_from_python"  # its own numba cache file
                g.__module__, g.__doc__, g.__kwdefaults__ = f.__module__, f.__doc__, f.__kwdefaults__
                twin = self.__dict__["_python_twin"] = _cached_njit(g, **self._twin_options)
            return twin(*args, **kwargs)


def _cached_njit(f, **options):
    """``numba.njit(**options)(f)`` with the engine's two-layer disk cache (``_kernel_cache``) in place of
    numba's ``cache=True``, whose locators would write next to the installed sources."""
    d = _numba.njit(**options)(f)
    d._cache = _kernel_cache.EngineCache(f)
    return d


def _with_slp_vectorizer(dispatcher):
    """Run the dispatcher's compilations with numba's ``SLP_VECTORIZE`` switch on (numba reads it
    when it builds each pass pipeline; compilations hold numba's global compiler lock)."""
    compile_ = dispatcher.compile

    def compile(sig):
        config = _numba.core.config
        before = config.SLP_VECTORIZE
        config.SLP_VECTORIZE = 1
        try:
            return compile_(sig)
        finally:
            config.SLP_VECTORIZE = before

    dispatcher.compile = compile
    return dispatcher


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


def compiled_for(fn, args):
    """Kernel ``fn``'s compiled entry point for the types of ``args`` (compiled, or loaded from numba's
    cache, now). Calling it skips numba's typing of every argument on every call — several µs for the
    grouped model arrays, more than a small model's whole RedMax step — so the caller must pass
    arguments of exactly these types (dtype, ndim, layout) each time. Without numba: ``fn`` itself.

    The entry point is remembered per ``fn`` and argument key (``_type_key``): numba's ``typeof`` of the
    ≈ 25 arguments of the one-call step (namedtuples of arrays) took ≈ 0.35 ms, more than a small bake's
    first step, for every new Simulator (RL environments, sweeps, the settings advisor's trials)."""
    if not JIT_ENABLED:
        return fn
    key = (fn, tuple(_type_key(a) for a in args))
    entry = _ENTRY_POINTS.get(key)
    if entry is None:
        entry = _ENTRY_POINTS[key] = fn.compile(tuple(_numba.typeof(a) for a in args))
    return entry


_ENTRY_POINTS: dict = {}  # (kernel, argument keys) -> compiled entry point (compiled_for)


class EntryPoints:
    """The compiled entry points of the kernels one owner (a stepper, a stage) calls step after step:
    ``entries(fn, *args)`` calls ``fn``'s entry point for these argument types, resolved at its first call
    (``compiled_for``) and then called directly. numba's dispatcher types every argument of every call again:
    ≈ 3–8 µs for the model's tree and a workspace (namedtuples of ~20 arrays), more than a small kernel's work,
    and a bridge's step makes a dozen such calls.

    One entry point per kernel and ``variant`` (a hashable the caller picks when it passes other types): the
    caller must pass arguments of the same types on every call — its own buffers, arrays it allocated or made
    contiguous float64 (``np.ascontiguousarray(x, float)``) of a fixed ndim. numba's entry point checks only
    an array's item size; another layout or ndim would be read wrongly. ``ENGINE_CHECK_ENTRY_POINTS=1`` (the
    tests) compares every call's argument types with the first call's and raises on a difference. Without
    numba, or for a kernel ``compiled_for`` cannot resolve, the kernel itself is called."""

    CHECK = os.environ.get("ENGINE_CHECK_ENTRY_POINTS", "").strip().lower() in ("1", "true", "yes", "on")

    def __init__(self):
        self._entries = {}  # (fn, variant) -> entry point
        self._keys = {}  # (fn, variant) -> argument types of the first call (CHECK)

    def __call__(self, fn, *args, variant=None):
        entry = self._entries.get((fn, variant))
        if entry is None:
            entry = self._resolve(fn, args, variant)
        elif self.CHECK:
            self._check(fn, args, variant)
        return entry(*args)

    def _resolve(self, fn, args, variant):
        entry = fn
        if JIT_ENABLED and isinstance(fn, _numba.core.registry.CPUDispatcher) and not isinstance(fn, _KernelHelper):
            try:
                entry = compiled_for(fn, args)
            except Exception:  # (a typing error) numba's dispatcher says it on the call, as without entry points
                entry = fn
        self._entries[(fn, variant)] = entry
        if self.CHECK and JIT_ENABLED:
            self._keys[(fn, variant)] = tuple(_type_key(a) for a in args)
        return entry

    def _check(self, fn, args, variant):
        if JIT_ENABLED and tuple(_type_key(a) for a in args) != self._keys[(fn, variant)]:
            raise TypeError(f"EntryPoints: {getattr(fn, '__name__', fn)} (variant {variant!r}) called with argument "
                            "types other than its first call's")


def _type_key(a):
    """A hashable key that determines numba's type of ``a``: equal keys, equal ``numba.typeof``. A plain
    ndarray of a simple dtype by dtype, ndim, contiguity (C and F flags: numba's layout), writeability
    (numba's readonly arrays) and alignment; a tuple (a namedtuple too) by its class and its members' keys;
    a Python bool, float or int by class (an int also by its bit length: numba types it int64 or uint64
    by value); anything else by its numba type itself (exact, at typeof's cost)."""
    t = type(a)
    if t is np.ndarray and a.dtype.fields is None and not a.dtype.hasobject:
        f = a.flags
        return (a.dtype, a.ndim, f.c_contiguous, f.f_contiguous, f.writeable, f.aligned)
    if isinstance(a, tuple):
        return (t, tuple(_type_key(x) for x in a))
    if t is bool or t is float:
        return t
    if t is int:
        return (t, a.bit_length() < 32, a.bit_length() < 64, a >= 0)
    return ("numba", _numba.typeof(a))


def _contiguous_view_python(buf, offset, shape):
    size = 1
    for s in shape:
        size *= s
    return buf[offset:offset + size].reshape(shape)


def _make_contiguous_view():
    """numba intrinsic: a C-contiguous view of ``shape`` on a 1-D contiguous buffer from ``offset``.

    What ``buf[offset:offset + size].reshape(shape)`` gives, without numba's general reshape (a
    helper call of ≈ 45 ns each, which dominates unpacking a workspace of 21 arrays). No bounds
    check: callers build offsets from the sizes that made the buffer. The view borrows the buffer
    (no reference count): use it only while the buffer is alive, and never return it to Python.
    """
    from numba.core import cgutils, types
    from numba.core.imputils import impl_ret_borrowed
    from numba.extending import intrinsic
    from numba.np.arrayobj import make_array, populate_array

    @intrinsic
    def contiguous_view(typingctx, buf, offset, shape):
        if not (isinstance(buf, types.Array) and buf.ndim == 1 and buf.layout == "C"
                and isinstance(shape, types.UniTuple) and isinstance(offset, types.Integer)):
            return None
        retty = buf.copy(ndim=shape.count, layout="C")

        def codegen(context, builder, sig, args):
            src = make_array(sig.args[0])(context, builder, args[0])
            intp = context.get_value_type(types.intp)
            dims = [builder.sext(d, intp) if d.type.width < intp.width else d
                    for d in cgutils.unpack_tuple(builder, args[2], shape.count)]
            itemsize = src.itemsize
            strides, step = [], itemsize
            for d in reversed(dims):
                strides.insert(0, step)
                step = builder.mul(step, d)
            off = args[1]
            off = builder.sext(off, intp) if off.type.width < intp.width else off
            out = make_array(retty)(context, builder)
            # no meminfo: a borrowed view, so neither it nor the views taken from it are reference
            # counted (atomic updates of the one shared counter cost more than a small kernel's work)
            populate_array(out, data=builder.gep(src.data, [off]), shape=dims, strides=strides, itemsize=itemsize,
                           meminfo=None, parent=None)
            return impl_ret_borrowed(context, builder, retty, out._getvalue())

        return retty(buf, offset, shape), codegen

    return contiguous_view


contiguous_view = _make_contiguous_view() if JIT_ENABLED else _contiguous_view_python


def _make_borrowed():
    """numba intrinsic: ``x`` (an array, or a tuple / namedtuple whose array fields are to be borrowed;
    other fields pass through) with every array's reference to its memory dropped.

    Inside a kernel every view taken of a reference-counted array (``a[i]`` in a loop over bodies)
    updates the array's shared counter atomically, twice; in a small model's RedMax step those updates
    cost about as much as the arithmetic. A borrowed array (no meminfo, like ``contiguous_view``'s)
    and its views are not counted. Use only while the caller holds the arrays (a kernel's arguments,
    for the length of the call); never return a borrowed array or store it in a container that outlives
    the call."""
    from numba.core import types
    from numba.core.imputils import impl_ret_borrowed
    from numba.extending import intrinsic
    from numba.np.arrayobj import make_array

    def drop(context, builder, ty, value):
        if isinstance(ty, types.Array):
            ary = make_array(ty)(context, builder, value)
            ary.meminfo = context.get_constant_null(types.MemInfoPointer(types.voidptr))
            ary.parent = context.get_constant_null(types.pyobject)
            return ary._getvalue()
        if isinstance(ty, types.BaseTuple):
            for k, t in enumerate(ty.types):
                value = builder.insert_value(value, drop(context, builder, t, builder.extract_value(value, k)), k)
        return value

    @intrinsic
    def borrowed(typingctx, x):
        if not isinstance(x, (types.Array, types.BaseTuple)):
            return None

        def codegen(context, builder, sig, args):
            return impl_ret_borrowed(context, builder, sig.return_type, drop(context, builder, sig.args[0], args[0]))

        return x(x), codegen

    return borrowed


borrowed = _make_borrowed() if JIT_ENABLED else (lambda x: x)
