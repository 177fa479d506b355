"""Character control: stable PD (seed 001) — MABA and its dense, sparse and PCG alternatives.

* ``spd(model, q, qd, q_target, kp, kd, dt, tau_ext=None, method="maba")`` → (q̈, τ)
  (``engine.control.spd``; also ``engine.spd``);
* ``track(scene, motion, method=..., dt=...)`` runs a reference-tracking
  simulation with SPD or plain PD (``engine.control.tracking``);
* ``engine.control.motions``: procedural reference motions (humanoid walk and
  run, dog trot and canter, snake slither) for ``engine.scenes.humanoid()``,
  ``dog()`` and ``snake(n_dof)``.
"""
from . import motions
from .motions import ReferenceMotion, SampledMotion, motion_for
from .prescribed import JointTrajectory
from .tracking_gains import tracking_gains, tracking_rest
from .spd import METHODS, configuration_difference, dof_gains, spd, spd_torques
from .tracking import TRACKING_METHODS, TrackingResult, track

__all__ = ["spd", "spd_torques", "dof_gains", "configuration_difference", "METHODS", "track", "TrackingResult",
           "TRACKING_METHODS", "ReferenceMotion", "SampledMotion", "motion_for", "motions", "JointTrajectory", "tracking_gains",
           "tracking_rest"]
