"""The viewer's state without a window: which scene, the simulator, play/pause/step/reset, time
step and substeps, solver, gravity, the mouse-drag spring, and the history behind the live plots.

Every control of the viewer's panel is a plain method here (``set_solver``,
``set_params``, ``grab`` …), so the UI is tested without a window. A scene
comes from a built-in name (``SCENES``), a URDF file or a JSON scene file
(``engine.scene_file``).

Time: a frame advances the scene by ``dt`` seconds in ``substeps`` solver steps
of ``dt / substeps``. While playing in real time (``realtime``, the default),
``advance()`` — called once per displayed frame — steps as many frames as the
wall clock asks for (within ``max_frames_per_advance`` and ``step_budget``), so the scene keeps
real time when drawing is slower than the simulation; otherwise it steps one
frame per call. The mouse drag is a spring–damper pulling a
body point towards a target, applied as one of the scene's point forces
(added on ``grab``, refreshed with ``Scene.set_point_force`` before every solver
step, removed on ``release``):
F = m (ω² (target − x) − 2 ζ ω ẋ) with m the mass of the body and everything
it carries, ω = 2π ``drag_frequency``, ζ = 1 (critical damping). The spring is
applied explicitly, so k is capped for stability (k h² ≤ m_body) and |F| at
``drag_max_weights`` times m g (a pull can lift what hangs on the body, but not
tear a stiff structure apart in one step).
"""
from __future__ import annotations

import inspect
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ... import scenes
from ...algorithms.kinematics import link_poses, link_velocities
from ...errors import ModelError
from ...scene import Scene
from ...simulator import SOLVERS, Simulator
from .frame import Frame, frame_geometry, scene_shapes

HISTORY = 600  # frames kept for the live plots
DRAG_DAMPING_RATIO = 1.0
DRAG_FORCE = "mouse drag"  # the name of the drag's point force while a body is held
DRAG_SOLVERS = ("pcg", "direct", "dense", "explicit")  # the solvers that apply point forces
STANDARD_GRAVITY = 9.81  # m/s²: the drag force is at most drag_max_weights × (weight of what it pulls)


@dataclass(frozen=True)
class ScenePreset:
    """A built-in scene: ``build(size, car_mass)``; ``size`` means ``size_label``; ``substeps``: the fewest
    solver steps per 1/60 s frame it runs stably with (the session takes at least these)."""

    build: Callable[[int | None, float], Scene]
    default_size: int | None = None
    size_range: tuple[int, int] = (1, 1)
    size_label: str = ""
    has_car: bool = False
    substeps: int = 1


def _no_size(factory):
    return lambda size, car_mass: factory()


SCENES: dict[str, ScenePreset] = {
    "bridge": ScenePreset(lambda n, car: scenes.bridge(n, n, car_mass=car or None), 20, (7, 41),
                          "deck pieces = tower bodies", has_car=True),
    "umbrella": ScenePreset(lambda n, car: scenes.umbrella(n), 3, (2, 8), "bodies per rib"),
    "tree": ScenePreset(lambda n, car: scenes.tree(n), 3, (1, 6), "levels"),
    "chain": ScenePreset(lambda n, car: scenes.chain(n), 10, (1, 100), "links"),
    "pendulum": ScenePreset(_no_size(scenes.pendulum)),
    "four_bar": ScenePreset(_no_size(scenes.four_bar)),
    "centipede": ScenePreset(lambda n, car: scenes.centipede(n), 10, (1, 250), "segments"),
    "chain_on_stairs": ScenePreset(lambda n, car: scenes.chain_on_stairs(n), 20, (2, 100), "links"),
    # (the bridge's loop closure needs about 1/240 s once the deck moves, docs/contact.md; shorter bridges diverge)
    "crate_on_bridge": ScenePreset(lambda n, car: scenes.crate_on_bridge(n), 30, (30, 60), "planks", substeps=4),
}


def available_scenes() -> dict[str, ScenePreset]:
    """The presets plus every other ``engine.scenes`` factory that needs no arguments (e.g. characters)."""
    out = dict(SCENES)
    for name in getattr(scenes, "__all__", []):
        fn = getattr(scenes, name, None)
        if name in out or not callable(fn):
            continue
        try:
            required = [p for p in inspect.signature(fn).parameters.values()
                        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            continue
        if not required:
            out[name] = ScenePreset(_no_size(fn))
    return out


@dataclass(frozen=True)
class SceneSource:
    """Where the scene comes from: ``kind`` "preset" (``name``), "urdf" or "file" (``path``)."""

    kind: str
    name: str = ""
    path: str = ""
    floating_base: bool = False

    @classmethod
    def preset(cls, name: str) -> "SceneSource":
        return cls("preset", name=name)

    @classmethod
    def urdf(cls, path, floating_base: bool = False) -> "SceneSource":
        return cls("urdf", path=str(path), floating_base=floating_base)

    @classmethod
    def file(cls, path) -> "SceneSource":
        return cls("file", path=str(path))

    @property
    def label(self) -> str:
        return self.name if self.kind == "preset" else Path(self.path).name


@dataclass(frozen=True)
class SceneParams:
    """Scene parameters that rebuild the scene. size: None = the preset's default;
    stiffness_scale multiplies every spring's and cable's stiffness; car_mass (kg, 0 = no car)."""

    size: int | None = None
    stiffness_scale: float = 1.0
    car_mass: float = 1500.0


def build_scene(source: SceneSource, params: SceneParams = SceneParams()) -> Scene:
    """A fresh Scene for ``source`` with ``params``; raises ModelError (unknown name, bad file)."""
    if source.kind == "preset":
        presets = available_scenes()
        if source.name not in presets:
            raise ModelError(f"unknown scene '{source.name}' (available: {', '.join(presets)})")
        preset = presets[source.name]
        size = params.size if params.size is not None else preset.default_size
        if size is not None and not preset.size_range[0] <= size <= preset.size_range[1]:
            lo, hi = preset.size_range
            raise ModelError(f"scene '{source.name}': size must be between {lo} and {hi} ({preset.size_label}), got {size}")
        try:
            scene = preset.build(size, float(params.car_mass))
        except ValueError as e:
            raise ModelError(f"scene '{source.name}': {e}") from None
    elif source.kind == "urdf":
        from ...urdf import load_urdf

        model = load_urdf(source.path, floating_base=source.floating_base)
        scene = Scene(model, name=Path(source.path).stem)
    elif source.kind == "file":
        from ...scene_file import load_scene

        scene = load_scene(source.path)
    else:
        raise ValueError(f"unknown scene source kind {source.kind!r}")
    if not (params.stiffness_scale > 0 and np.isfinite(params.stiffness_scale)):
        raise ModelError(f"stiffness scale must be a positive number, got {params.stiffness_scale}")
    if params.stiffness_scale != 1.0:
        for i, pair in enumerate(scene.pairs):
            scene.set_pair(i, stiffness=pair[4] * params.stiffness_scale)
    return scene


@dataclass
class Drag:
    """A body point pulled towards ``target`` (world, m); ``point`` in the body's link frame."""

    body: int
    point: np.ndarray
    target: np.ndarray


class ViewerSession:
    """State and actions of the viewer. ``advance()`` is called once per displayed frame."""

    def __init__(self, source: SceneSource, params: SceneParams = SceneParams(), *, solver: str = "pcg",
                 dt: float = 1.0 / 60.0, substeps: int = 1, gravity: bool = True,
                 clock: Callable[[], float] = time.perf_counter):
        if solver not in SOLVERS:
            raise ValueError(f"unknown solver {solver!r}; expected one of {', '.join(SOLVERS)}")
        _check_dt(dt, substeps)
        self.source, self.params = source, params
        self.solver, self.dt, self.substeps, self.gravity = solver, float(dt), int(substeps), bool(gravity)
        self.drag_frequency = 2.0  # Hz
        self.drag_max_weights = 5.0
        self.clock = clock
        self.playing = False
        self.realtime = True
        self.max_frames_per_advance = 30  # real time: at most this many frames per displayed frame …
        self.step_budget = 0.1            # … and no new frame after this many wall seconds of stepping
        self.drag: Drag | None = None
        self.scene_version = 0  # bumped whenever the scene (and what is drawn) is rebuilt
        self._build()

    # ------------------------------------------------------------ building
    def _build(self) -> None:
        """Build the scene from source and params (state back to q0)."""
        scene = build_scene(self.source, self.params)
        if self.source.kind == "preset":
            self.substeps = max(self.substeps, available_scenes()[self.source.name].substeps)
        base_gravity = scene.model.gravity.copy()
        if not self.gravity:
            scene.model = scene.model.with_gravity((0.0, 0.0, 0.0))
        sim = Simulator(scene, solver=self.solver, dt=self.dt / self.substeps)  # may refuse: nothing changed yet
        self.scene, self.sim, self._base_gravity = scene, sim, base_gravity
        self.shapes = scene_shapes(scene)
        self._subtree_mass = _subtree_masses(scene.model)
        self.drag = None
        self.scene_version += 1
        self._clear_history()

    def _make_simulator(self, solver: str, dt: float, substeps: int | None = None) -> Simulator:
        """A simulator for the current scene that continues from the current state."""
        sim = Simulator(self.scene, solver=solver, dt=dt / (substeps or self.substeps))
        sim.state = self.sim.state.copy()
        return sim

    def _clear_history(self) -> None:
        self.history = {key: deque(maxlen=HISTORY) for key in
                        ("time", "step_ms", "iterations", "energy", "drift", "realtime_factor")}
        self._timeline: deque = deque(maxlen=31)  # (wall clock, scene time) at the last advances
        self._play_clock = None  # wall clock at which real-time playing (re)started, and frames since
        self._play_frames = 0
        self._play_first = None  # (wall clock, scene time) after the first advance since play
        self.frames = 0
        self.dropped_frames = 0  # real time: frames the wall clock asked for but the session could not make

    # ------------------------------------------------------------ controls
    def play(self) -> None:
        self.playing = True
        self._timeline.clear()
        self._play_clock = None
        self._play_first = None

    def pause(self) -> None:
        self.playing = False

    def toggle_play(self) -> None:
        self.pause() if self.playing else self.play()

    def reset(self) -> None:
        """Back to the initial state (t = 0), keeping solver, time step and parameters."""
        self.release()
        self.sim = Simulator(self.scene, solver=self.solver, dt=self.dt / self.substeps)
        self._clear_history()

    def set_solver(self, solver: str) -> None:
        """Switch solver, keeping the state. Raises ValueError when the solver cannot run this scene."""
        if solver == self.solver:
            return
        self.sim = self._make_simulator(solver, self.dt)
        self.solver = solver

    def set_dt(self, dt: float) -> None:
        """Seconds of scene time per displayed frame (state kept)."""
        _check_dt(dt, self.substeps)
        self.sim = self._make_simulator(self.solver, float(dt))
        self.dt = float(dt)
        self._play_clock = None

    def set_substeps(self, substeps: int) -> None:
        """Solver steps per displayed frame (each dt / substeps; state kept)."""
        _check_dt(self.dt, substeps)
        self.sim = self._make_simulator(self.solver, self.dt, int(substeps))
        self.substeps = int(substeps)

    def set_gravity(self, on: bool) -> None:
        """Gravity on (the scene's own) or off, state kept."""
        on = bool(on)
        if on == self.gravity:
            return
        self.scene.model = self.scene.model.with_gravity(self._base_gravity if on else (0.0, 0.0, 0.0))
        self.sim = self._make_simulator(self.solver, self.dt)
        self.gravity = on

    def set_params(self, **changes) -> None:
        """Change scene parameters (``size``, ``stiffness_scale``, ``car_mass``) and rebuild the scene
        from scratch (state back to q0). On a bad value the old scene stays and ModelError is raised."""
        params = replace(self.params, **changes)
        if params == self.params:
            return
        old = self.params
        self.params = params
        try:
            self._build()
        except Exception:
            self.params = old
            raise

    def set_scene(self, source: SceneSource) -> None:
        """Open another scene (its default parameters)."""
        old_source, old_params = self.source, self.params
        self.source, self.params = source, SceneParams()
        try:
            self._build()
        except Exception:
            self.source, self.params = old_source, old_params
            raise

    @property
    def preset(self) -> ScenePreset | None:
        return available_scenes().get(self.source.name) if self.source.kind == "preset" else None

    # -------------------------------------------------------------- stepping
    def advance(self) -> int:
        """Called once per displayed frame; returns how many frames it stepped (0 when paused).

        In real time: the frames the wall clock asks for since play started, at most
        ``max_frames_per_advance`` and none started after ``step_budget`` seconds (when the
        simulation cannot keep up it falls behind instead of catching up later); otherwise one."""
        if not self.playing:
            return 0
        now = self.clock()
        if not self.realtime:
            self.step_frame()
            n = 1
        else:
            if self._play_clock is None:
                self._play_clock, self._play_frames = now, 0
            due = int((now - self._play_clock) / self.dt + 1e-6) + 1 - self._play_frames
            n = 0
            while n < min(due, self.max_frames_per_advance) and (n == 0 or self.clock() - now < self.step_budget):
                self.step_frame()
                n += 1
            if due > n:  # too slow: forget the frames it could not make
                self._play_clock = now - (self._play_frames + n - 1) * self.dt
                self.dropped_frames += due - n
            self._play_frames += n
        self._timeline.append((now, self.sim.state.t))
        if self._play_first is None:
            self._play_first = self._timeline[-1]
        if len(self._timeline) > 1:
            (w0, t0), (w1, t1) = self._timeline[0], self._timeline[-1]
            if w1 > w0:
                self.history["realtime_factor"].append((t1 - t0) / (w1 - w0))
        return n

    def step_frame(self) -> None:
        """Advance the scene by dt (``substeps`` solver steps) and record the frame's statistics."""
        sim = self.sim
        steps_before = sim.stats.steps
        t0 = time.perf_counter()
        for _ in range(self.substeps):
            self._apply_drag()
            sim.step(1)
        seconds = time.perf_counter() - t0
        h = self.history
        h["time"].append(sim.state.t)
        h["step_ms"].append(1e3 * seconds / self.substeps)
        h["iterations"].append(max(sim.stats.iterations[steps_before:], default=0))
        h["energy"].append(sim.energy())
        h["drift"].append(sim.stats.constraint_error)
        self.frames += 1

    @property
    def time(self) -> float:
        return self.sim.state.t

    def frame(self) -> Frame:
        """What to draw now."""
        return frame_geometry(self.scene, self.shapes, self.sim.state.q, self.sim.state.t)

    def played_since_play(self) -> tuple[float, float]:
        """(scene seconds, wall seconds) between the first and the last ``advance`` since ``play``."""
        if self._play_first is None or not self._timeline:
            return 0.0, 0.0
        (w0, t0), (w1, t1) = self._play_first, self._timeline[-1]
        return t1 - t0, w1 - w0

    def realtime_factor(self) -> float:
        """Scene seconds per wall second over the last 30 displayed frames while playing (nan before two)."""
        r = self.history["realtime_factor"]
        return float(r[-1]) if r else float("nan")

    # ------------------------------------------------------------ mouse drag
    def pick(self, origin, direction):
        """The nearest movable body hit by the ray origin + s·direction (s > 0), as (body, world point),
        or None. Bodies are their drawn boxes."""
        o = np.asarray(origin, float)
        d = np.asarray(direction, float)
        d = d / np.linalg.norm(d)
        f = self.frame()
        lo_o = np.einsum("nji,nj->ni", f.box_rotation, o - f.box_position)  # ray in the boxes' frames
        lo_d = np.einsum("nji,j->ni", f.box_rotation, d)
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = 1.0 / lo_d
            t1 = (-self.shapes.half_size - lo_o) * inv
            t2 = (self.shapes.half_size - lo_o) * inv
        near = np.nanmax(np.minimum(t1, t2), axis=1)
        far = np.nanmin(np.maximum(t1, t2), axis=1)
        hit = (near <= far) & (far > 0) & self.shapes.movable
        if not hit.any():
            return None
        s = np.where(hit, np.maximum(near, 0.0), np.inf)
        body = int(np.argmin(s))
        return body, o + s[body] * d

    def grab(self, body: int, world_point) -> None:
        """Start pulling ``body`` at ``world_point`` (m); the target starts there."""
        if not 0 <= body < self.scene.model.n_bodies:
            raise ModelError(f"drag: no body with index {body}")
        if self.solver not in DRAG_SOLVERS:
            raise ValueError(f"the mouse drag is a point force, which the '{self.solver}' solver does not take; "
                             f"switch to one of {', '.join(DRAG_SOLVERS)}")
        x = np.asarray(world_point, float).reshape(3)
        R, p = link_poses(self.scene.model, self.sim.state.q)
        self.release()
        self.drag = Drag(int(body), R[body].T @ (x - p[body]), x.copy())
        self.scene.add_point_force(body, self.drag.point, (0.0, 0.0, 0.0), frame="link", name=DRAG_FORCE)

    def drag_to(self, target) -> None:
        """Move the drag target (world, m)."""
        if self.drag is not None:
            self.drag.target = np.asarray(target, float).reshape(3).copy()

    def drag_along_ray(self, origin, direction, plane_normal) -> None:
        """Move the target to where the ray meets the plane through the current target
        perpendicular to ``plane_normal`` (the view direction): the mouse's place in depth."""
        if self.drag is None:
            return
        o, d, n = (np.asarray(v, float) for v in (origin, direction, plane_normal))
        denom = d @ n
        if abs(denom) < 1e-9:
            return
        s = (self.drag.target - o) @ n / denom
        if s > 0:
            self.drag_to(o + s * d)

    def release(self) -> None:
        """Let go: the drag's point force leaves the scene."""
        self.drag = None
        if self.scene.point_force_names and self.scene.point_force_names[-1] == DRAG_FORCE:
            self.scene.remove_point_force(len(self.scene.point_force_names) - 1)

    def drag_force(self) -> np.ndarray:
        """The drag's world force (3,) (N) at the current state (zero without a drag)."""
        if self.drag is None:
            return np.zeros(3)
        model, state = self.scene.model, self.sim.state
        b, point = self.drag.body, self.drag.point
        R, p = link_poses(model, state.q)
        x = p[b] + R[b] @ point
        v = link_velocities(model, state.q, state.qd)[b]  # [ω; v] at the link origin, link coordinates
        xdot = R[b] @ (v[3:] + np.cross(v[:3], point))
        omega = 2 * np.pi * self.drag_frequency
        h = self.sim.dt
        m_body = max(float(model.body_mass[b]), 1e-9)
        m = self._subtree_mass[b]
        k = min(m * omega * omega, m_body / (h * h))
        c = min(2 * DRAG_DAMPING_RATIO * np.sqrt(k * m), m_body / h)
        force = k * (self.drag.target - x) - c * xdot
        limit = self.drag_max_weights * m * STANDARD_GRAVITY
        size = float(np.linalg.norm(force))
        return force if size <= limit else force * (limit / size)

    def drag_line(self):
        """(grabbed point, target) in world coordinates (m), or None without a drag."""
        if self.drag is None:
            return None
        R, p = link_poses(self.scene.model, self.sim.state.q)
        b = self.drag.body
        return p[b] + R[b] @ self.drag.point, self.drag.target.copy()

    def _apply_drag(self) -> None:
        if self.drag is not None:
            self.scene.set_point_force(len(self.scene.point_force_names) - 1, self.drag_force())

    # --------------------------------------------------------------- display
    def status_lines(self) -> list[str]:
        """The numbers of the stats panel, one line each."""
        h, sim = self.history, self.sim
        last = lambda key, fmt: fmt.format(h[key][-1]) if h[key] else "–"  # noqa: E731
        rtf = self.realtime_factor()
        return [
            f"scene time {sim.state.t:.3f} s, frame {self.frames}",
            f"real-time factor {rtf:.2f}" if np.isfinite(rtf) else "real-time factor – (press play)",
            f"time per step {last('step_ms', '{:.3f}')} ms ({self.substeps} per frame)",
            f"PCG iterations per step {last('iterations', '{:.0f}')}" if self.solver == "pcg"
            else f"iterations per step – ({self.solver} solver)",
            f"energy {last('energy', '{:.6g}')} J",
            f"constraint drift {last('drift', '{:.3g}')} m",
        ]


def _check_dt(dt, substeps) -> None:
    if not (dt > 0 and np.isfinite(dt)):
        raise ValueError(f"time step must be a positive number of seconds, got {dt}")
    if int(substeps) != substeps or substeps < 1:
        raise ValueError(f"substeps must be a whole number ≥ 1, got {substeps}")


def _subtree_masses(model) -> np.ndarray:
    """Mass (kg) of each body plus everything below it (children come after parents)."""
    m = model.body_mass.astype(float).copy()
    for i in range(model.n_bodies - 1, -1, -1):
        p = int(model.body_parent[i])
        if p >= 0:
            m[p] += m[i]
    return np.maximum(m, 1e-9)
