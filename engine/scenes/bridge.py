"""Cable-stayed fan bridge (thesis 000, Sec. 4.1, Fig. 1b).

Layout (x along the deck, z up, hinges about y so the deck bends in the xz plane):

* the deck is ``n_deck`` pieces of 2 m (4 m wide, 0.3 m thick concrete,
  ≈ 5.8 t each) joined by revolute hinges with a bending stiffness; the middle
  piece sits on a central pier (a revolute joint to the world) and two chains
  run out to the abutments, where **both deck ends are grounded by point loop
  closures**. The deck is built with a slight camber (each hinge bent by
  ``CAMBER`` rad, an arch rising to the middle): a perfectly straight chain
  pinned at both ends is a kinematic singularity;
* two towers stand at a quarter and three quarters of the span. With
  ``n_tower=0`` each tower is one body welded to the world (rigid towers);
  with ``n_tower > 0`` each is a chain of that many very stiff hinged steel
  bodies (joint stiffness 5e9 N·m/rad);
* 30 tension-only steel cables (k = 2e7 N/m, lightly damped) fan out from
  each tower top to evenly spaced deck pieces on both sides, pre-tensioned to
  carry the deck's weight;
* optionally a car: a point load of ``car_mass`` × g crossing the deck from
  one abutment to the other during ``crossing_time`` s (the thesis's 5 s run).
  ``car_mass=1500`` is a normal car; the thesis's heavy car is 500× that.
"""
from __future__ import annotations

import numpy as np

from ..algorithms.kinematics import link_poses
from ..model import ModelBuilder
from ..scene import Scene

PIECE = 2.0            # m, deck piece length
DECK_MASS = 2400.0 * PIECE * 4.0 * 0.3   # kg (concrete)
DECK_BENDING = 2e8     # N·m/rad between deck pieces
TOWER_HEIGHT = 12.0    # m above the deck
TOWER_MASS = 2.0e4     # kg per tower
TOWER_STIFFNESS = 5e9  # N·m/rad per tower hinge
CABLE_K = 2e7          # N/m
CABLE_DAMPING = 2e4    # N·s/m
N_CABLES = 30
NORMAL_CAR = 1500.0    # kg
CAMBER = 0.004         # rad per deck hinge


def _box_inertia(m, a, b, c):
    return (m * (b * b + c * c) / 12, m * (a * a + c * c) / 12, m * (a * a + b * b) / 12)


def bridge(n_deck: int = 31, n_tower: int = 0, car_mass: float | None = None, crossing_time: float = 5.0) -> Scene:
    """The cable-stayed bridge with ``n_deck`` deck pieces (odd, ≥ 7) and towers of ``n_tower`` bodies."""
    if n_deck < 7:
        raise ValueError("bridge: n_deck must be at least 7")
    if n_deck % 2 == 0:
        n_deck += 1
    if n_tower < 0:
        raise ValueError("bridge: n_tower must be ≥ 0")
    span = n_deck * PIECE
    b = ModelBuilder()
    mid = n_deck // 2
    deck_inertia = _box_inertia(DECK_MASS, PIECE, 4.0, 0.3)
    # the middle piece on the pier, its link frame at its centre
    b.add_body(f"deck{mid}", joint="revolute", axis=(0, 1, 0), mass=DECK_MASS, inertia=deck_inertia,
               joint_name="pier")
    names = {mid: f"deck{mid}"}
    for side in (-1, 1):  # chains towards the abutments; links hinge at the shared edge
        parent, first = f"deck{mid}", True
        for k in range(1, mid + 1):
            i = mid + side * k
            origin = (side * PIECE / 2, 0.0, 0.0) if first else (side * PIECE, 0.0, 0.0)
            b.add_body(f"deck{i}", parent=parent, joint="revolute", axis=(0, 1, 0), joint_origin=origin,
                       com=(side * PIECE / 2, 0, 0), mass=DECK_MASS, inertia=deck_inertia, joint_name=f"hinge{i}")
            names[i] = f"deck{i}"
            parent, first = f"deck{i}", False
    tower_x = (-span / 4, span / 4)
    tops = []
    for t, x in enumerate(tower_x):
        if n_tower == 0:
            b.add_body(f"tower{t}", joint="fixed", joint_origin=(x, 0, 0), com=(0, 0, TOWER_HEIGHT / 2),
                       mass=TOWER_MASS, inertia=_box_inertia(TOWER_MASS, 1.0, 1.0, TOWER_HEIGHT), joint_name=f"tower{t}_base")
            tops.append((f"tower{t}", np.array([x, 0.0, TOWER_HEIGHT])))
        else:
            seg = TOWER_HEIGHT / n_tower
            parent = -1
            for k in range(n_tower):
                name = f"tower{t}_{k}"
                b.add_body(name, parent=parent, joint="revolute", axis=(0, 1, 0),
                           joint_origin=(x, 0, 0) if k == 0 else (0, 0, seg), com=(0, 0, seg / 2),
                           mass=TOWER_MASS / n_tower, inertia=_box_inertia(TOWER_MASS / n_tower, 1.0, 1.0, seg),
                           joint_name=f"{name}_hinge")
                parent = name
            tops.append((f"tower{t}_{n_tower - 1}", np.array([x, 0.0, TOWER_HEIGHT])))
    model = b.finalize()
    q0 = model.neutral_q()
    for i in range(n_deck):
        if i != mid:
            q0[model.q_slice(f"hinge{i}")] = CAMBER * (1 if i > mid else -1)
    scene = Scene(model, name=f"bridge_{n_deck}x{n_tower}", q0=q0)
    scene.metadata.update(n_deck=n_deck, n_tower=n_tower, span=span, tower_x=tower_x)
    # deck hinge bending stiffness, tower hinge stiffness
    for i in range(n_deck):
        if i != mid:
            scene.add_joint_spring(f"hinge{i}", DECK_BENDING, 1e6)
    for t in range(2):
        for k in range(n_tower):
            scene.add_joint_spring(f"tower{t}_{k}_hinge", TOWER_STIFFNESS, 1e7)
    # abutments: both deck ends grounded by loop closures
    R, p = link_poses(model, q0)
    left = model.body_index(names[0])
    right = model.body_index(names[n_deck - 1])
    left_end = p[left] + R[left] @ np.array([-PIECE, 0.0, 0.0])
    right_end = p[right] + R[right] @ np.array([PIECE, 0.0, 0.0])
    scene.add_loop_closure(names[0], -1, left_end, kind="point", name="left_abutment")
    scene.add_loop_closure(names[n_deck - 1], -1, right_end, kind="point", name="right_abutment")
    # 30 cables: 15 per tower, fanning to deck pieces on both sides (skipping the pieces near the tower)
    per_side = N_CABLES // 4
    for t, (tower, top) in enumerate(tops):
        xt = top[0]
        for side in (-1, 1):
            lo, hi = (xt - span / 4 + 1.0, xt - 2.0) if side < 0 else (xt + 2.0, xt + span / 4 - 1.0)
            count = per_side + (1 if side > 0 else 0)  # 7 + 8 = 15 per tower
            for c, xd in enumerate(np.linspace(lo, hi, count)):
                i = int(np.clip(np.floor((xd + span / 2) / PIECE), 0, n_deck - 1))
                bi = model.body_index(names[i])
                anchor = p[bi] + R[bi] @ np.array([0.0 if i == mid else np.sign(i - mid) * PIECE / 2, 0.0, 0.0])
                length = np.linalg.norm(top - anchor)
                scene.add_cable(tower, top, names[i], anchor, CABLE_K, damping=CABLE_DAMPING,
                                rest_length=length * (1 - 2e-4), name=f"cable{t}_{'L' if side < 0 else 'R'}{c}")
    if car_mass:
        path = [(names[i], (-span / 2 + i * PIECE, 0, 0.15), (-span / 2 + (i + 1) * PIECE, 0, 0.15)) for i in range(n_deck)]
        scene.add_moving_load((0.0, 0.0, -9.81 * float(car_mass)), path, 0.0, crossing_time, name="car")
        scene.metadata["car_mass"] = float(car_mass)
    return scene
