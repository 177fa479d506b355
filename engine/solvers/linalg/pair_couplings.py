"""The couplings of M̃ between two bodies joined by a maximal force (a spring, cable or damper between
bodies): M̃ += Σ J_aᵀ C_ab J_b + (J_aᵀ C_ab J_b)ᵀ (thesis 000, Eq. 2.14), into the dense M̃ or the values of
the direct solvers' sparse pattern. J_a's columns are formed one body at a time (``ancestor_columns``):
only the dofs on the body's path to the root move it."""
from __future__ import annotations

import numpy as np

from ..._jit import kernel
from ...spatial import compose_transforms, transform_motion


@kernel
def ancestor_columns(tree, ws, body, idx, vec):
    """Columns of J for one body: vec[k] = X_{body←j} S_d (link coords of body) for every
    dof d = idx[k] of the body and its ancestors j; returns the count."""
    E = ws.scratch33[2]
    r = ws.scratch33[3, 0]
    E2 = ws.scratch33[1]
    r2 = ws.scratch33[3, 1]
    for a in range(3):
        r[a] = 0.0
        for b in range(3):
            E[a, b] = 1.0 if a == b else 0.0
    count = 0
    j = body
    while j >= 0:
        vs = tree.v_start[j]
        for d in range(tree.joint_nv[j]):
            transform_motion(E, r, ws.S[vs + d], vec[count])
            idx[count] = vs + d
            count += 1
        compose_transforms(E, r, ws.Xup_E[j], ws.Xup_r[j], E2, r2)
        for a in range(3):
            r[a] = r2[a]
            for b in range(3):
                E[a, b] = E2[a, b]
        j = tree.parent[j]
    return count


@kernel
def add_pair_couplings(tree, ws, pair_a, pair_b, coupling, M, values, positions, idx_a, vec_a, idx_b, vec_b):
    """M += Σ J_aᵀ C_ab J_b + (J_aᵀ C_ab J_b)ᵀ over pairs joining two bodies
    (dense M, or the sparse ``values`` through ``positions`` when that is non-empty)."""
    CV = np.empty(6)
    for s in range(pair_a.shape[0]):
        a = pair_a[s]
        b = pair_b[s]
        if a < 0 or b < 0:
            continue
        C = coupling[s]
        zero = True
        for r in range(6):
            for c in range(6):
                if C[r, c] != 0.0:
                    zero = False
        if zero:
            continue
        na = ancestor_columns(tree, ws, a, idx_a, vec_a)
        nb = ancestor_columns(tree, ws, b, idx_b, vec_b)
        for j in range(nb):
            for r in range(6):
                t = 0.0
                for c in range(6):
                    t += C[r, c] * vec_b[j, c]
                CV[r] = t
            for i in range(na):
                v = 0.0
                for r in range(6):
                    v += vec_a[i, r] * CV[r]
                if positions.shape[0] == 0:
                    M[idx_a[i], idx_b[j]] += v
                    M[idx_b[j], idx_a[i]] += v
                else:
                    values[positions[idx_a[i], idx_b[j]]] += v
                    values[positions[idx_b[j], idx_a[i]]] += v
