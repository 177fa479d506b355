"""ModelBuilder → frozen Model (structure of arrays), State and Data workspace.

Frames (see docs/conventions.md):

* **link frame** of body i: attached at its inboard joint, the child side of
  the joint. The recursive algorithms work in link frames (Featherstone).
* **parent-side joint frame**: fixed in the parent's link frame at
  ``joint_origin`` with orientation ``joint_rotation``; the joint moves the
  child link frame relative to it (``engine.joints``).
* **body frame**: at the centre of mass on principal axes (as in RedMax);
  poses reported to users (FK, Blender) are body frames.

Bodies are stored topologically ordered (``parent[i] < i``; the world is -1).
"""
from __future__ import annotations

import copy
import threading
from collections import namedtuple
from dataclasses import dataclass

import numpy as np

from . import joints as J
from .errors import ModelError
from .geometry import det3, parse_shapes
from .spatial import spatial_inertia

_EYE3 = np.eye(3)

#: The arrays every kernel needs, grouped so kernels take one argument.
KinematicTree = namedtuple(
    "KinematicTree",
    [
        "parent",        # (n,) int64, parent body index or -1 for the world
        "joint_type",    # (n,) int64, engine.joints type ids
        "joint_axis",    # (n, 3) unit axis in the parent-side joint frame
        "q_start",       # (n,) int64, first index of the joint in q
        "v_start",       # (n,) int64, first index of the joint in v / qd / tau
        "joint_nv",      # (n,) int64
        "tree_E",        # (n, 3, 3) parent link frame → parent-side joint frame (rotation part)
        "tree_r",        # (n, 3) joint origin in the parent link frame (m)
        "link_inertia",  # (n, 6, 6) spatial inertia in the link frame
        "gravity",       # (6,) spatial gravity acceleration [0; g] in world coordinates
    ],
)

#: Preallocated per-model workspace (one per thread that runs kernels: ``PerThreadWorkspaces``).
Workspace = namedtuple(
    "Workspace",
    [
        "Xup_E", "Xup_r",   # (n,3,3), (n,3): parent link frame → link frame
        "X0_E", "X0_r",     # (n,3,3), (n,3): world → link frame
        "S",                # (nv, 6) motion subspace rows, link coordinates
        "v", "c", "a", "f", # (n, 6) velocity, velocity-product accel, accel, force
        "IA", "pA",         # (n, 6, 6), (n, 6) articulated inertia and bias force
        "U", "Dinv", "u",   # (nv, 6), (n, 6, 6), (nv,) ABA intermediates
        "cJ", "tmp6", "tmp6b",  # (n, 6) joint bias accelerations, (6,) scratch vectors
        "scratch33",        # (4, 3, 3) scratch for inertia transforms
        "D",                # (6, 6) scratch for a joint's sᵀ I s block
        "tmp66",            # (6, 6) scratch (e.g. the articulated inertia Iᵃ handed to the parent)
        "zero_nv",          # (nv,) zeros: "no reduced diagonal term" for project_joint
    ],
)


class PerThreadWorkspaces(threading.local):
    """A model's workspaces for the calling thread: ``model.data``, the algorithms' flat buffers
    (``algorithms._flat``) and SPD's (``control.spd``). The kernels release the GIL, so two threads
    computing in one workspace would overwrite each other's intermediate results; each thread builds
    its own on first use (docs/errors.md, "Threads")."""

    data = None
    flat = None
    spd = None


@dataclass
class _BodySpec:
    name: str
    parent: object
    joint_type: int
    joint_name: str
    axis: np.ndarray
    origin: np.ndarray
    rotation: np.ndarray
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    limits: tuple
    shape: dict | None = None
    limit_order: int = 0
    shape_parts: tuple = ()  # the shape's validated parts (geometry.parse_shapes), parsed once in add_body


def _number(x, what: str) -> float:
    """A real number (not a bool or a string) as float, or a ModelError naming ``what``."""
    if isinstance(x, (bool, np.bool_, str, bytes, list, tuple, dict)) or not np.isscalar(x) and np.ndim(x) != 0:
        raise ModelError(f"{what} must be a number, got {x!r}")
    try:
        return float(x)
    except (TypeError, ValueError):
        raise ModelError(f"{what} must be a number, got {x!r}") from None


def _float_array(x, what: str) -> np.ndarray:
    """x as a float array, or a ModelError naming ``what`` (strings, dicts and other non-numbers)."""
    if isinstance(x, (str, bytes, dict)):  # np.asarray would read "3.0" as a number
        raise ModelError(f"{what} must be numbers, got {x!r}")
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ModelError(f"{what} must be numbers, got {x!r}") from None
    return a


def _rotation_matrix(rot, what: str) -> np.ndarray:
    """Accept None, a (3, 3) rotation matrix or a (w, x, y, z) quaternion."""
    if rot is None:
        return np.eye(3)
    R = _float_array(rot, what)
    if R.shape == (4,):
        n = np.linalg.norm(R)
        if not np.isfinite(n) or abs(n - 1.0) > J.UNIT_QUATERNION_TOL:
            raise ModelError(f"{what}: rotation quaternion (w, x, y, z) must have unit length "
                             f"(to {J.UNIT_QUATERNION_TOL:g}), got |q| = {n:.6g}")
        w, x, y, z = R / n
        R = np.array([
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ])
    if R.shape != (3, 3) or not np.isfinite(R).all():
        raise ModelError(f"{what}: rotation must be a 3×3 matrix or a quaternion (w, x, y, z)")
    if np.abs(R).max() > 1.0 + 1e-6 or np.abs(R @ R.T - _EYE3).max() > 1e-6 or det3(R) < 0:
        raise ModelError(f"{what}: rotation matrix is not a proper rotation")
    return R


MAX_LENGTH = 1e6   # m: positions beyond this (1000 km) are a unit mistake, and overflow the inertia algebra
MAX_MASS = 1e15    # kg
MAX_BODIES = 1_000_000  # per model: about a minute to build and a gigabyte of workspaces (docs/errors.md)


def _vector3(x, what: str, bound: float = MAX_LENGTH) -> np.ndarray:
    v = _float_array(x, what).reshape(-1)
    if v.shape != (3,) or not np.isfinite(v).all():
        raise ModelError(f"{what}: expected 3 finite numbers, got {x!r}")
    if np.abs(v).max() > bound:
        raise ModelError(f"{what}: {v.tolist()} is beyond {bound:g} (SI units: m)")
    return v


def _limits(limits, nv: int, jtype: int, jwhere: str):
    """(lower (nv,), upper (nv,)) from (lower, upper) — each a number or one per dof; None or ±inf
    for an open side; NaN, lower > upper and limits on a free joint are refused."""
    if limits is None:
        return np.full(nv, -np.inf), np.full(nv, np.inf)
    if J.JOINT_FLOATS[jtype]:
        raise ModelError(f"{jwhere}: a free joint takes no limits")
    try:
        lo, hi = limits
        lo, hi = (np.broadcast_to(_float_array(fill if x is None else x, f"{jwhere}: limits"), (nv,)).copy()
                  for x, fill in ((lo, -np.inf), (hi, np.inf)))
    except (TypeError, ValueError) as e:
        if isinstance(e, ModelError):
            raise
        raise ModelError(f"{jwhere}: limits must be (lower, upper), each a number or {nv} numbers, got {limits!r}") from None
    if np.isnan(lo).any() or np.isnan(hi).any():
        raise ModelError(f"{jwhere}: limits must not be NaN (use -inf / inf for an open side), got {limits!r}")
    if (lo > hi).any():
        raise ModelError(f"{jwhere}: lower limit above upper limit ({lo.tolist()} > {hi.tolist()})")
    if (lo == np.inf).any() or (hi == -np.inf).any():
        raise ModelError(f"{jwhere}: a lower limit of +inf or an upper limit of -inf leaves no motion")
    return lo, hi


def _limit_order(limit_angles, jtype: int, jwhere: str) -> int:
    """The code in ``joints.LIMIT_ANGLES`` of ``limit_angles``; Euler orders only on spherical joints."""
    if not isinstance(limit_angles, str) or limit_angles not in J.LIMIT_ANGLES:
        raise ModelError(f"{jwhere}: limit_angles must be one of {', '.join(J.LIMIT_ANGLES)}, got {limit_angles!r}")
    code = J.LIMIT_ANGLES.index(limit_angles)
    if code and not J.JOINT_EULER_LIMITS[jtype]:
        raise ModelError(f"{jwhere}: limit_angles {limit_angles!r} (Euler angles) needs a spherical joint, "
                         f"not a {J.JOINT_TYPE_NAMES[jtype]} one")
    return code


class ModelBuilder:
    """Collects bodies and joints as Python lists; ``finalize()`` freezes a Model.

    Each ``add_body`` adds one body and the joint that connects it to its
    parent, and returns the body's handle (its insertion index). When parents
    are added before their children — the usual case — handles equal the
    model's body indices; otherwise ``finalize`` reorders topologically and
    ``model.body_index(name)`` gives the new index.
    """

    def __init__(self, gravity=(0.0, 0.0, -9.81)):
        self.gravity = _vector3(gravity, "gravity", bound=1e6)
        self._bodies: list[_BodySpec] = []
        self._names: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._bodies)

    def add_body(
        self,
        name: str,
        *,
        parent=-1,
        joint: str | int = "revolute",
        axis=(0.0, 0.0, 1.0),
        joint_origin=(0.0, 0.0, 0.0),
        joint_rotation=None,
        mass: float = 1.0,
        com=(0.0, 0.0, 0.0),
        inertia=None,
        joint_name: str | None = None,
        limits=None,
        shape: dict | None = None,
        limit_angles: str = "rotation_vector",
    ) -> int:
        """Add a body and its inboard joint; return its handle.

        name: unique body name. parent: handle (int), body name (str; may be
        added later), or -1 for the world. joint: type name or id.
        axis: (3,) joint axis in the parent-side joint frame (revolute,
        prismatic; normalised, must be non-zero). joint_origin: (3,) position
        (m) of the joint in the parent's link frame. joint_rotation: (3, 3) or
        quaternion (w, x, y, z), orientation of the parent-side joint frame in
        the parent's link frame. mass: kg > 0 (0 allowed only with a fixed
        joint). com: (3,) centre of mass in the link frame (m). inertia: (3,)
        principal moments or (3, 3) tensor about the COM in link axes (kg·m²);
        default: a solid sphere of radius 0.1 m. limits: (lower, upper) per dof
        or None. shape: optional collision/visual description (dict).
        limit_angles: what a spherical joint's three limits bound: "rotation_vector" (default; the
        components of φ = log(q)) or Euler angles of an order "XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"
        in Blender's convention ("XYZ": X applied first, R = Rz Ry Rx; bounds per x, y, z angle).
        Other joints take only "rotation_vector" (docs/limits.md).
        """
        if not isinstance(name, str) or not name:
            raise ModelError(f"body name must be a non-empty string, got {name!r}")
        if len(self._bodies) >= MAX_BODIES:
            raise ModelError(f"body '{name}': a model has at most {MAX_BODIES:,} bodies")
        if name in self._names:
            raise ModelError(f"body '{name}': a body with this name already exists")
        where = f"body '{name}'"
        try:
            jtype = J.joint_type_id(joint)
        except ValueError as e:
            raise ModelError(f"{where}: {e}") from None
        if joint_name is not None and (not isinstance(joint_name, str) or not joint_name):
            raise ModelError(f"{where}: joint_name must be a non-empty string, got {joint_name!r}")
        jname = joint_name or f"{name}_joint"
        jwhere = f"joint '{jname}'"
        ax = _float_array(axis, f"{jwhere}: axis").reshape(-1)
        if ax.shape != (3,) or not np.isfinite(ax).all():
            raise ModelError(f"{jwhere}: axis must be 3 finite numbers, got {axis!r}")
        if J.JOINT_HAS_AXIS[jtype]:
            n = np.linalg.norm(ax)
            if n < 1e-9:
                raise ModelError(f"{jwhere}: axis has zero length")
            ax = ax / np.abs(ax).max()  # (scaled first: a huge axis would overflow the norm)
            ax = ax / np.linalg.norm(ax)
        origin = _vector3(joint_origin, f"{jwhere}: joint_origin")
        rot = _rotation_matrix(joint_rotation, f"{jwhere}: joint_rotation")
        mass = _number(mass, f"{where}: mass")
        if not np.isfinite(mass) or mass < 0 or mass > MAX_MASS or (mass == 0 and J.JOINT_NV[jtype] > 0):
            raise ModelError(f"{where}: mass must be > 0 (and ≤ {MAX_MASS:g} kg), got {mass}" + (" (only bodies on fixed joints may be massless)" if mass == 0 else ""))
        c = _vector3(com, f"{where}: com")
        if inertia is None:
            Ic = np.eye(3) * (0.4 * mass * 0.1**2)
        else:
            Ic = _float_array(inertia, f"{where}: inertia")
            if Ic.shape == (3,):
                Ic = np.diag(Ic)
            if Ic.shape != (3, 3) or not np.isfinite(Ic).all():
                raise ModelError(f"{where}: inertia must be 3 principal moments or a 3×3 tensor")
            if np.abs(Ic).max() > MAX_MASS * MAX_LENGTH:
                raise ModelError(f"{where}: inertia entries beyond {MAX_MASS * MAX_LENGTH:g} kg·m² (SI units)")
            if np.abs(Ic - Ic.T).max() > 1e-9 * max(1.0, np.abs(Ic).max()):
                raise ModelError(f"{where}: inertia tensor is not symmetric")
            Ic = 0.5 * (Ic + Ic.T)
            ev = np.linalg.eigvalsh(Ic)
            if mass > 0 and ev.min() <= 0:
                raise ModelError(f"{where}: inertia tensor is not positive definite (eigenvalues {ev})")
            if mass > 0 and ev[0] + ev[1] < ev[2] * (1.0 - 1e-9):  # no rigid mass distribution has these
                raise ModelError(f"{where}: principal moments {ev.tolist()} break the triangle inequality "
                                 f"({ev[0]:g} + {ev[1]:g} < {ev[2]:g}); no rigid body has this inertia")
            if mass == 0 and np.abs(ev).max() > 0:
                raise ModelError(f"{where}: massless body must have zero inertia")
        nv = int(J.JOINT_NV[jtype])
        lim = _limits(limits, nv, jtype, jwhere)
        limit_order = _limit_order(limit_angles, jtype, jwhere)
        parts = ()
        if shape is not None:
            if not isinstance(shape, dict):
                raise ModelError(f"{where}: shape must be a dict, got {shape!r}")
            parts = tuple(parse_shapes(shape, c, f"{where} shape"))
        if isinstance(parent, (bool, np.bool_)):  # True would silently mean body 1
            raise ModelError(f"{where}: parent must be a handle, a body name or -1, got {parent!r}")
        if isinstance(parent, (int, np.integer)):
            p = int(parent)
            if p < -1 or p >= len(self._bodies):
                raise ModelError(f"{where}: unknown parent handle {p}")
            parent = p
        elif not isinstance(parent, str):
            raise ModelError(f"{where}: parent must be a handle, a body name or -1, got {parent!r}")
        self._bodies.append(_BodySpec(name, parent, jtype, jname, ax, origin, rot, mass, c, Ic, lim, shape,
                                        limit_order, parts))
        self._names[name] = len(self._bodies) - 1
        return len(self._bodies) - 1

    def finalize(self) -> "Model":
        """Resolve parents, sort topologically, validate and freeze into a Model."""
        if not self._bodies:
            raise ModelError("model has no bodies")
        jnames = {}
        for b in self._bodies:
            if b.joint_name in jnames:
                raise ModelError(f"joint '{b.joint_name}': name used by bodies '{jnames[b.joint_name]}' and '{b.name}'")
            jnames[b.joint_name] = b.name
        parent_of = []
        for i, b in enumerate(self._bodies):
            p = b.parent
            if isinstance(p, str):
                if p not in self._names:
                    raise ModelError(f"body '{b.name}': unknown parent body '{p}'")
                p = self._names[p]
            if p == i:
                raise ModelError(f"body '{b.name}': a body cannot be its own parent")
            parent_of.append(p)
        order = _topological_order(parent_of, [b.name for b in self._bodies])
        return Model._from_specs([self._bodies[i] for i in order], [parent_of[i] for i in order], order, self.gravity)


def _topological_order(parent_of: list[int], names: list[str]) -> list[int]:
    """Order with parents first (stable: keeps insertion order when already sorted)."""
    n = len(parent_of)
    children = [[] for _ in range(n)]
    roots = []
    for i, p in enumerate(parent_of):
        (roots if p < 0 else children[p]).append(i)
    order, seen = [], [False] * n
    stack = list(reversed(roots))
    while stack:
        i = stack.pop()
        seen[i] = True
        order.append(i)
        stack.extend(reversed(children[i]))
    if len(order) != n:
        # everything unreached lies on or below a cycle: report the cycle itself
        start = next(i for i in range(n) if not seen[i])
        path, i = [], start
        while i not in path:
            path.append(i)
            i = parent_of[i]
        cyc = path[path.index(i):]
        raise ModelError("cycle in the joint tree (each body followed by its parent): " + " -> ".join(f"'{names[k]}'" for k in cyc + [cyc[0]])
                         + " (close loops with loop-closure constraints, not parent links)")
    # keep insertion order when it was already topological (handles stay valid)
    if all(parent_of[i] < i for i in range(n)):
        return list(range(n))
    return order


class Model:
    """Frozen structure-of-arrays description of a kinematic tree.

    Sizes: ``n_bodies``, ``nq`` (configuration), ``nv`` (velocity / dofs).
    Entity arrays: ``body_parent``, ``body_mass``, ``body_com`` (link frame),
    ``body_rotation`` (principal axes in link frame), ``body_principal_inertia``,
    ``joint_type``, ``joint_axis``, ``joint_origin``, ``joint_rotation``,
    ``q_start``, ``v_start``, ``joint_nq``, ``joint_nv``, ``joint_lower`` /
    ``joint_upper`` (per dof), ``joint_limit_order`` (per joint, the code in
    ``joints.LIMIT_ANGLES`` of what a spherical joint's limits bound). ``tree``
    groups what kernels need.
    """

    def __init__(self):  # use ModelBuilder.finalize()
        raise TypeError("build models with engine.ModelBuilder(...).finalize()")

    @classmethod
    def _from_specs(cls, specs, parents, order, gravity) -> "Model":
        m = object.__new__(cls)
        n = len(specs)
        new_index = {old: new for new, old in enumerate(order)}
        m.n_bodies = n
        m.body_names = [s.name for s in specs]
        m.joint_names = [s.joint_name for s in specs]
        m.body_parent = np.array([new_index[p] if p >= 0 else -1 for p in parents], dtype=np.int64)
        m.joint_type = np.array([s.joint_type for s in specs], dtype=np.int64)
        m.joint_axis = np.array([s.axis for s in specs], dtype=float).reshape(n, 3)
        m.joint_origin = np.array([s.origin for s in specs], dtype=float).reshape(n, 3)
        m.joint_rotation = np.array([s.rotation for s in specs], dtype=float).reshape(n, 3, 3)
        m.joint_nq = J.JOINT_NQ[m.joint_type].copy()
        m.joint_nv = J.JOINT_NV[m.joint_type].copy()
        m.q_start = np.concatenate([[0], np.cumsum(m.joint_nq)[:-1]]).astype(np.int64)
        m.v_start = np.concatenate([[0], np.cumsum(m.joint_nv)[:-1]]).astype(np.int64)
        m.nq = int(m.joint_nq.sum())
        m.nv = int(m.joint_nv.sum())
        m.joint_lower = np.concatenate([s.limits[0] for s in specs]) if m.nv else np.zeros(0)
        m.joint_upper = np.concatenate([s.limits[1] for s in specs]) if m.nv else np.zeros(0)
        m.joint_limit_order = np.array([s.limit_order for s in specs], dtype=np.int64)
        m.body_mass = np.array([s.mass for s in specs], dtype=float)
        m.body_com = np.array([s.com for s in specs], dtype=float).reshape(n, 3)
        m.body_shapes = [s.shape for s in specs]
        m._shape_parts = {i: (s.shape, s.shape_parts) for i, s in enumerate(specs) if s.shape is not None}
        # principal axes: inertia about COM = R diag(I) Rᵀ in link axes
        rots, prins, link_I = [], [], []
        for s in specs:
            ev, R = np.linalg.eigh(s.inertia)
            if np.linalg.det(R) < 0:
                R[:, 2] = -R[:, 2]
            rots.append(R)
            prins.append(ev)
            link_I.append(spatial_inertia(s.mass, s.com, s.inertia))
        m.body_rotation = np.array(rots).reshape(n, 3, 3)
        m.body_principal_inertia = np.array(prins).reshape(n, 3)
        m.gravity = np.asarray(gravity, float).copy()
        # X_tree: parent link → parent-side joint frame: E = Rᵀ (rotation), r = origin
        tree_E = np.ascontiguousarray(np.transpose(m.joint_rotation, (0, 2, 1)))
        g6 = np.zeros(6)
        g6[3:] = m.gravity
        m.tree = KinematicTree(
            m.body_parent, m.joint_type, np.ascontiguousarray(m.joint_axis), m.q_start, m.v_start,
            m.joint_nv, tree_E, np.ascontiguousarray(m.joint_origin), np.ascontiguousarray(np.array(link_I).reshape(n, 6, 6)), g6,
        )
        # dof-level parent array λ (Featherstone's branch-induced sparsity, RBDA §6.5)
        lam = np.full(m.nv, -1, dtype=np.int64)
        last_dof = np.full(n, -1, dtype=np.int64)  # last dof at or above each body
        for i in range(n):
            p = m.body_parent[i]
            above = last_dof[p] if p >= 0 else -1
            for k in range(m.joint_nv[i]):
                d = m.v_start[i] + k
                lam[d] = above if k == 0 else d - 1
            last_dof[i] = m.v_start[i] + m.joint_nv[i] - 1 if m.joint_nv[i] else above
        m.dof_parent = lam
        m.dof_body = np.repeat(np.arange(n), m.joint_nv).astype(np.int64)
        m.is_floating = bool(n and J.JOINT_FLOATS[m.joint_type[0]] and m.body_parent[0] == -1)
        m.builder_order = list(order)
        m._body_index = {name: i for i, name in enumerate(m.body_names)}
        m._joint_index = {name: i for i, name in enumerate(m.joint_names)}
        m._per_thread = PerThreadWorkspaces()
        for arr in (m.body_parent, m.joint_type, m.joint_axis, m.joint_origin, m.joint_rotation, m.joint_nq,
                    m.joint_nv, m.q_start, m.v_start, m.body_mass, m.body_com, m.body_rotation,
                    m.body_principal_inertia, m.dof_parent, m.dof_body, m.joint_lower, m.joint_upper, m.joint_limit_order, m.gravity,
                    *m.tree):
            arr.flags.writeable = False
        return m

    def __getstate__(self):  # pickle / copy: the workspaces stay with this model's threads
        state = dict(self.__dict__)
        state.pop("_per_thread", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._per_thread = PerThreadWorkspaces()

    # ------------------------------------------------------------ lookup
    def body_index(self, name: str) -> int:
        try:
            return self._body_index[name]
        except KeyError:
            raise KeyError(f"no body named '{name}'") from None

    def joint_index(self, name: str) -> int:
        try:
            return self._joint_index[name]
        except KeyError:
            raise KeyError(f"no joint named '{name}'") from None

    def shape_parts(self, body: int) -> tuple:
        """The validated parts (``geometry.ContactShape``, link frame) of body ``body``'s ``shape=`` dict: one,
        a compound's several, or none; parsed once, in ``add_body`` (a convex part is a hull: every stage that
        needs the shapes parsing them again cost 1000 cubes 0.75 s), again only where ``body_shapes[body]``
        was replaced by another dict."""
        shape = self.body_shapes[body]
        if shape is None:
            return ()
        held = self._shape_parts.get(body)
        if held is None or held[0] is not shape:
            held = (shape, tuple(parse_shapes(shape, self.body_com[body], f"body '{self.body_names[body]}' shape")))
            self._shape_parts[body] = held
        return held[1]

    def q_slice(self, name: str) -> slice:
        """Slice of q holding the coordinates of joint ``name``."""
        j = self.joint_index(name)
        return slice(int(self.q_start[j]), int(self.q_start[j] + self.joint_nq[j]))

    def v_slice(self, name: str) -> slice:
        """Slice of v / qd / tau holding the dofs of joint ``name``."""
        j = self.joint_index(name)
        return slice(int(self.v_start[j]), int(self.v_start[j] + self.joint_nv[j]))

    def neutral_q(self) -> np.ndarray:
        """(nq,) zero configuration (identity quaternions)."""
        return np.concatenate([J.neutral_q(int(t)) for t in self.joint_type]) if self.nq else np.zeros(0)

    def total_mass(self) -> float:
        return float(self.body_mass.sum())

    def with_gravity(self, gravity) -> "Model":
        """The same model under another gravity (3,) (m/s², world frame), e.g. (0, 0, 0) to switch it off.

        Shares every other (read-only) array with this model; gets its own workspace.
        """
        g = _vector3(gravity, "gravity").copy()
        m = copy.copy(self)  # with workspaces of its own (__getstate__)
        g6 = np.zeros(6)
        g6[3:] = g
        g.flags.writeable = False
        g6.flags.writeable = False
        m.gravity = g
        m.tree = self.tree._replace(gravity=g6)
        return m

    def make_workspace(self) -> Workspace:
        """A fresh preallocated Workspace (``Data``) for this model."""
        n, nv = self.n_bodies, self.nv
        z = np.zeros
        return Workspace(
            z((n, 3, 3)), z((n, 3)), z((n, 3, 3)), z((n, 3)), z((nv, 6)),
            z((n, 6)), z((n, 6)), z((n, 6)), z((n, 6)), z((n, 6, 6)), z((n, 6)),
            z((nv, 6)), z((n, 6, 6)), z(nv), z((n, 6)), z(6), z(6), z((4, 3, 3)), z((6, 6)), z((6, 6)), z(nv),
        )

    @property
    def data(self) -> Workspace:
        """The model's default workspace for the calling thread, created on its first use there."""
        mine = self._per_thread
        ws = mine.data
        if ws is None:
            ws = mine.data = self.make_workspace()
        return ws

    def __repr__(self) -> str:
        counts = {}
        for t in self.joint_type:
            counts[J.JOINT_TYPE_NAMES[t]] = counts.get(J.JOINT_TYPE_NAMES[t], 0) + 1
        kinds = ", ".join(f"{v} {k}" for k, v in counts.items())
        return f"<Model {self.n_bodies} bodies, nq={self.nq}, nv={self.nv} ({kinds})>"


@dataclass
class State:
    """Simulation state: q (nq,), qd (nv,), t (s)."""

    q: np.ndarray
    qd: np.ndarray
    t: float = 0.0

    @classmethod
    def neutral(cls, model: Model) -> "State":
        return cls(model.neutral_q(), np.zeros(model.nv), 0.0)

    def copy(self) -> "State":
        return State(self.q.copy(), self.qd.copy(), self.t)


Data = Workspace
