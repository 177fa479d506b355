"""3D binary tree (thesis 000, Sec. 4.3, Figs. 18 and 23): the preconditioner's worst case.

From the trunk, each level adds, on top of every vertical body, a horizontal
spacing bar and two vertical bodies at its ends. All joints are revolute; the
bars' hinge axis turns 90° (x, then y) with every level, so the tree spreads in
both horizontal directions. Joints have a bending stiffness so the tree stands.

* ``variant="siblings"``: a spring between the two vertical siblings on every bar;
* ``variant="square"``: springs only on the lowest level, around the square
  formed by the four grandchildren of each vertical body (indirect siblings).

The four corner leaves are pulled down and away from the tree by springs to
world anchors. M̃ is very sparse (many independent branches), which favours a
sparse direct solver; the thesis reports PCG slower there.
"""
from __future__ import annotations

import numpy as np

from ..algorithms.kinematics import link_poses
from ..model import ModelBuilder
from ..scene import Scene

HEIGHT = 0.5          # m, vertical bodies
MASS = 1.0            # kg per body
JOINT_K = 400.0       # N·m/rad bending stiffness at every joint
JOINT_D = 0.5         # N·m·s/rad
SIBLING_K = 200.0     # N/m
CORNER_K = 100.0      # N/m, corner pulls


def _rod(m, length):
    t = m * length * length / 12
    return (t + 1e-4, t + 1e-4, 1e-4)


def tree(levels: int = 3, variant: str = "siblings") -> Scene:
    """A binary tree of ``levels`` levels (bodies = 1 + 3·(2^levels − 1), all revolute)."""
    if levels < 1:
        raise ValueError("tree: levels must be ≥ 1")
    if variant not in ("siblings", "square"):
        raise ValueError(f"tree: variant must be 'siblings' or 'square', got {variant!r}")
    if variant == "square" and levels < 2:
        raise ValueError("tree: the square variant needs at least 2 levels")
    b = ModelBuilder()
    b.add_body("trunk", joint="revolute", axis=(1, 0, 0), com=(0, 0, HEIGHT / 2), mass=MASS,
               inertia=_rod(MASS, HEIGHT), joint_name="trunk_joint")
    frontier = ["trunk"]
    siblings = []  # (level, left, right)
    children_of = {}
    for level in range(1, levels + 1):
        axis = np.array([1.0, 0, 0]) if level % 2 else np.array([0, 1.0, 0])
        along = np.cross(axis, [0, 0, 1.0])  # the bar's direction, horizontal and ⊥ axis
        width = 0.4 * 2 ** ((levels - level) // 2 + 1)
        new = []
        for parent in frontier:
            bar = f"bar{level}_{parent}"
            b.add_body(bar, parent=parent, joint="revolute", axis=axis, joint_origin=(0, 0, HEIGHT), mass=MASS / 2,
                       inertia=_rod(MASS / 2, width), joint_name=f"{bar}_joint")
            pair = []
            for side, tag in ((-1, "a"), (1, "b")):
                name = f"{parent}{tag}" if parent != "trunk" else f"n{tag}"
                b.add_body(name, parent=bar, joint="revolute", axis=axis, joint_origin=tuple(side * width / 2 * along),
                           com=(0, 0, HEIGHT / 2), mass=MASS, inertia=_rod(MASS, HEIGHT), joint_name=f"{name}_joint")
                pair.append(name)
            siblings.append((level, pair[0], pair[1]))
            children_of[parent] = pair
            new += pair
        frontier = new
    model = b.finalize()
    scene = Scene(model, name=f"tree_{levels}_{variant}")
    for name in model.joint_names:
        scene.add_joint_spring(name, JOINT_K, JOINT_D)
    R, p = link_poses(model, scene.q0)

    def top(name):
        i = model.body_index(name)
        return p[i] + R[i] @ np.array([0, 0, HEIGHT])

    if variant == "siblings":
        for level, a, c in siblings:
            scene.add_spring(a, top(a), c, top(c), SIBLING_K, damping=0.5, name=f"sibling_{a}_{c}")
    else:  # square of the four grandchildren of each vertical body at the second-lowest level
        for level, a, c in siblings:
            if level != levels - 1:
                continue
            a1, a2 = children_of[a]
            c1, c2 = children_of[c]
            for u, v in ((a1, c1), (c1, c2), (c2, a2), (a2, a1)):
                scene.add_spring(u, top(u), v, top(v), SIBLING_K, damping=0.5, name=f"square_{u}_{v}")
    leaves = frontier
    tops = np.array([top(n) for n in leaves])
    for sx in (-1, 1):
        for sy in (-1, 1):
            k = int(np.argmax(tops[:, 0] * sx + tops[:, 1] * sy))
            anchor = tops[k] + np.array([0.5 * sx, 0.5 * sy, -1.0])
            scene.add_spring(leaves[k], tops[k], -1, anchor, CORNER_K, rest_length=0.5,
                             name=f"corner_pull_{'+' if sx > 0 else '-'}x{'+' if sy > 0 else '-'}y")
    scene.metadata.update(levels=levels, variant=variant, leaves=leaves)
    return scene
