"""Reference tracking with stable PD (seed 001, Sec. 4.1–4.2) or plain PD, semi-implicit Euler.

One step of ``track`` (all steps run inside one kernel, ``tracking_kernel``):

1. control — SPD (Eq. 6–7) against the reference at the *next* step,
   q̄ⁿ⁺¹ (Eq. 3–4), by ``method``:

   * ``"maba"`` embedded (default): MABA returns q̈ directly (Sec. 3.4);
   * ``"maba"`` with ``standalone=True``, ``"dense"``, ``"sparse"``, ``"pcg"``:
     the SPD torques τ first, then forward dynamics (ABA) with τ + τ_ext —
     the pipeline of the paper's DF / SF / PCG runs (PhysX's ABA after the
     SPD solve);
   * ``"pd"``: explicit PD against q̄ⁿ (Eq. 2), τ = −K_p (q ⊖ q̄) − K_d (q̇ − q̇̄), then ABA;
   * ``"passive"``: no control (τ = τ_ext), ABA — the benchmark's baseline
     for "extra time spent in SPD" (Table 3).

2. integrate — semi-implicit (symplectic) Euler: q̇ ← q̇ + Δt q̈,
   q ← q ⊕ Δt q̇ (exact exponentials on quaternion joints).

A run stops early, marked ``diverged``, when q̇ becomes non-finite or
exceeds ``DIVERGED_SPEED`` in any dof. There is no ground or contact: with
the root untracked a character falls freely while its joints track; with root
gains the root follows the reference by "hand-of-God" forces as in Sec. 4.1.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from .._jit import kernel
from ..algorithms.aba import aba_kernel
from ..algorithms.kinematics import link_poses
from ..integrators import integrate_kernel
from .spd import (
    DEFAULT_TOL, MABA, METHOD_ID, METHODS, _positive_time_step, configuration_difference, make_spd_workspace,
    maba_solve, position_error, spd_joint_terms, spd_kernel, spd_settings,
)

PD, PASSIVE = len(METHODS), len(METHODS) + 1
TRACKING_METHODS = METHODS + ("pd", "passive")
TRACKING_METHOD_ID = dict(METHOD_ID, pd=PD, passive=PASSIVE)
DIVERGED_SPEED = 1e6  # |q̇| (rad/s or m/s) beyond which a run counts as diverged
INTERNAL_KP, INTERNAL_KD = 75000.0, 4000.0  # Sec. 4.1, internal joints
ROOT_KP, ROOT_KD = 20000.0, 2000.0          # Sec. 4.1, hand-of-God root


@kernel
def pd_forces(tree, sw, ctl, q, qd, q_target, qd_target, tau_ext):
    """sw.force = −K_p (q ⊖ q̄) − K_d (q̇ − q̇̄) + τ_ext: explicit PD (Eq. 2)."""
    position_error(tree, q, qd, q_target, 0.0, sw.err)
    for k in range(qd.shape[0]):
        sw.force[k] = -ctl.kp[k] * sw.err[k] - ctl.kd[k] * (qd[k] - qd_target[k]) + tau_ext[k]


@kernel
def semi_implicit_euler(tree, q, qd, qdd, dt):
    """q̇ ← q̇ + Δt q̈, q ← q ⊕ Δt q̇; returns False when q̇ is non-finite or beyond DIVERGED_SPEED."""
    ok = True
    for k in range(qd.shape[0]):
        v = qd[k] + dt * qdd[k]
        qd[k] = v
        if not abs(v) <= DIVERGED_SPEED:
            ok = False
    integrate_kernel(tree.joint_type, tree.q_start, tree.v_start, q, qd, dt, q)
    return ok


@kernel
def tracking_kernel(tree, sw, ctl, method, standalone, frames, vframes, tau_ext, q, qd, qdd, tau, q_hist):
    """Run len(frames) − 1 steps from (q, qd) (updated in place); frames (T+1, nq) = q̄(tᵢ), vframes (T+1, nv) = q̇̄(tᵢ).

    q_hist (T+1, nq) receives q after each step (row 0: the start). Returns
    (steps done, total PCG iterations, diverged).
    """
    steps = frames.shape[0] - 1
    nv = qd.shape[0]
    for k in range(q.shape[0]):
        q_hist[0, k] = q[k]
    its = 0
    for s in range(steps):
        if method == PD:
            pd_forces(tree, sw, ctl, q, qd, frames[s], vframes[s], tau_ext)
            aba_kernel(tree, q, qd, sw.force, sw.f_ext, sw.ws, qdd)
        elif method == PASSIVE:
            for k in range(nv):
                sw.force[k] = tau_ext[k]
            aba_kernel(tree, q, qd, sw.force, sw.f_ext, sw.ws, qdd)
        elif method == MABA and not standalone:  # embedded (Sec. 3.4): q̈ straight from MABA, τ never formed
            spd_joint_terms(tree, sw, ctl, q, qd, frames[s + 1], vframes[s + 1])
            maba_solve(tree, sw, q, qd, tau_ext, qdd)
        else:  # standalone: SPD torques first, then the simulation's forward dynamics
            its += spd_kernel(tree, sw, ctl, method, q, qd, frames[s + 1], vframes[s + 1], tau_ext, qdd, tau)
            for k in range(nv):
                sw.force[k] = tau[k] + tau_ext[k]
            aba_kernel(tree, q, qd, sw.force, sw.f_ext, sw.ws, qdd)
        ok = semi_implicit_euler(tree, q, qd, qdd, ctl.dt)
        for k in range(q.shape[0]):
            q_hist[s + 1, k] = q[k]
        if not ok:
            return s + 1, its, True
    return steps, its, False


@dataclass
class TrackingResult:
    """What ``track`` returns. times (T+1,) s; q, q_ref (T+1, nq): simulated and reference
    configurations (rows after a divergence are NaN); qd (nv,) final velocities;
    steps: steps done; diverged; iterations: mean PCG iterations per step;
    wall_seconds: time inside the tracking kernel."""

    scene: object
    motion: str
    method: str
    standalone: bool
    dt: float
    times: np.ndarray
    q: np.ndarray
    q_ref: np.ndarray
    qd: np.ndarray
    steps: int
    diverged: bool
    iterations: float
    wall_seconds: float

    @property
    def model(self):
        return self.scene.model

    @property
    def seconds_per_step(self) -> float:
        return self.wall_seconds / max(self.steps, 1)

    def joint_error(self) -> np.ndarray:
        """(T+1,) RMS over the internal (non-root) dofs of q_ref ⊖ q (rad / m); nan after a divergence."""
        m = self.model
        start = 6 if m.is_floating else 0
        out = np.full(len(self.times), np.nan)
        e = np.empty(m.nv)
        for k in range(self.steps + 1):
            if np.all(np.isfinite(self.q[k])):
                configuration_difference(m, self.q_ref[k], self.q[k], e)
                out[k] = math.sqrt(float(np.mean(e[start:] ** 2))) if m.nv > start else 0.0
        return out

    def end_effector_error(self, body=None) -> np.ndarray:
        """(T+1,) ‖root→body vector simulated − reference‖ (m), both in their root's frame (Figs. 5–6).

        body: a body name or index; default the scene's ``metadata["end_effector"]``.
        The vector goes from the root link's origin to ``body``'s link origin (its inboard joint).
        """
        m = self.model
        body = self.scene.metadata["end_effector"] if body is None else body
        b = m.body_index(body) if isinstance(body, str) else int(body)
        out = np.full(len(self.times), np.nan)
        for k in range(self.steps + 1):
            if not np.all(np.isfinite(self.q[k])):
                continue
            v = []
            for q in (self.q[k], self.q_ref[k]):
                R, p = link_poses(m, q)
                v.append(R[0].T @ (p[b] - p[0]))
            out[k] = float(np.linalg.norm(v[0] - v[1]))
        return out


def track(scene, motion, *, method: str = "maba", dt: float = 1 / 30, duration: float | None = None,
          steps: int | None = None, kp=INTERNAL_KP, kd=INTERNAL_KD, root_kp=0.0, root_kd=0.0,
          standalone: bool = False, track_velocity: bool = False, tau_ext=None, q0=None, qd0=None,
          tol=None, max_iter=None, workspace=None) -> TrackingResult:
    """Track ``motion`` (a ReferenceMotion of ``scene.model``) for ``duration`` s or ``steps`` steps.

    method: ``"maba"``, ``"dense"``, ``"sparse"``, ``"pcg"`` (SPD) or ``"pd"``
    (explicit PD), ``"passive"`` (no control). kp, kd: internal-joint gains
    (scalar or (nv,), defaults 75000 N·m/rad and 4000 N·m·s/rad as in
    Sec. 4.1); root_kp, root_kd: the floating root's gains (default 0:
    untracked; 20000 / 2000 is the paper's hand-of-God root). standalone:
    MABA computes τ first, then ABA (the others always do). track_velocity:
    also track q̇̄ (the paper tracks q̇ → 0, Eq. 2). tau_ext: constant (nv,)
    joint forces. q0, qd0: start state (default: the reference and its
    velocity at t = 0). workspace: an SPDWorkspace to reuse (benchmarks).
    """
    if method not in TRACKING_METHOD_ID:
        raise ValueError(f"method must be one of {', '.join(repr(m) for m in TRACKING_METHODS)}, got {method!r}")
    model = scene.model
    dt = _positive_time_step(dt)
    if steps is None:
        if duration is None or not (np.isfinite(duration) and duration > 0):
            raise ValueError(f"give steps ≥ 1 or a duration > 0 s, got duration={duration!r}")
        steps = max(1, int(round(duration / dt)))
    steps = int(steps)
    if steps < 1:
        raise ValueError(f"steps must be ≥ 1, got {steps}")
    ctl = spd_settings(model, kp, kd, dt, root_kp=root_kp, root_kd=root_kd,
                       tol=DEFAULT_TOL if tol is None else tol, max_iter=max_iter)
    times = np.arange(steps + 1) * dt
    frames = np.ascontiguousarray(motion.sample(times))
    vframes = np.ascontiguousarray(motion.velocities(times)) if track_velocity else np.zeros((steps + 1, model.nv))
    q = np.array(frames[0] if q0 is None else q0, dtype=float)
    qd = np.array(motion.velocity(0.0) if qd0 is None else qd0, dtype=float)
    if q.shape != (model.nq,) or qd.shape != (model.nv,):
        raise ValueError(f"q0 must have {model.nq} entries and qd0 {model.nv}")
    tau_ext = np.zeros(model.nv) if tau_ext is None else np.asarray(tau_ext, float)
    if tau_ext.shape != (model.nv,) or not np.all(np.isfinite(tau_ext)):
        raise ValueError(f"tau_ext must be {model.nv} finite numbers")
    sw = make_spd_workspace(model) if workspace is None else workspace
    q_hist = np.full((steps + 1, model.nq), np.nan)
    qdd, tau = np.empty(model.nv), np.empty(model.nv)
    t0 = time.perf_counter()
    done, its, diverged = tracking_kernel(model.tree, sw, ctl, TRACKING_METHOD_ID[method], bool(standalone), frames,
                                          vframes, tau_ext, q, qd, qdd, tau, q_hist)
    wall = time.perf_counter() - t0
    return TrackingResult(scene, motion.name, method, bool(standalone), dt, times, q_hist, frames, qd, int(done),
                          bool(diverged), its / max(done, 1), wall)
