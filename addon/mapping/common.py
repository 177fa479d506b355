"""The vocabulary every mapping source shares: the ``Mapping`` a bake carries, its ``Target``s, the errors,
rigid frames read from Blender matrices, and the ``Builder`` that collects bodies parent-first."""
from __future__ import annotations

from dataclasses import dataclass, field

import bpy
import numpy as np

from .._engine import engine, geometry

WORLD = -1
AXES = np.eye(3)
AXIS_INDEX = {"X": 0, "Y": 1, "Z": 2}


class MappingError(ValueError):
    """Blender data that cannot become an engine scene; the message names the element."""


@dataclass
class Target:
    """What an engine body drives in Blender: an object, or a pose bone of an armature object."""

    body: str                # engine body name
    object: bpy.types.Object
    bone: str = ""           # pose bone name, "" for the object itself
    world0: np.ndarray = field(default_factory=lambda: np.eye(4))  # Blender world matrix at the start
    keyed: bool = True       # False: a body the bake does not key (a moving anchor, a constraint's connector)


@dataclass
class Mapping:
    """The engine scene and, per engine body (model order), the Blender element it drives."""

    scene: engine.Scene
    targets: list            # Target per engine body index
    offsets: np.ndarray      # (n, 4, 4) link frame → Blender world matrix, constant: W(t) = L(t) @ offset
    warnings: list = field(default_factory=list)
    ignored: list = field(default_factory=list)  # (element, setting, why) the bake cannot honour (Scene Summary)
    no_collision: list = field(default_factory=list)  # body-name pairs a constraint's Disable Collisions keeps apart

    def link_frames(self, q, model=None) -> np.ndarray:
        """(n, 4, 4) rigid world transforms of the engine's link frames at q (nq,) (of ``model``: the scene's
        own, or the one a broken joint left, ``engine.Simulator.model``)."""
        R, p = engine.link_poses(self.scene.model if model is None else model, q)
        L = np.zeros((len(R), 4, 4))
        L[:, :3, :3], L[:, :3, 3], L[:, 3, 3] = R, p, 1.0
        return L

    def world_matrices(self, q) -> np.ndarray:
        """(n, 4, 4) Blender world matrices of all targets at generalized positions q (nq,)."""
        return self.link_frames(q) @ self.offsets


def matrix(m) -> np.ndarray:
    return np.array(m, dtype=float).reshape(4, 4)


MIN_SCALE = 1e-6  # below this an axis of an object's matrix counts as collapsed (zero scale)


def in_scene(bscene, ob) -> bool:
    """Whether ``ob`` is in ``bscene``: an object deleted with X stays alive (in no scene) as long as a
    pointer (a link's end, a constraint's end, the bake's snapshot) holds it, so existence says nothing."""
    return bscene.objects.get(ob.name) == ob


def check_matrix(W, what: str) -> None:
    """Refuse a world matrix that cannot give a rigid frame: non-finite, a collapsed axis (zero
    scale) or a mirrored one (negative scale); ``what`` names the element in the message."""
    W = np.asarray(W, float)
    if not np.isfinite(W).all():
        raise MappingError(f"{what}: non-finite transform (scale, rotation or location is NaN or infinite)")
    scale = np.sqrt((W[:3, :3] ** 2).sum(axis=0))
    if scale.min() < MIN_SCALE * max(1.0, scale.max()):
        raise MappingError(f"{what}: zero scale on its local {'XYZ'[int(np.argmin(scale))]} axis; "
                           "give it a non-zero scale")
    if geometry.det3(W[:3, :3]) < 0:
        raise MappingError(f"{what}: negative scale (mirrored object); apply the scale or make it positive")


def rigid_part(W):
    """(R, p): the rotation (scale and shear removed by polar decomposition) and translation of W."""
    U, _, Vt = np.linalg.svd(W[:3, :3])
    R = U @ Vt
    if geometry.det3(R) < 0:
        raise MappingError("negative scale (mirrored object)")
    return R, W[:3, 3].copy()


def frame_in(parent_R, parent_p, R, p):
    """(origin, rotation) of frame (R, p) in the frame (parent_R, parent_p); world if parent_R is None."""
    if parent_R is None:
        return p, R
    return parent_R.T @ (p - parent_p), parent_R.T @ R




class Builder:
    """Collects bodies in parent-first order with their world link frames."""

    def __init__(self, gravity, contact_shapes=True):
        self.mb = engine.ModelBuilder(gravity=gravity)
        self.contact_shapes = contact_shapes  # False: bodies get none (nothing will collide)
        self.frames = {}     # body name → (R, p) link frame at the start
        self.targets = {}    # body name → Target
        self.joint_springs = []  # (joint, stiffness, damping (numbers or per dof), what)
        self.prescriptions = []  # (joint, trajectory, until) of moving anchors (``anchors.py``)
        self.motors = []     # keyword dicts of ``engine.Scene.add_motor``
        self.breakable = []  # (joint or closure name, threshold N·s, what)
        self.decay = {}      # body name → (linear, angular) rates (1/s)
        self.ignored = []    # (element, setting, why) the bake cannot honour
        self.no_collision = []  # body-name pairs (Disable Collisions)
        self.anchor_bodies = {}  # moving anchor object → its body name (``anchors.py``)
        self.world = {}      # the rigid body world's numbers the settings need: fps, frame_time, substep

    def ignore(self, element: str, setting: str, why: str) -> None:
        """Name a setting the bake cannot honour (the Scene Summary lists it under "ignored")."""
        if (element, setting, why) not in self.ignored:
            self.ignored.append((element, setting, why))

    def add(self, name, target, parent, joint, R, p, axis, mass, com_world, inertia_world, limits=None,
            shape_world=None, limit_angles="rotation_vector"):
        """Add a body whose joint frame (= link frame at the start) is (R, p) in world coordinates.

        shape_world: contact shape dict with "center", "rotation" and "axis" in world coordinates
        (converted to the link frame here), or None. limit_angles: what a ball joint's limits bound
        (``engine.ModelBuilder.add_body``).
        """
        pR, pp = self.frames[parent] if parent != WORLD else (None, None)
        origin, rot = frame_in(pR, pp, R, p)
        com = R.T @ (com_world - p)
        inertia = R.T @ inertia_world @ R
        shape = None
        if shape_world is not None and self.contact_shapes:
            shape = dict(shape_world)
            if "center" in shape:
                shape["center"] = R.T @ (np.asarray(shape["center"], float) - p)
            if "rotation" in shape:
                shape["rotation"] = R.T @ np.asarray(shape["rotation"], float)
            if "axis" in shape:
                shape["axis"] = R.T @ np.asarray(shape["axis"], float)
        try:
            self.mb.add_body(name, parent=parent, joint=joint, axis=axis, joint_origin=origin, joint_rotation=rot,
                             mass=mass, com=com, inertia=inertia, joint_name=name, limits=limits, shape=shape,
                             limit_angles=limit_angles)
        except engine.ModelError as err:
            raise MappingError(f"{describe(target)}: {err}") from None
        self.frames[name] = (R, p)
        self.targets[name] = target


def describe(target):
    return f"bone '{target.bone}' of '{target.object.name}'" if target.bone else f"object '{target.object.name}'"


def locked_axes(locks):
    return [i for i in range(3) if locks[i]]


def joint_from_locks(locks):
    """(joint type, axis or None, joint rotation in the bone frame) from three lock flags."""
    locked = locked_axes(locks)
    free = [i for i in range(3) if i not in locked]
    if len(locked) == 3:
        return "fixed", None, np.eye(3)
    if len(locked) == 2:
        return "revolute", AXES[free[0]], np.eye(3)
    if len(locked) == 1:  # universal: Rx(θ1) Ry(θ2) of a joint frame whose x, y are the free axes
        x, y = AXES[free[0]], AXES[free[1]]
        return "universal", None, np.column_stack([x, y, np.cross(x, y)])
    return "spherical", None, np.eye(3)


def axis_limits(axes, jtype, axis, jrot):
    """Per-dof limits of a joint from per-axis (used, lower, upper) of its frame's x, y, z; None if none."""
    def bound(i):
        used, lo, hi = axes[i]
        return (float(lo), float(hi)) if used else (-np.inf, np.inf)

    if jtype in ("revolute", "prismatic"):
        dofs = [bound(int(np.argmax(np.abs(axis))))]
    elif jtype == "universal":  # the joint frame's x and y are two of the bone's axes
        dofs = [bound(int(np.argmax(np.abs(jrot[:, k])))) for k in (0, 1)]
    elif jtype == "spherical":
        dofs = [bound(i) for i in range(3)]
    else:
        return None
    if all(np.isinf(lo) and np.isinf(hi) for lo, hi in dofs):
        return None
    return (np.array([d[0] for d in dofs]), np.array([d[1] for d in dofs]))
