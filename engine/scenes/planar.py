"""Planar bar mechanisms of the Baraff re-implementation (seed 002, Sec. 5.1), in the xy plane.

Every bar is the seed's body: a uniform rectangle 1 m wide and 5 m long (along
its local y), 1 kg, with its two joints 2 m from the centre along y — the
*posterior* joint at −2, the *anterior* one at +2. Joints are hinges about z,
gravity is (0, −9.81, 0). Each bar's link frame sits at its posterior joint
(the centre of mass is 2 m along local y), so the engine's reduced-coordinate
solvers and Baraff's maximal-coordinate solver (which detects the plane and
uses 3 DoF per body) run the same scenes.

``root="primary"`` pins the root bar's posterior joint to the world with a
hinge joint of the tree; ``root="auxiliary"`` makes the root free and pins it
with a fixed-point loop closure instead, as the seed does.
"""
from __future__ import annotations

import math

import numpy as np

from ..model import ModelBuilder
from ..scene import Scene

WIDTH, LENGTH, MASS, JOINT = 1.0, 5.0, 1.0, 2.0
GRAVITY = (0.0, -9.81, 0.0)


def _bar_inertia():
    """Principal moments of the 1 × 5 bar (a thin plate in the xy plane): Izz = m (w² + l²) / 12."""
    return (MASS * LENGTH**2 / 12, MASS * WIDTH**2 / 12, MASS * (WIDTH**2 + LENGTH**2) / 12)


def _rot_z(angle):
    return (math.cos(angle / 2), 0.0, 0.0, math.sin(angle / 2))


def _add_bar(b, name, parent, origin, angle, joint="revolute"):
    return b.add_body(name, parent=parent, joint=joint, axis=(0, 0, 1), joint_origin=origin,
                      joint_rotation=_rot_z(angle), com=(0, JOINT, 0), mass=MASS, inertia=_bar_inertia(),
                      joint_name=f"{name}_joint")


def _root(b, root, angle):
    if root not in ("primary", "auxiliary"):
        raise ValueError(f"root must be 'primary' or 'auxiliary', got {root!r}")
    return _add_bar(b, "bar0", -1, (0, 0, 0), angle, joint="revolute" if root == "primary" else "free")


def _pin_root(scene, root):
    if root == "auxiliary":
        scene.add_loop_closure("bar0", -1, (0.0, 0.0, 0.0), kind="hinge", axis=(0, 0, 1), name="fixed_point")
    return scene


def serial_arm_2d(n: int = 10, *, root: str = "primary", bend: float = 0.2) -> Scene:
    """n bars chained anterior to posterior, hanging from the world at the root's posterior joint;
    each joint starts bent by ``bend`` rad, the root at −π/2 + bend from horizontal."""
    if n < 1:
        raise ValueError("serial_arm_2d needs at least one bar")
    b = ModelBuilder(gravity=GRAVITY)
    _root(b, root, -math.pi + bend)
    for i in range(1, n):
        _add_bar(b, f"bar{i}", i - 1, (0, 2 * JOINT, 0), bend)
    return _pin_root(Scene(b.finalize(), name=f"serial_arm_2d_{n}"), root)


def binary_tree_2d(height: int = 3, *, root: str = "primary", spread: float = 0.5) -> Scene:
    """A binary tree of 2**height − 1 bars: both children of a bar hang from its anterior joint,
    spread ±``spread`` rad; the root hangs from the world."""
    if height < 1:
        raise ValueError("binary_tree_2d needs height ≥ 1")
    b = ModelBuilder(gravity=GRAVITY)
    _root(b, root, -math.pi / 2 - math.pi / 2)
    n = 2**height - 1
    for i in range(1, n):
        parent = (i - 1) // 2
        _add_bar(b, f"bar{i}", f"bar{parent}", (0, 2 * JOINT, 0), spread if i % 2 else -spread)
    return _pin_root(Scene(b.finalize(), name=f"binary_tree_2d_{height}"), root)


def four_bar_2d(crank_angle: float = 1.0) -> Scene:
    """Closed four-bar of three seed bars and the ground: crank and rocker pinned to the world 4 m
    apart, the coupler joins their anterior joints (the coupler–rocker pin is a loop closure)."""
    L = 2 * JOINT
    A = np.array([L * math.cos(crank_angle), L * math.sin(crank_angle)])
    D = np.array([L, 0.0])
    d = float(np.linalg.norm(D - A))
    h = math.sqrt(max(L * L - d * d / 4, 0.0))
    u = (D - A) / d
    B = A + u * d / 2 + np.array([-u[1], u[0]]) * h  # coupler end = rocker end (isosceles: equal bars)
    ang = lambda v: math.atan2(v[1], v[0]) - math.pi / 2  # bar along +y rotated to point along v  # noqa: E731
    b = ModelBuilder(gravity=GRAVITY)
    _add_bar(b, "crank", -1, (0, 0, 0), ang(A))
    _add_bar(b, "coupler", "crank", (0, L, 0), ang(B - A) - ang(A))
    _add_bar(b, "rocker", -1, (D[0], D[1], 0), ang(B - D))
    scene = Scene(b.finalize(), name="four_bar_2d")
    scene.add_loop_closure("coupler", "rocker", (B[0], B[1], 0.0), kind="hinge", axis=(0, 0, 1), name="coupler_rocker")
    return scene


def closed_chain_2d(n: int = 6, *, floating: bool = True) -> Scene:
    """n bars pinned anterior to posterior in a closed regular polygon (the last bar's anterior joint
    pinned to the first bar's posterior joint by a loop closure); free-floating, or with the first
    bar pinned to the world (``floating=False``)."""
    if n < 3:
        raise ValueError("closed_chain_2d needs at least 3 bars")
    b = ModelBuilder(gravity=GRAVITY)
    turn = 2 * math.pi / n
    _add_bar(b, "bar0", -1, (0, 0, 0), -math.pi / 2, joint="free" if floating else "revolute")
    for i in range(1, n):
        _add_bar(b, f"bar{i}", i - 1, (0, 2 * JOINT, 0), turn)
    scene = Scene(b.finalize(), name=f"closed_chain_2d_{n}")
    scene.add_loop_closure(f"bar{n - 1}", "bar0", (0.0, 0.0, 0.0), kind="hinge", axis=(0, 0, 1), name="closure")
    return scene
