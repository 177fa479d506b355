"""What a Scene can drive beyond forces and closures (``engine.Scene`` inherits ``DrivesMixin``):

* ``prescribe(joint, motion, until=None)``: the joint follows a given q̄(t) (RedMax's prescribed joints: a
  known motion that enters the step as velocity rows G q̇⁺ = (q̄(t + h) ⊖ q)/h, solved with the loop closures;
  ``engine.solvers.stages.prescribed``). A body on a free joint prescribed this way is a moving anchor;
* ``add_motor(...)``: a velocity motor between two bodies about (or along) an axis, its force bounded:
  a row of the step's implicit system, solved after the velocity solve in the step's metric M̃⁻¹
  (``engine.solvers.stages.servos``), so it is as stable at frame steps as stable PD;
* ``set_breakable(name, threshold, interval)``: a joint or loop closure breaks at the first step whose
  reaction impulse over ``interval`` exceeds ``threshold``; the Simulator then frees the child (the tree
  changes) or drops the closure (``engine.breaking``);
* ``set_velocity_decay(body, linear, angular)``: mass-proportional drag, the body's centre-of-mass velocity
  and angular velocity decaying at the given rates (1/s) — D_m = X_cᵀ diag(c_ω I_c, c_v m 1) X_c;
* ``add_force_field(...)``: a Blender force field (``engine.forces.fields``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import joints as J
from .errors import ModelError
from .forces.fields import PARAMETERS as FIELD_PARAMETERS, make_field
from .model import _float_array as _floats, _number as _scalar

WORLD = -1
MOTOR_KINDS = ("angular", "linear")


@dataclass
class Prescription:
    """Joint ``joint`` (index ``index``) follows ``motion(t)`` (its q̄, (nq_j,)) until time ``until`` (s), then
    moves freely from the velocity of its last prescribed step."""

    joint: str
    index: int
    motion: object
    until: float = math.inf


@dataclass
class Motor:
    """A velocity motor: body_b moves relative to body_a about (``"angular"``) or along (``"linear"``) the
    axis (link frame of a; world for the world) at ``target_velocity`` (rad/s or m/s), with at most
    ``max_force`` (N·m or N). Linear motors act between point_a and point_b (link frames)."""

    name: str
    body_a: int
    body_b: int
    axis_a: np.ndarray
    point_a: np.ndarray
    point_b: np.ndarray
    kind: str
    target_velocity: float
    max_force: float


@dataclass
class Breakable:
    """Joint or loop closure ``name`` (kind ``"joint"`` / ``"closure"``) breaks when a reaction impulse over
    ``interval`` seconds exceeds ``threshold`` (N·s): any world component of its reaction force or of its
    constraint torque times the interval (Bullet compares each constraint row's impulse of one substep)."""

    name: str
    kind: str
    threshold: float
    interval: float


@dataclass
class Drives:
    """The drives of a scene, as ``FrozenScene.drives`` carries them."""

    prescribed: tuple = ()
    motors: tuple = ()
    breakable: tuple = ()
    velocity_decay: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    force_fields: tuple = ()

    @property
    def any(self) -> bool:
        """Anything a solver without these stages must refuse."""
        return bool(self.prescribed or self.motors or self.breakable or self.force_fields
                    or np.any(self.velocity_decay))

    def names(self) -> list:
        """What there is, for the refusal messages of solvers without these stages."""
        out = []
        for label, items in (("prescribed joints", self.prescribed), ("motors", self.motors),
                             ("breakable joints", self.breakable), ("force fields", self.force_fields)):
            if items:
                out.append(f"{len(items)} {label}")
        if np.any(self.velocity_decay):
            out.append("velocity decay")
        return out


class DrivesMixin:
    """The Scene methods of this module (the Scene sets up ``_drives_init``)."""

    def _drives_init(self):
        self.prescribed: list[Prescription] = []
        self.motors: list[Motor] = []
        self.breakable: list[Breakable] = []
        self.velocity_decay = np.zeros((self.model.n_bodies, 2))  # per body: (linear, angular) rate (1/s)
        self.force_fields: list = []

    def drives_snapshot(self) -> Drives:
        """A copy of the drives for ``finalize`` (``FrozenScene.drives``)."""
        return Drives(tuple(self.prescribed), tuple(self.motors), tuple(self.breakable), self.velocity_decay.copy(),
                      tuple(self.force_fields))

    # ------------------------------------------------------------ prescribed motion
    def prescribe(self, joint: str, motion, *, until=None) -> Prescription:
        """Joint ``joint`` follows ``motion(t)`` → q̄ (nq_j,) (e.g. ``engine.control.JointTrajectory``) from the
        start until time ``until`` (s; default forever), after which it moves freely. Its velocity each
        step is (q̄(t + h) ⊖ q)/h, so it is exactly on q̄ at every step's end; forces on it are whatever it
        takes (the world drives it)."""
        what = f"prescribed joint '{joint}'"
        try:
            j = self.model.joint_index(joint) if isinstance(joint, str) else None
        except KeyError:
            j = None
        if j is None:
            raise ModelError(f"{what}: no joint named {joint!r}")
        if J.JOINT_NV[self.model.joint_type[j]] == 0:
            raise ModelError(f"{what}: a fixed joint has no motion to prescribe")
        if any(p.index == j for p in self.prescribed):
            raise ModelError(f"{what}: already prescribed")
        if not callable(motion):
            raise ModelError(f"{what}: motion must be callable t → q̄ (its {int(self.model.joint_nq[j])} coordinates)")
        q0 = _floats(motion(0.0), f"{what}: motion(0)").reshape(-1)
        nq = int(self.model.joint_nq[j])
        if q0.shape != (nq,) or not np.all(np.isfinite(q0)):
            raise ModelError(f"{what}: motion(t) must give {nq} finite numbers, got {q0!r}")
        t_end = math.inf if until is None else _scalar(until, f"{what}: until")
        if not t_end > 0:
            raise ModelError(f"{what}: until must be > 0 s, got {until!r}")
        p = Prescription(joint, j, motion, t_end)
        self.prescribed.append(p)
        return p

    # ------------------------------------------------------------ motors
    def add_motor(self, body_a, body_b, axis, *, target_velocity: float, max_force: float = math.inf,
                  kind: str = "angular", point=None, name=None) -> Motor:
        """A motor driving body_b relative to body_a at ``target_velocity`` (rad/s about, or m/s along, the
        world ``axis`` as it is at the initial configuration; it turns with body_a), with at most ``max_force``
        (N·m or N; inf: a velocity constraint). ``point`` (world, initial configuration): where a linear
        motor acts (default: body_b's link origin)."""
        name = name or f"motor{len(self.motors)}"
        what = f"motor '{name}'"
        if kind not in MOTOR_KINDS:
            raise ModelError(f"{what}: kind must be one of {', '.join(MOTOR_KINDS)}, got {kind!r}")
        a, b = self.body(body_a, what), self.body(body_b, what)
        if a == b:
            raise ModelError(f"{what}: drives body '{self._body_name(a)}' against itself")
        ax = _floats(axis, f"{what}: axis").reshape(-1)
        if ax.shape != (3,) or not np.all(np.isfinite(ax)) or np.linalg.norm(ax) < 1e-9:
            raise ModelError(f"{what}: axis must be 3 finite numbers, not all zero, got {axis!r}")
        target = _scalar(target_velocity, f"{what}: target_velocity")
        limit = _scalar(max_force, f"{what}: max_force")
        if not math.isfinite(target) or not limit >= 0:
            raise ModelError(f"{what}: needs a finite target_velocity and max_force ≥ 0, got {target!r}, {limit!r}")
        Ra = np.eye(3) if a == WORLD else self._R0[a]
        x = self.world_point(b, np.zeros(3)) if point is None else _floats(point, f"{what}: point").reshape(3)
        m = Motor(name, a, b, Ra.T @ (ax / np.linalg.norm(ax)), self._to_link(a, x, "world", what),
                  self._to_link(b, x, "world", what), kind, target, limit)
        self.motors.append(m)
        return m

    # ------------------------------------------------------------ breaking
    def set_breakable(self, name: str, threshold: float, interval: float) -> Breakable:
        """Joint or loop closure ``name`` breaks at the first step whose reaction impulse over ``interval`` (s)
        exceeds ``threshold`` (N·s; see ``Breakable``); a broken joint leaves its child free."""
        what = f"breakable '{name}'"
        kind = None
        if isinstance(name, str) and name in self.model.joint_names:
            kind = "joint"
            if J.JOINT_FLOATS[self.model.joint_type[self.model.joint_index(name)]]:
                raise ModelError(f"{what}: a free joint holds nothing to break")
        elif any(lc.name == name for lc in self.loop_closures):
            kind = "closure"
        if kind is None:
            raise ModelError(f"{what}: no joint or loop closure of that name")
        th, dt = _scalar(threshold, f"{what}: threshold"), _scalar(interval, f"{what}: interval")
        if not (th >= 0 and math.isfinite(th) and dt > 0 and math.isfinite(dt)):
            raise ModelError(f"{what}: needs a threshold ≥ 0 (N·s) and an interval > 0 (s), got {threshold!r}, "
                             f"{interval!r}")
        self.breakable = [x for x in self.breakable if x.name != name]
        brk = Breakable(name, kind, th, dt)
        self.breakable.append(brk)
        return brk

    # ------------------------------------------------------------ drag
    def set_velocity_decay(self, body, linear: float = 0.0, angular: float = 0.0) -> None:
        """Mass-proportional drag on one body: v̇_com = −linear·v_com, ω̇ = −angular·ω (rates in 1/s, ≥ 0).
        Blender's rigid body Damping d (Bullet scales the velocity by (1 − d)^h each step h) is the rate
        −ln(1 − d)."""
        b = self.body(body, "velocity decay")
        if b == WORLD:
            raise ModelError("velocity decay: needs a body, not the world")
        rates = [_scalar(x, f"velocity decay of '{self._body_name(b)}'") for x in (linear, angular)]
        if not all(r >= 0 and math.isfinite(r) for r in rates):
            raise ModelError(f"velocity decay of '{self._body_name(b)}': rates must be finite and ≥ 0, got {rates}")
        self.velocity_decay[b] = rates

    # ------------------------------------------------------------ fields
    def add_force_field(self, name: str, kind: str, *, bodies, shape: str = "point", times=(0.0,), origin=(0, 0, 0),
                        axis=(0, 0, 1), points=None, **parameters):
        """A force field (``engine.forces.fields``) on ``bodies`` (names or indices), evaluated at ``points``
        (world, initial configuration; default each body's link origin) and applied at each body's centre of
        mass. times (F,) s; origin, axis (3,) or (F, 3); the numbers of ``fields.PARAMETERS`` (a number or F
        numbers) and the flags of ``fields.ForceField`` (falloff_type, z_direction, frame_rate, …) as keywords."""
        if not isinstance(name, str) or not name:
            raise ModelError(f"force field: name must be a non-empty string, got {name!r}")
        if any(f.name == name for f in self.force_fields):
            raise ModelError(f"force field '{name}': a field with this name already exists")
        if not isinstance(bodies, (list, tuple)):
            raise ModelError(f"force field '{name}': bodies must be a list of body names or indices, got {bodies!r}")
        idx = [self.body(b, f"force field '{name}'") for b in bodies]
        if any(b == WORLD for b in idx):
            raise ModelError(f"force field '{name}': pushes bodies, not the world")
        if points is not None and (not isinstance(points, (list, tuple, np.ndarray)) or len(points) != len(idx)):
            raise ModelError(f"force field '{name}': points must give one point per body, got {points!r}")
        pts = [np.zeros(3) for _ in idx] if points is None else [
            self._to_link(b, x, "world", f"force field '{name}'") for b, x in zip(idx, points)]
        coms = [self.model.body_com[b] for b in idx]
        flags = {k: parameters.pop(k) for k in list(parameters) if k not in FIELD_PARAMETERS}
        ff = make_field(name, kind, shape, times, origin, axis, parameters, idx, pts, coms, **flags)
        self.force_fields.append(ff)
        return ff

