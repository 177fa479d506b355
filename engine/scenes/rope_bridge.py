"""A rope bridge between two posts (issue #31): planks hinged end to end, the last hinge a loop closure.

Layout (x along the deck, z up, hinges about y so the deck swings in the xz plane): the left post's top is
the origin; plank 0 hangs from it on a revolute joint (to the world), each next plank on a revolute joint at
the previous one's far end, and the last plank's far end is hinged to the right post's top by a hinge loop
closure. The posts stand ``(1 − slack)`` × the deck's length apart:

* ``slack=0`` — taut: the deck starts straight, and stays nearly so. A straight chain pinned at both ends is a
  kinematic singularity (the closure's row along the deck vanishes; a sag of d shortens the deck by only ~d²),
  which the closure stage handles (``engine/solvers/stages/closure_solve.py``): the deck hangs taut with a
  sag of millimetres, the tension along it in the geometric stiffness;
* ``slack > 0`` — the deck starts as a shallow V that closes the loop (down from the left post, up to the right
  one, kinked at the middle hinge) and falls into a catenary.
"""
from __future__ import annotations

import math

import numpy as np

from ..geometry import box_inertia
from ..model import ModelBuilder
from ..scene import Scene


def _v_angles(n: int, k: int, slack: float):
    """(down, up) rad: k planks down at ``down`` and n − k up at ``up`` so that the ends are (1 − slack) of the
    deck's length apart at the same height: k sin(down) = (n − k) sin(up), k cos(down) + (n − k) cos(up) =
    n (1 − slack) — bisection on ``down``."""
    def span(down):
        up = math.asin(min(1.0, k * math.sin(down) / (n - k)))
        return k * math.cos(down) + (n - k) * math.cos(up) - n * (1.0 - slack)

    lo, hi = 0.0, math.asin(min(1.0, (n - k) / k))
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if span(mid) > 0 else (lo, mid)
    down = 0.5 * (lo + hi)
    return down, math.asin(k * math.sin(down) / (n - k))


def rope_bridge(n_planks: int = 30, plank_mass: float = 8.0, plank_length: float = 0.5, width: float = 1.0,
                thickness: float = 0.05, slack: float = 0.0, damping: float = 0.0) -> Scene:
    """``n_planks`` planks (``plank_length`` × ``width`` × ``thickness`` m, ``plank_mass`` kg each) hinged end to end
    between two posts ``(1 − slack)`` × the deck's length apart (module doc); ``damping`` N·m·s/rad per hinge."""
    if n_planks < 2:
        raise ValueError("rope_bridge: n_planks must be at least 2")
    if not 0.0 <= slack < 0.5:
        raise ValueError(f"rope_bridge: slack must be in [0, 0.5) (a fraction of the deck's length), got {slack}")
    L = float(plank_length)
    b = ModelBuilder()
    for i in range(n_planks):
        b.add_body(f"plank{i}", parent=i - 1, joint="revolute", axis=(0, 1, 0),
                   joint_origin=(0.0, 0.0, 0.0) if i == 0 else (L, 0.0, 0.0), com=(L / 2, 0.0, 0.0),
                   mass=plank_mass, inertia=box_inertia(plank_mass, (L, width, thickness)), joint_name=f"hinge{i}")
    q0 = np.zeros(n_planks)
    if slack > 0:  # a V: k planks down, the rest up, kinked at hinge k
        k = n_planks // 2
        down, up = _v_angles(n_planks, k, slack)
        q0[0], q0[k] = down, -(down + up)  # +y turns +x towards −z: down
    scene = Scene(b.finalize(), name=f"rope_bridge{n_planks}", q0=q0)
    scene.joint_damping[:] = damping
    span = n_planks * L * (1.0 - slack)
    scene.add_loop_closure(n_planks - 1, -1, np.array([span, 0.0, 0.0]), kind="hinge", axis=(0, 1, 0),
                           name="right_post")
    scene.metadata.update(span=span, deck_length=n_planks * L, slack=float(slack))
    return scene
