"""Procedural reference motions for the characters of ``engine.scenes`` (seed 001, Sec. 4).

The paper tracks motion capture (DeepMimic's humanoid clips, Zhang et al.'s
dog); here each motion is generated: every velocity dof k of the model gets a
periodic channel

    c_k(t) = offset_k + drift_k · t + Σ_h amplitude_k,h · sin(2π h t / T + phase_k,h)

(T = the gait period, h = 1, 2, …). The configuration is q̄(t) = q₀ ⊕ c(t)
applied in two moves with ``engine.integrate``: first the translational dofs
(those whose motion-subspace row has no angular part — the free root's
position), then the rotational ones. So revolute dofs are the channel value
itself, a spherical joint's three channels are its rotation vector (the
quaternion is exp(c/2)), and the root's channels are its world position
and the rotation vector of its orientation. ``motion(t)`` gives q̄ (nq,),
``motion.sample(times)`` a (len, nq) table, ``motion.velocity(t)`` q̇̄ (nv,)
by central differences on the manifold.

Motions (functions taking the scene, returning a ReferenceMotion):

* ``humanoid_walk`` — 1.1 s stride, 1.3 m/s; ``humanoid_run`` — 0.7 s, 3.5 m/s
  (legs in antiphase, arms opposite to legs, knee flexion in swing, pelvis
  bob at twice the stride frequency, trunk counter-rotation).
* ``dog_trot`` — 0.5 s, 2 m/s, diagonal leg pairs in phase;
  ``dog_canter`` — 0.6 s, 4 m/s, three-beat gait (left hind; right hind with
  left fore; right fore) with spine flexion and body pitch.
* ``snake_slither`` — serpenoid travelling wave of yaw from head to tail
  (1.5 waves along the body, 1.5 s period), head moving at 0.3 m/s.

Joint angles stay inside the characters' joint limits.
"""
from __future__ import annotations

import math

import numpy as np

from ..algorithms.kinematics import joint_pass
from ..integrators import configuration_difference, integrate

HARMONICS = 2


class ReferenceMotion:
    """A periodic reference q̄(t) for one model; see the module docstring for the channel formula.

    offset, drift: (nv,); amplitude, phase: (nv, HARMONICS). period: T (s).
    """

    def __init__(self, model, name: str, period: float, offset, drift, amplitude, phase):
        self.model = model
        self.name = name
        self.period = float(period)
        self.offset = np.asarray(offset, float)
        self.drift = np.asarray(drift, float)
        self.amplitude = np.asarray(amplitude, float)
        self.phase = np.asarray(phase, float)
        ws = model.make_workspace()
        q0 = model.neutral_q()
        joint_pass(model.tree, q0, ws)
        self.translational = np.all(ws.S[:, :3] == 0.0, axis=1)
        self._q0 = q0

    def channels(self, times) -> np.ndarray:
        """c(t): (len(times), nv) channel values."""
        t = np.atleast_1d(np.asarray(times, float))[:, None]
        c = self.offset[None, :] + self.drift[None, :] * t
        for h in range(self.amplitude.shape[1]):
            c = c + self.amplitude[:, h] * np.sin(2 * math.pi * (h + 1) * t / self.period + self.phase[:, h])
        return c

    def sample(self, times) -> np.ndarray:
        """q̄ at each time: (len(times), nq)."""
        c = self.channels(times)
        out = np.empty((c.shape[0], self.model.nq))
        lin = np.where(self.translational, 1.0, 0.0)
        for k, ck in enumerate(c):
            q = integrate(self.model, self._q0, ck * lin, 1.0)
            out[k] = integrate(self.model, q, ck * (1.0 - lin), 1.0)
        return out

    def __call__(self, t: float) -> np.ndarray:
        """q̄(t): (nq,)."""
        return self.sample([t])[0]

    def velocity(self, t: float, h: float = 1e-5) -> np.ndarray:
        """q̇̄(t) (nv,) by a central difference on the joints' manifolds (child coordinates)."""
        a, b = self.sample([t - h, t + h])
        return configuration_difference(self.model, a, b) / (2 * h)

    def velocities(self, times, h: float = 1e-5) -> np.ndarray:
        """q̇̄ at each time: (len(times), nv)."""
        times = np.atleast_1d(np.asarray(times, float))
        lo, hi = self.sample(times - h), self.sample(times + h)
        return np.array([configuration_difference(self.model, a, b) for a, b in zip(lo, hi)]) / (2 * h)

    def __repr__(self) -> str:
        return f"<ReferenceMotion {self.name!r}, period {self.period} s, {self.model.nv} channels>"


class SampledMotion:
    """A reference q̄ given at evenly spaced samples (e.g. an animation's frames), interpolated on the
    joints' manifolds: q̄(k + α) = q̄_k ⊕ α (q̄_{k+1} ⊖ q̄_k), the geodesic of each joint.

    samples: (F, nq) configurations, F ≥ 1.
    """

    def __init__(self, model, samples):
        self.model = model
        self.samples = np.array(samples, dtype=float).reshape(-1, model.nq)
        # the joint-space velocity from each sample to the next (per unit of sample index)
        self._steps = np.array([configuration_difference(model, a, b)
                                for a, b in zip(self.samples[:-1], self.samples[1:])]).reshape(-1, model.nv)

    def __len__(self) -> int:
        return self.samples.shape[0]

    def at(self, index: int, alpha: float = 0.0) -> np.ndarray:
        """q̄ (nq,) at ``alpha`` ∈ [0, 1] of the way from sample ``index`` to the next."""
        if index == len(self) - 1:  # the last sample has no next one
            return self.samples[index].copy()
        return integrate(self.model, self.samples[index], self._steps[index], alpha)


class _Channels:
    """Collects channel settings by joint name and component before building a ReferenceMotion."""

    def __init__(self, scene):
        self.model = scene.model
        nv = self.model.nv
        self.offset = np.zeros(nv)
        self.drift = np.zeros(nv)
        self.amplitude = np.zeros((nv, HARMONICS))
        self.phase = np.zeros((nv, HARMONICS))

    def set(self, joint: str, component: int, offset=0.0, amps=(), phases=(), drift=0.0):
        """Channel of dof ``component`` of ``joint``: offset, harmonics amplitudes/phases (rad), drift per second."""
        k = self.model.v_slice(joint).start + component
        self.offset[k] = offset
        self.drift[k] = drift
        for h, (a, p) in enumerate(zip(amps, phases)):
            self.amplitude[k, h] = a
            self.phase[k, h] = p

    def build(self, name: str, period: float) -> ReferenceMotion:
        return ReferenceMotion(self.model, name, period, self.offset, self.drift, self.amplitude, self.phase)


# free-root dof components: rotation vector (x roll, y pitch, z yaw), then world position (x, y, z)
ROLL, PITCH, YAW, PX, PY, PZ = range(6)
X, Y, Z = 0, 1, 2
TAU = 2 * math.pi


# ------------------------------------------------------------------ humanoid
def _humanoid_gait(scene, name, period, speed, bob, hip, knee, ankle, shoulder, elbow, trunk):
    """A biped cycle: right leg at phase 0, left at π; arms swing opposite to the legs."""
    ch = _Channels(scene)
    height = scene.metadata["standing_height"]
    ch.set("root", PX, 0.0, drift=speed)
    ch.set("root", PZ, height - 0.02 - bob, amps=(0.0, bob), phases=(0.0, -math.pi / 2))
    ch.set("root", YAW, 0.0, amps=(0.05,), phases=(0.0,))
    ch.set("root", ROLL, 0.0, amps=(0.03,), phases=(math.pi / 2,))
    ch.set("root", PITCH, 0.05 + 0.5 * trunk, amps=(0.0, 0.02), phases=(0.0, 0.0))
    ch.set("chest", Z, 0.0, amps=(trunk,), phases=(math.pi,))  # counter-rotation
    ch.set("neck", Z, 0.0, amps=(0.5 * trunk,), phases=(0.0,))
    for side, phi in (("right", 0.0), ("left", math.pi)):
        # hip flexion is a negative rotation about y (the thigh swings forward)
        ch.set(f"{side}_hip", Y, -hip[0], amps=(hip[1],), phases=(phi,))
        ch.set(f"{side}_hip", X, 0.0, amps=(0.05,), phases=(phi + math.pi / 2,))
        ch.set(f"{side}_knee", 0, knee[0], amps=(knee[1], 0.25 * knee[1]), phases=(phi - 1.2, phi + 0.5))
        ch.set(f"{side}_ankle", Y, ankle[0], amps=(ankle[1],), phases=(phi - 0.6,))
        # arm swings with the opposite leg: forward (negative y) when the other leg is forward
        ch.set(f"{side}_shoulder", Y, 0.0, amps=(shoulder,), phases=(phi + math.pi,))
        ch.set(f"{side}_shoulder", X, 0.12 if side == "left" else -0.12)
        ch.set(f"{side}_elbow", 0, elbow[0], amps=(elbow[1],), phases=(phi,))
    return ch.build(name, period)


def humanoid_walk(scene) -> ReferenceMotion:
    """Walk: 1.1 s stride, 1.3 m/s, hip ±0.45 rad, knee 0.1…0.9 rad, arm swing ±0.3 rad."""
    return _humanoid_gait(scene, "walk", 1.1, 1.3, bob=0.02, hip=(0.10, 0.45), knee=(0.5, 0.4), ankle=(0.0, 0.15),
                          shoulder=0.30, elbow=(0.35, 0.1), trunk=0.06)


def humanoid_run(scene) -> ReferenceMotion:
    """Run: 0.7 s stride, 3.5 m/s, hip ±0.8 rad, knee 0.2…2.0 rad, elbows bent 1.4 rad, arm swing ±0.6 rad."""
    return _humanoid_gait(scene, "run", 0.7, 3.5, bob=0.05, hip=(0.25, 0.8), knee=(1.1, 0.75), ankle=(0.05, 0.3),
                          shoulder=0.60, elbow=(1.4, 0.2), trunk=0.12)


# ------------------------------------------------------------------ dog
def _dog_gait(scene, name, period, speed, phases, swing, spine_flex, pitch, bob):
    """A quadruped cycle; phases: fraction of the cycle at which each leg swings forward."""
    ch = _Channels(scene)
    height = scene.metadata["standing_height"]
    ch.set("root", PX, 0.0, drift=speed)
    ch.set("root", PZ, height - 0.02 - bob, amps=(bob, bob), phases=(0.0, -math.pi / 2))
    ch.set("root", PITCH, 0.0, amps=(pitch,), phases=(0.0,))
    for k, joint in enumerate(("spine1", "spine2", "spine3")):
        ch.set(joint, Y, 0.0, amps=(spine_flex,), phases=(math.pi + 0.3 * k,))  # sagittal flexion
        ch.set(joint, Z, 0.0, amps=(0.04,), phases=(0.3 * k,))                   # lateral bending
    ch.set("neck1", Y, -0.15, amps=(0.5 * pitch + 0.04,), phases=(math.pi,))
    ch.set("head", Y, 0.35, amps=(0.05,), phases=(0.0,))
    for k in range(1, 5):
        ch.set(f"tail{k}", Z, 0.0, amps=(0.15,), phases=(0.8 * k,))
        ch.set(f"tail{k}", Y, -0.1)
    for leg, frac in phases.items():
        phi = TAU * frac
        side, end = leg.split("_")
        if end == "hind":
            ch.set(f"{side}_hip", Y, -0.1, amps=(swing,), phases=(phi,))
            ch.set(f"{side}_stifle", 0, 0.6, amps=(0.4, 0.1), phases=(phi - 1.0, phi))
            ch.set(f"{side}_hock", Y, 0.5, amps=(0.35,), phases=(phi - 0.8,))
            ch.set(f"{side}_hind_toe", 1, 0.0, amps=(0.3,), phases=(phi + 0.5,))
        else:
            ch.set(f"{side}_shoulder", Y, 0.0, amps=(swing,), phases=(phi,))
            ch.set(f"{side}_elbow", 0, 0.5, amps=(0.4, 0.1), phases=(phi + 1.0, phi))
            ch.set(f"{side}_carpus", Y, -0.3, amps=(0.4,), phases=(phi + 0.8,))
            ch.set(f"{side}_front_toe", 1, 0.0, amps=(0.3,), phases=(phi - 0.5,))
    return ch.build(name, period)


def dog_trot(scene) -> ReferenceMotion:
    """Trot: 0.5 s cycle, 2 m/s; left fore + right hind, then right fore + left hind."""
    return _dog_gait(scene, "trot", 0.5, 2.0,
                     {"left_front": 0.0, "right_hind": 0.0, "right_front": 0.5, "left_hind": 0.5},
                     swing=0.45, spine_flex=0.03, pitch=0.02, bob=0.015)


def dog_canter(scene) -> ReferenceMotion:
    """Canter (right lead): 0.6 s cycle, 4 m/s; left hind, then right hind with left fore, then right fore."""
    return _dog_gait(scene, "canter", 0.6, 4.0,
                     {"left_hind": 0.0, "right_hind": 0.3, "left_front": 0.3, "right_front": 0.55},
                     swing=0.6, spine_flex=0.15, pitch=0.10, bob=0.04)


# ------------------------------------------------------------------ snake
def snake_slither(scene, waves: float = 1.5, period: float = 1.5, speed: float = 0.3, amplitude: float = 0.6):
    """Serpenoid slither: yaw of joint i = α sin(2π t / T − i β), β = 2π·waves / k, α = 2a sin(β/2).

    α is capped at 0.55 rad (inside the ±0.6 rad yaw limit) for very short snakes.

    ``amplitude`` a (rad) is the serpenoid winding angle, so the body's shape
    does not depend on the number of segments k; the head moves along +X at
    ``speed`` m/s and turns with the wave.
    """
    ch = _Channels(scene)
    k = scene.metadata["segments"]
    beta = TAU * waves / k
    alpha = min(abs(2 * amplitude * math.sin(beta / 2)), 0.55)
    ch.set("root", PX, 0.0, drift=speed)
    ch.set("root", PZ, scene.q0[2])
    ch.set("root", YAW, 0.0, amps=(amplitude * 0.5,), phases=(0.0,))
    for i in range(1, k + 1):
        ch.set(f"spine{i}", Z, 0.0, amps=(alpha,), phases=(-i * beta,))
        ch.set(f"spine{i}", Y, 0.0, amps=(0.0, 0.05 * alpha), phases=(0.0, -2 * i * beta))
    return ch.build("slither", period)


MOTIONS = {
    "humanoid": {"walk": humanoid_walk, "run": humanoid_run},
    "dog": {"trot": dog_trot, "canter": dog_canter},
    "snake": {"slither": snake_slither},
}


def motion_for(scene, name: str) -> ReferenceMotion:
    """The motion ``name`` for a character scene (``humanoid``: walk, run; ``dog``: trot, canter; ``snake*``: slither)."""
    family = "snake" if scene.name.startswith("snake") else scene.name
    table = MOTIONS.get(family)
    if table is None or name not in table:
        options = ", ".join(f"{f}: {', '.join(t)}" for f, t in MOTIONS.items())
        raise ValueError(f"no motion {name!r} for scene '{scene.name}' (motions: {options})")
    return table[name](scene)
