"""Composite-rigid-body algorithm: the joint-space inertia matrix M(q) (RBDA Table 6.2)."""
from __future__ import annotations

import numpy as np

from .._jit import kernel
from ..errors import ModelError
from ..spatial import copy_inertia, add_transformed_inertia, inertia_times, transform_force_transpose
from ._checks import BAD_INPUT, DONE, OVERFLOW, all_finite_2d, as_q, configuration_ok, overflow_error, plain_vector
from ._flat import flat_model, unpack_tree, unpack_workspace
from .kinematics import _kinematics_kernel, joint_pass


@kernel
def crba_kernel(tree, q, ws, M):
    """Fill M (nv, nv) with the joint-space inertia matrix; ws.IA holds composite inertias."""
    joint_pass(tree, q, ws)
    composite_inertia_matrix(tree, ws, tree.link_inertia, M, np.zeros(0), np.zeros((0, 0), dtype=np.int64))


@kernel
def crba_flat(ints, floats, work, q, M):
    """crba_kernel on a FlatModel's buffers (one cheap launch, as ``aba_flat``), after checking q (size,
    finite values, unit quaternions): DONE, BAD_INPUT (M untouched) or OVERFLOW."""
    tree = unpack_tree(ints, floats)
    if not (q.shape[0] == ints[2] and M.shape[0] == ints[1] and configuration_ok(tree, q)):
        return BAD_INPUT
    crba_kernel(tree, q, unpack_workspace(ints, work), M)
    return DONE if all_finite_2d(M) else OVERFLOW


# "no sparse target": pass these from Python (inside kernels, allocate locally: globals are read-only)
NO_VALUES = np.zeros(0)
NO_POSITIONS = np.zeros((0, 0), dtype=np.int64)


@kernel(inline=True)
def store_symmetric(M, values, positions, r, c, v):
    """M[r, c] = M[c, r] = v, or into a sparse value array through positions[r, c] when given."""
    if positions.shape[0] == 0:
        M[r, c] = v
        M[c, r] = v
    else:
        values[positions[r, c]] = v
        values[positions[c, r]] = v


@kernel
def composite_inertia_matrix(tree, ws, inertia, M, values, positions):
    """M = Jᵀ blkdiag(inertia) J by the composite-rigid-body recursion (needs joint_pass).

    inertia: (n, 6, 6) per-body blocks in link frames — the bodies' spatial
    inertias for CRBA, or the augmented blocks of the RedMax system (Eq. 2.14).
    Entries go to the dense M, or — when ``positions`` (nv, nv) is non-empty —
    to ``values[positions[r, c]]`` of a sparse matrix (the RedMax direct solver).
    Only ancestor/descendant dof pairs are written.
    """
    n = tree.parent.shape[0]
    IC = ws.IA
    for i in range(n):
        copy_inertia(inertia, i, IC)
    for i in range(n - 1, -1, -1):
        p = tree.parent[i]
        if p >= 0:
            add_transformed_inertia(ws.Xup_E[i], ws.Xup_r[i], IC[i], IC[p])
    F = ws.tmp6
    G = ws.tmp6b
    for i in range(n):
        vs = tree.v_start[i]
        for d in range(tree.joint_nv[i]):
            inertia_times(IC[i], ws.S[vs + d], F)
            for e in range(d, tree.joint_nv[i]):  # the joint's own block, mirrored: exactly symmetric
                s = 0.0
                for k in range(6):
                    s += ws.S[vs + e, k] * F[k]
                store_symmetric(M, values, positions, vs + d, vs + e, s)
            j = i
            while tree.parent[j] >= 0:
                transform_force_transpose(ws.Xup_E[j], ws.Xup_r[j], F, G)
                for k in range(6):
                    F[k] = G[k]
                j = tree.parent[j]
                ws_j = tree.v_start[j]
                for e in range(tree.joint_nv[j]):
                    s = 0.0
                    for k in range(6):
                        s += ws.S[ws_j + e, k] * F[k]
                    store_symmetric(M, values, positions, vs + d, ws_j + e, s)


def crba(model, q, *, inertia=None, ws=None) -> np.ndarray:
    """Joint-space inertia matrix M(q): (nv, nv) symmetric positive definite (kg, kg·m, kg·m²).

    inertia: optional (n, 6, 6) per-body blocks in link frames replacing the bodies' spatial
    inertias (e.g. RedMax's M̃ blocks with damping and stiffness, Eq. 2.14).
    ws: the workspace to compute in (default ``model.data``).
    """
    M = np.zeros((model.nv, model.nv))
    if inertia is None and ws is None:  # one launch on the model's flat buffers
        flat = model._per_thread.flat or flat_model(model)
        if not plain_vector(q):
            q = as_q(model, q)
        code = crba_flat(flat.ints, flat.floats, flat.work, q, M)
        if code:
            if code == OVERFLOW:
                raise overflow_error("crba", "M", (("q", q),))
            as_q(model, q)  # raises the error that names the joint
            raise ModelError("crba: q failed the kernel's checks")  # (the two checks disagree: a bug)
        return M
    q = as_q(model, q)
    ws = model.data if ws is None else ws
    if inertia is None:
        crba_kernel(model.tree, q, ws, M)
    else:
        _kinematics_kernel(model.tree, q, ws)
        composite_inertia_matrix(model.tree, ws, np.ascontiguousarray(inertia, dtype=float), M,
                                 np.zeros(0), np.zeros((0, 0), dtype=np.int64))
    return M
