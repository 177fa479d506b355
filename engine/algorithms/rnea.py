"""Recursive Newton–Euler inverse dynamics (Featherstone RBDA Table 5.1)."""
from __future__ import annotations

import numpy as np

from .._jit import kernel
from ..errors import ModelError
from ..spatial import cross_force, inertia_times, transform_force_transpose, transform_motion
from ._checks import (BAD_INPUT, DONE, OVERFLOW, all_finite, as_body_forces, as_q, as_v, inputs_ok, overflow_error,
                      plain_vector)
from ._flat import flat_model, unpack_tree, unpack_workspace
from .kinematics import joint_pass, velocity_pass


@kernel(refcounts=False)
def rnea_kernel(tree, q, qd, qdd, f_ext, gravity_scale, ws, tau):
    """tau (nv,) = M(q) q̈ + C(q, q̇) q̇ + g(q) − Σ Jᵀ f_ext.

    f_ext: (n, 6) spatial forces on each body in link coordinates.
    gravity_scale: 1.0 includes gravity, 0.0 leaves it out.
    """
    joint_pass(tree, q, ws)
    velocity_pass(tree, q, qd, ws)
    rnea_passes(tree, qdd, f_ext, gravity_scale, ws, tau)


@kernel(inline="llvm", refcounts=False)
def rnea_passes(tree, qdd, f_ext, gravity_scale, ws, tau):
    """The two passes of ``rnea_kernel`` on kinematics already in ``ws`` (joint_pass and
    velocity_pass at the step's q, q̇: a stepper that has them skips recomputing them)."""
    n = tree.parent.shape[0]
    Iv = ws.tmp6
    for i in range(n):  # outward: accelerations and body forces
        p = tree.parent[i]
        ai = ws.a[i]
        if p >= 0:
            transform_motion(ws.Xup_E[i], ws.Xup_r[i], ws.a[p], ai)
        else:
            for k in range(6):
                ws.tmp6b[k] = -gravity_scale * tree.gravity[k]
            transform_motion(ws.Xup_E[i], ws.Xup_r[i], ws.tmp6b, ai)
        vs = tree.v_start[i]
        for d in range(tree.joint_nv[i]):
            for k in range(6):
                ai[k] += ws.S[vs + d, k] * qdd[vs + d]
        for k in range(6):
            ai[k] += ws.c[i, k]
        inertia_times(tree.link_inertia[i], ws.v[i], Iv)
        cross_force(ws.v[i], Iv, ws.f[i])
        inertia_times(tree.link_inertia[i], ai, Iv)
        for k in range(6):
            ws.f[i, k] += Iv[k] - f_ext[i, k]
    for i in range(n - 1, -1, -1):  # inward: joint forces
        vs = tree.v_start[i]
        for d in range(tree.joint_nv[i]):
            s = 0.0
            for k in range(6):
                s += ws.S[vs + d, k] * ws.f[i, k]
            tau[vs + d] = s
        p = tree.parent[i]
        if p >= 0:
            transform_force_transpose(ws.Xup_E[i], ws.Xup_r[i], ws.f[i], Iv)
            for k in range(6):
                ws.f[p, k] += Iv[k]


def rnea(model, q, qd, qdd, f_ext=None, *, gravity: bool = True) -> np.ndarray:
    """Inverse dynamics: joint forces τ (nv,) that produce q̈ at (q, q̇).

    q: (nq,), qd, qdd: (nv,); f_ext: optional (n_bodies, 6) spatial forces
    [moment; force] on each body in its link frame (N·m, N).
    """
    flat = model._per_thread.flat or flat_model(model)
    if not (plain_vector(q) and plain_vector(qd) and plain_vector(qdd)):
        q, qd, qdd = as_q(model, q), as_v(model, qd, "qd"), as_v(model, qdd, "qdd")
    f = flat.zero_forces if f_ext is None else as_body_forces(model, f_ext)
    tau = np.empty(model.nv)
    code = rnea_flat(flat.ints, flat.floats, flat.work, q, qd, qdd, f, 1.0 if gravity else 0.0, tau)
    if code:
        if code == OVERFLOW:
            raise overflow_error("rnea", "τ", (("q", q), ("qd", qd), ("qdd", qdd), ("f_ext", f)))
        as_q(model, q), as_v(model, qd, "qd"), as_v(model, qdd, "qdd")  # raise the error that names the joint
        raise ModelError("rnea: an input failed the kernel's checks")  # (the two checks disagree: a bug)
    return tau


@kernel(refcounts=False)
def rnea_flat(ints, floats, work, q, qd, qdd, f_ext, gravity_scale, tau):
    """rnea_kernel on a FlatModel's buffers (one cheap launch, as ``aba_flat``), after the input checks
    (sizes, finite values, unit quaternions): DONE, BAD_INPUT (tau untouched) or OVERFLOW."""
    tree = unpack_tree(ints, floats)
    nv = ints[1]
    if not (q.shape[0] == ints[2] and qd.shape[0] == nv and qdd.shape[0] == nv and tau.shape[0] == nv
            and inputs_ok(tree, q, qd, qdd)):
        return BAD_INPUT
    rnea_kernel(tree, q, qd, qdd, f_ext, gravity_scale, unpack_workspace(ints, work), tau)
    return DONE if all_finite(tau) else OVERFLOW


def bias_forces(model, q, qd, f_ext=None, *, gravity: bool = True) -> np.ndarray:
    """C(q, q̇) q̇ + g(q) − Jᵀ f_ext (nv,), i.e. rnea with q̈ = 0."""
    return rnea(model, q, qd, np.zeros(model.nv), f_ext, gravity=gravity)
