"""Deployable umbrella (thesis 000, Sec. 4.2, Fig. 1c).

The tube is the root (welded to the world, along +z, tip at 1 m). A runner
slides on it (prismatic joint) and is pushed up by a spring-damper towards the
open position. Eight ribs hang from the tube tip and eight stretchers rise
from the runner; both are chains of ``n_rib`` universal-joint bodies, free at
their first joint and with a bending stiffness at the inner ones (a chain
of free joints could not push). Each
stretcher's end is closed onto its rib by a point loop closure, ``RIB_ATTACH``
along the rib. Canopy fabric is modelled by tension-only springs between
neighbouring ribs at every rib joint, slack while folded and taut when open.
The umbrella opens during the run: ``rib_angle(scene, q)`` reports how far.
"""
from __future__ import annotations

import numpy as np

from ..algorithms.kinematics import link_poses
from ..model import ModelBuilder
from ..scene import Scene

N_RIBS = 8
TUBE_LENGTH = 1.0    # m
RIB_LENGTH = 0.9     # m
RIB_ATTACH = 0.35    # m from the tip: where the stretcher meets the rib
CLOSED_ANGLE = 0.15  # rad from the downward vertical
OPEN_ANGLE = 1.25    # rad
RIB_MASS = 0.04      # kg per rib (steel wire)
CANOPY_K = 400.0     # N/m per canopy panel spring
RUNNER_K = 60.0      # N/m pushing the runner up
RUNNER_DAMPING = 4.0
JOINT_DAMPING = 0.002  # N·m·s/rad at every rib/stretcher joint
BENDING = 5.0          # N·m/rad at the inner rib/stretcher joints (the wires' bending stiffness)


def _rot(theta, beta):
    """Rz(θ) Ry(β): maps the local +z axis to (sin β cos θ, sin β sin θ, cos β)."""
    c, s, cb, sb = np.cos(theta), np.sin(theta), np.cos(beta), np.sin(beta)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]) @ np.array([[cb, 0, sb], [0, 1, 0], [-sb, 0, cb]])


def _runner_height(angle):
    return TUBE_LENGTH - 2 * RIB_ATTACH * np.cos(angle)


def _chain(b, prefix, parent, origin, rotation, length, n, mass, limits=None):
    seg = length / n
    t = mass / n * seg * seg / 12
    names = []
    for i in range(n):
        name = f"{prefix}_{i}"
        b.add_body(name, parent=parent, joint="universal", joint_origin=origin if i == 0 else (0, 0, seg),
                   joint_rotation=rotation if i == 0 else None, com=(0, 0, seg / 2), mass=mass / n,
                   inertia=(t + 1e-6, t + 1e-6, 1e-6), joint_name=f"{name}_joint", limits=limits if i == 0 else None)
        names.append(name)
        parent = name
    return names, seg


def umbrella(n_rib: int = 4, rib_limit: float | None = None) -> Scene:
    """The umbrella with ribs and stretchers of ``n_rib`` bodies each (dofs = 32·n_rib + 1).

    rib_limit: an opening stop (rad from the downward vertical, between the folded 0.15 and the
    open ≈ 1.2) on every rib's first joint — a joint limit on the universal joint's second angle,
    which is CLOSED_ANGLE minus the rib's angle; None (default): no stop."""
    if n_rib < 2:
        raise ValueError("umbrella: n_rib must be at least 2")
    rib_limits = None
    if rib_limit is not None:
        rib_limit = float(rib_limit)
        if not CLOSED_ANGLE < rib_limit < np.pi / 2:
            raise ValueError(f"umbrella: rib_limit must be between {CLOSED_ANGLE} and π/2 rad, got {rib_limit}")
        rib_limits = ((-np.inf, CLOSED_ANGLE - rib_limit), (np.inf, np.inf))
    b = ModelBuilder()
    b.add_body("tube", joint="fixed", com=(0, 0, TUBE_LENGTH / 2), mass=0.3, inertia=(0.025, 0.025, 1e-4),
               joint_name="tube_mount")
    b.add_body("runner", parent="tube", joint="prismatic", axis=(0, 0, 1), mass=0.05, inertia=(1e-5, 1e-5, 1e-5),
               joint_name="runner_slide")
    ribs, stretchers = [], []
    for k in range(N_RIBS):
        th = 2 * np.pi * k / N_RIBS
        r, seg = _chain(b, f"rib{k}", "tube", (0, 0, TUBE_LENGTH), _rot(th, np.pi - CLOSED_ANGLE), RIB_LENGTH, n_rib, RIB_MASS,
                        rib_limits)
        s, sseg = _chain(b, f"stretcher{k}", "runner", (0, 0, 0), _rot(th, CLOSED_ANGLE), RIB_ATTACH, n_rib, RIB_MASS / 2)
        ribs.append(r)
        stretchers.append(s)
    model = b.finalize()
    q0 = model.neutral_q()
    q0[model.q_slice("runner_slide")] = _runner_height(CLOSED_ANGLE)
    scene = Scene(model, name=f"umbrella_{n_rib}", q0=q0)
    scene.metadata.update(n_rib=n_rib, ribs=ribs, stretchers=stretchers)
    R, p = link_poses(model, q0)
    for k in range(N_RIBS):
        last = model.body_index(stretchers[k][-1])
        tip = p[last] + R[last] @ np.array([0.0, 0.0, RIB_ATTACH / n_rib])
        j = min(int(RIB_ATTACH // seg), n_rib - 1)
        scene.add_loop_closure(stretchers[k][-1], ribs[k][j], tip, kind="point", name=f"stretcher{k}_to_rib{k}")
    # canopy: tension-only springs between neighbouring ribs at every rib joint end
    for k in range(N_RIBS):
        k2 = (k + 1) % N_RIBS
        for i in range(n_rib):
            s = (i + 1) * seg
            a, c = model.body_index(ribs[k][i]), model.body_index(ribs[k2][i])
            pa = p[a] + R[a] @ np.array([0, 0, seg])
            pc = p[c] + R[c] @ np.array([0, 0, seg])
            rest = 2 * s * np.sin(OPEN_ANGLE) * np.sin(np.pi / N_RIBS) * 0.98  # taut just before fully open
            scene.add_cable(ribs[k][i], pa, ribs[k2][i], pc, CANOPY_K, damping=0.5, rest_length=rest,
                            name=f"canopy{k}_{i}")
    scene.add_joint_spring("runner_slide", RUNNER_K, RUNNER_DAMPING, rest=_runner_height(OPEN_ANGLE) + 0.05)
    for name in model.joint_names:
        if name.startswith(("rib", "stretcher")):
            inner = not name.endswith("_0_joint")
            scene.add_joint_spring(name, BENDING if inner else 0.0, JOINT_DAMPING)
    return scene


def rib_angle(scene: Scene, q) -> float:
    """Mean angle (rad) of the ribs' first segments from the downward vertical."""
    R, _ = link_poses(scene.model, q)
    angles = []
    for rib in scene.metadata["ribs"]:
        d = R[scene.model.body_index(rib[0])] @ np.array([0.0, 0.0, 1.0])
        angles.append(np.arccos(np.clip(-d[2], -1.0, 1.0)))
    return float(np.mean(angles))
