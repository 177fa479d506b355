"""Compile the numba kernels a solver needs before the first real step, with progress.

On a cold cache the first step of a scene spends most of a minute inside numba
with nothing to show for it. ``compile_kernels`` does that work up front, group
by group, on a tiny model that goes through the same public entry points a bake
does (``link_poses``/``rnea``, ``Simulator.step`` with joint springs, springs,
cables and moving loads, then loop closures, then ground contact), so every
kernel gets the argument types it will see later and lands in numba's on-disk
cache. Front ends (the Blender add-on, scripts) show the progress and can
cancel between groups.

``is_warm`` answers "would the first step compile?" without compiling: a stamp
file in numba's cache directory lists the kernels (and signatures) the last
complete warm-up compiled, and each kernel's cache index must still hold those
signatures for the current source (numba drops an index whose source file
changed). No stamp, a changed engine source tree, or any missing entry means cold.

    warm = is_warm("pcg")
    compile_kernels("pcg", progress=lambda done, total, name: print(done, total, name))
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from . import _jit
from .algorithms import link_poses, rnea
from .model import ModelBuilder
from .scene import Scene

SOLVERS = ("pcg", "direct", "dense")
STAMP_NAME = "redmax_warmup.json"
_PACKAGE = __name__.rsplit(".", 1)[0]
_ROOT = Path(__file__).resolve().parent


class WarmupCancelled(RuntimeError):
    """``compile_kernels`` stopped between groups because ``cancel()`` returned True."""


@dataclass(frozen=True)
class KernelGroup:
    """One unit of progress: ``run()`` calls the kernels of ``name`` once on a tiny model."""

    name: str
    run: Callable[[], None]


@dataclass
class WarmupResult:
    """What ``compile_kernels`` did: group names and seconds each, kernels compiled, and whether the
    cache was warm before."""

    solver: str
    contact: bool
    seconds: dict = field(default_factory=dict)
    kernels: int = 0
    was_warm: bool = False

    @property
    def total_seconds(self) -> float:
        return float(sum(self.seconds.values()))


# ------------------------------------------------------------------ tiny model
def _tiny_model(shapes: bool):
    """Six bodies, one of each joint type a rig maps to (revolute, prismatic, universal, spherical,
    fixed, free); 1 kg boxes of 0.2 m, box contact shapes when ``shapes``."""
    b = ModelBuilder()
    box = {"type": "box", "size": (0.2, 0.2, 0.2)} if shapes else None
    kw = {"mass": 1.0, "inertia": (0.01, 0.01, 0.01), "shape": box}
    b.add_body("hinge", joint_name="hinge", joint="revolute", axis=(1, 0, 0), joint_origin=(0, 0, 2.0), com=(0, 0, -0.3), **kw)
    b.add_body("slider", joint_name="slider", parent="hinge", joint="prismatic", axis=(0, 0, 1), joint_origin=(0, 0, -0.5), **kw)
    b.add_body("cardan", joint_name="cardan", parent="slider", joint="universal", joint_origin=(0, 0, -0.3), com=(0, 0, -0.2), **kw)
    b.add_body("ball", joint_name="ball", parent="cardan", joint="spherical", joint_origin=(0, 0, -0.4), com=(0, 0, -0.2), **kw)
    b.add_body("weld", joint_name="weld", parent="ball", joint="fixed", joint_origin=(0, 0, -0.4), **kw)
    b.add_body("loose", joint_name="loose", joint="free", joint_origin=(1.0, 0, 1.0), **kw)
    return b.finalize()


def _tiny_scene(shapes: bool = False) -> Scene:
    model = _tiny_model(shapes)
    q0 = model.neutral_q()
    q0[model.q_slice("hinge")] = 0.2
    scene = Scene(model, name="warmup", q0=q0)
    for name in ("hinge", "slider", "cardan", "ball"):
            scene.add_joint_spring(name, 10.0, 0.1)
    scene.body_damping[:] = 0.01
    return scene


def _step(scene: Scene, solver: str, **options) -> None:
    from .simulator import Simulator  # (imports every solver; kept out of module import time)

    Simulator(scene, solver, dt=1.0 / 120.0, **options).step(2)


def _kinematics() -> None:
    scene = _tiny_scene()
    m, q = scene.model, scene.q0
    qd = np.full(m.nv, 0.1)
    link_poses(m, q)
    rnea(m, q, qd, np.zeros(m.nv))


def _forces(solver: str) -> None:
    scene = _tiny_scene()
    scene.add_spring("hinge", (0, 0.1, 1.7), "loose", (1.0, 0, 1.0), 50.0, damping=1.0, rest_length=0.8)
    scene.add_cable(-1, (0.5, 0, 2.0), "ball", (0, 0, 1.0), 200.0, damping=1.0, rest_length=0.5)
    scene.add_point_force("weld", (0, 0, 0.6), (1.0, 0, 0))
    scene.add_moving_load((0, 0, -5.0), [("hinge", (0, 0, 2.0), (0, 0, 1.7)), ("slider", (0, 0, 1.5), (0, 0, 1.3))],
                          0.0, 0.05)
    _step(scene, solver)


def _closures(solver: str) -> None:
    scene = _tiny_scene()
    R, p = link_poses(scene.model, scene.q0)
    i = scene.model.body_index("weld")
    scene.add_loop_closure("weld", -1, p[i], kind="point", name="pin")
    scene.add_loop_closure("loose", "hinge", p[scene.model.body_index("loose")], kind="hinge", axis=(0, 1.0, 0),
                           name="hinge_closure")
    _step(scene, solver)


def _contact(solver: str, method: str) -> None:
    scene = _tiny_scene(shapes=True)
    scene.set_ground(1.75)  # the lowest boxes start touching it
    _step(scene, solver, contact_method=method, contact_options={"margin": 0.1})


def kernel_groups(solver: str = "pcg", *, contact: bool = False, contact_method: str = "minv") -> list[KernelGroup]:
    """The groups a bake with ``solver`` ("pcg", "direct", "dense") runs, in order; ground contact
    (``contact_method`` "minv" or "cholesky") only when ``contact``."""
    solver = _check_solver(solver)
    groups = [KernelGroup("kinematics and inverse dynamics (FK, RNEA)", _kinematics),
              KernelGroup(f"{solver.upper()} step: joint springs, springs, cables, loads", lambda: _forces(solver)),
              KernelGroup("loop closures", lambda: _closures(solver))]
    if contact:
        groups.append(KernelGroup(f"ground contact ({contact_method})", lambda: _contact(solver, contact_method)))
    return groups


def _check_solver(solver: str) -> str:
    s = str(solver).lower()
    if s not in SOLVERS:
        raise ValueError(f"warm-up: unknown solver {solver!r}; expected one of {', '.join(SOLVERS)}")
    return s


# ---------------------------------------------------------------- cache state
def cache_dir() -> Path:
    """Where the stamp lives: numba's NUMBA_CACHE_DIR when set, else the engine's ``__pycache__``
    (where numba caches the kernels by default)."""
    if _jit.HAVE_NUMBA and _jit._numba.config.CACHE_DIR:
        return Path(_jit._numba.config.CACHE_DIR)
    return _ROOT / "__pycache__"


def _source_key() -> str:
    """Hash of the engine's source files (path, size, mtime): a changed tree needs a new warm-up."""
    h = hashlib.sha1(f"{sys.version_info[:2]} numba {_jit.NUMBA_VERSION}".encode())
    for path in sorted(_ROOT.rglob("*.py")):
        st = path.stat()
        h.update(f"{path.relative_to(_ROOT)} {st.st_size} {st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _stamp_key(solver: str, contact: bool, contact_method: str) -> str:
    return f"{solver}+{contact_method}" if contact else solver


def _dispatchers():
    """{"module:name": dispatcher} of every numba kernel at module level in the engine package."""
    from numba.core.dispatcher import Dispatcher

    found = {}
    for mod_name, mod in list(sys.modules.items()):
        if mod is None or not (mod_name == _PACKAGE or mod_name.startswith(_PACKAGE + ".")):
            continue
        for attr, value in list(vars(mod).items()):
            if isinstance(value, Dispatcher) and getattr(value, "__module__", mod_name) == mod_name:
                found[f"{mod_name}:{attr}"] = value
    return found


def _cached_signatures(dispatcher) -> set:
    """Signatures (as text) in the dispatcher's on-disk index for its current source, or empty."""
    cache = getattr(dispatcher, "_cache", None)
    cache_file = getattr(cache, "_cache_file", None)
    if cache_file is None:
        return set()
    return {str(key[0]) for key in cache_file._load_index()}


def _read_stamp() -> dict:
    try:
        return json.loads((cache_dir() / STAMP_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def is_warm(solver: str = "pcg", *, contact: bool = False, contact_method: str = "minv") -> bool:
    """True when the last complete ``compile_kernels`` of this solver is still in numba's cache
    (so a first step loads machine code instead of compiling). Always True without numba."""
    if not _jit.JIT_ENABLED:
        return True
    solver = _check_solver(solver)
    stamp = _read_stamp()
    entry = stamp.get("groups", {}).get(_stamp_key(solver, contact, contact_method))
    if stamp.get("source") != _source_key() or not entry:
        return False
    import importlib

    try:
        for name, sigs in entry.items():
            mod_name, attr = name.split(":")
            disp = getattr(importlib.import_module(mod_name), attr)
            if not set(sigs) <= _cached_signatures(disp):
                return False
    except Exception:  # a renamed kernel, an unreadable index: compile again
        return False
    return True


def _write_stamp(solver: str, contact: bool, contact_method: str) -> int:
    """Record every engine kernel compiled or loaded in this process; returns how many."""
    kernels = {name: sorted(str(s) for s in d.signatures) for name, d in _dispatchers().items() if d.signatures}
    stamp = _read_stamp()
    source = _source_key()
    groups = stamp.get("groups", {}) if stamp.get("source") == source else {}
    groups[_stamp_key(solver, contact, contact_method)] = kernels
    path = cache_dir() / STAMP_NAME
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"source": source, "groups": groups}), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:  # a read-only cache: every later run checks again (and compiles nothing)
        pass
    return len(kernels)


def compile_kernels(solver: str = "pcg", *, contact: bool = False, contact_method: str = "minv",
                    progress: Callable[[int, int, str], None] | None = None,
                    cancel: Callable[[], bool] | None = None) -> WarmupResult:
    """Compile (or load from numba's cache) the kernels of ``kernel_groups(solver, ...)``.

    progress(done, total, name) is called before each group (``name`` = the group starting) and once
    at the end with done == total and name "". cancel() is polled between groups; when it returns
    True, ``WarmupCancelled`` is raised (a group that has started runs to its end: numba cannot be
    interrupted). Safe to call from a worker thread (numba serialises compilation; kernels release
    the GIL only while running).
    """
    solver = _check_solver(solver)
    result = WarmupResult(solver, bool(contact), was_warm=is_warm(solver, contact=contact,
                                                                  contact_method=contact_method))
    groups = kernel_groups(solver, contact=contact, contact_method=contact_method)
    for k, group in enumerate(groups):
        if cancel is not None and cancel():
            raise WarmupCancelled(f"kernel compilation cancelled after {k} of {len(groups)} groups")
        if progress is not None:
            progress(k, len(groups), group.name)
        t0 = time.perf_counter()
        group.run()
        result.seconds[group.name] = time.perf_counter() - t0
    if _jit.JIT_ENABLED:
        result.kernels = _write_stamp(solver, bool(contact), contact_method)
    if progress is not None:
        progress(len(groups), len(groups), "")
    return result
