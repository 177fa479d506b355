"""Joint types: the only module that knows what a joint type means.

Each joint connects a *parent-side joint frame* (fixed in the parent link) to
the child's *link frame*. For every type this module gives, in one place:

* ``joint_transform``     X_J(q) = (E, r): parent-side joint frame → child link frame
* ``joint_motion_subspace``  S(q): (nv, 6) rows, child link coordinates
* ``joint_bias_acceleration`` c_J = Ṡ(q, q̇) q̇ (child coordinates)
* ``integrate``          q ⊕ v·dt on the joint's manifold
* ``difference``         the inverse map: v with q0 ⊕ v = q1

Coordinates (``q`` layout / ``v`` layout), following RedMax (thesis 000,
Eq. 2.25–2.34) and Featherstone:

============  ==  ==  ======================================  ==========================
type          nq  nv  q                                       v
============  ==  ==  ======================================  ==========================
fixed          0   0  —                                       —
revolute       1   1  angle about unit axis a (rad)           angular rate (rad/s)
prismatic      1   1  displacement along unit axis a (m)      rate (m/s)
universal      2   2  (θx, θy), R = Rx(θx) Ry(θy) (Eq. 2.31)  (θ̇x, θ̇y)
spherical      4   3  unit quaternion (w, x, y, z)            ω in child coordinates
free           7   6  position (3) + quaternion (w, x, y, z)  [ω; v] child coordinates
============  ==  ==  ======================================  ==========================

For ``free`` the linear part of v is the velocity of the child frame's origin
expressed in child coordinates, so S = I₆ and Ṡ = 0; ``integrate`` uses the
exact SE(3) exponential of the body twist, so quaternions never leave the unit
sphere (they are renormalised against round-off too).
"""
from __future__ import annotations

import math

import numpy as np

from ._jit import kernel

FIXED, REVOLUTE, PRISMATIC, UNIVERSAL, SPHERICAL, FREE = 0, 1, 2, 3, 4, 5

JOINT_TYPE_NAMES = ("fixed", "revolute", "prismatic", "universal", "spherical", "free")
JOINT_TYPE_BY_NAME = {name: i for i, name in enumerate(JOINT_TYPE_NAMES)}
JOINT_NQ = np.array([0, 1, 1, 2, 4, 7], dtype=np.int64)
JOINT_NV = np.array([0, 1, 1, 2, 3, 6], dtype=np.int64)
# What a type is, for the modules that need its kind rather than its math (which constraint rows a maximal-
# coordinate solver writes for it, what a spring, a limit or an input check may act on), indexed by type id:
JOINT_FREE_ROTATIONS = np.array([0, 1, 0, 2, 3, 3], dtype=np.int64)     # rotational dofs it frees
JOINT_FREE_TRANSLATIONS = np.array([0, 0, 1, 0, 0, 3], dtype=np.int64)  # translational dofs it frees
JOINT_QUATERNION_AT = np.array([-1, -1, -1, -1, 0, 3], dtype=np.int64)  # (w, x, y, z) at q[q_start + this]; -1: none
JOINT_HAS_AXIS = JOINT_NQ == 1  # reads its axis (revolute, prismatic)
# a whole rigid motion (free): the floating root; springs, limits and breaking have nothing to act against
JOINT_FLOATS = (JOINT_FREE_ROTATIONS == 3) & (JOINT_FREE_TRANSLATIONS == 3)
JOINT_EULER_LIMITS = (JOINT_FREE_ROTATIONS == 3) & (JOINT_FREE_TRANSLATIONS == 0)  # limits as Euler angles (ball)
# The one rule for quaternions given as input (q, q0, rest poses, joint rotations): their norm must be 1
# to within this, else a ModelError names the joint. They are never renormalised silently; the
# integrators keep the simulated ones on the unit sphere.
UNIT_QUATERNION_TOL = 1e-6
# What a spherical joint's limits bound (``ModelBuilder.add_body(limit_angles=...)``, ``model.joint_limit_order``):
# code 0 the components of the rotation vector φ = log(q); codes 1–6 Euler angles in Blender's convention,
# 'XYZ' = X applied first, R = Rz(z) Ry(y) Rx(x) (``engine.solvers.stages.joint_limits.euler_angles``).
LIMIT_ANGLES = ("rotation_vector", "XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")


def joint_type_id(name_or_id) -> int:
    """Map ``"revolute"`` (or an int id) to the integer joint type id."""
    if isinstance(name_or_id, (int, np.integer)):
        if 0 <= int(name_or_id) < len(JOINT_TYPE_NAMES):
            return int(name_or_id)
    elif str(name_or_id).lower() in JOINT_TYPE_BY_NAME:
        return JOINT_TYPE_BY_NAME[str(name_or_id).lower()]
    raise ValueError(f"unknown joint type {name_or_id!r}; expected one of {', '.join(JOINT_TYPE_NAMES)}")


def random_q(jtype: int, rng, scale: float = 1.0) -> np.ndarray:
    """A random configuration: coordinates ~ N(0, scale), positions too, and uniformly random unit quaternions."""
    nq = int(JOINT_NQ[jtype])
    at = int(JOINT_QUATERNION_AT[jtype])
    if at < 0:
        return rng.normal(size=nq) * scale
    q = np.empty(nq)
    if at:
        q[:at] = rng.normal(size=at) * scale
    u = rng.normal(size=4)
    q[at:at + 4] = u / np.linalg.norm(u)
    return q


def neutral_q(jtype: int) -> np.ndarray:
    """The joint's zero configuration (identity quaternions)."""
    q = np.zeros(JOINT_NQ[jtype])
    if jtype == SPHERICAL:
        q[0] = 1.0
    elif jtype == FREE:
        q[3] = 1.0
    return q


# ------------------------------------------------------------ quaternions
@kernel(refcounts=False)
def quat_to_matrix(q, qs, R):
    """R (3, 3) = rotation of unit quaternion q[qs:qs+4] = (w, x, y, z)."""
    w, x, y, z = q[qs], q[qs + 1], q[qs + 2], q[qs + 3]
    R[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    R[0, 1] = 2.0 * (x * y - w * z)
    R[0, 2] = 2.0 * (x * z + w * y)
    R[1, 0] = 2.0 * (x * y + w * z)
    R[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    R[1, 2] = 2.0 * (y * z - w * x)
    R[2, 0] = 2.0 * (x * z - w * y)
    R[2, 1] = 2.0 * (y * z + w * x)
    R[2, 2] = 1.0 - 2.0 * (x * x + y * y)


@kernel(refcounts=False)
def _quat_times_exp(q, qs, w0, w1, w2, out, os):
    """out[os:os+4] = q ⊗ exp(ω/2) for a body-frame rotation vector ω, renormalised."""
    th = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    if th < 1e-12:
        c = 1.0
        s = 0.5
    else:
        c = math.cos(0.5 * th)
        s = math.sin(0.5 * th) / th
    bw, bx, by, bz = c, s * w0, s * w1, s * w2
    aw, ax, ay, az = q[qs], q[qs + 1], q[qs + 2], q[qs + 3]
    rw = aw * bw - ax * bx - ay * by - az * bz
    rx = aw * bx + ax * bw + ay * bz - az * by
    ry = aw * by - ax * bz + ay * bw + az * bx
    rz = aw * bz + ax * by - ay * bx + az * bw
    _store_unit_quat(rw, rx, ry, rz, out, os)


@kernel(inline="llvm", refcounts=False)
def _store_unit_quat(w, x, y, z, out, os):
    """out[os:os+4] = (w, x, y, z) / |(w, x, y, z)|."""
    n = math.sqrt(w * w + x * x + y * y + z * z)
    out[os] = w / n
    out[os + 1] = x / n
    out[os + 2] = y / n
    out[os + 3] = z / n


# ------------------------------------------------------------- joint model
@kernel(inline=True)
def revolute_rotation(axis, theta):
    """E = Rᵀ of a revolute joint as 9 scalars (row-major): Rodrigues, R = I + sin θ ã + (1 − cos θ) ã²
    (Eq. 2.28), axis (3,) a unit vector."""
    s = math.sin(theta)
    c = math.cos(theta)
    t = 1.0 - c
    x, y, z = axis[0], axis[1], axis[2]
    return (c + t * x * x, t * x * y + s * z, t * x * z - s * y,
            t * x * y - s * z, c + t * y * y, t * y * z + s * x,
            t * x * z + s * y, t * y * z - s * x, c + t * z * z)


@kernel(inline=True)
def revolute_link_transform(axis, theta, E_tree, E_out):
    """E_out = E_J(θ) E_tree, the rotation of Xup = X_J X_tree for a revolute joint (its r_J is zero, so
    Xup's r is the tree's r unchanged): straight-line code, no call, for the kinematics pass."""
    e00, e01, e02, e10, e11, e12, e20, e21, e22 = revolute_rotation(axis, theta)
    for j in range(3):
        a, b, c = E_tree[0, j], E_tree[1, j], E_tree[2, j]
        E_out[0, j] = e00 * a + e01 * b + e02 * c
        E_out[1, j] = e10 * a + e11 * b + e12 * c
        E_out[2, j] = e20 * a + e21 * b + e22 * c


@kernel(refcounts=False)
def joint_transform(jtype, axis, q, qs, E, r):
    """Fill X_J(q) = (E, r), the parent-side joint frame → child link frame transform.

    axis: (3,) unit axis (revolute/prismatic); q: full configuration vector,
    this joint's coordinates start at qs. E is the transpose of the child's
    orientation R in the joint frame (Eq. 2.25: E = E₀ Q(q)).
    """
    for i in range(3):
        r[i] = 0.0
        for j in range(3):
            E[i, j] = 1.0 if i == j else 0.0
    if jtype == REVOLUTE:
        e = revolute_rotation(axis, q[qs])
        for k in range(9):
            E[k // 3, k % 3] = e[k]
    elif jtype == PRISMATIC:
        for i in range(3):
            r[i] = axis[i] * q[qs]  # Eq. 2.26
    elif jtype == UNIVERSAL:
        # R = Rx(q1) Ry(q2)  (Eq. 2.31); E = Rᵀ
        s1 = math.sin(q[qs])
        c1 = math.cos(q[qs])
        s2 = math.sin(q[qs + 1])
        c2 = math.cos(q[qs + 1])
        E[0, 0] = c2
        E[1, 0] = 0.0
        E[2, 0] = s2
        E[0, 1] = s1 * s2
        E[1, 1] = c1
        E[2, 1] = -s1 * c2
        E[0, 2] = -c1 * s2
        E[1, 2] = s1
        E[2, 2] = c1 * c2
    elif jtype == SPHERICAL or jtype == FREE:
        o = qs if jtype == SPHERICAL else qs + 3
        w, x, y, z = q[o], q[o + 1], q[o + 2], q[o + 3]
        # E = R(q)ᵀ
        E[0, 0] = 1.0 - 2.0 * (y * y + z * z)
        E[1, 0] = 2.0 * (x * y - w * z)
        E[2, 0] = 2.0 * (x * z + w * y)
        E[0, 1] = 2.0 * (x * y + w * z)
        E[1, 1] = 1.0 - 2.0 * (x * x + z * z)
        E[2, 1] = 2.0 * (y * z - w * x)
        E[0, 2] = 2.0 * (x * z - w * y)
        E[1, 2] = 2.0 * (y * z + w * x)
        E[2, 2] = 1.0 - 2.0 * (x * x + y * y)
        if jtype == FREE:
            r[0] = q[qs]
            r[1] = q[qs + 1]
            r[2] = q[qs + 2]


@kernel(refcounts=False)
def joint_motion_subspace(jtype, axis, q, qs, S, vs):
    """Fill rows S[vs:vs+nv] with the joint's motion subspace in child link coordinates."""
    if jtype == REVOLUTE:  # Eq. 2.29
        for k in range(6):
            S[vs, k] = axis[k] if k < 3 else 0.0
    elif jtype == PRISMATIC:  # Eq. 2.27
        for k in range(6):
            S[vs, k] = axis[k - 3] if k >= 3 else 0.0
    elif jtype == UNIVERSAL:  # Eq. 2.33 (columns of S are our rows)
        s2 = math.sin(q[qs + 1])
        c2 = math.cos(q[qs + 1])
        for k in range(6):
            S[vs, k] = 0.0
            S[vs + 1, k] = 0.0
        S[vs, 0] = c2
        S[vs, 2] = s2
        S[vs + 1, 1] = 1.0
    elif jtype == SPHERICAL:
        for d in range(3):
            for k in range(6):
                S[vs + d, k] = 1.0 if k == d else 0.0
    elif jtype == FREE:
        for d in range(6):
            for k in range(6):
                S[vs + d, k] = 1.0 if k == d else 0.0


@kernel(refcounts=False)
def joint_bias_acceleration(jtype, axis, q, qs, qd, x, vs, cJ):
    """cJ (6,) = Ṡ(q, q̇) x in child coordinates (x = q̇ gives Featherstone's c_J).

    Nonzero only for the universal joint (Eq. 2.34: Ṡ depends on θ̇y).
    """
    for k in range(6):
        cJ[k] = 0.0
    if jtype == UNIVERSAL:
        s2 = math.sin(q[qs + 1])
        c2 = math.cos(q[qs + 1])
        w = qd[vs + 1] * x[vs]
        cJ[0] = -s2 * w
        cJ[2] = c2 * w


@kernel(refcounts=False)
def integrate_joint(jtype, q, qs, v, vs, dt, out):
    """out[qs:qs+nq] = q ⊕ v·dt for one joint (out may alias q)."""
    if jtype == REVOLUTE or jtype == PRISMATIC:
        out[qs] = q[qs] + dt * v[vs]
    elif jtype == UNIVERSAL:
        out[qs] = q[qs] + dt * v[vs]
        out[qs + 1] = q[qs + 1] + dt * v[vs + 1]
    elif jtype == SPHERICAL:
        _quat_times_exp(q, qs, dt * v[vs], dt * v[vs + 1], dt * v[vs + 2], out, qs)
    elif jtype == FREE:
        # exact SE(3) exponential of the constant body twist (ω, u)·dt:
        # p += R V(ω dt) u dt,  V = I + (1−cos θ)/θ² ω̃ + (θ − sin θ)/θ³ ω̃²
        w0, w1, w2 = dt * v[vs], dt * v[vs + 1], dt * v[vs + 2]
        u0, u1, u2 = dt * v[vs + 3], dt * v[vs + 4], dt * v[vs + 5]
        th2 = w0 * w0 + w1 * w1 + w2 * w2
        th = math.sqrt(th2)
        if th < 1e-6:
            b = 0.5 - th2 / 24.0
            cc = 1.0 / 6.0 - th2 / 120.0
        else:
            b = (1.0 - math.cos(th)) / th2
            cc = (th - math.sin(th)) / (th2 * th)
        # ω̃u and ω̃²u
        x0 = w1 * u2 - w2 * u1
        x1 = w2 * u0 - w0 * u2
        x2 = w0 * u1 - w1 * u0
        y0 = w1 * x2 - w2 * x1
        y1 = w2 * x0 - w0 * x2
        y2 = w0 * x1 - w1 * x0
        d0 = u0 + b * x0 + cc * y0
        d1 = u1 + b * x1 + cc * y1
        d2 = u2 + b * x2 + cc * y2
        qw, qx, qy, qz = q[qs + 3], q[qs + 4], q[qs + 5], q[qs + 6]
        p0 = q[qs] + (1.0 - 2.0 * (qy * qy + qz * qz)) * d0 + 2.0 * (qx * qy - qw * qz) * d1 + 2.0 * (qx * qz + qw * qy) * d2
        p1 = q[qs + 1] + 2.0 * (qx * qy + qw * qz) * d0 + (1.0 - 2.0 * (qx * qx + qz * qz)) * d1 + 2.0 * (qy * qz - qw * qx) * d2
        p2 = q[qs + 2] + 2.0 * (qx * qz - qw * qy) * d0 + 2.0 * (qy * qz + qw * qx) * d1 + (1.0 - 2.0 * (qx * qx + qy * qy)) * d2
        _quat_times_exp(q, qs + 3, w0, w1, w2, out, qs + 3)
        out[qs] = p0
        out[qs + 1] = p1
        out[qs + 2] = p2


# -------------------------------------------- numpy-level inverse (tests, FD)
def _quat_mul(a, b):
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array([
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ])


def _quat_log(qr) -> np.ndarray:
    """Rotation vector of a unit quaternion (shortest arc)."""
    if qr[0] < 0:
        qr = -qr
    s = np.linalg.norm(qr[1:])
    if s < 1e-12:
        return 2.0 * qr[1:]
    return 2.0 * math.atan2(s, qr[0]) * qr[1:] / s


def difference(jtype: int, q0, q1) -> np.ndarray:
    """v (nv,) with integrate(q0, v, dt=1) = q1, for one joint's coordinates."""
    q0 = np.asarray(q0, float)
    q1 = np.asarray(q1, float)
    if jtype in (REVOLUTE, PRISMATIC, UNIVERSAL):
        return q1 - q0
    if jtype == FIXED:
        return np.zeros(0)
    conj = np.array([1.0, -1.0, -1.0, -1.0])
    if jtype == SPHERICAL:
        return _quat_log(_quat_mul(q0 * conj, q1))
    w = _quat_log(_quat_mul(q0[3:] * conj, q1[3:]))
    R0 = np.empty((3, 3))
    quat_to_matrix(q0, 3, R0)
    dp = R0.T @ (q1[:3] - q0[:3])
    th = np.linalg.norm(w)
    W = np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])
    Vinv = np.eye(3) - 0.5 * W + se3_log_coefficient(float(th)) * W @ W
    return np.concatenate([w, Vinv @ dp])


@kernel(inline="llvm", refcounts=False)
def _quat_log_of_product(a, ao, b, bo, out, os):
    """out[os:os+3] = log(a⁻¹ ⊗ b), the rotation vector from a to b (shortest arc; a, b need not be unit)."""
    aw, ax, ay, az = a[ao], -a[ao + 1], -a[ao + 2], -a[ao + 3]
    bw, bx, by, bz = b[bo], b[bo + 1], b[bo + 2], b[bo + 3]
    rw = aw * bw - ax * bx - ay * by - az * bz
    rx = aw * bx + ax * bw + ay * bz - az * by
    ry = aw * by - ax * bz + ay * bw + az * bx
    rz = aw * bz + ax * by - ay * bx + az * bw
    if rw < 0.0:
        rw, rx, ry, rz = -rw, -rx, -ry, -rz
    s = math.sqrt(rx * rx + ry * ry + rz * rz)
    if s < 1e-12 * max(rw, 1e-300):
        f = 2.0 / rw
    else:
        f = 2.0 * math.atan2(s, rw) / s
    out[os] = f * rx
    out[os + 1] = f * ry
    out[os + 2] = f * rz


SE3_LOG_SERIES_BELOW = 1e-2  # rad: c(θ) by its series below this (the closed form's 1 − cos θ cancels: error ≈ 2ε/θ⁴)


def se3_log_coefficient(th: float) -> float:
    """c(θ) = (1 − θ sin θ / (2 (1 − cos θ))) / θ² of the SE(3) log's V⁻¹ = I − ½ ω̃ + c ω̃², θ = |ω|. Below
    ``SE3_LOG_SERIES_BELOW`` its series 1/12 + θ²/720 + θ⁴/30240 (next term θ⁶/1209600 < 1e-18 there): the closed
    form divides by 1 − cos θ, exactly 0 for θ ≲ 1.5e-8 (c = −inf: a nearly still free body's q ⊖ q⁻ was NaN)."""
    if th < SE3_LOG_SERIES_BELOW:
        th2 = th * th
        return 1.0 / 12.0 + th2 * (1.0 / 720.0 + th2 / 30240.0)
    return (1.0 - th * math.sin(th) / (2.0 * (1.0 - math.cos(th)))) / (th * th)


# the kernels' copy (``difference`` calls the plain function: no kernel compiled for a call from Python)
_se3_log_coefficient = kernel(inline="llvm", refcounts=False)(se3_log_coefficient)


@kernel(inline="llvm", refcounts=False)
def joint_difference(jtype, nv, q0, q1, qs, out, vs):
    """out[vs:vs+nv] = q1 ⊖ q0: the velocity v with q0 ⊕ v = q1 for one joint.

    The kernel twin of ``engine.joints.difference`` (checked against it in
    tests/test_spd.py): coordinates subtract for revolute, prismatic and
    universal joints; spherical: log(q0⁻¹ ⊗ q1); free: the body twist [ω; v]
    of the SE(3) log, v = V(ω)⁻¹ R0ᵀ (p1 − p0).
    """
    if jtype == SPHERICAL:
        _quat_log_of_product(q0, qs, q1, qs, out, vs)
    elif jtype == FREE:
        _quat_log_of_product(q0, qs + 3, q1, qs + 3, out, vs)
        w, x, y, z = q0[qs + 3], q0[qs + 4], q0[qs + 5], q0[qs + 6]
        m = math.sqrt(w * w + x * x + y * y + z * z)
        w, x, y, z = w / m, x / m, y / m, z / m
        d0, d1, d2 = q1[qs] - q0[qs], q1[qs + 1] - q0[qs + 1], q1[qs + 2] - q0[qs + 2]
        # R0ᵀ d
        e0 = (1.0 - 2.0 * (y * y + z * z)) * d0 + 2.0 * (x * y + w * z) * d1 + 2.0 * (x * z - w * y) * d2
        e1 = 2.0 * (x * y - w * z) * d0 + (1.0 - 2.0 * (x * x + z * z)) * d1 + 2.0 * (y * z + w * x) * d2
        e2 = 2.0 * (x * z + w * y) * d0 + 2.0 * (y * z - w * x) * d1 + (1.0 - 2.0 * (x * x + y * y)) * d2
        w0, w1, w2 = out[vs], out[vs + 1], out[vs + 2]
        th2 = w0 * w0 + w1 * w1 + w2 * w2
        th = math.sqrt(th2)
        c = _se3_log_coefficient(th)
        # V⁻¹ e = e − ½ ω × e + c ω × (ω × e)
        x0, x1, x2 = w1 * e2 - w2 * e1, w2 * e0 - w0 * e2, w0 * e1 - w1 * e0
        y0, y1, y2 = w1 * x2 - w2 * x1, w2 * x0 - w0 * x2, w0 * x1 - w1 * x0
        out[vs + 3] = e0 - 0.5 * x0 + c * y0
        out[vs + 4] = e1 - 0.5 * x1 + c * y1
        out[vs + 5] = e2 - 0.5 * x2 + c * y2
    else:
        for d in range(nv):
            out[vs + d] = q1[qs + d] - q0[qs + d]


@kernel(inline="llvm", refcounts=False)
def matrix_to_quat_kernel(R, out, os):
    """out[os:os+4] = unit quaternion (w, x, y, z), w ≥ 0, of rotation R (Shepperd's method)."""
    t0 = R[0, 0] + R[1, 1] + R[2, 2]
    k = 0
    best = t0
    for d in range(3):
        if R[d, d] > best:
            best = R[d, d]
            k = d + 1
    if k == 0:
        w, x, y, z = 1.0 + t0, R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]
    elif k == 1:
        w, x, y, z = R[2, 1] - R[1, 2], 1.0 + 2.0 * R[0, 0] - t0, R[0, 1] + R[1, 0], R[0, 2] + R[2, 0]
    elif k == 2:
        w, x, y, z = R[0, 2] - R[2, 0], R[0, 1] + R[1, 0], 1.0 + 2.0 * R[1, 1] - t0, R[1, 2] + R[2, 1]
    else:
        w, x, y, z = R[1, 0] - R[0, 1], R[0, 2] + R[2, 0], R[1, 2] + R[2, 1], 1.0 + 2.0 * R[2, 2] - t0
    if w < 0:
        w, x, y, z = -w, -x, -y, -z
    _store_unit_quat(w, x, y, z, out, os)


@kernel
def joint_coordinates_kernel(jtype, axis, R, r, q, qs):
    """q[qs:qs+nq] = the inverse of ``joint_transform`` (see ``joint_coordinates``)."""
    if jtype == REVOLUTE:
        w = np.empty(4)
        matrix_to_quat_kernel(R, w, 0)
        q[qs] = 2.0 * math.atan2(axis[0] * w[1] + axis[1] * w[2] + axis[2] * w[3], w[0])
    elif jtype == PRISMATIC:
        q[qs] = axis[0] * r[0] + axis[1] * r[1] + axis[2] * r[2]
    elif jtype == UNIVERSAL:  # R = Rx(θx) Ry(θy): R[2,1] = sin θx, R[1,1] = cos θx, R[0,2] = sin θy, R[0,0] = cos θy
        q[qs] = math.atan2(R[2, 1], R[1, 1])
        q[qs + 1] = math.atan2(R[0, 2], R[0, 0])
    elif jtype == SPHERICAL:
        matrix_to_quat_kernel(R, q, qs)
    elif jtype == FREE:
        q[qs] = r[0]
        q[qs + 1] = r[1]
        q[qs + 2] = r[2]
        matrix_to_quat_kernel(R, q, qs + 3)


@kernel(refcounts=False)
def _matrices_to_quat_kernel(R, out):
    for k in range(R.shape[0]):
        matrix_to_quat_kernel(R[k], out[k], 0)


def matrix_to_quat(R) -> np.ndarray:
    """Unit quaternions (..., 4) as (w, x, y, z), w ≥ 0, of rotation matrices R (..., 3, 3) (Shepperd's method)."""
    R = np.ascontiguousarray(R, dtype=float)
    flat = R.reshape(-1, 3, 3)
    out = np.empty((flat.shape[0], 4))
    _matrices_to_quat_kernel(flat, out)
    return out.reshape(R.shape[:-2] + (4,))


def joint_coordinates(jtype: int, axis, R, r) -> np.ndarray:
    """The inverse of ``joint_transform``: q (nq,) of one joint from the child link frame's
    orientation R (3, 3) and origin r (3,) in the parent-side joint frame.

    Exact for poses the joint can reach; otherwise the projection onto the joint's
    motion: the twist about the axis (revolute, of the swing–twist decomposition),
    the displacement along it (prismatic), Rx(θx) Ry(θy) read off R (universal).
    Revolute angles come back in (−π, π].
    """
    q = np.zeros(JOINT_NQ[jtype])
    joint_coordinates_kernel(int(jtype), np.ascontiguousarray(axis, dtype=float), np.ascontiguousarray(R, dtype=float),
                             np.ascontiguousarray(r, dtype=float), q, 0)
    return q
