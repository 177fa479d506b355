"""Where the engine's compiled kernels live and which CPU numba compiles them for (part of ``_jit``).

No numba here: ``_jit`` calls ``choose_target()`` before it imports numba, because numba fixes its
CPU target (``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES``) when it first compiles.

Two caches, read in this order (``_kernel_cache`` does the reading and writing):

* **shipped** — ``engine/_shipped_kernels/``: numba's cache built by ``scripts/build_kernels.py`` for a
  portable CPU baseline of the platform (``BASELINES``) and packed into the extension zip and the
  wheel. Read-only: nothing is ever written there at run time. Used when its ``manifest.json`` was
  built from these very sources (``source_digest``), Python, numba and platform, and the host CPU runs
  code for the manifest's CPU (``host_cannot_run``: a portable level whose every feature the host has,
  or the host's own CPU model); numba then compiles for that CPU, so its cache keys (triple, CPU
  name, features) are those of the shipped entries and whatever is not shipped is compiled for the
  same CPU into the user cache. Otherwise numba compiles for this CPU (native), as without them.
* **user** — ``engine-<source digest>`` under ``NUMBA_CACHE_DIR`` when set (the Blender add-on sets it to
  the extension's user folder), else in a source checkout ``engine/__pycache__/numba`` (as before), else
  the platform's user cache folder (``~/.cache/redmax-engine``, ``~/Library/Caches/redmax-engine``,
  ``%LOCALAPPDATA%\\redmax-engine\\Cache``): never the installed package's folder.

``ENGINE_KERNELS`` overrides the choice: ``native`` compiles for this CPU and ignores the shipped
cache; ``baseline`` compiles for the platform's baseline even without a shipped cache (how the
shipped cache is built); ``auto`` (the default) decides as above. A ``NUMBA_CPU_NAME`` set by the
user is respected (the shipped cache is then used only if it names the same CPU and features).
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import sys
from dataclasses import dataclass
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
SHIPPED_DIR = PACKAGE_DIR / "_shipped_kernels"
MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1
USER_FOLDER_NAME = "redmax-engine"

# Portable CPU baselines by architecture (LLVM CPU name, LLVM feature string). x86-64-v3 (2013 on:
# Haswell, Zen 1) is the x86-64 psABI level with AVX2 and FMA; its features are spelled out because
# numba uses the host's features when NUMBA_CPU_FEATURES is unset, and the host check needs them.
X86_64_V3_FEATURES = ("+64bit,+avx,+avx2,+bmi,+bmi2,+cmov,+crc32,+cx16,+cx8,+f16c,+fma,+fxsr,+lzcnt,+mmx,+movbe,"
                      "+popcnt,+sahf,+sse,+sse2,+sse3,+sse4.1,+sse4.2,+ssse3,+xsave")
LEVELS = ("x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4", "generic", "apple-m1")  # CPU names whose features are listed
BASELINES = {
    "x86_64": ("x86-64-v3", X86_64_V3_FEATURES),
    "arm64-darwin": ("apple-m1", ""),   # every Apple-silicon Mac; "" = the CPU model's own features
    "aarch64": ("generic", ""),         # Armv8-A (Linux arm64)
}

_ENV_CPU_NAME, _ENV_CPU_FEATURES = "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES"
_OURS = "_ENGINE_SET_NUMBA_CPU"  # marks NUMBA_CPU_* as set by the engine (a child process decides again)


@dataclass(frozen=True)
class KernelTarget:
    """The choice ``choose_target`` made. mode: "shipped" (baseline target, shipped cache read first),
    "baseline" (baseline target, no shipped cache), "native" (this CPU) or "user" (the user's
    NUMBA_CPU_NAME); reason: why, in words."""

    mode: str
    cpu_name: str | None
    cpu_features: str | None
    shipped: Path | None
    reason: str
    shipped_package: str | None = None  # the package name the shipped kernels were built under


def normalized_triple(triple: str) -> str:
    """The LLVM target triple without an OS version (macOS puts the Darwin version in it, which would tie
    a cache to one macOS release): ``arm64-apple-darwin23.4.0`` → ``arm64-apple-darwin``."""
    return re.sub(r"(darwin|macosx|macos)[0-9.]*", r"\1", triple)


def _numba_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("numba")
    except Exception:  # not installed (or no metadata): the caller finds out on import
        return None


_DIGEST: dict = {}


def source_digest(numba_version: str | None = None, package: Path = PACKAGE_DIR) -> str:
    """Hash of the source files' contents of the engine package at ``package`` (this one by default) and of
    Python's and numba's versions, memoised."""
    numba_version = numba_version or _numba_version()
    key = (numba_version, str(package))
    if key not in _DIGEST:
        h = hashlib.sha1(f"{sys.version_info[:2]} numba {numba_version}".encode())
        for path in sorted(package.rglob("*.py")):
            h.update(str(path.relative_to(package).as_posix()).encode() + b"\0" + path.read_bytes() + b"\0")
        _DIGEST[key] = h.hexdigest()[:16]
    return _DIGEST[key]


def baseline_for(triple: str) -> tuple[str, str]:
    """(CPU name, features) of the portable baseline for an LLVM triple; ValueError for an unknown one."""
    arch = triple.split("-")[0]
    if arch in ("arm64", "aarch64") and "darwin" in triple:
        return BASELINES["arm64-darwin"]
    if arch in ("arm64", "aarch64"):
        return BASELINES["aarch64"]
    if arch in ("x86_64", "amd64"):
        return BASELINES["x86_64"]
    raise ValueError(f"no portable CPU baseline for {triple!r} (known: x86-64, arm64)")


def host_lacks(features: str, host: dict) -> list[str]:
    """The ``+feature`` names of an LLVM feature string that the host's feature map does not have."""
    return [f[1:] for f in features.split(",") if f.startswith("+") and not host.get(f[1:], False)]


def read_manifest(folder: Path = SHIPPED_DIR) -> dict | None:
    try:
        return json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def shipped_mismatch(manifest: dict | None, triple: str, numba_version: str | None) -> str | None:
    """Why the shipped cache described by ``manifest`` cannot serve this process, or None when it can."""
    if manifest is None:
        return "no shipped kernels in this install"
    wanted = {"format": MANIFEST_FORMAT, "python": "%d.%d" % sys.version_info[:2], "numba": numba_version,
              "triple": normalized_triple(triple), "source": source_digest(numba_version)}
    for key, value in wanted.items():
        if manifest.get(key) != value:
            return f"shipped kernels are for {key} {manifest.get(key)!r}, this is {value!r}"
    return None


def _host():
    """(LLVM process triple, host CPU name, host feature map), from llvmlite (numba's LLVM binding)."""
    import llvmlite.binding as ll

    return ll.get_process_triple(), ll.get_host_cpu_name(), dict(ll.get_host_cpu_features())


def host_cannot_run(cpu_name: str, features: str, host_cpu: str, host: dict) -> str | None:
    """Why code compiled for (``cpu_name``, ``features``) may not run on the host, or None. For a portable
    level (``LEVELS``) the feature string is complete; another CPU model implies features of its own that
    llvmlite cannot list, so it must be the host's model."""
    if cpu_name not in LEVELS and cpu_name != host_cpu:
        return f"this CPU is {host_cpu}, not {cpu_name}"
    missing = host_lacks(features, host)
    if missing:
        return f"this CPU ({host_cpu}) lacks {', '.join(missing)} of {cpu_name}"
    return None


def choose_target(environ=os.environ) -> KernelTarget:
    """Pick the CPU target and caches for this process (module doc) and set NUMBA_CPU_NAME/FEATURES in
    ``environ`` for numba to read. Raises ImportError without llvmlite (no numba)."""
    if environ.get(_ENV_CPU_NAME) is not None and environ.get(_OURS) == environ.get(_ENV_CPU_NAME):
        for name in (_ENV_CPU_NAME, _ENV_CPU_FEATURES, _OURS):  # a parent process's choice: decide again
            environ.pop(name, None)
    triple, host_cpu, host = _host()
    mode = environ.get("ENGINE_KERNELS", "auto").strip().lower() or "auto"
    if mode not in ("auto", "native", "baseline"):
        raise ValueError(f"ENGINE_KERNELS={mode!r}: expected auto, native or baseline")
    manifest = read_manifest()
    why_not = shipped_mismatch(manifest, triple, _numba_version())
    if environ.get(_ENV_CPU_NAME) is not None:  # the user's own target: shipped kernels only if built for it
        name, features = environ[_ENV_CPU_NAME], environ.get(_ENV_CPU_FEATURES)
        fits = why_not is None and (manifest["cpu_name"], manifest["cpu_features"]) == (name, features)
        return KernelTarget("user", name, features, SHIPPED_DIR if fits else None,
                            f"NUMBA_CPU_NAME={name} set by the user", manifest.get("package", "engine") if fits else None)
    if mode == "native":
        return KernelTarget("native", host_cpu, None, None, "ENGINE_KERNELS=native")
    if mode == "baseline":
        try:
            name, features = baseline_for(triple)
        except ValueError as err:
            return KernelTarget("native", host_cpu, None, None, str(err))
        cannot = host_cannot_run(name, features, host_cpu, host)
        if cannot:
            return KernelTarget("native", host_cpu, None, None, cannot)
        _set_target(environ, name, features)
        return KernelTarget("baseline", name, features, None, "ENGINE_KERNELS=baseline")
    if why_not is not None:
        return KernelTarget("native", host_cpu, None, None, why_not)
    name, features = manifest["cpu_name"], manifest["cpu_features"]
    cannot = host_cannot_run(name, features, host_cpu, host)
    if cannot:
        return KernelTarget("native", host_cpu, None, None, f"shipped kernels not for this CPU: {cannot}")
    _set_target(environ, name, features)
    return KernelTarget("shipped", name, features, SHIPPED_DIR, f"this CPU ({host_cpu}) runs {name} code",
                        manifest.get("package", "engine"))


def _set_target(environ, name: str, features: str) -> None:
    environ[_ENV_CPU_NAME], environ[_ENV_CPU_FEATURES], environ[_OURS] = name, features, name


# ---------------------------------------------------------------- the user cache
def in_checkout() -> bool:
    """The engine runs from a source checkout (a git work tree with pyproject.toml), not an install."""
    root = PACKAGE_DIR.parent
    return (root / ".git").exists() and (root / "pyproject.toml").is_file()


def user_cache_base(environ=os.environ) -> tuple[Path, str]:
    """(folder that holds ``engine-<digest>`` user caches, what chose it)."""
    if environ.get("NUMBA_CACHE_DIR"):
        return Path(environ["NUMBA_CACHE_DIR"]), "NUMBA_CACHE_DIR"
    if in_checkout():
        return PACKAGE_DIR / "__pycache__" / "numba", "source checkout"
    if sys.platform == "win32":
        base = Path(environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local") / USER_FOLDER_NAME / "Cache"
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches" / USER_FOLDER_NAME
    else:
        base = Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / USER_FOLDER_NAME
    return base, "user cache folder"


def platform_tag() -> str:
    """"linux-x64", "windows-x64", "macos-arm64", ... (Blender's platform names) for this machine."""
    system = {"linux": "linux", "win32": "windows", "darwin": "macos"}.get(sys.platform, sys.platform)
    machine = platform.machine().lower()
    return f"{system}-{ {'x86_64': 'x64', 'amd64': 'x64', 'aarch64': 'arm64'}.get(machine, machine) }"
