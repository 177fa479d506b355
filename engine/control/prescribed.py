"""Prescribed motion of one joint: q̄(t) given at evenly spaced samples (an animation's frames), interpolated
on the joint's manifold (``engine.Scene.prescribe`` takes it; the steppers' ``stages.prescribed`` imposes it).

``JointTrajectory(joint_type, samples, t0, dt)``: samples (F, nq_j) at t_k = t0 + k·dt. Between two samples the
joint moves along q̄(t) = q̄_k ⊕ p(α), α = (t − t_k)/dt, with p in the tangent space at q̄_k:

* ``"cubic"`` (default): the cubic Hermite curve p(α) = h₁₀(α) m_k + h₀₁(α) d_k + h₁₁(α) m_{k+1} with
  d_k = q̄_{k+1} ⊖ q̄_k and Catmull–Rom tangents m_k = (d_{k−1} + d_k)/2 (one-sided at the ends): the
  samples are met exactly and the velocity is continuous across them, so a body driven by it gets no
  velocity jump at every frame (each would be an impulse on whatever hangs from it);
* ``"linear"``: p(α) = α d_k, the geodesic (what Blender's rigid body world does with an animated body
  between frames: location lerp and quaternion slerp per substep).

Before t0 and after the last sample the joint holds the end sample. Tangents of consecutive samples are
combined as if they lived in one tangent space: exact for revolute, prismatic and universal joints, and to
second order in the step for spherical and free joints (frame-rate samples of smooth motion).
"""
from __future__ import annotations

import math

import numpy as np

from .. import joints as J
from ..errors import ModelError
from ..joints import integrate_joint

INTERPOLATIONS = ("cubic", "linear")


class JointTrajectory:
    """q̄(t) (nq_j,) of one joint of type ``joint_type`` from samples (F, nq_j) at t0 + k·dt (s); see the module
    docstring. ``trajectory(t)`` is the configuration, ``trajectory.velocity(t)`` its rate (nv_j,) in the
    joint's velocity coordinates (child coordinates for spherical and free joints)."""

    def __init__(self, joint_type, samples, t0: float = 0.0, dt: float = 1.0, interpolation: str = "cubic"):
        self.joint_type = J.joint_type_id(joint_type)
        nq, nv = int(J.JOINT_NQ[self.joint_type]), int(J.JOINT_NV[self.joint_type])
        s = np.array(samples, dtype=float)
        if s.ndim == 1:
            s = s.reshape(-1, nq) if nq else s.reshape(-1, 0)
        if s.ndim != 2 or s.shape[1] != nq or s.shape[0] < 1:
            raise ModelError(f"joint trajectory: samples must be (F ≥ 1, {nq}) for a "
                             f"{J.JOINT_TYPE_NAMES[self.joint_type]} joint, got shape {np.shape(samples)}")
        if not np.all(np.isfinite(s)):
            raise ModelError("joint trajectory: samples must be finite")
        if not (math.isfinite(t0) and math.isfinite(dt) and dt > 0):
            raise ModelError(f"joint trajectory: needs a finite t0 and a sample interval dt > 0, got {t0}, {dt}")
        if interpolation not in INTERPOLATIONS:
            raise ModelError(f"joint trajectory: interpolation must be one of {', '.join(INTERPOLATIONS)}, "
                             f"got {interpolation!r}")
        at = int(J.JOINT_QUATERNION_AT[self.joint_type])
        if at >= 0:
            norms = np.linalg.norm(s[:, at:at + 4], axis=1)
            if np.abs(norms - 1.0).max() > J.UNIT_QUATERNION_TOL:
                raise ModelError("joint trajectory: sample quaternions must have unit length")
        self.samples, self.t0, self.dt, self.interpolation = s, float(t0), float(dt), interpolation
        self.nq, self.nv = nq, nv
        # d_k = q̄_{k+1} ⊖ q̄_k per sample interval, and the Catmull–Rom tangent at each sample
        self._steps = np.array([J.difference(self.joint_type, a, b) for a, b in zip(s[:-1], s[1:])]).reshape(-1, nv)
        if len(self._steps) == 0:
            self._tangents = np.zeros((1, nv))
        else:
            d = self._steps
            self._tangents = np.concatenate([d[:1], 0.5 * (d[:-1] + d[1:]), d[-1:]])
        self._out = np.empty(nq)

    @property
    def t_end(self) -> float:
        """Time of the last sample (s)."""
        return self.t0 + self.dt * (len(self.samples) - 1)

    def _locate(self, t):
        """(k, α): sample interval and fraction at time t, clamped to the samples."""
        x = (float(t) - self.t0) / self.dt
        last = len(self.samples) - 1
        if x <= 0.0 or last == 0:
            return 0, 0.0
        if x >= last:
            return last - 1, 1.0
        k = min(int(math.floor(x)), last - 1)
        return k, x - k

    def _tangent_offset(self, k, a):
        """p(α) (nv,) of the module docstring and dp/dα."""
        d = self._steps[k]
        if self.interpolation == "linear":
            return a * d, d
        m0, m1 = self._tangents[k], self._tangents[k + 1]
        a2, a3 = a * a, a * a * a
        p = (a3 - 2 * a2 + a) * m0 + (-2 * a3 + 3 * a2) * d + (a3 - a2) * m1
        dp = (3 * a2 - 4 * a + 1) * m0 + (-6 * a2 + 6 * a) * d + (3 * a2 - 2 * a) * m1
        return p, dp

    def __call__(self, t: float) -> np.ndarray:
        """q̄(t) (nq_j,)."""
        if len(self.samples) == 1 or self.nv == 0:
            return self.samples[0].copy()
        k, a = self._locate(t)
        p, _ = self._tangent_offset(k, a)
        out = np.empty(self.nq)
        integrate_joint(self.joint_type, self.samples[k], 0, np.ascontiguousarray(p), 0, 1.0, out)
        return out

    def velocity(self, t: float) -> np.ndarray:
        """q̇̄(t) (nv_j,): dp/dα ÷ dt (0 outside the samples)."""
        x = (float(t) - self.t0) / self.dt
        if len(self.samples) == 1 or self.nv == 0 or x < 0.0 or x > len(self.samples) - 1:
            return np.zeros(self.nv)
        k, a = self._locate(t)
        return self._tangent_offset(k, a)[1] / self.dt

    def __repr__(self) -> str:
        return (f"<JointTrajectory {J.JOINT_TYPE_NAMES[self.joint_type]}, {len(self.samples)} samples from "
                f"t = {self.t0:g} s every {self.dt:g} s, {self.interpolation}>")
