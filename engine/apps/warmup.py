"""Compile the numba kernels a solver needs before the first real step, with progress.

On a cold cache the first step of a scene spends most of a minute inside numba
with nothing to show for it. ``compile_kernels`` does that work up front, group
by group, on a tiny model that goes through the same public entry points a bake
does (``link_poses``, ``Simulator.step`` with joint springs, springs,
cables and moving loads, then loop closures, joint limits, contact with the ground, between bodies and with
mesh colliders), so every
kernel gets the argument types it will see later and lands in numba's on-disk
cache. A stage that only solves when something is active (a joint on its bound,
a box on the ground) is compiled on a tiny scene where it is: the hinge starts
on its bound moving into it, the lowest boxes start touching the ground. Front
ends (the Blender add-on, scripts) show the progress and can cancel between groups.

A scene decides which step runs: without loop closures, contact or enforced
limits a PCG bake takes the one-call step (``redmax_step.pcg_step``), otherwise
the staged one (``assemble_step_system``, ``pcg_solve``, the closure and contact
stages), and body damping needs its blocks. Each path is a large compile of its
own, so ``scene_facts(scene)`` (or a front end that knows them without building
the scene) says which: ``closures=True`` compiles only the staged step,
``closures=False`` only the one-call one (the staged one instead with ``limits=True``,
both with None), None (unknown) both; ``limits`` (True or None) adds the limit stage's
solve with a bound reached; ``body_damping`` likewise. ``compile_kernels(...,
**scene_facts(scene))`` then compiles what that scene's bake runs.

``is_warm`` answers "would the first step compile?" without compiling: a stamp
file in the user kernel cache (and one in the shipped kernels, when this process
uses them: docs/kernels.md) lists the kernels (and signatures) a complete warm-up
compiled, and each kernel's cache index must still hold those signatures for the
current source and this process's CPU target (numba drops an index whose source file
changed). No stamp, a changed engine source tree, or any missing entry means cold.
``api_group`` compiles the public algorithms (not part of a bake) for the shipped kernels.

    warm = is_warm("pcg", **scene_facts(scene))
    compile_kernels("pcg", **scene_facts(scene), progress=lambda done, total, name: print(done, total, name))
"""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from .. import _jit
from ..algorithms import link_poses
from ..joints import matrix_to_quat
from ..model import ModelBuilder
from ..scene import Scene

SOLVERS = ("pcg", "direct", "dense")
STAMP_NAME = "redmax_warmup.json"
_PACKAGE = __name__.rsplit(".", 2)[0]  # the engine package (this module is <engine>.apps.warmup)
_ROOT = Path(__file__).resolve().parent.parent
LIMIT_LOWER = 0.2  # rad: where the tiny scene's hinge starts, and its lower bound when limited


class WarmupCancelled(RuntimeError):
    """``compile_kernels`` stopped between groups because ``cancel()`` returned True."""


@dataclass(frozen=True)
class KernelGroup:
    """One unit of progress: ``run()`` calls the kernels of ``name`` once on a tiny model."""

    name: str
    run: Callable[[], object]


@dataclass
class WarmupResult:
    """What ``compile_kernels`` did: group names and seconds each, kernels compiled, and whether the
    cache was warm before."""

    solver: str
    contact: bool
    closures: bool | None = None
    limits: bool | None = None
    body_damping: bool | None = None
    seconds: dict = field(default_factory=dict)
    kernels: int = 0
    was_warm: bool = False

    @property
    def total_seconds(self) -> float:
        return float(sum(self.seconds.values()))


# ------------------------------------------------------------------ tiny model
def _tiny_model(shapes: bool, limits: bool = False):
    """Six bodies, one of each joint type a rig maps to (revolute, prismatic, universal, spherical,
    fixed, free); 1 kg boxes of 0.2 m, box contact shapes when ``shapes``, the hinge limited to
    [0.2, 1.2] rad when ``limits`` (``_tiny_scene`` starts it on its lower bound)."""
    b = ModelBuilder()
    box = {"type": "box", "size": (0.2, 0.2, 0.2)} if shapes else None
    kw = {"mass": 1.0, "inertia": (0.01, 0.01, 0.01), "shape": box}
    b.add_body("hinge", joint_name="hinge", joint="revolute", axis=(1, 0, 0), joint_origin=(0, 0, 2.0), com=(0, 0, -0.3),
               limits=(LIMIT_LOWER, 1.2) if limits else None, **kw)
    b.add_body("slider", joint_name="slider", parent="hinge", joint="prismatic", axis=(0, 0, 1), joint_origin=(0, 0, -0.5), **kw)
    b.add_body("cardan", joint_name="cardan", parent="slider", joint="universal", joint_origin=(0, 0, -0.3), com=(0, 0, -0.2), **kw)
    b.add_body("ball", joint_name="ball", parent="cardan", joint="spherical", joint_origin=(0, 0, -0.4), com=(0, 0, -0.2), **kw)
    b.add_body("weld", joint_name="weld", parent="ball", joint="fixed", joint_origin=(0, 0, -0.4), **kw)
    b.add_body("loose", joint_name="loose", joint="free", joint_origin=(1.0, 0, 1.0), **kw)
    return b.finalize()


def _tiny_scene(shapes: bool = False, body_damping: bool | None = None, limits: bool = False,
                on_bound: bool = True) -> Scene:
    """The tiny model with joint springs; body damping unless ``body_damping`` is False. The hinge starts
    at 0.2 rad; with ``limits`` that is its lower bound and it turns into it at 1 rad/s (gravity and its
    spring push the same way), so the limit stage solves from the first step: a bound that is not
    reached leaves the stage's M̃⁻¹ (``algorithms.minv``) and its PGS solve uncompiled, and the bake
    would compile them (some 20 s, without progress) at the first step that reaches one. on_bound=False:
    the hinge starts at rest halfway between its bounds instead (``_clear_steps``)."""
    model = _tiny_model(shapes, limits)
    q0 = model.neutral_q()
    q0[model.q_slice("hinge")] = LIMIT_LOWER if on_bound else LIMIT_LOWER + 0.5
    qd0 = np.zeros(model.nv)
    if limits and on_bound:
        qd0[model.v_slice("hinge")] = -1.0
    scene = Scene(model, name="warmup", q0=q0, qd0=qd0)
    for name in ("hinge", "slider", "cardan", "ball"):
        scene.add_joint_spring(name, 10.0, 0.1)
    if body_damping is not False:
        scene.body_damping[:] = 0.01
    return scene


def _step(scene: Scene, solver: str, steps: int = 2, **options):
    """``steps`` steps of ``scene`` with the Simulator's defaults; returns the Simulator (its contact and limit
    stages keep the last step's)."""
    from ..simulator import Simulator  # (imports every solver; kept out of module import time)

    sim = Simulator(scene, solver, dt=1.0 / 120.0, **options)
    sim.step(steps)
    return sim


def _clear_steps(scene: Scene, solver: str, **options) -> None:
    """Three steps of ``scene`` with nothing near a bound or the ground (the caller moved them away): the default
    integrator's (BDF2's) own step — its extrapolated start from the last step — runs only after a step whose
    contact and limit stages had no rows near, so a group whose tiny scene rests on a bound or the ground would
    leave it for the bake to compile at the first step in the clear (a character's jump, a swing off a bound)."""
    _step(scene, solver, steps=3, **options)


def _kinematics() -> None:
    """Forward kinematics (``link_poses``, which building a scene runs) and the link rotations as quaternions
    (``joints.matrix_to_quat``, which keyframes run); no step calls ``rnea``."""
    model = _tiny_model(False)
    R, _ = link_poses(model, model.neutral_q())
    matrix_to_quat(R)


def _add_forces(scene: Scene) -> None:
    """A spring, a cable, a point force and a moving load on the tiny scene."""
    scene.add_spring("hinge", (0, 0.1, 1.7), "loose", (1.0, 0, 1.0), 50.0, damping=1.0, rest_length=0.8)
    scene.add_cable(-1, (0.5, 0, 2.0), "ball", (0, 0, 1.0), 200.0, damping=1.0, rest_length=0.5)
    scene.add_point_force("weld", (0, 0, 0.6), (1.0, 0, 0))
    scene.add_moving_load((0, 0, -5.0), [("hinge", (0, 0, 2.0), (0, 0, 1.7)), ("slider", (0, 0, 1.5), (0, 0, 1.3))],
                          0.0, 0.05)


def _forces(solver: str, body_damping: bool | None = None):
    scene = _tiny_scene(body_damping=body_damping)
    _add_forces(scene)
    return _step(scene, solver)


def _closures(solver: str, body_damping: bool | None = None, forces: bool = False, limits: bool = False):
    """The step with loop closures (``forces``: with the springs, cables and loads of ``_forces`` too, for
    a warm-up that compiles no step without closures; ``limits``: with the hinge's lower bound reached, so
    the limit stage solves in the closures' metric)."""
    def closed(on_bound):
        scene = _tiny_scene(body_damping=body_damping, limits=limits, on_bound=on_bound)
        if forces:
            _add_forces(scene)
        R, p = link_poses(scene.model, scene.q0)
        i = scene.model.body_index("weld")
        scene.add_loop_closure("weld", -1, p[i], kind="point", name="pin")
        scene.add_loop_closure("loose", "hinge", p[scene.model.body_index("loose")], kind="hinge", axis=(0, 1.0, 0),
                               name="hinge_closure")
        return scene

    if limits:
        _clear_steps(closed(False), solver)
    return _step(closed(True), solver)


def _limits(solver: str, body_damping: bool | None = None):
    """The step without loop closures that enforces joint limits (not the one-call step), with forces; the
    hinge is on its lower bound and moving into it, so the limit stage solves (not only checks) in both steps."""
    scene = _tiny_scene(body_damping=body_damping, limits=True)
    _add_forces(scene)
    clear = _tiny_scene(body_damping=body_damping, limits=True, on_bound=False)
    _add_forces(clear)
    _clear_steps(clear, solver)
    return _step(scene, solver)


def _contact(solver: str, method: str, body_damping: bool | None = None, forces: bool = False):
    """Ground contact with friction (μ = 0.8): the free box starts touching the ground, so the contact
    stage builds its contact space and runs its PGS in both steps."""
    def grounded(far_below: bool):
        scene = _tiny_scene(shapes=True, body_damping=body_damping)
        if forces:
            _add_forces(scene)
            scene.set_pair(0, rest_length=1.5)  # the spring to the free box pushes it into the ground (not off it)
        if far_below:  # falling, in the clear
            scene.set_ground(-100.0, friction=0.8, bodies=["loose"])
            return scene
        R, p = link_poses(scene.model, scene.q0)
        loose = scene.model.body_index("loose")  # (the chain swings on its springs; the free box lies still)
        lowest = float(p[loose, 2] - 0.1 * np.abs(R[loose, 2, :]).sum())  # its lowest corner
        scene.set_ground(lowest + SINK, friction=0.8, bodies=["loose"])  # it starts SINK deep in the ground
        return scene

    for m in _concrete(method):
        options = {"contact_method": m, "contact_options": {"margin": 0.1}}
        _clear_steps(grounded(True), solver, **options)
        sim = _step(grounded(False), solver, **options)
    return sim


def _concrete(method: str) -> tuple:
    """The contact space's methods a bake with ``contact_method`` may run ("auto" picks one per contact set)."""
    return ("minv", "impulse") if method == "auto" else (method,)


BOX = 0.2  # m: the contact scenes' cubes
SINK = 0.002  # m: how deep they start in the floor and in each other (beyond the stabilization's 1 mm)


def _boxes_on_a_mesh(articulated: bool, closure: bool = False, body_damping: bool | None = None) -> Scene:
    """Three cubes on a mesh floor (two triangles), each SINK deep in the floor or in the cube below, body
    contacts on: ``articulated``, one articulation (a free cube, a cube hinged beside it and one hinged above
    both, touching its grandparent: all contacts on one tree, the dense contact space); otherwise three free
    cubes (one tree each: the tree-by-tree space). ``closure`` pins a corner of the top cube to the world (the
    contact responses projected onto the closure). Deeper than the stabilization's depth, so the steps project too."""
    h = 0.5 * BOX - SINK
    b = ModelBuilder()
    kw = {"mass": 1.0, "inertia": (0.007, 0.007, 0.007), "shape": {"type": "box", "size": (BOX,) * 3, "friction": 0.8}}
    b.add_body("base", joint="free", joint_name="base", **kw)
    if articulated:
        b.add_body("side", parent="base", joint="revolute", axis=(0, 1, 0), joint_origin=(BOX - SINK, 0, 0),
                   joint_name="side", **kw)
        b.add_body("over", parent="side", joint="revolute", axis=(0, 1, 0), joint_origin=(-0.5 * BOX, 0, BOX - SINK),
                   joint_name="over", **kw)
    else:
        b.add_body("side", joint="free", joint_origin=(BOX - SINK, 0, 0), joint_name="side", **kw)
        b.add_body("over", joint="free", joint_origin=(0.5 * BOX, 0, BOX - SINK), joint_name="over", **kw)
    model = b.finalize()
    q0 = model.neutral_q()
    q0[2] = h  # the free base cube's height (its position is its first three coordinates)
    if not articulated:
        for name in ("side", "over"):  # (a free joint's position is relative to its joint origin)
            q0[model.q_slice(name).start + 2] = h
    scene = Scene(model, name="warmup contact", q0=q0)
    if body_damping is not False:
        scene.body_damping[:] = 0.01
    floor = np.array([(-2.0, -2.0, 0.0), (2.0, -2.0, 0.0), (2.0, 2.0, 0.0), (-2.0, 2.0, 0.0)])
    scene.add_static_collider("floor", {"type": "mesh", "vertices": floor, "triangles": [(0, 1, 2), (0, 2, 3)]},
                              friction=0.8)
    scene.set_body_contacts(friction=0.8)
    if closure:  # a corner of the top cube, off its hinge: the step ends with a closure error to project away
        R, p = link_poses(model, q0)  # while contacts are pressed (the post-stabilization holds them: closure_solve)
        top = model.body_index("over")
        scene.add_loop_closure("over", -1, p[top] + R[top] @ np.array([0.5 * BOX, 0.0, 0.5 * BOX]), kind="point",
                               name="pin")
    return scene


def _body_contact(solver: str, method: str, body_damping: bool | None = None, closures: bool | None = None):
    """Bodies against bodies and a mesh collider, in each form the contact stage solves them: one
    articulation (dense), several (tree by tree), and, unless the scene has no closures, one with a loop
    closure; each with the stabilization's projection."""
    variants = [(True, False), (False, False)] + ([(True, True)] if closures is not False else [])
    for articulated, closure in variants:
        for m in _concrete(method):
            sim = _step(_boxes_on_a_mesh(articulated, closure, body_damping), solver, contact_method=m)
    return sim


def _dynamics_api() -> None:
    """The public algorithms as the README's API example calls them (``aba``, ``rnea``, ``crba``, ``minv``,
    ``bias_forces``, ``ltdl``/``ltdl_solve``) and ``spd`` by each method, on a floating binary tree."""
    from .. import algorithms
    from ..control import spd
    from ..control.spd import METHODS
    from ..random_tree import random_configuration, random_tree

    model = random_tree(5, branching="binary", seed=1, floating_base=True)
    q, qd = random_configuration(model, np.random.default_rng(0))
    qdd = algorithms.aba(model, q, qd, np.zeros(model.nv))
    algorithms.rnea(model, q, qd, qdd)
    algorithms.bias_forces(model, q, qd)
    M = algorithms.crba(model, q)
    algorithms.minv(model, q)
    algorithms.ltdl_solve(model, algorithms.ltdl(model, M), qdd)
    for method in METHODS:
        spd(model, q, qd, q, 10.0, 1.0, 0.01, method=method)


API_GROUP = "dynamics API: aba, rnea, crba, minv, spd"


def api_group() -> KernelGroup:
    """The public algorithms' kernels (``_dynamics_api``): not part of any bake, shipped for the Python API."""
    return KernelGroup(API_GROUP, _dynamics_api)


def scene_facts(scene: Scene) -> dict:
    """The facts about ``scene`` that decide which kernels its bake compiles, as keywords of
    ``kernel_groups``/``compile_kernels``/``is_warm``: {"contact", "closures", "limits", "body_damping"}
    (limits: finite joint bounds, which ``Simulator`` enforces unless told not to)."""
    from ..solvers.stages.joint_limits import JointLimits

    return {"contact": scene.has_contact,
            "closures": len(scene.loop_closures) > 0, "limits": JointLimits.needed(scene.model),
            "body_damping": bool(np.any(np.asarray(scene.body_damping) != 0.0))}


def kernel_groups(solver: str = "pcg", *, contact: bool = False, contact_method: str = "auto",
                  closures: bool | None = None, limits: bool | None = None,
                  body_damping: bool | None = None) -> list[KernelGroup]:
    """The groups a bake with ``solver`` ("pcg", "direct", "dense") runs, in order; contact (``contact_method``
    "auto" (both "minv" and "impulse"), "minv", "cholesky" or "impulse": the ground, then bodies against bodies and mesh colliders in the dense
    and the tree-by-tree contact space, with closures unless ``closures`` is False) only when ``contact``.

    closures: the scene has loop closures (True: only the step with closures is compiled; False: only
    the steps without; None, not known: both). limits: enforced joint limits (True: the limit stage
    with a bound reached, which compiles its M̃⁻¹ and PGS solve; False: no limit stage; None: both).
    Without closures the limit stage has a step of its own (the staged step, not the one-call one);
    with closures (or closures not known) the closures group's hinge reaches its bound unless limits
    is False. body_damping: the scene has body damping (False: its blocks are not compiled; None: they
    are). With contact the step without closures is the contact group's, so closures=False leaves out
    the separate step there."""
    solver = _check_solver(solver)
    groups = [KernelGroup("forward kinematics", _kinematics)]
    with_limits = limits is not False
    if closures is None:
        groups.append(KernelGroup(f"{solver.upper()} step: joint springs, springs, cables, loads",
                                  lambda: _forces(solver, body_damping)))
        groups.append(KernelGroup("loop closures" + (", joint limits" if with_limits else ""),
                                  lambda: _closures(solver, body_damping, limits=with_limits)))
    elif closures:
        groups.append(KernelGroup(f"{solver.upper()} step with loop closures"
                                  + (" and joint limits" if with_limits else "")
                                  + ": joint springs, springs, cables, loads",
                                  lambda: _closures(solver, body_damping, forces=True, limits=with_limits)))
    else:
        if not contact and not limits:
            groups.append(KernelGroup(f"{solver.upper()} step: joint springs, springs, cables, loads",
                                      lambda: _forces(solver, body_damping)))
        if limits is not False:
            groups.append(KernelGroup(f"{solver.upper()} step with joint limits", lambda: _limits(solver, body_damping)))
    if contact:
        groups.append(KernelGroup(f"ground contact ({contact_method})",
                                  lambda: _contact(solver, contact_method, body_damping, forces=closures is False)))
        groups.append(KernelGroup(f"contact between bodies and with mesh colliders ({contact_method})",
                                  lambda: _body_contact(solver, contact_method, body_damping, closures)))
    return groups


def _check_solver(solver: str) -> str:
    s = str(solver).lower()
    if s not in SOLVERS:
        raise ValueError(f"warm-up: unknown solver {solver!r}; expected one of {', '.join(SOLVERS)}")
    return s


# ---------------------------------------------------------------- cache state
def cache_dir() -> Path:
    """Where this process writes the stamp: the user kernel cache folder (``_jit.cache_folder()``), or
    the engine's ``__pycache__`` without numba."""
    return _jit.cache_folder() or _ROOT / "__pycache__"


def _stamp_dirs() -> list[Path]:
    """Folders whose stamps count: the shipped kernels' (when this process uses them), then the user cache's."""
    shipped = _jit.TARGET.shipped if _jit.TARGET is not None else None
    return ([shipped] if shipped is not None else []) + [cache_dir()]


def _source_key() -> str:
    """The engine's source digest (file contents, Python's and numba's versions): a changed tree needs a new
    warm-up. Content, not modification times: a shipped stamp must hold wherever the package is unpacked."""
    return _jit.source_digest()


def _stamp_key(solver: str, contact: bool, contact_method: str, closures: bool | None = None,
               limits: bool | None = None, body_damping: bool | None = None) -> str:
    key = f"{solver}+{contact_method}" if contact else solver
    if closures is not None:
        key += "/closures" if closures else "/no-closures"
    if limits is not None:  # (with or without closures: each group with a hinge reaches its bound unless False)
        key += "/limits" if limits else "/no-limits"
    if body_damping is not None:
        key += "/damped" if body_damping else "/undamped"
    return key


def _covering_keys(solver, contact, contact_method, closures, limits, body_damping) -> list[str]:
    """Stamp keys whose warm-up compiled at least what these facts need: the facts' own key and those with
    a known fact left open (None compiles both kinds)."""
    return list(dict.fromkeys(_stamp_key(solver, contact, contact_method, c, l, d)
                              for c in dict.fromkeys((closures, None)) for l in dict.fromkeys((limits, None))
                              for d in dict.fromkeys((body_damping, None))))


def _dispatchers():
    """{"module:name": dispatcher} of every numba kernel at module level in the engine package; the module
    relative to the package ("algorithms.aba:aba_flat"), so a stamp holds inside Blender's extension too."""
    from numba.core.dispatcher import Dispatcher

    found = {}
    for mod_name, mod in list(sys.modules.items()):
        if mod is None or not (mod_name == _PACKAGE or mod_name.startswith(_PACKAGE + ".")):
            continue
        for attr, value in list(vars(mod).items()):
            if isinstance(value, Dispatcher) and getattr(value, "__module__", mod_name) == mod_name:
                found[f"{mod_name[len(_PACKAGE) + 1:]}:{attr}"] = value
    return found


def _cached_signatures(dispatcher) -> set:
    """Signatures (as text) this process would load from disk (shipped or user cache) for ``dispatcher``."""
    cache = getattr(dispatcher, "_cache", None)
    if not hasattr(cache, "cached_signatures"):
        return set()
    from numba.core.registry import cpu_target

    return cache.cached_signatures(cpu_target.target_context.codegen())


def _read_stamp(folder: Path | None = None) -> dict:
    try:
        return json.loads(((folder or cache_dir()) / STAMP_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def is_warm(solver: str = "pcg", *, contact: bool = False, contact_method: str = "auto",
            closures: bool | None = None, limits: bool | None = None, body_damping: bool | None = None) -> bool:
    """True when the last complete ``compile_kernels`` of this solver, for these scene facts (or for
    facts left open, which covers them), is still in numba's cache (so a first step loads machine code
    instead of compiling). Always True without numba."""
    if not _jit.JIT_ENABLED:
        return True
    solver = _check_solver(solver)
    keys = _covering_keys(solver, contact, contact_method, closures, limits, body_damping)
    for folder in _stamp_dirs():
        stamp = _read_stamp(folder)
        if stamp.get("source") != _source_key():
            continue
        groups = stamp.get("groups", {})
        if any(groups.get(key) and _entry_cached(groups[key]) for key in keys):
            return True
    return False


def _entry_cached(entry: dict) -> bool:
    """Every kernel signature of a stamp entry is in numba's on-disk index."""
    import importlib

    try:
        for name, sigs in entry.items():
            mod_name, attr = name.split(":")
            disp = getattr(importlib.import_module(f"{_PACKAGE}.{mod_name}"), attr)
            if not set(sigs) <= _cached_signatures(disp):
                return False
    except Exception:  # a renamed kernel, an unreadable index: compile again
        return False
    return True


def _write_stamp(key: str) -> int:
    """Record every engine kernel compiled or loaded in this process under ``key``; returns how many."""
    kernels = {name: sorted(str(s) for s in d.signatures) for name, d in _dispatchers().items() if d.signatures}
    stamp = _read_stamp()
    source = _source_key()
    groups = stamp.get("groups", {}) if stamp.get("source") == source else {}
    groups[key] = kernels
    path = cache_dir() / STAMP_NAME
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"source": source, "groups": groups}), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:  # a read-only cache: every later run checks again (and compiles nothing)
        pass
    return len(kernels)


def compile_kernels(solver: str = "pcg", *, contact: bool = False, contact_method: str = "auto",
                    closures: bool | None = None, limits: bool | None = None, body_damping: bool | None = None,
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
    if progress is not None and _jit.JIT_ENABLED:
        _jit.first_compile_notice.given()  # the caller reports progress itself
    facts = {"contact": bool(contact), "contact_method": contact_method, "closures": closures, "limits": limits,
             "body_damping": body_damping}
    result = WarmupResult(solver, bool(contact), closures, limits, body_damping, was_warm=is_warm(solver, **facts))
    groups = kernel_groups(solver, **facts)
    for k, group in enumerate(groups):
        if cancel is not None and cancel():
            raise WarmupCancelled(f"kernel compilation cancelled after {k} of {len(groups)} groups")
        if progress is not None:
            progress(k, len(groups), group.name)
        t0 = time.perf_counter()
        group.run()
        result.seconds[group.name] = time.perf_counter() - t0
    if _jit.JIT_ENABLED:
        result.kernels = _write_stamp(_stamp_key(solver, **facts))
    if progress is not None:
        progress(len(groups), len(groups), "")
    return result
