"""The walking centipede of seed 004 (§6.3, Fig. 4): a floating chain of body segments, each with
two legs (upper leg on a spherical hip, lower leg on a revolute knee), on the ground with friction.

Axes: x forward, z up; segment 0 (the head) carries the floating base and the
others hang off it one by one through spherical joints, so the tree is
n_segments deep. Dofs: 6 + 11 (n_segments − 1) + 8 = 11 n_segments + 3.

The gait is a metachronal wave: hip i on side s follows
    swing ψ = A sin θ,  lift β = B max(0, cos θ),  θ = ω t + φ_i + (π on the left),  φ_i = −i Δφ,
so a leg sweeps back on the ground while sin θ grows... i.e. it is lifted while it swings forward
(cos θ > 0) and pushes back in stance. The targets move the joints' rest values
(``Scene.controllers``); the joint springs are the PD gains, which the RedMax
step makes linearly implicit (the stable-PD idea of seed 001).
"""
from __future__ import annotations

import numpy as np

from ..geometry import box_inertia, rod_inertia
from ..model import ModelBuilder
from ..scene import Scene

SEGMENT = (0.14, 0.10, 0.05)  # box edge lengths, m
UPPER, LOWER, FOOT = 0.08, 0.10, 0.012  # leg lengths and foot radius, m


class CentipedeGait:
    """Moves the hip springs' rest rotations along the gait (a scene controller)."""

    def __init__(self, model, n_segments, *, frequency=1.5, swing=0.35, lift=0.35, wave=np.pi / 3):
        self.omega, self.swing, self.lift, self.wave = 2 * np.pi * frequency, swing, lift, wave
        hips = [(model.q_slice(f"hip_{side}{i}").start, i, 1.0 if side == "r" else -1.0)
                for i in range(n_segments) for side in ("r", "l")]
        self._qs = np.array([h[0] for h in hips], dtype=np.int64)
        self._phase = np.array([-i * wave + (0.0 if sign > 0 else np.pi) for _, i, sign in hips])
        self._sign = np.array([h[2] for h in hips])

    def quaternions(self, t: float) -> np.ndarray:
        """(2 n_segments, 4): every hip's target Rz(±ψ) Rx(∓β) as a unit quaternion (w, x, y, z);
        right leg: +ψ moves its foot forward, −β lifts it (the left leg mirrors)."""
        theta = self.omega * t + self._phase
        half_z = 0.5 * self._sign * self.swing * np.sin(theta)
        half_x = -0.5 * self._sign * self.lift * np.maximum(0.0, np.cos(theta))
        cz, sz, cx, sx = np.cos(half_z), np.sin(half_z), np.cos(half_x), np.sin(half_x)
        return np.stack([cz * cx, cz * sx, sz * sx, sz * cx], axis=1)

    def targets(self, t: float):
        """{q index: quaternion} of every hip at time t."""
        return dict(zip(self._qs.tolist(), self.quaternions(t)))

    def __call__(self, scene, t: float) -> None:
        scene.joint_rest[self._qs[:, None] + np.arange(4)] = self.quaternions(t)


def centipede(n_segments: int = 10, *, gait: bool = True, friction: float = 1.0, hip_gain: float = 20.0,
              knee_gain: float = 20.0, spine_gain: float = 5.0, frequency: float = 1.5) -> Scene:
    """A centipede of ``n_segments`` (1 … 250) standing on the ground plane z = 0, walking along +x.

    Segment 0.4 kg, legs 0.05 kg each; hip, knee and spine springs of ``*_gain`` N·m/rad
    (damping a tenth of that in N·m·s/rad). gait=False: it just stands.
    """
    if not 1 <= int(n_segments) <= 250:
        raise ValueError(f"centipede: n_segments must be 1 … 250, got {n_segments}")
    n_segments = int(n_segments)
    b = ModelBuilder()
    length, width, _ = SEGMENT
    for i in range(n_segments):
        b.add_body(f"segment{i}", parent=-1 if i == 0 else f"segment{i - 1}", joint="free" if i == 0 else "spherical",
                   joint_origin=(0, 0, 0) if i == 0 else (-length, 0, 0), mass=0.4,
                   inertia=box_inertia(0.4, SEGMENT), shape={"type": "box", "size": SEGMENT},
                   joint_name="root" if i == 0 else f"spine{i}")
        for side, y in (("r", -1.0), ("l", 1.0)):
            b.add_body(f"upper_{side}{i}", parent=f"segment{i}", joint="spherical", joint_origin=(0, y * width / 2, 0),
                       com=(0, y * UPPER / 2, 0), mass=0.05, inertia=rod_inertia(0.05, UPPER, 0.008),
                       shape={"type": "capsule", "radius": 0.008, "length": UPPER, "axis": (0, 1, 0), "collide": False},
                       joint_name=f"hip_{side}{i}")
            lower_inertia = rod_inertia(0.05, LOWER, 0.006)[[0, 2, 1]]  # rod along z
            b.add_body(f"lower_{side}{i}", parent=f"upper_{side}{i}", joint="revolute", axis=(1, 0, 0),
                       joint_origin=(0, y * UPPER, 0), com=(0, 0, -LOWER / 2), mass=0.05, inertia=lower_inertia,
                       shape={"type": "sphere", "radius": FOOT, "center": (0, 0, -LOWER)}, joint_name=f"knee_{side}{i}")
    model = b.finalize()
    q0 = model.neutral_q()
    q0[2] = LOWER + FOOT  # feet on the ground, upper legs level
    scene = Scene(model, name=f"centipede{n_segments}", q0=q0)
    for i in range(n_segments):
        if i:
            scene.add_joint_spring(f"spine{i}", spine_gain, 0.1 * spine_gain)
        for side in ("r", "l"):
            scene.add_joint_spring(f"hip_{side}{i}", hip_gain, 0.1 * hip_gain)
            scene.add_joint_spring(f"knee_{side}{i}", knee_gain, 0.1 * knee_gain)
    feet = [f"lower_{side}{i}" for i in range(n_segments) for side in ("r", "l")]
    scene.set_ground(friction=friction, bodies=feet)
    if gait:
        scene.add_controller(CentipedeGait(model, n_segments, frequency=frequency))
    scene.metadata["segments"] = n_segments
    return scene
