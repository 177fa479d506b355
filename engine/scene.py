"""Scene = model + forces + loop closures + initial state, as authored by users.

Attachment points are given in world coordinates at the scene's initial
configuration (``frame="world"``, the default: what an artist clicks) or in
the body frame (COM, principal axes; ``frame="body"``). Internally they are
stored in link frames. Every element has a name used in error messages.
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field

import numpy as np

from . import joints as J
from .algorithms.kinematics import link_poses
from .contact.shapes import Ground, colliding_bodies
from .algorithms._checks import as_q, as_v
from .errors import ModelError
from .forces.point_pair import PairArrays
from .algorithms.kinematics import joint_pass, velocity_pass, world_pass
from .forces.fields import field_point_forces
from .model import Model, _float_array as _floats, _number as _scalar  # the builder's checks
from .scene_drives import Drives, DrivesMixin
from .stepper import Control

WORLD = -1
# the point forces of a scene without any: shared, and size 0 so nothing can write into them
_NO_POINT_FORCES = (np.zeros(0, dtype=np.int64), np.zeros((0, 3)), np.zeros((0, 3)))
# a loop closure is a joint between two bodies: the one place its kind is decoded
CLOSURE_JOINT_TYPES = {"point": J.SPHERICAL, "ball": J.SPHERICAL, "hinge": J.REVOLUTE, "universal": J.UNIVERSAL,
                       "fixed": J.FIXED}
LOOP_KINDS = {kind: 3 - int(J.JOINT_NV[jt]) for kind, jt in CLOSURE_JOINT_TYPES.items()}  # rotational rows
# the closure kind that stands for a joint type name ("revolute" → "hinge"; spherical → "point", the first)
CLOSURE_KIND_OF_JOINT = {J.JOINT_TYPE_NAMES[jt]: kind for kind, jt in reversed(CLOSURE_JOINT_TYPES.items())}


def _axis(x, what: str) -> np.ndarray:
    """A unit 3-vector from a non-zero finite one, or a ModelError naming ``what``."""
    v = _floats(x, what).reshape(-1)
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise ModelError(f"{what} must be 3 finite numbers, got {x!r}")
    n = np.linalg.norm(v)
    if n < 1e-9:
        raise ModelError(f"{what} has zero length")
    return v / n


def _nonnegative(x: float, what: str, entry: str = "") -> None:
    """The rule for stiffness, damping and body damping: a finite number ≥ 0 (negative damping adds energy)."""
    if not (np.isfinite(x) and x >= 0):
        raise ModelError(f"{what} must be ≥ 0, got {x:g}" + (f" ({entry})" if entry else ""))


def _copied(value):
    """A deep copy of a closure's or load's field (arrays and tuples of them copied, numbers and strings shared),
    without ``copy.deepcopy``'s generic walk: ``Scene.finalize`` copies these for every Simulator built."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (tuple, list)):
        return type(value)(_copied(v) for v in value)
    return value if isinstance(value, (str, int, float, bool, type(None))) else copy.deepcopy(value)


def _dataclass_deepcopy(self, memo):
    return dataclasses.replace(self, **{f.name: _copied(getattr(self, f.name)) for f in dataclasses.fields(self) if f.init})


@dataclass
class LoopClosure:
    """A bilateral constraint closing a loop: the two attachment points coincide,
    plus 0 (point/ball), 1 (universal), 2 (hinge) or 3 (fixed) rotational rows."""

    name: str
    body_a: int
    point_a: np.ndarray  # link frame of a (world coordinates if a is the world)
    body_b: int
    point_b: np.ndarray
    kind: str
    axis_a: np.ndarray  # hinge / universal axis, link frame of a
    axis_b: np.ndarray  # link frame of b (second axis for universal)
    rest_rotation: np.ndarray = field(default_factory=lambda: np.eye(3))  # R_aᵀ R_b at rest (fixed)

    __deepcopy__ = _dataclass_deepcopy

    @property
    def joint_type(self) -> int:
        """The engine joint type (``engine.joints``) this closure is: spherical, revolute, universal, fixed."""
        return CLOSURE_JOINT_TYPES[self.kind]

    @property
    def rotation_rows(self) -> int:
        """Rotational constraint rows: 0 (point/ball), 1 (universal), 2 (hinge), 3 (fixed)."""
        return LOOP_KINDS[self.kind]


@dataclass
class MovingLoad:
    """A constant world force whose point of application moves along a chain of bodies.

    path: list of (body, start, end) segments in link coordinates; between
    t_start and t_end the point moves at constant speed over the whole path.
    """

    name: str
    force: np.ndarray
    path: list
    t_start: float
    t_end: float

    __deepcopy__ = _dataclass_deepcopy

    def at(self, t: float):
        """(body, link point) at time t, or (−1, None) when off the path."""
        if t < self.t_start or t > self.t_end or not self.path:
            return WORLD, None
        lengths = self.__dict__.get("_lengths")
        if lengths is None:
            lengths = self.__dict__["_lengths"] = np.array([np.linalg.norm(e - s) for _, s, e in self.path])
        total = lengths.sum()
        d = (t - self.t_start) / max(self.t_end - self.t_start, 1e-12) * total
        for (body, s, e), ln in zip(self.path, lengths):
            if d <= ln or body == self.path[-1][0]:
                f = 0.0 if ln == 0 else min(d / ln, 1.0)
                return body, s + f * (e - s)
            d -= ln
        return WORLD, None


@dataclass(frozen=True)
class FrozenScene:
    """A scene as a stepper is built from it (``Scene.finalize()``): copies of its arrays, forces,
    closures and contact settings at that moment, under the Scene's names, so that later edits of
    the Scene do not reach a running stepper. What a step reads that changes over time comes in a
    ``Control`` instead (``Scene.control(t)``). The arrays are private copies; they stay writeable
    because numba compiles read-only arrays as separate types."""

    model: Model
    name: str
    q0: np.ndarray
    qd0: np.ndarray
    joint_rest: np.ndarray       # (nq,) at finalize (the default rest configuration)
    joint_stiffness: np.ndarray  # (nv,)
    joint_damping: np.ndarray    # (nv,)
    body_damping: np.ndarray     # (n,)
    pairs: tuple                 # per spring, cable or damper, as ``Scene.pairs``
    point_forces: tuple
    moving_loads: tuple
    loop_closures: tuple
    ground: Ground | None
    contact_bodies: list | None
    body_contact: dict | None
    metadata: dict
    pair_names: tuple = ()
    _pair_arrays: PairArrays | None = None
    drives: Drives = field(default_factory=Drives)  # prescribed joints, motors, breakables, drag, fields

    # the drives under the Scene's names (engine.scene_drives)
    prescribed = property(lambda self: self.drives.prescribed)
    motors = property(lambda self: self.drives.motors)
    breakable = property(lambda self: self.drives.breakable)
    velocity_decay = property(lambda self: self.drives.velocity_decay)
    force_fields = property(lambda self: self.drives.force_fields)

    def pair_arrays(self) -> PairArrays:
        """Structure-of-arrays of all springs/cables/dampers for the kernels."""
        return self._pair_arrays

    def finalize(self) -> "FrozenScene":
        return self


class Scene(DrivesMixin):
    """A model plus what acts on it. Build with the ``add_*`` methods, then simulate (the drives — prescribed
    joints, motors, breakables, velocity decay, force fields — are ``engine.scene_drives``)."""

    def __init__(self, model: Model, *, name: str = "scene", q0=None, qd0=None):
        self.model = model
        self.name = name
        self.q0 = model.neutral_q() if q0 is None else _floats(q0, f"scene '{name}': q0").copy()
        self.qd0 = np.zeros(model.nv) if qd0 is None else _floats(qd0, f"scene '{name}': qd0").copy()
        if self.q0.shape != (model.nq,) or self.qd0.shape != (model.nv,):
            raise ModelError(f"scene '{name}': q0 must have {model.nq} entries and qd0 {model.nv}")
        as_q(model, self.q0, f"scene '{name}': q0")  # finite, unit quaternions (names the joint)
        as_v(model, self.qd0, f"scene '{name}': qd0")
        self._R0, self._p0 = link_poses(model, self.q0)
        # point pairs (springs, cables, dampers)
        self.pair_names: list[str] = []
        self._pairs: list[tuple] = []
        # joint springs: per dof stiffness, damping, rest (rest for quaternion joints: a quaternion)
        self.joint_stiffness = np.zeros(model.nv)
        self.joint_damping = np.zeros(model.nv)
        self.joint_rest = self.q0.copy()
        self.body_damping = np.zeros(model.n_bodies)
        self.point_force_names: list[str] = []
        self._point_forces: list[tuple] = []
        self.moving_loads: list[MovingLoad] = []
        self.loop_closures: list[LoopClosure] = []
        self.ground: Ground | None = None  # ground-plane contact (``set_ground``)
        self.contact_bodies: list[int] | None = None  # bodies that touch the ground (None: all with shapes)
        self.body_contact: dict | None = None  # contact between bodies' spheres and capsules (``set_body_contacts``)
        self.controllers: list = []  # callables fn(scene, t) run before each step (e.g. a gait moving joint_rest)
        self.metadata: dict = {}
        self._drives_init()

    # ----------------------------------------------------------- lookup
    def body(self, ref, what: str) -> int:
        """Body index from an index, a name, or None/−1/'world' for the world."""
        if ref is None or (isinstance(ref, str) and ref == "world"):
            return WORLD
        if isinstance(ref, (bool, np.bool_)):  # True would silently mean body 1
            raise ModelError(f"{what}: a body is a name, an index or 'world', got {ref!r}")
        if isinstance(ref, (int, np.integer)):
            if -1 <= int(ref) < self.model.n_bodies:
                return int(ref)
            raise ModelError(f"{what}: no body with index {ref}")
        if not isinstance(ref, str):
            raise ModelError(f"{what}: a body is a name, an index or 'world', got {ref!r}")
        try:
            return self.model.body_index(ref)
        except KeyError:
            raise ModelError(f"{what}: no body named '{ref}'") from None

    def _to_link(self, body: int, point, frame: str, what: str) -> np.ndarray:
        x = _floats(point, f"{what}: attachment point").reshape(-1)
        if x.shape != (3,) or not np.all(np.isfinite(x)):
            raise ModelError(f"{what}: attachment point must be 3 finite numbers, got {point!r}")
        if body == WORLD:
            return x.copy()
        if frame == "world":
            return self._R0[body].T @ (x - self._p0[body])
        if frame == "body":
            return self.model.body_com[body] + self.model.body_rotation[body] @ x
        if frame == "link":
            return x.copy()
        raise ModelError(f"{what}: frame must be 'world', 'body' or 'link', got {frame!r}")

    def world_point(self, body: int, link_point) -> np.ndarray:
        """World position at the initial configuration of a link-frame point."""
        return np.asarray(link_point, float) if body == WORLD else self._p0[body] + self._R0[body] @ link_point

    # ------------------------------------------------------------ forces
    def _add_pair(self, kind, body_a, point_a, body_b, point_b, stiffness, damping, rest_length, frame, name, tension_only):
        name = name or f"{kind}{len(self._pairs)}"
        what = f"{kind} '{name}'"
        a, b = self.body(body_a, what), self.body(body_b, what)
        if a == b:
            raise ModelError(f"{what}: connects body '{self._body_name(a)}' to itself")
        for label, v in (("stiffness", stiffness), ("damping", damping)):
            x = _scalar(v, f"{what}: {label}")
            if x < 0 or not np.isfinite(x):
                raise ModelError(f"{what}: {label} must be ≥ 0, got {v}")
        la, lb = self._to_link(a, point_a, frame, what), self._to_link(b, point_b, frame, what)
        if rest_length is None:
            rest_length = float(np.linalg.norm(self.world_point(b, lb) - self.world_point(a, la)))
        rest_length = _scalar(rest_length, f"{what}: rest length")
        if not np.isfinite(rest_length) or rest_length < 0:
            raise ModelError(f"{what}: rest length must be ≥ 0, got {rest_length}")
        self._pairs.append((a, b, la, lb, float(stiffness), float(damping), float(rest_length), bool(tension_only)))
        self.pair_names.append(name)
        return len(self._pairs) - 1

    def _body_name(self, b: int) -> str:
        return "world" if b == WORLD else self.model.body_names[b]

    def add_spring(self, body_a, point_a, body_b, point_b, stiffness, *, damping=0.0, rest_length=None,
                   frame="world", name=None) -> int:
        """Linear point-to-point spring (Eq. 2.39–2.41); rest length defaults to the initial distance."""
        return self._add_pair("spring", body_a, point_a, body_b, point_b, stiffness, damping, rest_length, frame, name, False)

    def add_cable(self, body_a, point_a, body_b, point_b, stiffness, *, damping=0.0, rest_length=None,
                  frame="world", name=None) -> int:
        """Tension-only spring: no force while its length is at or below the rest length."""
        return self._add_pair("cable", body_a, point_a, body_b, point_b, stiffness, damping, rest_length, frame, name, True)

    def add_damper(self, body_a, point_a, body_b, point_b, damping, *, frame="world", name=None) -> int:
        """Point-to-point damper along the line between the points."""
        return self._add_pair("damper", body_a, point_a, body_b, point_b, 0.0, damping, 0.0, frame, name, False)

    def add_joint_spring(self, joint: str, stiffness: float, damping: float = 0.0, rest=None) -> None:
        """Joint stiffness K_r and damping D_r about a rest value (default: the initial q). stiffness and
        damping: a number for every dof of the joint, or one per dof (e.g. a ball joint's three axes)."""
        try:
            if not isinstance(joint, str):
                raise KeyError(joint)
            j = self.model.joint_index(joint)
        except KeyError:
            raise ModelError(f"joint spring: no joint named '{joint}'") from None
        vs = self.model.v_slice(joint)
        nv = vs.stop - vs.start
        values = []
        for label, x in (("stiffness", stiffness), ("damping", damping)):
            if not isinstance(x, (list, tuple, np.ndarray)) or np.ndim(_floats(x, f"joint spring on '{joint}': {label}")) == 0:
                values.append(np.full(nv, _scalar(x, f"joint spring on '{joint}': {label}")))
            else:
                v = _floats(x, f"joint spring on '{joint}': {label}").reshape(-1)
                if v.shape != (nv,):
                    raise ModelError(f"joint spring on '{joint}': {label} needs 1 or {nv} numbers, got {x!r}")
                values.append(v)
        stiffness, damping = values
        for label, v in (("stiffness", stiffness), ("damping", damping)):
            for x in v:
                _nonnegative(x, f"joint spring on '{joint}': {label}")
        self.joint_stiffness[vs] = stiffness
        self.joint_damping[vs] = damping
        if rest is not None:
            qs = self.model.q_slice(joint)
            try:
                r = np.broadcast_to(_floats(rest, f"joint spring on '{joint}': rest"), (qs.stop - qs.start,))
            except ValueError as e:
                if isinstance(e, ModelError):
                    raise
                raise ModelError(f"joint spring on '{joint}': rest needs {qs.stop - qs.start} numbers, got {rest!r}") from None
            if not np.all(np.isfinite(r)):
                raise ModelError(f"joint spring on '{joint}': rest must be finite, got {rest!r}")
            at = J.JOINT_QUATERNION_AT[self.model.joint_type[j]]
            if at >= 0:
                quat = r[at:at + 4]
                if abs(np.linalg.norm(quat) - 1.0) > J.UNIT_QUATERNION_TOL:
                    raise ModelError(f"joint spring on '{joint}': rest quaternion must have unit length, "
                                     f"got |q| = {np.linalg.norm(quat):.6g}")
            self.joint_rest[qs] = r
        if J.JOINT_FLOATS[self.model.joint_type[j]] and np.any(stiffness > 0):
            raise ModelError(f"joint spring on '{joint}': free joints take no stiffness")

    def set_body_damping(self, coefficient: float, body=None) -> None:
        """Viscous damping D_m = d·I on each body's twist (one body, or all when body is None)."""
        _nonnegative(_scalar(coefficient, "body damping"), "body damping")
        if body is None:
            self.body_damping[:] = coefficient
        else:
            self.body_damping[self.body(body, "body damping")] = coefficient

    def add_point_force(self, body, point, force, *, frame="world", name=None) -> int:
        """Constant world-direction force (N) on a body point (Eq. 2.35–2.37)."""
        name = name or f"force{len(self._point_forces)}"
        b = self.body(body, f"point force '{name}'")
        if b == WORLD:
            raise ModelError(f"point force '{name}': needs a body, not the world")
        f = _floats(force, f"point force '{name}': force").reshape(-1)
        if f.shape != (3,) or not np.all(np.isfinite(f)):
            raise ModelError(f"point force '{name}': force must be 3 finite numbers, got {force!r}")
        self._point_forces.append((b, self._to_link(b, point, frame, f"point force '{name}'"), f))
        self.point_force_names.append(name)
        return len(self._point_forces) - 1

    def set_point_force(self, index: int, force, *, body=None, point=None, frame: str = "link") -> None:
        """Change point force ``index`` in place: its world force (3,) (N) and, when given, the body and
        the point it acts on (``frame`` as in ``add_point_force``; default the link frame). Simulators read
        point forces every step, so this steers a running simulation (e.g. a mouse drag)."""
        if not 0 <= index < len(self._point_forces):
            raise ModelError(f"point force {index}: no such point force (the scene has {len(self._point_forces)})")
        name = self.point_force_names[index]
        b, x, _ = self._point_forces[index]
        f = _floats(force, f"point force '{name}': force").reshape(-1)
        if f.shape != (3,) or not np.all(np.isfinite(f)):
            raise ModelError(f"point force '{name}': force must be 3 finite numbers, got {force!r}")
        if body is not None:
            b = self.body(body, f"point force '{name}'")
            if b == WORLD:
                raise ModelError(f"point force '{name}': needs a body, not the world")
        if point is not None:
            x = self._to_link(b, point, frame, f"point force '{name}'")
        self._point_forces[index] = (b, x, f.copy())

    def remove_point_force(self, index: int) -> None:
        """Remove point force ``index`` (later ones move down by one)."""
        if not 0 <= index < len(self._point_forces):
            raise ModelError(f"point force {index}: no such point force (the scene has {len(self._point_forces)})")
        del self._point_forces[index]
        del self.point_force_names[index]

    def set_pair(self, index: int, *, stiffness=None, damping=None, rest_length=None) -> None:
        """Change spring/cable/damper ``index``: stiffness (N/m), damping (N·s/m), rest length (m).
        Simulators copy the pairs when they are created, so this affects simulators made afterwards."""
        if isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer)) \
                or not 0 <= index < len(self._pairs):
            raise ModelError(f"pair {index!r}: no such spring or cable (the scene has {len(self._pairs)})")
        a, b, la, lb, k, d, rest, tension_only = self._pairs[index]
        what = f"spring/cable '{self.pair_names[index]}'"
        for label, v in (("stiffness", stiffness), ("damping", damping), ("rest length", rest_length)):
            if v is not None:
                _nonnegative(_scalar(v, f"{what}: {label}"), f"{what}: {label}")
        self._pairs[index] = (a, b, la, lb, k if stiffness is None else float(stiffness),
                              d if damping is None else float(damping), rest if rest_length is None else float(rest_length),
                              tension_only)

    def add_moving_load(self, force, path, t_start: float, t_end: float, *, frame="world", name=None) -> MovingLoad:
        """A force that travels along [(body, start, end), …] from t_start to t_end (e.g. a car)."""
        name = name or f"load{len(self.moving_loads)}"
        segs = []
        if not isinstance(path, (list, tuple)) or not all(isinstance(seg, (list, tuple)) and len(seg) == 3 for seg in path):
            raise ModelError(f"moving load '{name}': path must be a list of (body, start, end), got {path!r}")
        for body, s, e in path:
            b = self.body(body, f"moving load '{name}'")
            segs.append((b, self._to_link(b, s, frame, name), self._to_link(b, e, frame, name)))
        f = _floats(force, f"moving load '{name}': force").reshape(-1)
        if f.shape != (3,) or not np.all(np.isfinite(f)):
            raise ModelError(f"moving load '{name}': force must be 3 finite numbers, got {force!r}")
        t0, t1 = _scalar(t_start, f"moving load '{name}': t_start"), _scalar(t_end, f"moving load '{name}': t_end")
        if not (np.isfinite(t0) and np.isfinite(t1) and t0 <= t1):
            raise ModelError(f"moving load '{name}': needs finite t_start ≤ t_end, got {t_start!r}, {t_end!r}")
        load = MovingLoad(name, f, segs, t0, t1)
        self.moving_loads.append(load)
        return load

    def add_loop_closure(self, body_a, body_b, point, *, kind="point", axis=(0.0, 0.0, 1.0), axis_b=None,
                         frame="world", name=None) -> LoopClosure:
        """Close a loop between two bodies (or a body and the world) at a common point.

        kind: 'point'/'ball' (3 rows), 'universal' (4), 'hinge' (5), 'fixed' (6).
        axis: hinge axis (or the universal's first axis) in world coordinates at
        the initial configuration; axis_b: the universal's second axis.
        """
        name = name or f"loop{len(self.loop_closures)}"
        what = f"loop closure '{name}'"
        if not isinstance(kind, str) or kind not in LOOP_KINDS:
            raise ModelError(f"{what}: unknown kind {kind!r}; expected one of {', '.join(LOOP_KINDS)}")
        a, b = self.body(body_a, what), self.body(body_b, what)
        if a == b:
            raise ModelError(f"{what}: constrains body '{self._body_name(a)}' to itself")
        if frame != "world":
            raise ModelError(f"{what}: loop closures take a world point (frame='world')")
        la, lb = self._to_link(a, point, "world", what), self._to_link(b, point, "world", what)
        ax = _axis(axis, f"{what}: axis")
        ax2 = _axis(axis_b if axis_b is not None else np.cross(ax, [1.0, 0, 0]) if abs(ax[0]) < 0.9 else np.cross(ax, [0, 1.0, 0]),
                    f"{what}: axis_b")
        Ra = np.eye(3) if a == WORLD else self._R0[a]
        Rb = np.eye(3) if b == WORLD else self._R0[b]
        lc = LoopClosure(name, a, la, b, lb, kind, Ra.T @ ax, Rb.T @ ax2, Ra.T @ Rb)
        self.loop_closures.append(lc)
        return lc

    # ----------------------------------------------------------- contact
    def set_ground(self, height: float = 0.0, normal=(0.0, 0.0, 1.0), friction: float = 0.8,
                   restitution: float = 0.0, *, bodies=None) -> Ground:
        """Let the bodies' contact shapes collide with the plane normal·x = height (``engine.contact``).

        friction: Coulomb μ ≥ 0; restitution e in [0, 1]; bodies: names or indices
        (default: every body with a contact shape). Errors name a body without a shape.
        """
        try:
            ground = Ground(height, normal, friction, restitution)
        except ModelError:
            raise
        except (TypeError, ValueError) as e:
            raise ModelError(f"ground: height, normal, friction and restitution must be numbers ({e})") from None
        colliding_bodies(self.model, bodies)  # validates every shape now, naming the body
        self.ground = ground
        self.contact_bodies = None if bodies is None else [self.body(b, "ground contact") for b in bodies]
        return ground

    def set_body_contacts(self, friction: float = 0.5, *, bodies=None) -> None:
        """Let the bodies' spheres and capsules collide with each other (``engine.contact.pairs``;
        boxes touch the ground only; a parent and its child never collide). friction: μ ≥ 0 for
        shapes without their own; bodies: names or indices (default: every body with a shape)."""
        Ground(friction=friction)  # validates μ with the ground's message
        chosen = colliding_bodies(self.model, None if bodies is None else [self.body(b, "body contact") for b in bodies],
                                  "body contact")
        self.body_contact = {"friction": float(friction), "bodies": sorted(chosen)}

    def add_controller(self, fn) -> None:
        """Run ``fn(scene, t)`` at the start of every step (it may change joint_rest, forces, ...)."""
        if not callable(fn):
            raise ModelError(f"scene '{self.name}': a controller must be callable, got {fn!r}")
        self.controllers.append(fn)

    # ------------------------------------------------------ frozen arrays
    @property
    def pairs(self) -> list:
        """Per spring, cable or damper: (body_a, body_b, point_a, point_b (link frames, m),
        stiffness N/m, damping N·s/m, rest_length m, tension_only)."""
        return list(self._pairs)

    @property
    def point_forces(self) -> list:
        return list(self._point_forces)

    def pair_arrays(self) -> PairArrays:
        """Structure-of-arrays of all springs/cables/dampers for the kernels."""
        m = len(self._pairs)
        cols = list(zip(*self._pairs)) if m else [()] * 8
        return PairArrays(
            np.array(cols[0], dtype=np.int64), np.array(cols[1], dtype=np.int64),
            np.array(cols[2], dtype=float).reshape(m, 3), np.array(cols[3], dtype=float).reshape(m, 3),
            np.array(cols[4], dtype=float), np.array(cols[5], dtype=float), np.array(cols[6], dtype=float),
            np.array(cols[7], dtype=np.bool_),
        )

    def point_force_arrays(self, t: float):
        """(body, point, force) arrays of the constant point forces and the moving loads at time t."""
        if not self._point_forces and not self.moving_loads:  # every step of most scenes: nothing to build
            return _NO_POINT_FORCES
        items = list(self._point_forces)
        for load in self.moving_loads:
            b, x = load.at(t)
            if b != WORLD:
                items.append((b, x, load.force))
        m = len(items)
        return (np.array([i[0] for i in items], dtype=np.int64), np.array([i[1] for i in items], float).reshape(m, 3),
                np.array([i[2] for i in items], float).reshape(m, 3))

    def finalize(self) -> FrozenScene:
        """The scene as steppers are built from it: a snapshot whose later edits here do not reach them.
        Its public arrays (q0, qd0, joint_rest, joint_stiffness, joint_damping, body_damping), which users may
        write, are checked here by the rules of the methods that set them (docs/errors.md)."""
        self.check_arrays()
        return FrozenScene(
            self.model, self.name, self.q0.copy(), self.qd0.copy(), self.joint_rest.copy(),
            self.joint_stiffness.copy(), self.joint_damping.copy(), self.body_damping.copy(),
            tuple(self._pairs), tuple(copy.deepcopy(self._point_forces)), tuple(copy.deepcopy(self.moving_loads)),
            tuple(copy.deepcopy(self.loop_closures)), self.ground,
            None if self.contact_bodies is None else list(self.contact_bodies),
            None if self.body_contact is None else copy.deepcopy(self.body_contact), dict(self.metadata),
            tuple(self.pair_names), self.pair_arrays(), self.drives_snapshot())

    def check_arrays(self) -> None:
        """ModelError naming the entry of the first of the scene's writable arrays that breaks the rule its
        setter applies: q0, joint_rest finite with unit quaternions; qd0 finite; joint stiffness and damping
        and body damping finite and ≥ 0, no stiffness on a free joint."""
        model, where = self.model, f"scene '{self.name}'"
        self.q0 = as_q(model, self.q0, f"{where}: q0")
        self.qd0 = as_v(model, self.qd0, f"{where}: qd0")
        self.joint_rest = as_q(model, self.joint_rest, f"{where}: joint_rest")
        for label, array, size, names in (("stiffness", "joint_stiffness", model.nv, None),
                                          ("damping", "joint_damping", model.nv, None),
                                          ("body damping", "body_damping", model.n_bodies, model.body_names)):
            values = _floats(getattr(self, array), f"{where}: {array}")
            if values.shape != (size,):
                raise ModelError(f"{where}: {array} must have shape ({size},), got {values.shape}")
            for k in np.flatnonzero(~(values >= 0.0) | ~np.isfinite(values))[:1]:
                owner = (f"joint spring on '{model.joint_names[model.dof_body[k]]}': {label}" if names is None
                         else f"{label} on body '{names[k]}'")
                _nonnegative(values[k], owner, f"scene.{array}[{k}]")
            setattr(self, array, values)
        free = np.flatnonzero(J.JOINT_FLOATS[model.joint_type[model.dof_body]] & (self.joint_stiffness != 0.0))
        if len(free):
            raise ModelError(f"joint spring on '{model.joint_names[model.dof_body[free[0]]]}': free joints take no "
                             f"stiffness (scene.joint_stiffness[{free[0]}] = {self.joint_stiffness[free[0]]:g})")

    def control(self, t: float, state=None) -> Control:
        """What a step starting at time t (s) reads from the scene's time-varying parts: the joint
        springs' rest configuration (controllers may move it) and the point forces and moving loads, with the
        force fields' forces at ``state`` (q, q̇) when the scene has fields and a state is given."""
        forces = self.point_force_arrays(t)
        if self.force_fields and state is not None:
            forces = _joined(forces, self._field_forces(state.q, state.qd, t))
        return Control(float(t), self.joint_rest, forces)

    def _field_forces(self, q, qd, t):
        """(body, point, force) of the force fields at (q, q̇) and time t."""
        ws = self.model.data  # (the model's workspace of the calling thread)
        q, qd = np.ascontiguousarray(q, float), np.ascontiguousarray(qd, float)
        joint_pass(self.model.tree, q, ws)
        world_pass(self.model.tree, ws)
        velocity_pass(self.model.tree, q, qd, ws)
        return field_point_forces(self.force_fields, np.transpose(ws.X0_E, (0, 2, 1)), ws.X0_r, ws.v, t)

    @property
    def n_pairs(self) -> int:
        return len(self._pairs)

    def __repr__(self) -> str:
        return (f"<Scene '{self.name}': {self.model.n_bodies} bodies, {self.model.nv} dofs, {self.n_pairs} springs/cables, "
                f"{len(self.loop_closures)} loop closures>")


def _joined(a, b):
    """Two (body, point, force) triples as one."""
    if len(a[0]) == 0:
        return b
    if len(b[0]) == 0:
        return a
    return tuple(np.concatenate([x, y]) for x, y in zip(a, b))
