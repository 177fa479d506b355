"""The broad phase, compiled: shapes' world poses and boxes, sweep and prune, and the static meshes' BVH.

* **Boxes.** Each shape's axis-aligned box comes from its support points along ±x, ±y, ±z (exact for
  every shape), grown by its rounding and by how far it may travel in the step (its *sweep*: the
  displacement of its centre plus its reach times the angle it turns, between the step's start and
  its unconstrained end), plus the detection margin. A pair whose boxes do not overlap cannot touch
  during the step.
* **Sweep and prune** (Baraff 1992, §7.2; Bullet's ``btAxisSweep3``) along x: shapes sorted by the lower
  end of their boxes; each is compared only with those that start before it ends, then on y and z.
  Pairs are filtered here: no static–static pair, no two shapes of one body, collision collections
  that do not meet, bodies joined by a joint or told not to collide, bodies outside the ground's or a
  collider's list.
* **BVH** of each static mesh's triangles (built once: top-down, split at the median of the longest
  axis of the triangles' centres, leaves of ``LEAF_SIZE``); a shape's box is pushed down the tree to
  find the triangles it may touch.
"""
from __future__ import annotations

import numpy as np

from .._jit import kernel
from .convex import support

LEAF_SIZE = 4
BVH_STACK = 128


@kernel
def shape_poses(S, R_link, p_link, Rw, pw):
    """World rotation Rw (m, 3, 3) and centre pw (m, 3) of every shape at link poses R_link (n, 3, 3),
    p_link (n, 3)."""
    for i in range(S.kind.shape[0]):
        b = S.body[i]
        if b < 0:
            for r in range(3):
                pw[i, r] = S.local_p[i, r]
                for c in range(3):
                    Rw[i, r, c] = S.local_R[i, r, c]
            continue
        for r in range(3):
            s = p_link[b, r]
            for k in range(3):
                s += R_link[b, r, k] * S.local_p[i, k]
            pw[i, r] = s
            for c in range(3):
                s = 0.0
                for k in range(3):
                    s += R_link[b, r, k] * S.local_R[i, k, c]
                Rw[i, r, c] = s


@kernel
def shape_sweeps(S, Rw0, pw0, Rw1, pw1, sweep):
    """sweep (m,) ← how far any point of each shape moves between poses 0 and 1 (bound, m)."""
    for i in range(S.kind.shape[0]):
        d = np.sqrt((pw1[i, 0] - pw0[i, 0]) ** 2 + (pw1[i, 1] - pw0[i, 1]) ** 2 + (pw1[i, 2] - pw0[i, 2]) ** 2)
        tr = 0.0
        for r in range(3):
            for c in range(3):
                tr += Rw1[i, r, c] * Rw0[i, r, c]
        angle = np.arccos(min(max(0.5 * (tr - 1.0), -1.0), 1.0))
        sweep[i] = d + min(angle, 2.0) * S.reach[i]  # (a chord is at most 2 reach)


@kernel
def _moved_in_frame(Ra0, pa0, Ra1, pa1, Rb0, pb0, Rb1, pb1, reach_a):
    """How far any point of shape a (within ``reach_a`` of its centre) moves in shape b's frame between poses
    0 and 1 (a bound, m): the displacement of a's centre there plus reach_a times the angle a turns there."""
    d2 = 0.0
    tr = 0.0
    for r in range(3):
        x0 = 0.0
        x1 = 0.0
        for k in range(3):
            x0 += Rb0[k, r] * (pa0[k] - pb0[k])
            x1 += Rb1[k, r] * (pa1[k] - pb1[k])
        d2 += (x1 - x0) ** 2
    for r in range(3):  # trace((Rb1ᵀ Ra1)ᵀ (Rb0ᵀ Ra0)) = Σ_rc (Rb1ᵀRa1)_rc (Rb0ᵀRa0)_rc
        for c in range(3):
            m0 = 0.0
            m1 = 0.0
            for k in range(3):
                m0 += Rb0[k, r] * Ra0[k, c]
                m1 += Rb1[k, r] * Ra1[k, c]
            tr += m0 * m1
    angle = np.arccos(min(max(0.5 * (tr - 1.0), -1.0), 1.0))
    return np.sqrt(d2) + min(angle, 2.0) * reach_a


@kernel
def pair_sweep(S, i, j, sweep, Rw0, pw0, Rw1, pw1):
    """How much the gap between shapes i and j can close in the step (a bound, m): the smaller of their own
    sweeps added (each moves that far at most) and how far either moves relative to the other. The gap is
    the same in any frame, so shapes that swing together (two links of one chain, a stack carried along)
    keep a margin of their relative motion, not of their speed: a chain whipping at 20 m/s is not a
    chain of contacts 0.3 m apart."""
    bound = sweep[i] + sweep[j]
    rel = min(_moved_in_frame(Rw0[i], pw0[i], Rw1[i], pw1[i], Rw0[j], pw0[j], Rw1[j], pw1[j], S.reach[i]),
              _moved_in_frame(Rw0[j], pw0[j], Rw1[j], pw1[j], Rw0[i], pw0[i], Rw1[i], pw1[i], S.reach[j]))
    return min(bound, rel)


@kernel
def shape_boxes(S, Rw, pw, grow, lo, hi):
    """lo, hi (m, 3) ← each shape's axis-aligned box, grown by rounding + grow (m,)."""
    d = np.zeros(3)
    x = np.zeros(3)
    tmp = np.zeros(3)
    for i in range(S.kind.shape[0]):
        verts = S.hverts[S.vstart[i]:S.vstart[i] + S.vcount[i]]
        g = S.rho[i] + grow[i]
        for k in range(3):
            d[:] = 0.0
            d[k] = 1.0
            support(S.kind[i], S.dims[i], verts, Rw[i], pw[i], d, x, tmp)
            hi[i, k] = x[k] + g
            d[k] = -1.0
            support(S.kind[i], S.dims[i], verts, Rw[i], pw[i], d, x, tmp)
            lo[i, k] = x[k] - g


@kernel(inline="llvm")
def excluded(keys, a, b, n_bodies):
    """Is the body pair (a, b) in the sorted exclusion keys (min · n + max)?"""
    if keys.shape[0] == 0:
        return False
    key = min(a, b) * n_bodies + max(a, b)
    k = np.searchsorted(keys, key)
    return k < keys.shape[0] and keys[k] == key


@kernel(inline="llvm")
def may_collide(S, T, body_pairs, exclude, i, j):
    """The pair filter of the module docstring (shapes i, j)."""
    bi, bj = S.body[i], S.body[j]
    if (bi < 0 and bj < 0) or bi == bj or (S.groups[i] & S.groups[j]) == 0:
        return False
    if bi < 0:
        return T.allowed[S.collider[i], bj]
    if bj < 0:
        return T.allowed[S.collider[j], bi]
    return body_pairs[bi] and body_pairs[bj] and not excluded(exclude, bi, bj, body_pairs.shape[0])


@kernel
def sweep_and_prune(S, T, body_pairs, exclude, lo, hi, pairs):
    """Candidate pairs (A, B) of overlapping boxes into pairs (cap, 2) — A a body's shape, B a body's or a
    static one, sorted by (A, B); returns how many (may exceed cap: grow and call again)."""
    m = S.kind.shape[0]
    order = np.argsort(lo[:, 0])
    n = 0
    cap = pairs.shape[0]
    for a in range(m):
        i = order[a]
        for b in range(a + 1, m):
            j = order[b]
            if lo[j, 0] > hi[i, 0]:
                break
            if lo[j, 1] > hi[i, 1] or lo[i, 1] > hi[j, 1] or lo[j, 2] > hi[i, 2] or lo[i, 2] > hi[j, 2]:
                continue
            if not may_collide(S, T, body_pairs, exclude, i, j):
                continue
            if n < cap:
                first, second = (j, i) if (S.body[i] < 0 or (S.body[j] >= 0 and j < i)) else (i, j)
                pairs[n, 0], pairs[n, 1] = first, second
            n += 1
    if n <= cap and n > 1:
        keys = pairs[:n, 0] * m + pairs[:n, 1]
        idx = np.argsort(keys)
        tmp = pairs[:n].copy()
        for k in range(n):
            pairs[k, 0], pairs[k, 1] = tmp[idx[k], 0], tmp[idx[k], 1]
    return n


@kernel
def build_bvh(tlo, thi, node_lo, node_hi, child, first, count, tris):
    """A BVH over T triangles with boxes tlo, thi (T, 3): nodes (≤ 2T) into node_lo, node_hi, child (·, 2),
    first, count; tris (T,) the triangle order of the leaves. Returns the node count."""
    T = tlo.shape[0]
    for t in range(T):
        tris[t] = t
    if T == 0:
        return 0
    centre = 0.5 * (tlo + thi)
    stack = np.zeros((2 * T + 2, 3), np.int64)  # (node, start, end)
    stack[0, 0], stack[0, 1], stack[0, 2] = 0, 0, T
    top = 1
    nodes = 1
    while top > 0:
        top -= 1
        node, s, e = stack[top, 0], stack[top, 1], stack[top, 2]
        for k in range(3):
            node_lo[node, k] = np.inf
            node_hi[node, k] = -np.inf
        clo = np.full(3, np.inf)
        chi = np.full(3, -np.inf)
        for q in range(s, e):
            t = tris[q]
            for k in range(3):
                node_lo[node, k] = min(node_lo[node, k], tlo[t, k])
                node_hi[node, k] = max(node_hi[node, k], thi[t, k])
                clo[k] = min(clo[k], centre[t, k])
                chi[k] = max(chi[k], centre[t, k])
        if e - s <= LEAF_SIZE:
            child[node, 0], child[node, 1] = -1, -1
            first[node], count[node] = s, e - s
            continue
        axis = 0
        for k in range(1, 3):
            if chi[k] - clo[k] > chi[axis] - clo[axis]:
                axis = k
        seg = tris[s:e].copy()
        key = np.empty(e - s)
        for q in range(e - s):
            key[q] = centre[seg[q], axis]
        order = np.argsort(key)
        for q in range(e - s):
            tris[s + q] = seg[order[q]]
        mid = (s + e) // 2
        left, right = nodes, nodes + 1
        nodes += 2
        child[node, 0], child[node, 1] = left, right
        first[node], count[node] = 0, 0
        stack[top, 0], stack[top, 1], stack[top, 2] = left, s, mid
        stack[top + 1, 0], stack[top + 1, 1], stack[top + 1, 2] = right, mid, e
        top += 2
    return nodes


@kernel(inline="llvm", refcounts=False)
def bvh_overlaps(T, node, lo, hi):
    return not (T.bvh_lo[node, 0] > hi[0] or T.bvh_hi[node, 0] < lo[0] or T.bvh_lo[node, 1] > hi[1]
                or T.bvh_hi[node, 1] < lo[1] or T.bvh_lo[node, 2] > hi[2] or T.bvh_hi[node, 2] < lo[2])


@kernel(refcounts=False)
def bvh_query(T, lo, hi, stack, found):
    """Triangles whose boxes may overlap the box lo, hi (3,) into found (cap,); returns how many (≤ cap)."""
    if T.bvh_lo.shape[0] == 0:
        return 0
    n = 0
    top = 1
    stack[0] = 0
    while top > 0:
        top -= 1
        node = stack[top]
        if not bvh_overlaps(T, node, lo, hi):
            continue
        if T.bvh_child[node, 0] < 0:
            for q in range(T.bvh_first[node], T.bvh_first[node] + T.bvh_count[node]):
                if n < found.shape[0]:
                    found[n] = T.bvh_tris[q]
                    n += 1
        elif top + 2 <= stack.shape[0]:
            stack[top] = T.bvh_child[node, 0]
            stack[top + 1] = T.bvh_child[node, 1]
            top += 2
    return n
