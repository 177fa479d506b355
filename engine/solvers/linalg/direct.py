"""Sparse symmetric direct solver with the symbolic analysis done once per sparsity pattern.

RedMax's system matrix M̃ (thesis 000, Eq. 2.14) is symmetric positive definite
and keeps one sparsity pattern for a whole simulation, so the ordering and
symbolic factorization are computed when a pattern is first seen and every
later ``factor(A)`` only refactors numerically; a new pattern (compared by the
CSC index arrays) is analysed again, only then.

Backends (all factor the full symmetric CSC matrix A, n × n):

* ``"pardiso"``: MKL PARDISO through ``pypardiso``'s library handle, used the
  way the thesis used it — real SPD (mtype 2) on the upper triangle, phase 11
  (METIS ordering + symbolic) once per pattern, phase 22 (numeric Cholesky)
  per ``factor`` and phase 33 per ``solve``;
* ``"cholmod"``: CHOLMOD (``scikit-sparse``): ``analyze`` once (AMD/METIS,
  supernodal), ``cholesky_inplace`` per ``factor``;
* ``"ldl"``: the engine's numba up-looking LDLᵀ (``sparse_ldl.SparseLDL``),
  elimination tree once, in the caller's ordering (``perm``);
* ``"lapack"``: dense LAPACK Cholesky of A (scipy), for n ≤ ``LAPACK_MAX_N``:
  no analysis at all, and on the thesis's bridges, whose M̃ is half dense,
  faster than any scalar sparse kernel.

``backends="auto"`` (the default) takes the backends of ``AUTO_BACKENDS`` that
import here and on the first pattern times them (factor + solve, interleaved
rounds after a warm-up call) on the actual matrix, then keeps the fastest: no backend wins
everywhere (PARDISO's blocked kernels win on the bridges' dense chain blocks,
the scalar LDLᵀ on very sparse trees, where PARDISO's per-call overhead
dominates). ``ldl`` and ``lapack`` need only numpy/scipy/numba, so the solver
always has a backend. CHOLMOD is not in ``AUTO_BACKENDS``: its speed is that of
the system's BLAS and OpenMP (Debian's SuiteSparse 5 here: reference BLAS), and
its idle OpenMP threads spin after each call and slow whatever runs next (two
identical factorizations in a row: 171 then 790 µs), so it is used only when
named (and measured side by side by ``bench direct``, OpenMP on one thread).
The choice and the tuning times are in ``backend`` and ``describe()``. A
backend that fails on an indefinite matrix (PARDISO's SPD
mode, LAPACK, CHOLMOD when it chose a supernodal Cholesky;
``geometric_stiffness="springs"`` can make M̃ indefinite) hands that
factorization to the LDLᵀ, which needs only nonzero pivots (``fallbacks``
counts those).
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib
import threading
import time
import weakref

import numpy as np
import scipy.linalg
import scipy.sparse

from .sparse_ldl import SparseLDL

BACKENDS = ("pardiso", "cholmod", "ldl", "lapack")
AUTO_BACKENDS = ("pardiso", "ldl", "lapack")  # what backends="auto" chooses from (see the module docstring)
TUNE_ROUNDS = 5  # interleaved timing rounds (at least) when choosing the backend, once per solver
TUNE_BUDGET = 0.15  # s: more rounds (up to 12 × TUNE_ROUNDS) while they fit
PARDISO_THREADS = 1  # like every engine kernel (see _PardisoFactor)
LAPACK_MAX_N = 2500  # dense n × n doubles: 50 MB at this size; above it, dense Cholesky is slower than sparse
# The backend each pattern was tuned to in this process, by (candidates, pattern, ordering): every later solver of that
# pattern takes it untimed. The backends agree only to round-off, so without this two Simulators of one scene could
# time differently (a loaded machine, another thread) and step to different bits; it also spares each new Simulator
# the tuning (up to TUNE_BUDGET s). The lock lets one thread tune while the others wait for its choice.
_CHOSEN: dict = {}
_CHOOSING = threading.Lock()


def available_backends(backends=BACKENDS) -> tuple:
    """The backends of ``backends`` whose libraries import here (``ldl`` and ``lapack`` always do)."""
    out = []
    for name in backends:
        if name not in BACKENDS:
            raise ValueError(f"unknown direct-solver backend {name!r}; expected one of {', '.join(BACKENDS)}")
        module = {"pardiso": "pypardiso", "cholmod": "sksparse.cholmod"}.get(name)
        if module is not None:
            try:
                importlib.import_module(module)
            except Exception:  # ImportError, or a wheel whose shared library does not load
                continue
        out.append(name)
    return tuple(out)


@contextlib.contextmanager
def mkl_threads(n: int = 1):
    """MKL (PARDISO) limited to ``n`` threads inside the block when pypardiso is installed (the benches time
    every solver on one thread); yields whether MKL was found."""
    if "pardiso" not in available_backends(("pardiso",)):
        yield False
        return
    import pypardiso

    lib = pypardiso.ps.libmkl
    previous = lib.MKL_Get_Max_Threads()
    lib.MKL_Set_Num_Threads(int(n))
    try:
        yield True
    finally:
        lib.MKL_Set_Num_Threads(previous)


# ------------------------------------------------------------------ backends
class _PardisoFactor:
    """PARDISO, real SPD (mtype 2): phase 11 here (ordering + symbolic), 22 per factor, 33 per solve.

    Runs on ``PARDISO_THREADS`` MKL threads, set thread-locally around each call (MKL's global setting is
    left alone): on this 2-core shared machine two threads made a 1023-dof bridge step 1.7× slower."""

    name = "pardiso"
    MTYPE = 2

    def __init__(self, A):
        import pypardiso

        self._pardiso = pypardiso.ps._mkl_pardiso  # the library's entry point, argtypes set by pypardiso
        self._set_local_threads = pypardiso.ps.libmkl.MKL_Set_Num_Threads_Local
        n = A.shape[0]
        # CSC column j, rows i ≥ j, read as CSR row j: the upper triangle PARDISO wants for symmetric types
        col = np.repeat(np.arange(n), np.diff(A.indptr))
        keep = A.indices >= col
        self._take = np.flatnonzero(keep)
        self._ia = np.concatenate([[0], np.cumsum(np.bincount(col[keep], minlength=n))]).astype(np.int32) + 1
        self._ja = (A.indices[keep]).astype(np.int32) + 1  # 1-based (iparm(35) = 0)
        self._a = np.ascontiguousarray(A.data[self._take], dtype=float)
        self.n = n
        self._pt = np.zeros(64, dtype=np.int64)
        self._iparm = np.zeros(64, dtype=np.int32)  # iparm(1) = 0: PARDISO's defaults (METIS nested dissection)
        self._perm = np.zeros(n, dtype=np.int32)
        self._call(11, np.zeros(n), np.zeros(n), 1)
        # release PARDISO's memory (phase −1) when this factor goes away
        weakref.finalize(self, _pardiso_release, self._pardiso, self._pt, self._ia, self._ja, n)

    def _call(self, phase, b, x, nrhs):
        import ctypes

        i32 = ctypes.POINTER(ctypes.c_int32)
        err = ctypes.c_int32(0)
        previous = self._set_local_threads(PARDISO_THREADS)
        self._pardiso(self._pt.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)), ctypes.byref(ctypes.c_int32(1)),
                      ctypes.byref(ctypes.c_int32(1)), ctypes.byref(ctypes.c_int32(self.MTYPE)),
                      ctypes.byref(ctypes.c_int32(phase)), ctypes.byref(ctypes.c_int32(self.n)),
                      self._a.ctypes.data_as(ctypes.c_void_p), self._ia.ctypes.data_as(i32),
                      self._ja.ctypes.data_as(i32), self._perm.ctypes.data_as(i32), ctypes.byref(ctypes.c_int32(nrhs)),
                      self._iparm.ctypes.data_as(i32), ctypes.byref(ctypes.c_int32(0)),
                      b.ctypes.data_as(ctypes.c_void_p), x.ctypes.data_as(ctypes.c_void_p), ctypes.byref(err))
        self._set_local_threads(previous)
        if err.value == -4 and phase == 22:  # a zero or negative pivot: not positive definite
            raise np.linalg.LinAlgError("PARDISO (SPD): the matrix is not positive definite")
        if err.value != 0:
            raise RuntimeError(f"PARDISO phase {phase} failed with error {err.value} (see the MKL PARDISO manual)")

    def factor(self, values):
        np.take(values, self._take, out=self._a)
        self._call(22, np.zeros(1), np.zeros(1), 1)

    def solve(self, b):
        B = np.asfortranarray(b, dtype=float)
        x = np.empty_like(B, order="F")
        self._call(33, B, x, 1 if B.ndim == 1 else B.shape[1])
        return np.ascontiguousarray(x)


def _pardiso_release(pardiso, pt, ia, ja, n):
    import ctypes

    i32 = ctypes.POINTER(ctypes.c_int32)
    z = np.zeros(1)
    pardiso(pt.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)), ctypes.byref(ctypes.c_int32(1)),
            ctypes.byref(ctypes.c_int32(1)), ctypes.byref(ctypes.c_int32(_PardisoFactor.MTYPE)),
            ctypes.byref(ctypes.c_int32(-1)), ctypes.byref(ctypes.c_int32(n)), z.ctypes.data_as(ctypes.c_void_p),
            ia.ctypes.data_as(i32), ja.ctypes.data_as(i32), None, ctypes.byref(ctypes.c_int32(1)),
            np.zeros(64, dtype=np.int32).ctypes.data_as(i32), ctypes.byref(ctypes.c_int32(0)),
            z.ctypes.data_as(ctypes.c_void_p), z.ctypes.data_as(ctypes.c_void_p), ctypes.byref(ctypes.c_int32(0)))


class _CholmodFactor:
    """CHOLMOD: ``analyze`` (fill-reducing ordering, supernodal symbolic) once, ``cholesky_inplace`` per factor."""

    name = "cholmod"

    def __init__(self, A):
        from sksparse.cholmod import analyze

        self._A = scipy.sparse.csc_matrix((A.data.copy(), A.indices, A.indptr), shape=A.shape)
        self._factor = analyze(self._A)

    def factor(self, values):
        from sksparse.cholmod import CholmodNotPositiveDefiniteError

        self._A.data[:] = values
        try:
            self._factor.cholesky_inplace(self._A)
        except CholmodNotPositiveDefiniteError as e:
            raise np.linalg.LinAlgError(f"CHOLMOD: {e}") from None

    def solve(self, b):
        return self._factor(np.asarray(b, dtype=float))


class _LDLFactor:
    """The engine's LDLᵀ (elimination tree and column counts once), in the given ordering."""

    name = "ldl"

    def __init__(self, A, perm=None):
        self._ldl = SparseLDL(A.indptr, A.indices, A.shape[0], perm)

    def factor(self, values):
        self._ldl.factor(values)

    def solve(self, b):
        b = np.asarray(b, dtype=float)
        if b.ndim == 1:
            return self._ldl.solve(b)
        return np.column_stack([self._ldl.solve(b[:, k]) for k in range(b.shape[1])])


class _LapackFactor:
    """Dense LAPACK Cholesky (potrf) of A scattered into an n × n array."""

    name = "lapack"

    def __init__(self, A):
        n = A.shape[0]
        self._rows = A.indices
        self._cols = np.repeat(np.arange(n), np.diff(A.indptr))
        self._dense = np.zeros((n, n))
        self._chol = None

    def factor(self, values):
        D = self._dense
        D[...] = 0.0
        D[self._rows, self._cols] = values
        try:
            self._chol = scipy.linalg.cho_factor(D, lower=True, overwrite_a=True, check_finite=False)
        except np.linalg.LinAlgError as e:
            raise np.linalg.LinAlgError(f"LAPACK Cholesky: {e}") from None

    def solve(self, b):
        return scipy.linalg.cho_solve(self._chol, np.asarray(b, dtype=float), check_finite=False)


def make_backend(name: str, A, perm=None):
    """The factor object of backend ``name`` for the pattern of the CSC matrix A (its analysis done)."""
    if name == "pardiso":
        return _PardisoFactor(A)
    if name == "cholmod":
        return _CholmodFactor(A)
    if name == "ldl":
        return _LDLFactor(A, perm)
    if name == "lapack":
        return _LapackFactor(A)
    raise ValueError(f"unknown direct-solver backend {name!r}; expected one of {', '.join(BACKENDS)}")


# ------------------------------------------------------------------ the solver
class DirectSolver:
    """``factor(A)`` then ``solve(b)`` for symmetric A (scipy CSC, full pattern, n × n); the analysis of a
    pattern is reused until ``factor`` is given a matrix with another pattern.

    backends: "auto" (the installed ones of ``AUTO_BACKENDS``, the fastest chosen by timing them on the first
    matrix of a pattern, once per process: ``_CHOSEN``), a name of ``BACKENDS``, or a tuple of names to choose
    from (the uninstalled ones dropped; e.g. ``("ldl", "lapack")`` runs without the optional libraries).
    perm: the LDLᵀ backend's ordering (n,) (default: natural).
    """

    def __init__(self, backends="auto", *, perm=None):
        names = AUTO_BACKENDS if backends == "auto" else ((backends,) if isinstance(backends, str) else tuple(backends))
        self.candidates = available_backends(names)
        if not self.candidates:
            raise ValueError(f"none of the direct-solver backends {', '.join(names)} is installed")
        self.perm = perm
        self.backend = None  # chosen on the first factor
        self.tuning = {}  # backend → seconds of one factor + solve on the first matrix
        self.analyses = 0  # symbolic analyses run (one per pattern, per backend timed)
        self.fallbacks = 0  # factorizations handed to the LDLᵀ (a Cholesky backend met an indefinite matrix)
        self.reused_choice = False  # the backend was chosen by an earlier solver of this pattern (``_CHOSEN``)
        self._pattern = None  # (indptr, indices) of the analysed pattern
        self._factor = None
        self._ldl_fallback = None
        self._active = None  # the factor of the last ``factor`` call

    def describe(self) -> str:
        """One line: the chosen backend and, when it was chosen by timing, what each candidate took."""
        if self.backend is None:
            return f"not factored yet (candidates: {', '.join(self.candidates)})"
        timed = ", ".join(f"{k} {1e3 * v:.3g} ms" for k, v in sorted(self.tuning.items(), key=lambda kv: kv[1]))
        if len(self.tuning) <= 1:
            return f"{self.backend}"
        when = "chosen earlier in this process for this pattern" if self.reused_choice else "on the first matrix"
        return f"{self.backend} (factor + solve {when}: {timed})"

    def factor(self, A) -> None:
        """Numeric factorization of A (CSC, symmetric, the full pattern with sorted row indices); analyses A's
        pattern first when it is not the one analysed last. Raises LinAlgError if A is singular.

        A pattern is recognised by its index arrays: the same ``indptr``/``indices`` objects (the fast path, a
        step's cost) or equal ones. Change a pattern by passing new arrays, not by editing them in place."""
        pat = self._pattern
        if pat is None or A.indptr is not pat[0] or A.indices is not pat[1]:
            self._new_pattern(A)
        values = A.data
        try:
            self._factor.factor(values)
            self._active = self._factor
        except np.linalg.LinAlgError:
            if self._factor.name == "ldl":
                raise
            if self._ldl_fallback is None:
                self._ldl_fallback = _LDLFactor(A, self.perm)
            self._ldl_fallback.factor(values)
            self._active = self._ldl_fallback
            self.fallbacks += 1

    def _new_pattern(self, A) -> None:
        """Checks A; analyses its pattern unless it equals the analysed one (then only adopts the new arrays)."""
        if not (scipy.sparse.issparse(A) and A.format == "csc") or A.shape[0] != A.shape[1]:
            raise ValueError(f"DirectSolver.factor: A must be a square scipy CSC matrix, got {type(A).__name__} "
                             f"{getattr(A, 'shape', '')}")
        if A.dtype != np.float64:
            raise ValueError(f"DirectSolver.factor: A must hold float64 values, got {A.dtype}")
        if not A.has_sorted_indices:
            raise ValueError("DirectSolver.factor: A's row indices must be sorted within each column "
                             "(A.sort_indices() first)")
        pat = self._pattern
        if pat is not None and np.array_equal(A.indptr, pat[0]) and np.array_equal(A.indices, pat[1]):
            self._pattern = (A.indptr, A.indices)
            return
        self._analyse(A)

    def solve(self, b) -> np.ndarray:
        """x = A⁻¹ b for the last factored A; b (n,) or (n, k)."""
        if self._active is None:
            raise RuntimeError("DirectSolver.solve called before factor")
        return self._active.solve(b)

    def _analyse(self, A) -> None:
        n = A.shape[0]
        names = [c for c in self.candidates if c != "lapack" or n <= LAPACK_MAX_N] or ["ldl"]
        if self.backend is not None:  # a later pattern: the backend chosen on the first stays
            names = [self.backend]
        self._ldl_fallback = None
        if len(names) == 1:
            self._factor = make_backend(names[0], A, self.perm)
            self.analyses += 1
        else:
            key = _pattern_key(names, A, self.perm)
            with _CHOOSING:
                chosen = _CHOSEN.get(key)
                if chosen is None:
                    self._factor = self._fastest(names, A)
                    _CHOSEN[key] = (self._factor.name, dict(self.tuning))
            if chosen is not None:
                self._factor = make_backend(chosen[0], A, self.perm)
                self.tuning, self.reused_choice = dict(chosen[1]), True
                self.analyses += 1
        self.backend = self._factor.name
        self._pattern = (A.indptr, A.indices)

    def _fastest(self, names, A):
        """Time factor + solve of each backend on A and keep the fastest: one warm-up call (JIT, library
        start-up), the best of three timed calls (one when it takes over 50 ms), which drops the backends over
        three times the best, then interleaved rounds
        of one call each among the rest (at least ``TUNE_ROUNDS``, more while they fit in ``TUNE_BUDGET``
        seconds), the minimum kept: on a shared machine the fastest single call is the one least disturbed,
        and interleaving lets slow phases hit every backend alike."""
        values = A.data
        b = np.ones(A.shape[0])
        built = {}
        for name in names:
            try:
                f = make_backend(name, A, self.perm)
                self.analyses += 1
                f.factor(values)
                f.solve(b)
            except np.linalg.LinAlgError:  # indefinite for a Cholesky backend: not a candidate for this matrix
                continue
            built[name] = f
        if not built:  # every Cholesky backend failed and "ldl" was not a candidate
            self.analyses += 1
            return _LDLFactor(A, self.perm)

        def one_call(f):
            t0 = time.perf_counter()
            f.factor(values)
            f.solve(b)
            return time.perf_counter() - t0

        first = {name: one_call(f) for name, f in built.items()}
        for _ in range(2):  # a preempted first call must not drop a backend: the best of three, when cheap
            for name, f in built.items():
                if first[name] < 0.05:
                    first[name] = min(first[name], one_call(f))
        fastest = min(first.values())
        best = {name: t for name, t in first.items() if t <= 3.0 * fastest}
        affordable = int(TUNE_BUDGET / sum(best.values()))
        rounds = 0 if len(best) == 1 else max(TUNE_ROUNDS, min(12 * TUNE_ROUNDS, affordable))
        order = list(best)
        for r in range(rounds):  # alternate the order: a library's idle threads slow whatever runs next
            for name in (order if r % 2 == 0 else order[::-1]):
                best[name] = min(best[name], one_call(built[name]))
        self.tuning = {**first, **best}
        return built[min(best, key=best.get)]


def _pattern_key(names, A, perm) -> tuple:
    """What a tuning is remembered by: the candidates, the size and a digest of the pattern and the LDLᵀ ordering."""
    digest = hashlib.blake2b(digest_size=16)
    for arr in (A.indptr, A.indices) + (() if perm is None else (np.asarray(perm),)):
        digest.update(np.ascontiguousarray(arr).tobytes())
    return tuple(names), A.shape[0], digest.hexdigest()
