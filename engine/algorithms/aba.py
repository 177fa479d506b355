"""Articulated-body algorithm: forward dynamics in O(n) (Featherstone RBDA Table 7.1).

The inward pass is split into ``articulated_inertia_pass`` (IA, U, D⁻¹ — also
used by the Θ(n²) inverse inertia of seed 004 and by the preconditioners of
seed 000) and the bias-force part, which only the full ABA needs.
"""
from __future__ import annotations

import numpy as np

from .._jit import kernel
from ..joints import REVOLUTE
from ..spatial import copy_inertia, add_transformed_inertia, inertia_times, transform_force_transpose, transform_motion
from ..errors import ModelError
from ._checks import BAD_INPUT, DONE, F8, OVERFLOW, all_finite, as_body_forces, as_q, as_v, inputs_ok, overflow_error
from ._flat import flat_model, unpack_tree, unpack_workspace
from .dense import invert_spd_block
from .kinematics import joint_pass, velocity_pass


@kernel(inline="llvm", refcounts=False)
def project_joint(tree, i, ws, reduced_diag):
    """U = IA_i Sᵢ (rows), D⁻¹ = (Sᵢᵀ IA_i Sᵢ + diag(reduced_diag_i))⁻¹ for body i; returns nv_i.

    reduced_diag adds joint-space terms before the inversion (Alg. 4, line 6:
    A_r = hD_r + h²K_r); the plain ABA passes zeros.
    """
    nv = tree.joint_nv[i]
    vs = tree.v_start[i]
    IA = ws.IA[i]
    for d in range(nv):
        inertia_times(IA, ws.S[vs + d], ws.U[vs + d])
    D = ws.D
    for d in range(nv):
        for e in range(nv):
            s = 0.0
            for k in range(6):
                s += ws.S[vs + d, k] * ws.U[vs + e, k]
            D[d, e] = s
        D[d, d] += reduced_diag[vs + d]
    invert_spd_block(D, nv, ws.Dinv[i])
    return nv


@kernel(inline="llvm", refcounts=False)
def articulated_child_inertia(tree, i, ws, Ia):
    """Ia = IA_i − U D⁻¹ Uᵀ, the articulated inertia body i hands to its parent."""
    nv = tree.joint_nv[i]
    vs = tree.v_start[i]
    Dinv = ws.Dinv[i]
    for r in range(6):
        for c in range(6):
            Ia[r, c] = ws.IA[i, r, c]
    for d in range(nv):
        for e in range(nv):
            g = Dinv[d, e]
            if g != 0.0:
                for r in range(6):
                    ur = ws.U[vs + d, r] * g
                    for c in range(6):
                        Ia[r, c] -= ur * ws.U[vs + e, c]


@kernel(inline="llvm", refcounts=False)
def revolute_inward_step(tree, i, ws, tau, Ia, pa, tmp6):
    """The inward ABA step of body i on a revolute joint (S = [axis; 0], so U = IA S takes three
    columns and D is a scalar): U, D⁻¹, u, and the articulated inertia and bias force handed to the
    parent (the general step, ``project_joint`` and ``articulated_child_inertia``, for nv = 1)."""
    vs = tree.v_start[i]
    x0, x1, x2 = tree.joint_axis[i, 0], tree.joint_axis[i, 1], tree.joint_axis[i, 2]
    IA = ws.IA[i]
    # scalars, not array reads after stores: the arrays are views of one buffer, so LLVM must assume
    # every store may change them
    u0 = IA[0, 0] * x0 + IA[0, 1] * x1 + IA[0, 2] * x2
    u1 = IA[1, 0] * x0 + IA[1, 1] * x1 + IA[1, 2] * x2
    u2 = IA[2, 0] * x0 + IA[2, 1] * x1 + IA[2, 2] * x2
    u3 = IA[3, 0] * x0 + IA[3, 1] * x1 + IA[3, 2] * x2
    u4 = IA[4, 0] * x0 + IA[4, 1] * x1 + IA[4, 2] * x2
    u5 = IA[5, 0] * x0 + IA[5, 1] * x1 + IA[5, 2] * x2
    dinv = 1.0 / (x0 * u0 + x1 * u1 + x2 * u2 + ws.zero_nv[vs])  # + MABA's K (control.spd), else 0
    pA = ws.pA[i]
    u = tau[vs] - (x0 * pA[0] + x1 * pA[1] + x2 * pA[2])
    U = ws.U[vs]
    U[0], U[1], U[2], U[3], U[4], U[5] = u0, u1, u2, u3, u4, u5
    ws.Dinv[i, 0, 0] = dinv
    ws.u[vs] = u
    p = tree.parent[i]
    if p < 0:
        return
    c = ws.c[i]
    c0, c1, c2, c3, c4, c5 = c[0], c[1], c[2], c[3], c[4], c[5]
    # Ia = IA − U D⁻¹ Uᵀ and pa = pA + Ia c + U D⁻¹ u = pA + IA c + U D⁻¹ (u − Uᵀ c)
    h = dinv * (u - (u0 * c0 + u1 * c1 + u2 * c2 + u3 * c3 + u4 * c4 + u5 * c5))
    for r in range(6):
        pa[r] = pA[r] + IA[r, 0] * c0 + IA[r, 1] * c1 + IA[r, 2] * c2 + IA[r, 3] * c3 + IA[r, 4] * c4 + IA[r, 5] * c5
    pa[0] += u0 * h
    pa[1] += u1 * h
    pa[2] += u2 * h
    pa[3] += u3 * h
    pa[4] += u4 * h
    pa[5] += u5 * h
    us = (u0, u1, u2, u3, u4, u5)
    for r in range(6):
        g = us[r] * dinv
        for k in range(r, 6):
            t = IA[r, k] - g * us[k]
            Ia[r, k] = t
            Ia[k, r] = t
    add_transformed_inertia(ws.Xup_E[i], ws.Xup_r[i], Ia, ws.IA[p])
    transform_force_transpose(ws.Xup_E[i], ws.Xup_r[i], pa, tmp6)
    for k in range(6):
        ws.pA[p, k] += tmp6[k]


@kernel(refcounts=False)
def articulated_inertia_pass(tree, ws, inertia, reduced_diag):
    """Inward pass for articulated inertias only (needs joint_pass): IA, U, D⁻¹.

    inertia: (n, 6, 6) per-body blocks in link frames (tree.link_inertia for
    M⁻¹; the augmented blocks of Alg. 4 for the preconditioner); reduced_diag:
    (nv,) joint-space diagonal added to each D.
    """
    n = tree.parent.shape[0]
    for i in range(n):
        copy_inertia(inertia, i, ws.IA)
    for i in range(n - 1, -1, -1):
        project_joint(tree, i, ws, reduced_diag)
        p = tree.parent[i]
        if p >= 0:
            articulated_child_inertia(tree, i, ws, ws.tmp66)
            add_transformed_inertia(ws.Xup_E[i], ws.Xup_r[i], ws.tmp66, ws.IA[p])


@kernel(inline=True, refcounts=False)
def aba_kernel(tree, q, qd, tau, f_ext, ws, qdd):
    """q̈ (nv,) from τ by the three ABA passes; f_ext (n, 6) in link coordinates."""
    joint_pass(tree, q, ws)
    velocity_pass(tree, q, qd, ws)
    n = tree.parent.shape[0]
    Iv = ws.tmp6
    pa = ws.tmp6b
    Ia = ws.tmp66
    for i in range(n):  # bias forces pA = v ×* I v − f_ext
        I = tree.link_inertia[i]
        vi = ws.v[i]
        v0, v1, v2, v3, v4, v5 = vi[0], vi[1], vi[2], vi[3], vi[4], vi[5]
        # I v in scalars (no stores between the loads: the workspace arrays share one buffer)
        n0 = I[0, 0] * v0 + I[0, 1] * v1 + I[0, 2] * v2 + I[0, 3] * v3 + I[0, 4] * v4 + I[0, 5] * v5
        n1 = I[1, 0] * v0 + I[1, 1] * v1 + I[1, 2] * v2 + I[1, 3] * v3 + I[1, 4] * v4 + I[1, 5] * v5
        n2 = I[2, 0] * v0 + I[2, 1] * v1 + I[2, 2] * v2 + I[2, 3] * v3 + I[2, 4] * v4 + I[2, 5] * v5
        f0 = I[3, 0] * v0 + I[3, 1] * v1 + I[3, 2] * v2 + I[3, 3] * v3 + I[3, 4] * v4 + I[3, 5] * v5
        f1 = I[4, 0] * v0 + I[4, 1] * v1 + I[4, 2] * v2 + I[4, 3] * v3 + I[4, 4] * v4 + I[4, 5] * v5
        f2 = I[5, 0] * v0 + I[5, 1] * v1 + I[5, 2] * v2 + I[5, 3] * v3 + I[5, 4] * v4 + I[5, 5] * v5
        pA = ws.pA[i]  # v ×* I v − f_ext (cross_force's formula)
        pA[0] = v1 * n2 - v2 * n1 + v4 * f2 - v5 * f1 - f_ext[i, 0]
        pA[1] = v2 * n0 - v0 * n2 + v5 * f0 - v3 * f2 - f_ext[i, 1]
        pA[2] = v0 * n1 - v1 * n0 + v3 * f1 - v4 * f0 - f_ext[i, 2]
        pA[3] = v1 * f2 - v2 * f1 - f_ext[i, 3]
        pA[4] = v2 * f0 - v0 * f2 - f_ext[i, 4]
        pA[5] = v0 * f1 - v1 * f0 - f_ext[i, 5]
        copy_inertia(tree.link_inertia, i, ws.IA)
    for i in range(n - 1, -1, -1):  # inward
        if tree.joint_type[i] == REVOLUTE:
            revolute_inward_step(tree, i, ws, tau, Ia, pa, Iv)
            continue
        nv = project_joint(tree, i, ws, ws.zero_nv)
        vs = tree.v_start[i]
        for d in range(nv):
            s = tau[vs + d]
            for k in range(6):
                s -= ws.S[vs + d, k] * ws.pA[i, k]
            ws.u[vs + d] = s
        p = tree.parent[i]
        if p >= 0:
            articulated_child_inertia(tree, i, ws, Ia)
            # pa = pA + Ia c + U D⁻¹ u
            inertia_times(Ia, ws.c[i], pa)
            for k in range(6):
                pa[k] += ws.pA[i, k]
            for d in range(nv):
                g = 0.0
                for e in range(nv):
                    g += ws.Dinv[i, d, e] * ws.u[vs + e]
                for k in range(6):
                    pa[k] += ws.U[vs + d, k] * g
            add_transformed_inertia(ws.Xup_E[i], ws.Xup_r[i], Ia, ws.IA[p])
            transform_force_transpose(ws.Xup_E[i], ws.Xup_r[i], pa, Iv)
            for k in range(6):
                ws.pA[p, k] += Iv[k]
    for i in range(n):  # outward: accelerations
        p = tree.parent[i]
        ai = ws.a[i]
        if p >= 0:
            transform_motion(ws.Xup_E[i], ws.Xup_r[i], ws.a[p], ai)
        else:
            for k in range(6):
                Iv[k] = -tree.gravity[k]
            transform_motion(ws.Xup_E[i], ws.Xup_r[i], Iv, ai)
        for k in range(6):
            ai[k] += ws.c[i, k]
        vs = tree.v_start[i]
        if tree.joint_type[i] == REVOLUTE:  # S = [axis; 0], D⁻¹ a scalar
            x = ws.u[vs]
            for k in range(6):
                x -= ws.U[vs, k] * ai[k]
            x *= ws.Dinv[i, 0, 0]
            qdd[vs] = x
            for k in range(3):
                ai[k] += tree.joint_axis[i, k] * x
            continue
        nv = tree.joint_nv[i]
        for d in range(nv):  # u − Uᵀ a'
            s = ws.u[vs + d]
            for k in range(6):
                s -= ws.U[vs + d, k] * ai[k]
            pa[d] = s
        for d in range(nv):
            s = 0.0
            for e in range(nv):
                s += ws.Dinv[i, d, e] * pa[e]
            qdd[vs + d] = s
        for d in range(nv):
            for k in range(6):
                ai[k] += ws.S[vs + d, k] * qdd[vs + d]


@kernel(refcounts=False)
def aba_flat(ints, floats, work, q, qd, tau, f_ext, qdd):
    """aba_kernel on a FlatModel's buffers (plain arrays: a cheap launch), after the input checks
    (sizes, finite values, unit quaternions): DONE, BAD_INPUT (qdd untouched) or OVERFLOW (``_checks``)."""
    tree = unpack_tree(ints, floats)
    nv = ints[1]
    if not (q.shape[0] == ints[2] and qd.shape[0] == nv and tau.shape[0] == nv and qdd.shape[0] == nv
            and inputs_ok(tree, q, qd, tau)):
        return BAD_INPUT
    aba_kernel(tree, q, qd, tau, f_ext, unpack_workspace(ints, work), qdd)
    return DONE if all_finite(qdd) else OVERFLOW


def aba(model, q, qd, tau, f_ext=None, *, out=None) -> np.ndarray:
    """Forward dynamics q̈ (nv,) = M⁻¹ (τ − C q̇ − g + Jᵀ f_ext) in O(n).

    q: (nq,), qd, tau: (nv,); f_ext: optional (n_bodies, 6) spatial forces
    [moment; force] on each body in its link frame (N·m, N). Gravity is the
    model's (``model.gravity``, m/s²). out: optional (nv,) float64 array to
    write q̈ into (returned). Computes in the model's flat workspace
    (``algorithms._flat``), not ``model.data``.
    """
    flat = model._per_thread.flat or flat_model(model)
    # the launch takes 1-D contiguous float64 arrays as they are (the kernel checks sizes and values)
    if not (type(q) is _ndarray and type(qd) is _ndarray and type(tau) is _ndarray and q.dtype is F8
            and qd.dtype is F8 and tau.dtype is F8 and q.strides == _UNIT and qd.strides == _UNIT
            and tau.strides == _UNIT):
        q, qd, tau = as_q(model, q), as_v(model, qd, "qd"), as_v(model, tau, "tau")
    f = flat.zero_forces if f_ext is None else as_body_forces(model, f_ext)
    if out is None:
        out = np.empty(model.nv)
    elif not (type(out) is _ndarray and out.dtype is F8 and out.strides == _UNIT):
        raise ModelError(f"out: expected a contiguous float64 array of shape ({model.nv},), got "
                         f"{type(out).__name__} {getattr(out, 'dtype', '')} {np.shape(out)}")
    code = aba_flat(flat.ints, flat.floats, flat.work, q, qd, tau, f, out)
    if code:
        if code == OVERFLOW:
            raise overflow_error("aba", "q̈", (("q", q), ("qd", qd), ("tau", tau), ("f_ext", f)))
        if out.shape != (model.nv,):
            raise ModelError(f"out: expected shape ({model.nv},), got {out.shape}")
        as_q(model, q), as_v(model, qd, "qd"), as_v(model, tau, "tau")  # raise the error that names the joint
        raise ModelError("aba: an input failed the kernel's checks")  # (the two checks disagree: a bug)
    return out


_ndarray = np.ndarray
_UNIT = (8,)  # strides of a 1-D contiguous float64 array
