"""numba's on-disk cache for the engine's kernels: the shipped cache, then the user cache (part of ``_jit``,
which alone imports this module; where the caches are and which CPU they serve: ``_kernel_store``).

numba's own ``FunctionCache`` takes the first of its locators that can *write* a folder: for a package
installed read-only it would pick ``__pycache__`` next to the sources or a user-wide folder, and it
ignored a populated cache on a read-only file system (everything compiled again). Here each kernel's
cache folder is ``<root>/<its source folder relative to the engine package>``, the same layout under the
shipped and the user root, so a cache built in one place serves the package installed anywhere: numba
stamps an index with a hash of the source file's *content* and keys each entry by the signature, the
codegen's ``magic_tuple()`` (LLVM triple, CPU name, CPU features) and hashes of the function's bytecode
and closure — no path, no modification time.

A cached entry names the Python modules it was compiled in (its namedtuple argument types by class,
its environment and function descriptor by module name). The shipped kernels are built with the
package imported as ``engine``; inside Blender it is ``bl_ext.<repository>.redmax.engine``. Reading the
shipped layer renames the built package to this one (``_Renaming``): the entries are then keyed by
this process's own types, and their environments hold this package's module globals.

Loading reads the shipped layer first, then the user layer; saving writes the user layer only, and
only when it is writable (otherwise the kernel lives in memory for this process, said once). A file
that cannot be read back (a truncated or corrupted index or data file: ``EOFError``,
``UnpicklingError``, an object file LLVM refuses) is reported once with its folder, removed when it
is in the user layer, and its kernel compiled again and re-saved: the cache's one health check.
"""
from __future__ import annotations

import os
import pickle
import sys
import tempfile
from pathlib import Path

from numba.core import caching, environment

from . import _kernel_store as store

# The layout (set once by ``configure``) and what this process loaded and compiled (kernel_counts).
_layout = {"user": None, "user_writable": False, "user_problem": "", "shipped": None, "rename": None}
COUNTS = {"compiled": 0, "loaded_shipped": 0, "loaded_user": 0, "damaged": 0}
_said: set = set()


PACKAGE = __name__.rsplit(".", 1)[0]  # "engine", or "bl_ext.<repository>.redmax.engine" inside Blender


def configure(user: Path | None, user_writable: bool, user_problem: str, shipped: Path | None,
              shipped_package: str | None = None) -> None:
    """Where the layers are; ``shipped_package``: the package name the shipped kernels were built under."""
    rename = (shipped_package, PACKAGE) if shipped_package and shipped_package != PACKAGE else None
    _layout.update(user=user, user_writable=user_writable, user_problem=user_problem, shipped=shipped, rename=rename)


class _Renaming(pickle.Unpickler):
    """Unpickles a cache entry built under package ``built`` as if built under ``here`` (module doc)."""

    def __init__(self, data: bytes, built: str, here: str):
        import io

        super().__init__(io.BytesIO(data))
        self.built, self.here = built, here

    def rename(self, module: str) -> str:
        if module == self.built or module.startswith(self.built + "."):
            return self.here + module[len(self.built):]
        return module

    def find_class(self, module, name):
        found = super().find_class(self.rename(module), name)
        if found is environment._rebuild_env:
            return lambda modname, consts, env_name: found(self.rename(modname), consts, env_name)
        return found


def _loads(data: bytes, rename):
    if rename is None:
        return pickle.loads(data)
    loaded = _Renaming(data, *rename)
    value = loaded.load()
    if isinstance(value, tuple) and value and hasattr(value[1], "modname"):  # a CompileResult's reduced form
        value[1].modname = loaded.rename(value[1].modname)
    return value


def _say_once(key, text: str) -> None:
    if key not in _said:
        _said.add(key)
        print(f"engine: {text}", file=sys.stderr, flush=True)


def _relative_folder(py_file: str) -> Path:
    """A kernel's source folder relative to the engine package (a hashed name for a file outside it)."""
    folder = Path(py_file).resolve().parent
    try:
        return folder.relative_to(store.PACKAGE_DIR)
    except ValueError:
        return Path(caching._CacheLocator.get_suitable_cache_subpath(py_file))


class _UserLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """The user layer's folder for a kernel. Unlike numba's locators it creates nothing when a kernel is
    decorated; the folder is made on the first save."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self.relative = _relative_folder(py_file)
        root = _layout["user"]
        self._cache_path = str(root / self.relative) if root is not None else ""

    def get_cache_path(self):
        return self._cache_path

    @classmethod
    def from_function(cls, py_func, py_file):
        return cls(py_func, py_file)


class _Impl(caching.CompileResultCacheImpl):
    _locator_classes = [_UserLocator]


class _CheckedCacheFile(caching.IndexDataCacheFile):
    """numba's index + data files of one kernel in one layer; a file that cannot be read is a miss
    (reported once with its folder, removed when the layer is writable) instead of an exception."""

    def __init__(self, cache_path, filename_base, source_stamp, layer: str, removable: bool, rename=None):
        super().__init__(cache_path, filename_base, source_stamp)
        self.layer, self.removable, self.rename = layer, removable, rename

    def damaged(self, path: str, err: BaseException) -> None:
        if isinstance(err, ImportError):  # entries of a package imported under another name: a miss, not damage
            return
        COUNTS["damaged"] += 1
        root = _layout["user"] if self.layer == "user" else _layout["shipped"]
        name = os.path.relpath(path, root) if root is not None else path
        if self.removable:
            try:
                os.unlink(path)
            except OSError:
                pass
            _say_once(("damaged", self.layer), f"the kernel cache in {root} had a damaged file ({name}: "
                      f"{type(err).__name__}: {err}); damaged files are removed and their kernels compiled again")
        else:
            _say_once(("damaged", self.layer), f"the {self.layer} kernels in {root} have a damaged file ({name}: "
                      f"{type(err).__name__}); its kernels are compiled instead (reinstall to repair it)")

    def _load_index(self):
        """numba's index: {key: data file name}, empty when missing, stale (another numba, changed source) or
        unreadable (truncated: EOFError; garbage: UnpicklingError, ValueError, ...)."""
        if not self._cache_path:
            return {}
        try:
            f = open(self._index_path, "rb")
        except OSError:  # missing, or a cache folder that cannot exist (unusable_folder says so once)
            return {}
        try:
            with f:
                version = pickle.load(f)
                data = f.read()
        except Exception as err:
            self.damaged(self._index_path, err)
            return {}
        if version != self._version:
            return {}
        try:
            stamp, overloads = _loads(data, self.rename)
        except Exception as err:
            self.damaged(self._index_path, err)
            return {}
        return overloads if stamp == self._source_stamp else {}

    def _load_data(self, name):
        path = self._data_path(name)
        with open(path, "rb") as f:  # a missing file (OSError) is a miss for numba's load()
            data = f.read()
        try:
            return _loads(data, self.rename)
        except Exception as err:
            self.damaged(path, err)
            raise OSError(str(err)) from None

    def signatures(self, magic) -> set:
        """Signatures (as text) in this file's index compiled for ``magic`` (normalized magic tuple)."""
        return {str(key[0]) for key in self._load_index() if key[1] == magic}


class EngineCache(caching.FunctionCache):
    """A kernel's cache: shipped layer (read-only) first, then user layer (module doc)."""

    _impl_class = _Impl

    def __init__(self, py_func):
        super().__init__(py_func)
        locator = self._impl.locator
        stamp, base = locator.get_source_stamp(), self._impl.filename_base
        self._cache_file = _CheckedCacheFile(self._cache_path, base, stamp, "user", removable=True)
        shipped = _layout["shipped"]
        self._shipped_file = (_CheckedCacheFile(str(shipped / locator.relative), base, stamp, "shipped",
                                                removable=False, rename=_layout["rename"])
                              if shipped is not None else None)

    def _index_key(self, sig, codegen):
        sig_, magic, hashes = super()._index_key(sig, codegen)
        return sig_, normalized_magic(magic), hashes

    def _layers(self):
        return [(name, f) for name, f in (("shipped", self._shipped_file), ("user", self._cache_file)) if f is not None]

    def _load_overload(self, sig, target_context):
        if not self._enabled:
            return None
        key = self._index_key(sig, target_context.codegen())
        for layer, cache_file in self._layers():
            data = cache_file.load(key)
            if data is None:
                continue
            try:
                cres = self._impl.rebuild(target_context, data)
            except Exception as err:  # unpickled, but not a loadable object file
                cache_file.damaged(cache_file._data_path(cache_file._load_index().get(key, "?")), err)
                continue
            COUNTS[f"loaded_{layer}"] += 1
            return cres
        return None

    def _save_overload(self, sig, data):
        if not self._enabled or not self._cache_path:
            return
        if not _layout["user_writable"]:
            _say_once("readonly", f"the kernel cache folder {_layout['user']} is not writable "
                      f"({_layout['user_problem']}): kernels compiled now last for this process only; "
                      f"set NUMBA_CACHE_DIR to a writable folder to keep them")
            return
        try:
            super()._save_overload(sig, data)
        except OSError as err:  # a full disk, a folder made read-only since start-up
            _layout["user_writable"], _layout["user_problem"] = False, str(err)
            _say_once("save-failed", f"could not write the kernel cache in {self._cache_path} ({err}): kernels "
                      f"compiled now last for this process only")

    def cached_signatures(self, codegen) -> set:
        """Signatures (as text) that this process would load instead of compiling."""
        magic = normalized_magic(codegen.magic_tuple())
        return set().union(*(f.signatures(magic) for _, f in self._layers()))


def normalized_magic(magic: tuple) -> tuple:
    """``codegen.magic_tuple()`` with an OS-version-free triple (``_kernel_store.normalized_triple``)."""
    return (store.normalized_triple(magic[0]),) + tuple(magic[1:])


def writable_folder(folder: Path) -> tuple[bool, str]:
    """(can files be created in ``folder`` (made if missing), why not)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
        return True, ""
    except OSError as err:
        return False, f"{type(err).__name__}: {err.strerror or err}"
