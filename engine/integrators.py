"""Time integration of (q, q̇) on the joints' manifolds.

``integrate(model, q, v, dt)`` is q ⊕ v·dt joint by joint (exact SO(3)/SE(3)
exponentials for spherical and free joints). The explicit steppers take any
acceleration function ``qdd = accel(q, qd, t)``.
"""
from __future__ import annotations

import numpy as np

from ._jit import kernel
from .algorithms._checks import as_q
from .joints import integrate_joint, joint_difference


@kernel(refcounts=False)
def integrate_kernel(joint_type, q_start, v_start, q, v, dt, out):
    """out = q ⊕ v·dt for every joint (out may alias q)."""
    for i in range(joint_type.shape[0]):
        integrate_joint(joint_type[i], q, q_start[i], v, v_start[i], dt, out)


def integrate(model, q, v, dt: float) -> np.ndarray:
    """q ⊕ v·dt: (nq,) configuration after moving with constant velocity v (nv,) for dt seconds."""
    out = np.array(q, dtype=np.float64, copy=True)
    integrate_kernel(model.joint_type, model.q_start, model.v_start, out, np.ascontiguousarray(v, dtype=np.float64), float(dt), out)
    return out


@kernel(inline="llvm", refcounts=False)
def position_error(tree, q, qd, q_target, dt, err):
    """err (nv,) = (q ⊖ q̄) + Δt q̇ joint by joint — the q + Δt q̇ − q̄ of Eq. 6 / 40 on each manifold.

    With dt = 0 this is the plain PD error q ⊖ q̄ (Eq. 2).
    """
    n = tree.parent.shape[0]
    for i in range(n):
        nv = tree.joint_nv[i]
        if nv == 0:
            continue
        vs = tree.v_start[i]
        joint_difference(tree.joint_type[i], nv, q_target, q, tree.q_start[i], err, vs)
        for d in range(nv):
            err[vs + d] += dt * qd[vs + d]


def configuration_difference(model, q0, q1, out=None) -> np.ndarray:
    """v (nv,) with q0 ⊕ v = q1 joint by joint (``engine.joints.difference`` for a whole model, in a kernel).

    q0, q1: (nq,); out: optional (nv,) array to fill. Rotations in the child
    coordinates of q0 (spherical: rotation vector; free: SE(3) body twist).
    """
    q0 = as_q(model, q0, "q0")
    q1 = as_q(model, q1, "q1")
    out = np.empty(model.nv) if out is None else out
    position_error(model.tree, q1, np.zeros(model.nv), q0, 0.0, out)
    return out


def semi_implicit_euler_step(model, q, qd, dt: float, accel, t: float = 0.0):
    """Symplectic (semi-implicit) Euler: q̇⁺ = q̇ + dt·q̈(q, q̇), q⁺ = q ⊕ dt·q̇⁺."""
    qd_new = qd + dt * accel(q, qd, t)
    return integrate(model, q, qd_new, dt), qd_new


def rk4_step(model, q, qd, dt: float, accel, t: float = 0.0):
    """Classical Runge–Kutta 4 on (q, q̇), stages mapped onto the manifold by ``integrate``.

    For joints whose q lives in a vector space (revolute, prismatic,
    universal) this is exactly RK4; for quaternion joints it is the usual
    Lie-group variant (velocity stages combined, then one exponential).
    """
    k1v, k1a = qd, accel(q, qd, t)
    q2 = integrate(model, q, k1v, 0.5 * dt)
    k2v = qd + 0.5 * dt * k1a
    k2a = accel(q2, k2v, t + 0.5 * dt)
    q3 = integrate(model, q, k2v, 0.5 * dt)
    k3v = qd + 0.5 * dt * k2a
    k3a = accel(q3, k3v, t + 0.5 * dt)
    q4 = integrate(model, q, k3v, dt)
    k4v = qd + dt * k3a
    k4a = accel(q4, k4v, t + dt)
    v_avg = (k1v + 2.0 * k2v + 2.0 * k3v + k4v) / 6.0
    a_avg = (k1a + 2.0 * k2a + 2.0 * k3a + k4a) / 6.0
    return integrate(model, q, v_avg, dt), qd + dt * a_avg
