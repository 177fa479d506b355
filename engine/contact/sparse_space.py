"""Contact between many articulations: projected Gauss–Seidel on the velocities, tree by tree (compiled).

The dense contact space (``space``) forms A = J M⁻¹ Jᵀ, (3k)² numbers: right for one articulation with
many contacts (the centipede), impossible for a pile of 1000 boxes (k ≈ 8000 contacts, 4.6 GB). But
M is block diagonal over the model's trees (the subtrees of the bodies jointed to the world), so a
contact's row J_c and its response W_c = M⁻¹ J_cᵀ live on the dofs of the one or two trees its bodies
belong to. Kept per contact on those dofs only, Gauss–Seidel runs on the velocities themselves:

    u_c = J_c v,   Δλ_c from the same projections as ``pgs.pgs_kernel`` (normal ≥ target, friction disk,
    isotropic step from the 3×3 diagonal block A_cc = J_c W_c),   v ← v + W_c Δλ_c,

which is Gauss–Seidel on A in the same order, without A (Erleben, "Velocity-based shock propagation",
2007, §2; Bullet's sequential impulses, in generalized coordinates). A sweep costs Σ_c (dofs of its
trees), a free body's contact 12 numbers.

W_c comes from the impulse propagation of ``algorithms.impulse_response`` (Drumwright's Alg. 2 sweeps)
restricted to the contact's tree: the inward pass from the bodies up to the root, the outward pass over
the tree's bodies — Θ(tree size) per direction. The step's own metric (RedMax's M̃) enters through the
articulated inertias, as in every contact method (``algorithms.minv.prepare_minv``).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._jit import kernel
from .pgs import disk_step, tangent_gain
from ..algorithms.minv import pass_impulse_to_parent, prepare_minv


class Trees(NamedTuple):
    """The model's trees: tree_of (n,) tree of each body; body_start (R+1,), bodies (n,) each tree's bodies
    in topological order; dof_start (R+1,), dofs (nv,) each tree's dofs; dof_slot (nv,) a dof's place in
    its tree's list; first_dof (R,) the first when they are consecutive, else −1."""

    tree_of: np.ndarray
    body_start: np.ndarray
    bodies: np.ndarray
    dof_start: np.ndarray
    dofs: np.ndarray
    dof_slot: np.ndarray
    first_dof: np.ndarray  # (R,) a tree's first dof when its dofs are consecutive (the common case), else −1


def model_trees(model, closures=()) -> Trees:
    """The model's trees (subtrees of the bodies jointed to the world), those joined by a loop closure
    between two of their bodies merged into one group (``closures``: (body_a, body_b) pairs, −1 the world)."""
    parent = np.asarray(model.body_parent)
    n = len(parent)
    root = np.zeros(n, np.int64)
    for i in range(n):  # parent[i] < i: a body's root is known when it is reached
        root[i] = i if parent[i] < 0 else root[parent[i]]
    link = {int(r): int(r) for r in np.unique(root)}

    def find(r):
        while link[r] != r:
            link[r] = link[link[r]]
            r = link[r]
        return r

    for a, b in closures:
        if a >= 0 and b >= 0:
            ra, rb = find(int(root[a])), find(int(root[b]))
            if ra != rb:
                link[max(ra, rb)] = min(ra, rb)
    groups = sorted({find(int(r)) for r in root})
    number = {g: k for k, g in enumerate(groups)}
    tree_of = np.array([number[find(int(r))] for r in root], np.int64)
    R = len(groups)
    bodies = np.argsort(tree_of, kind="stable").astype(np.int64)  # (stable: each group's bodies in index order)
    body_start = np.searchsorted(tree_of[bodies], np.arange(R + 1)).astype(np.int64)
    v_start, joint_nv = np.asarray(model.tree.v_start), np.asarray(model.tree.joint_nv)
    dofs, dof_start = [], [0]
    for t in range(R):
        for i in bodies[body_start[t]:body_start[t + 1]]:
            dofs.extend(range(int(v_start[i]), int(v_start[i] + joint_nv[i])))
        dof_start.append(len(dofs))
    dofs = np.array(dofs, np.int64)
    dof_slot = np.zeros(model.nv, np.int64)
    for t in range(R):
        dof_slot[dofs[dof_start[t]:dof_start[t + 1]]] = np.arange(dof_start[t + 1] - dof_start[t])
    first = np.full(R, -1, np.int64)
    for t in range(R):
        d = dofs[dof_start[t]:dof_start[t + 1]]
        if len(d) and np.array_equal(d, np.arange(d[0], d[0] + len(d))):
            first[t] = d[0]
    return Trees(tree_of, body_start, bodies, np.array(dof_start, np.int64), dofs, dof_slot, first)


NNCG = np.array([True])


class Visits(NamedTuple):
    """What lets a Gauss–Seidel sweep pass over a contact none of whose trees moved since its last visit: tick (1,)
    counts the impulse applications; tree (R,) the tick of each tree's last change; contact (k,) the tick of each
    contact's last visit. Empty tree and contact: every contact is visited every sweep (``NO_VISITS``)."""

    tick: np.ndarray
    tree: np.ndarray
    contact: np.ndarray


NO_VISITS = Visits(np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))


def fresh_visits(n_trees: int, k: int) -> Visits:
    """Every tree changed after every contact's last visit: the first sweep visits them all."""
    return Visits(np.ones(1, np.int64), np.ones(n_trees, np.int64), np.zeros(k, np.int64))


class SparseRows(NamedTuple):
    """Per contact c, blocks block_start[c] … block_start[c+1]−1; block b on tree block_tree[b], its rows
    J (dofs, 3) and responses W (dofs, 3) at data[offset[b] : offset[b] + 3 · dofs of the tree]."""

    block_start: np.ndarray
    block_tree: np.ndarray
    offset: np.ndarray
    J: np.ndarray
    W: np.ndarray
    Acc: np.ndarray  # (k, 3, 3) diagonal blocks J_c W_c


@kernel
def _block_layout(trees, body, other, block_start, block_tree, offset):
    """Blocks of every contact (a tree with dofs per side; one when both bodies share a tree). Returns the
    data size."""
    nb = 0
    size = 0
    for c in range(body.shape[0]):
        block_start[c] = nb
        for side in range(2):
            i = body[c] if side == 0 else other[c]
            if i < 0:
                continue
            t = trees.tree_of[i]
            if side == 1 and other[c] >= 0 and body[c] >= 0 and trees.tree_of[body[c]] == t:
                continue
            nd = trees.dof_start[t + 1] - trees.dof_start[t]
            if nd == 0:
                continue
            block_tree[nb] = t
            offset[nb] = size
            size += 3 * nd
            nb += 1
    block_start[body.shape[0]] = nb
    return size


@kernel
def _tree_response(tree, trees, s_w, U_w, Dinv, t, Y, dv, g, out, col):
    """out[slot(d), col] = Δq̇_d over tree t's dofs for the bias impulses Y (n, 6) (left zero on tree t)."""
    b0, b1 = trees.body_start[t], trees.body_start[t + 1]
    for q in range(b1 - 1, b0 - 1, -1):  # inward (Alg. 2 line 5)
        i = trees.bodies[q]
        p = tree.parent[i]
        vs, nv = tree.v_start[i], tree.joint_nv[i]
        for d in range(nv):
            s = 0.0
            for e in range(6):
                s -= s_w[vs + d, e] * Y[i, e]
            g[d] = s
        if p >= 0:
            pass_impulse_to_parent(U_w, Dinv, i, p, vs, nv, g, Y)
    for q in range(b0, b1):  # outward (lines 7–10)
        i = trees.bodies[q]
        p = tree.parent[i]
        vs, nv = tree.v_start[i], tree.joint_nv[i]
        for e in range(6):
            dv[i, e] = dv[p, e] if p >= 0 else 0.0
        for d in range(nv):
            s = 0.0
            for e in range(6):
                s -= U_w[vs + d, e] * dv[i, e] + s_w[vs + d, e] * Y[i, e]
            g[6 + d] = s
        for d in range(nv):
            x = 0.0
            for e in range(nv):
                x += Dinv[i, d, e] * g[6 + e]
            out[trees.dof_slot[vs + d], col] = x
            for e in range(6):
                dv[i, e] += s_w[vs + d, e] * x
        for e in range(6):
            Y[i, e] = 0.0


@kernel
def fill_sparse_rows(tree, trees, s_w, U_w, Dinv, body, other, F, block_start, block_tree, offset, J, W, Acc):
    """J and W of every block (``SparseRows``), and A_cc; F (k, 3, 6) the contacts' point maps (``jacobian``)."""
    n = tree.parent.shape[0]
    Y = np.zeros((n, 6))
    dv = np.zeros((n, 6))
    g = np.zeros(12)
    for c in range(body.shape[0]):
        for r in range(3):
            for s in range(3):
                Acc[c, r, s] = 0.0
        for blk in range(block_start[c], block_start[c + 1]):
            t = block_tree[blk]
            nd = trees.dof_start[t + 1] - trees.dof_start[t]
            Jb = J[offset[blk]:offset[blk] + 3 * nd].reshape(nd, 3)
            Wb = W[offset[blk]:offset[blk] + 3 * nd].reshape(nd, 3)
            Jb[:, :] = 0.0
            for side in range(2):  # J: F · s_d on the ancestors' dofs of each side body in this tree
                i = body[c] if side == 0 else other[c]
                if i < 0 or trees.tree_of[i] != t:
                    continue
                sign = 1.0 if side == 0 else -1.0
                while i >= 0:
                    vs = tree.v_start[i]
                    for d in range(tree.joint_nv[i]):
                        for r in range(3):
                            x = 0.0
                            for e in range(6):
                                x += F[c, r, e] * s_w[vs + d, e]
                            Jb[trees.dof_slot[vs + d], r] += sign * x
                    i = tree.parent[i]
            if trees.body_start[t + 1] - trees.body_start[t] == 1:
                # a tree of one body (a free box): its response is D⁻¹ Sᵀ f, and Sᵀ f is the row J itself
                i = trees.bodies[trees.body_start[t]]
                for d in range(nd):
                    for r in range(3):
                        x = 0.0
                        for e in range(nd):
                            x += Dinv[i, d, e] * Jb[e, r]
                        Wb[d, r] = x
            for r in range(3):  # W: the tree's response to the unit impulse pair along row r
                if trees.body_start[t + 1] - trees.body_start[t] == 1:
                    break
                for side in range(2):
                    i = body[c] if side == 0 else other[c]
                    if i < 0 or trees.tree_of[i] != t:
                        continue
                    sign = 1.0 if side == 0 else -1.0
                    for e in range(6):
                        Y[i, e] -= sign * F[c, r, e]  # bias impulse: minus the applied spatial impulse
                _tree_response(tree, trees, s_w, U_w, Dinv, t, Y, dv, g, Wb, r)
            for r in range(3):
                for s in range(3):
                    x = 0.0
                    for d in range(nd):
                        x += Jb[d, r] * Wb[d, s]
                    Acc[c, r, s] += x


@kernel
def sparse_velocity(trees, block_start, block_tree, offset, J, v, u):
    """u (3k,) = J v."""
    k = block_start.shape[0] - 1
    for c in range(k):
        for r in range(3):
            u[3 * c + r] = 0.0
        for blk in range(block_start[c], block_start[c + 1]):
            t = block_tree[blk]
            d0, nd = trees.dof_start[t], trees.dof_start[t + 1] - trees.dof_start[t]
            o = offset[blk]
            f = trees.first_dof[t]
            for d in range(nd):
                x = v[f + d] if f >= 0 else v[trees.dofs[d0 + d]]
                for r in range(3):
                    u[3 * c + r] += J[o + 3 * d + r] * x


@kernel(inline="llvm", refcounts=False)
def _apply_impulse(trees, block_start, block_tree, offset, W, c, d0, d1, d2, v):
    """v += W_c (d0, d1, d2)."""
    for blk in range(block_start[c], block_start[c + 1]):
        t = block_tree[blk]
        s, nd = trees.dof_start[t], trees.dof_start[t + 1] - trees.dof_start[t]
        o = offset[blk]
        f = trees.first_dof[t]
        if f >= 0 and nd == 6:  # a free body (most of a pile's trees): a loop LLVM unrolls, the same sums
            for d in range(6):
                v[f + d] += W[o + 3 * d] * d0 + W[o + 3 * d + 1] * d1 + W[o + 3 * d + 2] * d2
        elif f >= 0:
            for d in range(nd):
                v[f + d] += W[o + 3 * d] * d0 + W[o + 3 * d + 1] * d1 + W[o + 3 * d + 2] * d2
        else:
            for d in range(nd):
                v[trees.dofs[s + d]] += W[o + 3 * d] * d0 + W[o + 3 * d + 1] * d1 + W[o + 3 * d + 2] * d2


@kernel(inline="llvm", refcounts=False)
def _touch(block_start, block_tree, visits, c):
    """Contact c changed its trees' velocities: they get a new tick."""
    visits.tick[0] += 1
    for blk in range(block_start[c], block_start[c + 1]):
        visits.tree[block_tree[blk]] = visits.tick[0]


@kernel(refcounts=False)
def _pgs_sweep(trees, block_start, block_tree, offset, J, W, Acc, gain, target_n, mu, lam, v, floor, visits, change):
    """One Gauss–Seidel sweep over the contacts (module docstring), gain (k,) each contact's ``tangent_gain``;
    change (3k,) ← what it did to λ. Returns the largest contact-velocity change it made (m/s), the largest
    violation u_n < target_n it found (m/s; before each contact's own update, over the contacts it visited) and
    ‖change‖². With ``visits`` (``Visits``, not empty) a contact whose trees did not change since
    its last visit is passed over: its update would change nothing when it has no friction (the normal
    step is a projection, and repeating it on the same velocity gives the same λ)."""
    k = target_n.shape[0]
    dvel = 0.0
    worst = -np.inf
    rr = 0.0
    track = visits.contact.shape[0] > 0
    for c in range(k):
        r = 3 * c
        change[r] = change[r + 1] = change[r + 2] = 0.0
        if Acc[c, 0, 0] <= floor:
            continue
        if track:
            stale = True
            for blk in range(block_start[c], block_start[c + 1]):
                if visits.tree[block_tree[blk]] > visits.contact[c]:
                    stale = False
            if stale:
                continue
            visits.contact[c] = visits.tick[0]
        u0 = u1 = u2 = 0.0
        for blk in range(block_start[c], block_start[c + 1]):
            t = block_tree[blk]
            s, nd = trees.dof_start[t], trees.dof_start[t + 1] - trees.dof_start[t]
            o = offset[blk]
            f = trees.first_dof[t]
            if f >= 0 and nd == 6:  # a free body: unrolled, the same sums in the same order
                for d in range(6):
                    x = v[f + d]
                    u0 += J[o + 3 * d] * x
                    u1 += J[o + 3 * d + 1] * x
                    u2 += J[o + 3 * d + 2] * x
                continue
            for d in range(nd):
                x = v[f + d] if f >= 0 else v[trees.dofs[s + d]]
                u0 += J[o + 3 * d] * x
                u1 += J[o + 3 * d + 1] * x
                u2 += J[o + 3 * d + 2] * x
        worst = max(worst, target_n[c] - u0)
        ln = max(0.0, lam[r] - (u0 - target_n[c]) / Acc[c, 0, 0])
        dn = ln - lam[r]
        ut1 = u1 + Acc[c, 1, 0] * dn
        ut2 = u2 + Acc[c, 2, 0] * dn
        g = gain[c]
        t1, t2 = disk_step(lam[r + 1], lam[r + 2], ut1, ut2, g, mu[c] * ln)  # (pgs.py: the one friction step)
        d1, d2 = t1 - lam[r + 1], t2 - lam[r + 2]
        lam[r], lam[r + 1], lam[r + 2] = ln, t1, t2
        change[r], change[r + 1], change[r + 2] = dn, d1, d2
        rr += dn * dn
        rr += d1 * d1
        rr += d2 * d2
        if dn != 0.0 or d1 != 0.0 or d2 != 0.0:
            _apply_impulse(trees, block_start, block_tree, offset, W, c, dn, d1, d2, v)
            if track:
                _touch(block_start, block_tree, visits, c)
                visits.contact[c] = visits.tick[0]
        dvel = max(dvel, abs(dn) * Acc[c, 0, 0] + max(abs(d1), abs(d2)) * g)
    return dvel, worst, rr


@kernel
def sparse_pgs(trees, block_start, block_tree, offset, J, W, Acc, target_n, mu, lam, v, max_iter, tol, feasible,
               floor, change, direction, visits):
    """Gauss–Seidel on the velocities (module docstring) accelerated by nonsmooth nonlinear conjugate gradients
    (NNCG: Silcowitz, Niebe & Erleben 2010, Alg. 2): each sweep's change r = PGS(λ) − λ is a descent direction;
    with β = ‖r_k‖² / ‖r_k−1‖² the step β p is added (p ← r + β p), and p restarts when β > 1. In place: lam
    (3k,) from its warm start, v (nv,) from v* to v⁺ (v = v* + W λ throughout). Stops when a sweep changes
    no contact velocity by more than tol (m/s), or when it finds no contact short of its normal target by more
    than feasible (m/s; −inf: never). change, direction (3k,): scratch; visits: ``_pgs_sweep``'s.
    Returns the sweeps."""
    k = target_n.shape[0]
    for c in range(k):
        if Acc[c, 0, 0] <= floor:
            lam[3 * c] = lam[3 * c + 1] = lam[3 * c + 2] = 0.0
        elif lam[3 * c] != 0.0 or lam[3 * c + 1] != 0.0 or lam[3 * c + 2] != 0.0:
            _apply_impulse(trees, block_start, block_tree, offset, W, c, lam[3 * c], lam[3 * c + 1], lam[3 * c + 2], v)
    gain = np.empty(k)  # (the tangent blocks do not change within the solve)
    for c in range(k):
        gain[c] = tangent_gain(Acc[c, 1, 1], Acc[c, 1, 2], Acc[c, 2, 2])
    direction[:] = 0.0
    rr_old = 0.0
    sweeps = 0
    for it in range(max_iter):
        sweeps = it + 1
        dvel, worst, rr = _pgs_sweep(trees, block_start, block_tree, offset, J, W, Acc, gain, target_n, mu, lam, v,
                                     floor, visits, change)
        if dvel <= tol or worst <= feasible:
            break
        beta = rr / rr_old if rr_old > 0.0 and NNCG[0] else 0.0
        rr_old = rr
        if beta > 1.0:  # restart
            direction[:] = change
            continue
        for c in range(k):
            r0 = 3 * c
            b0, b1, b2 = beta * direction[r0], beta * direction[r0 + 1], beta * direction[r0 + 2]  # β p_old
            for j in range(3):
                direction[r0 + j] = change[r0 + j] + beta * direction[r0 + j]
            if beta > 0.0 and Acc[c, 0, 0] > floor and (b0 != 0.0 or b1 != 0.0 or b2 != 0.0):
                lam[r0] += b0
                lam[r0 + 1] += b1
                lam[r0 + 2] += b2
                _apply_impulse(trees, block_start, block_tree, offset, W, c, b0, b1, b2, v)
                if visits.contact.shape[0] > 0:
                    _touch(block_start, block_tree, visits, c)  # (c itself is off its own fixed point now)
    return sweeps


class SparseContactSpace:
    """The contact problem of ``contacts`` at q on the trees' dofs (module docstring); ``velocity(v)``
    gives J v, ``solve(...)`` the impulses and v⁺. inertia, joint_diag: the step's metric (``space``)."""

    def __init__(self, model, trees: Trees, q, contacts, F, inertia=None, joint_diag=None, ws=None):
        ws = model.data if ws is None else ws
        self.model, self.trees, self.ws = model, trees, ws
        self._s_w, self._U_w = np.empty((model.nv, 6)), np.empty((model.nv, 6))
        prepare_minv(model.tree, np.ascontiguousarray(q, dtype=float), ws, self._s_w, self._U_w,
                     None if inertia is None else np.ascontiguousarray(inertia, dtype=float),
                     None if joint_diag is None else np.ascontiguousarray(joint_diag, dtype=float))
        self._Dinv = ws.Dinv
        self.rows = self._rows(contacts, F)

    def on(self, contacts, F) -> "SparseContactSpace":
        """The same q and metric for other contacts (F their point maps): the O(n) articulated pass not made again.
        The workspace's D⁻¹ is shared: valid until the next pass on it."""
        other = object.__new__(SparseContactSpace)
        other.model, other.trees, other.ws = self.model, self.trees, self.ws
        other._s_w, other._U_w, other._Dinv = self._s_w, self._U_w, self._Dinv
        other.rows = other._rows(contacts, F)
        return other

    def _rows(self, contacts, F) -> SparseRows:
        k = len(contacts)
        body = np.ascontiguousarray(contacts.body, dtype=np.int64)
        other = np.ascontiguousarray(contacts.other_bodies(), dtype=np.int64)
        block_start = np.zeros(k + 1, np.int64)
        block_tree = np.zeros(2 * k, np.int64)
        offset = np.zeros(2 * k, np.int64)
        size = _block_layout(self.trees, body, other, block_start, block_tree, offset)
        J, W, Acc = np.zeros(size), np.zeros(size), np.zeros((k, 3, 3))
        fill_sparse_rows(self.model.tree, self.trees, self._s_w, self._U_w, self._Dinv, body, other, F, block_start,
                         block_tree, offset, J, W, Acc)
        return SparseRows(block_start, block_tree, offset, J, W, Acc)

    def velocity(self, v) -> np.ndarray:
        r = self.rows
        u = np.empty(3 * (r.block_start.shape[0] - 1))
        sparse_velocity(self.trees, r.block_start, r.block_tree, r.offset, r.J, np.ascontiguousarray(v, dtype=float), u)
        return u

    def solve(self, v, target_n, mu, lam0, *, max_iter: int = 200, tol: float = 1e-7, feasible: float = -np.inf,
              skip_settled: bool = False):
        """(λ (3k,), v⁺ (nv,), sweeps) from v* (nv,), normal targets (k,), μ (k,), warm start λ0 (3k,);
        tol: the contact-velocity change (m/s) below which a sweep ends the solve; feasible: a sweep that finds
        no contact short of its target by more than this (m/s) ends it too (a projection needs its contacts
        out, not the impulses converged; −inf: never). skip_settled: a sweep passes
        over the contacts whose trees did not move since their last visit — the same sweeps at the cost of the
        contacts that move (a projection pushing a few bodies out of a pile), for a problem without friction
        only (a friction step repeated on the same velocity is not the same step)."""
        r = self.rows
        if skip_settled and np.any(np.asarray(mu) != 0.0):
            raise ValueError("SparseContactSpace.solve: skip_settled is for contact problems without friction")
        k = r.block_start.shape[0] - 1
        visits = fresh_visits(self.trees.dof_start.shape[0] - 1, k) if skip_settled and k else NO_VISITS
        lam = np.array(lam0, dtype=float)
        v_new = np.array(v, dtype=float)
        diag = r.Acc[:, 0, 0]
        floor = 1e-12 * max(1.0, float(diag.max(initial=0.0)))
        sweeps = sparse_pgs(self.trees, r.block_start, r.block_tree, r.offset, r.J, r.W, r.Acc,
                            np.ascontiguousarray(target_n, dtype=float), np.ascontiguousarray(mu, dtype=float), lam,
                            v_new, int(max_iter), float(tol), float(feasible), floor, np.zeros(lam.shape[0]), np.zeros(lam.shape[0]),
                            visits)
        return lam, v_new, sweeps
