"""Characters of the stable-PD paper (seed 001, Table 1): humanoid, dog and snakes.

Sizes match Table 1 (n = dofs, d = most dofs on a root-to-leaf path, root
included): humanoid 34 / 13, dog 72 / 24, snakes 36 / 36, 72 / 72, 195 / 195
(``snake(n_dof)`` builds any 6 + 3k; the benchmark sweeps up to 780).
Every character has a floating base (a free root joint, 6 dofs) so the root
can be left free or tracked by "hand-of-God" root gains (Sec. 4.1).

Conventions: SI units, Z up, the character faces +X (its left is +Y), gravity
−9.81 m/s². Limbs are solid rods (capsule-like cylinders) with the inertia
of a cylinder about their centre of mass; masses are plausible adult values
(humanoid 65 kg, dog 24.8 kg) listed in each builder. Joint limits are
stored on the model (``model.joint_lower`` / ``joint_upper``; for spherical
joints bounds on the rotation-vector components, rad); the Simulator enforces
them (``engine.solvers.stages.joint_limits``; ``enforce_limits=False`` to ignore them). The reference motions that go with these
characters are in ``engine.control.motions``.
"""
from __future__ import annotations

import numpy as np

from ..model import ModelBuilder
from ..scene import Scene

SNAKE_SEGMENT_LENGTH = 0.08   # m
SNAKE_RADIUS = 0.035          # m
SNAKE_SEGMENT_MASS = 0.31     # kg: a 8 cm × 3.5 cm-radius cylinder of density ≈ 1000 kg/m³
SNAKE_HEAD_MASS = 0.4         # kg


def rod_inertia(mass: float, length: float, radius: float, direction=(0.0, 0.0, 1.0)) -> np.ndarray:
    """(3, 3) inertia about the COM of a solid cylinder (kg·m²) whose axis is ``direction``."""
    a = np.asarray(direction, float)
    a = a / np.linalg.norm(a)
    perp = mass * (3 * radius**2 + length**2) / 12.0
    along = 0.5 * mass * radius**2
    return perp * (np.eye(3) - np.outer(a, a)) + along * np.outer(a, a)


def depth_in_dofs(model) -> int:
    """Table 1's d: the largest number of dofs on a path from the root to a leaf (root dofs included)."""
    depth = np.zeros(model.n_bodies, dtype=np.int64)
    for i in range(model.n_bodies):
        p = model.body_parent[i]
        depth[i] = model.joint_nv[i] + (depth[p] if p >= 0 else 0)
    return int(depth.max(initial=0))


class _Rig:
    """Adds rods to a ModelBuilder: a joint at ``origin`` in the parent's link frame, the rod along ``direction``."""

    def __init__(self):
        self.b = ModelBuilder()

    def rod(self, name, parent, joint, origin, length, mass, radius, *, direction=(0, 0, -1), axis=(0, 1, 0),
            limits=None, joint_name=None, com_fraction=0.5):
        d = np.asarray(direction, float)
        d = d / np.linalg.norm(d)
        return self.b.add_body(name, parent=parent, joint=joint, axis=axis, joint_origin=origin, mass=mass,
                               com=tuple(com_fraction * length * d), inertia=rod_inertia(mass, length, radius, d),
                               joint_name=joint_name or name, limits=limits)

    def finalize(self):
        return self.b.finalize()


def _sph_limits(x, y, z):
    """Symmetric-ish bounds on the three rotation-vector components: each arg is (lower, upper) in rad."""
    return (np.array([x[0], y[0], z[0]]), np.array([x[1], y[1], z[1]]))


def _free_root_q(model, height: float) -> np.ndarray:
    q = model.neutral_q()
    q[2] = height
    return q


# ------------------------------------------------------------------ humanoid
HUMANOID_HIP_HEIGHT = 0.95  # m, pelvis (root link frame) above the ground when standing


def humanoid() -> Scene:
    """A 65 kg, 1.75 m humanoid with DeepMimic's joint layout: 34 dofs, depth 13 (Table 1).

    Bodies (mass kg): pelvis 10 (root, free joint ``root``), torso 20
    (``chest``, spherical), head 5 (``neck``, spherical), per side thigh 7
    (``*_hip``, spherical), shin 3.3 (``*_knee``, revolute about y, flexion
    ≥ 0), foot 1 (``*_ankle``, spherical), upper arm 2 (``*_shoulder``,
    spherical), forearm 1.2 (``*_elbow``, revolute about −y, flexion ≥ 0),
    hand 0.5 (``*_wrist``, fixed). 15 bodies, 6 + 2·3 + 2·(3+1+3+3+1) = 34
    dofs; the deepest paths (root–chest–shoulder–elbow, root–hip–knee–ankle)
    have 13. Standing pose: pelvis at 0.95 m, limbs straight down.
    End effector of Fig. 5: ``right_foot`` (the ankle).
    """
    r = _Rig()
    r.b.add_body("pelvis", joint="free", mass=10.0, com=(0, 0, 0.05), inertia=rod_inertia(10.0, 0.22, 0.12, (0, 1, 0)),
                 joint_name="root")
    r.rod("torso", "pelvis", "spherical", (0, 0, 0.10), 0.45, 20.0, 0.14, direction=(0, 0, 1), joint_name="chest",
          limits=_sph_limits((-0.6, 0.6), (-0.5, 1.0), (-0.8, 0.8)))
    r.rod("head", "torso", "spherical", (0, 0, 0.48), 0.24, 5.0, 0.10, direction=(0, 0, 1), joint_name="neck",
          limits=_sph_limits((-0.6, 0.6), (-0.6, 0.8), (-1.2, 1.2)))
    for side, s in (("right", -1.0), ("left", 1.0)):
        r.rod(f"{side}_thigh", "pelvis", "spherical", (0, 0.09 * s, 0.0), 0.42, 7.0, 0.06, joint_name=f"{side}_hip",
              limits=_sph_limits((-0.8, 0.8), (-2.2, 0.6), (-0.8, 0.8)))
        r.rod(f"{side}_shin", f"{side}_thigh", "revolute", (0, 0, -0.42), 0.41, 3.3, 0.045, axis=(0, 1, 0),
              joint_name=f"{side}_knee", limits=(0.0, 2.6))
        r.b.add_body(f"{side}_foot", parent=f"{side}_shin", joint="spherical", joint_origin=(0, 0, -0.41), mass=1.0,
                     com=(0.05, 0, -0.05), inertia=np.diag([0.0012, 0.0045, 0.0048]), joint_name=f"{side}_ankle",
                     limits=_sph_limits((-0.5, 0.5), (-0.9, 0.7), (-0.5, 0.5)))
        r.rod(f"{side}_upper_arm", "torso", "spherical", (0, 0.20 * s, 0.38), 0.28, 2.0, 0.045,
              joint_name=f"{side}_shoulder", limits=_sph_limits((-1.6, 1.6), (-3.0, 1.2), (-1.5, 1.5)))
        r.rod(f"{side}_forearm", f"{side}_upper_arm", "revolute", (0, 0, -0.28), 0.25, 1.2, 0.04, axis=(0, -1, 0),
              joint_name=f"{side}_elbow", limits=(0.0, 2.6))
        r.rod(f"{side}_hand", f"{side}_forearm", "fixed", (0, 0, -0.25), 0.16, 0.5, 0.035, joint_name=f"{side}_wrist")
    model = r.finalize()
    scene = Scene(model, name="humanoid", q0=_free_root_q(model, HUMANOID_HIP_HEIGHT))
    scene.metadata.update(root="pelvis", end_effector="right_foot", motions=("walk", "run"), table1=(34, 13),
                          standing_height=HUMANOID_HIP_HEIGHT)
    return scene


# ------------------------------------------------------------------ dog
DOG_HIP_HEIGHT = 0.58  # m


def dog() -> Scene:
    """A 24.8 kg medium-sized dog: 72 dofs, depth 24 (Table 1).

    Bodies (mass kg): pelvis 3 (root, free), lumbar spine 2.5 + 2.5
    (``spine1``, ``spine2``, spherical), thorax 4 (``spine3``), neck 0.8 +
    0.7 (``neck1``, ``neck2``), head 2 (``head``), tail 4 × 0.1
    (``tail1…4``), per hind leg thigh 1.5 (``*_hip``, spherical), shank 0.6
    (``*_stifle``, revolute about y), metatarsus 0.25 (``*_hock``, spherical),
    paw 0.1 (``*_hind_toe``, universal), per front leg upper arm 1.2
    (``*_shoulder``, spherical, on the thorax), forearm 0.5 (``*_elbow``,
    revolute), metacarpus 0.2 (``*_carpus``, spherical), paw 0.1
    (``*_front_toe``, universal). 27 bodies, 6 + 9 + 9 + 12 + 4·9 = 72 dofs;
    root → spine → neck → head and root → spine → front paw have 24.
    End effector of Fig. 6: ``right_front_paw`` (the right front toe).
    """
    r = _Rig()
    fwd, back, down = (1, 0, 0), (-1, 0, 0), (0, 0, -1)
    r.b.add_body("pelvis", joint="free", mass=3.0, com=(0, 0, 0), inertia=rod_inertia(3.0, 0.15, 0.08, fwd),
                 joint_name="root")
    spine_lim = _sph_limits((-0.3, 0.3), (-0.35, 0.35), (-0.35, 0.35))
    r.rod("lumbar1", "pelvis", "spherical", (0.05, 0, 0), 0.16, 2.5, 0.08, direction=fwd, joint_name="spine1",
          limits=spine_lim)
    r.rod("lumbar2", "lumbar1", "spherical", (0.16, 0, 0), 0.16, 2.5, 0.08, direction=fwd, joint_name="spine2",
          limits=spine_lim)
    r.rod("thorax", "lumbar2", "spherical", (0.16, 0, 0), 0.22, 4.0, 0.10, direction=fwd, joint_name="spine3",
          limits=spine_lim)
    neck_dir = (0.8, 0, 0.6)
    neck_lim = _sph_limits((-0.5, 0.5), (-0.8, 0.6), (-0.7, 0.7))
    r.rod("neck_lower", "thorax", "spherical", (0.20, 0, 0.05), 0.12, 0.8, 0.045, direction=neck_dir,
          joint_name="neck1", limits=neck_lim)
    r.rod("neck_upper", "neck_lower", "spherical", (0.096, 0, 0.072), 0.12, 0.7, 0.04, direction=neck_dir,
          joint_name="neck2", limits=neck_lim)
    r.rod("head", "neck_upper", "spherical", (0.096, 0, 0.072), 0.22, 2.0, 0.07, direction=fwd, joint_name="head",
          limits=neck_lim)
    parent = "pelvis"
    for k in range(1, 5):
        r.rod(f"tail{k}", parent, "spherical", (-0.08, 0, 0.02) if k == 1 else (-0.08, 0, 0), 0.08, 0.1, 0.015,
              direction=back, joint_name=f"tail{k}", limits=_sph_limits((-0.5, 0.5), (-0.6, 0.6), (-0.6, 0.6)))
        parent = f"tail{k}"
    toe_lim = (np.array([-0.3, -1.2]), np.array([0.3, 1.2]))
    for side, s in (("right", -1.0), ("left", 1.0)):
        r.rod(f"{side}_thigh", "pelvis", "spherical", (-0.02, 0.07 * s, -0.03), 0.20, 1.5, 0.05, direction=down,
              joint_name=f"{side}_hip", limits=_sph_limits((-0.5, 0.5), (-1.6, 0.8), (-0.5, 0.5)))
        r.rod(f"{side}_shank", f"{side}_thigh", "revolute", (0, 0, -0.20), 0.20, 0.6, 0.03, direction=down,
              axis=(0, -1, 0), joint_name=f"{side}_stifle", limits=(-0.3, 2.2))
        r.rod(f"{side}_metatarsus", f"{side}_shank", "spherical", (0, 0, -0.20), 0.12, 0.25, 0.02, direction=down,
              joint_name=f"{side}_hock", limits=_sph_limits((-0.3, 0.3), (-0.5, 1.6), (-0.3, 0.3)))
        r.rod(f"{side}_hind_paw", f"{side}_metatarsus", "universal", (0, 0, -0.12), 0.05, 0.1, 0.02, direction=fwd,
              joint_name=f"{side}_hind_toe", limits=toe_lim)
        r.rod(f"{side}_upper_arm", "thorax", "spherical", (0.12, 0.08 * s, -0.05), 0.18, 1.2, 0.04, direction=down,
              joint_name=f"{side}_shoulder", limits=_sph_limits((-0.5, 0.5), (-1.4, 1.4), (-0.5, 0.5)))
        r.rod(f"{side}_forearm", f"{side}_upper_arm", "revolute", (0, 0, -0.18), 0.18, 0.5, 0.025, direction=down,
              axis=(0, 1, 0), joint_name=f"{side}_elbow", limits=(-0.3, 2.4))
        r.rod(f"{side}_metacarpus", f"{side}_forearm", "spherical", (0, 0, -0.18), 0.10, 0.2, 0.018, direction=down,
              joint_name=f"{side}_carpus", limits=_sph_limits((-0.3, 0.3), (-1.6, 0.4), (-0.3, 0.3)))
        r.rod(f"{side}_front_paw", f"{side}_metacarpus", "universal", (0, 0, -0.10), 0.05, 0.1, 0.02, direction=fwd,
              joint_name=f"{side}_front_toe", limits=toe_lim)
    model = r.finalize()
    scene = Scene(model, name="dog", q0=_free_root_q(model, DOG_HIP_HEIGHT))
    scene.metadata.update(root="pelvis", end_effector="right_front_paw", motions=("trot", "canter"), table1=(72, 24),
                          standing_height=DOG_HIP_HEIGHT)
    return scene


# ------------------------------------------------------------------ snake
def snake(n_dof: int = 36) -> Scene:
    """A snake of ``n_dof`` = 6 + 3k dofs: a free head and a chain of k spherical joints (depth = n_dof).

    Table 1's snakes are ``snake(36)``, ``snake(72)`` and ``snake(195)``.
    The head (0.4 kg, joint ``root``) leads along +X; each of the k segments is
    an 8 cm cylinder of radius 3.5 cm and 0.31 kg (``seg1`` … ``segk``, joints
    ``spine1`` … ``spinek``, bounds ±0.3 rad roll / ±0.5 pitch / ±0.6 yaw).
    snake(195) is 5.1 m and 20 kg, about a young reticulated python.
    """
    try:
        n_dof = int(n_dof)
    except (TypeError, ValueError):
        raise ValueError(f"snake: n_dof must be an integer 6 + 3k (k ≥ 1), got {n_dof!r}") from None
    if n_dof < 9 or (n_dof - 6) % 3:
        raise ValueError(f"snake: n_dof must be 6 + 3k with k ≥ 1 (9, 12, …, 36, 72, 195, …), got {n_dof}")
    k = (n_dof - 6) // 3
    r = _Rig()
    L, rad = SNAKE_SEGMENT_LENGTH, SNAKE_RADIUS
    r.b.add_body("head", joint="free", mass=SNAKE_HEAD_MASS, com=(0.02, 0, 0),
                 inertia=rod_inertia(SNAKE_HEAD_MASS, 0.06, rad, (1, 0, 0)), joint_name="root")
    lim = _sph_limits((-0.3, 0.3), (-0.5, 0.5), (-0.6, 0.6))
    parent = "head"
    for i in range(1, k + 1):
        r.rod(f"seg{i}", parent, "spherical", (0, 0, 0) if i == 1 else (-L, 0, 0), L, SNAKE_SEGMENT_MASS, rad,
              direction=(-1, 0, 0), joint_name=f"spine{i}", limits=lim)
        parent = f"seg{i}"
    model = r.finalize()
    scene = Scene(model, name=f"snake{n_dof}", q0=_free_root_q(model, rad))
    scene.metadata.update(root="head", end_effector=f"seg{k}", motions=("slither",), table1=(n_dof, n_dof),
                          segments=k)
    return scene
