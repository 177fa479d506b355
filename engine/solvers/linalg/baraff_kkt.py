"""The KKT system of Baraff's solver (seed 002): rows, forces and three ways to solve it.

``BaraffSolver`` evaluates, at given poses and twists, the bodies' forces and every constraint's
rows (``engine.maximal.rows`` in 3D, ``engine.maximal.planar_rows`` in 2D), and solves

    H [φ̇; −λ] = [f; rhs],   H = [[M, Jᵀ], [J, 0]]

sparse (``tree_ldl``, O(n), auxiliary rows by anticipation), dense or naive; see ``engine.solvers.steppers.baraff``.
"""
from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
import scipy.linalg

from ..._jit import kernel
from ...errors import ModelError
from ...maximal.planar_rows import planar_body_forces, planar_constraint_rows
from ...maximal.rows import joint_constraint_rows
from ...maximal.state import poses_from_q
from ...spatial import cross_force
from .tree_ldl import tree_ldl_factor, tree_ldl_solve

METHODS = ("sparse", "dense", "naive")


class TreeNodes(NamedTuple):
    """H's nodes (bodies and primary constraints) children-before-parents: kind (0 body, 1 constraint),
    index (body or constraint), parent node (−1: a root), up_side (which side of the constraint's rows
    touches the parent), dim (unknowns), offset (first unknown in node order); all (N,) int64."""

    kind: np.ndarray
    index: np.ndarray
    parent: np.ndarray
    up_side: np.ndarray
    dim: np.ndarray
    offset: np.ndarray


@kernel
def body_forces(I, R, phi, g, f):
    """f_i = I_i [0; R_iᵀ g] − φ_i ×* (I_i φ_i): gravity and gyroscopic forces in link coordinates."""
    n = I.shape[0]
    a = np.zeros(6)
    h = np.empty(6)
    gyro = np.empty(6)
    for i in range(n):
        for k in range(3):
            a[3 + k] = R[i, 0, k] * g[0] + R[i, 1, k] * g[1] + R[i, 2, k] * g[2]
        for r in range(6):
            s = 0.0
            t = 0.0
            for k in range(6):
                s += I[i, r, k] * a[k]
                t += I[i, r, k] * phi[i, k]
            f[i, r] = s
            h[r] = t
        cross_force(phi[i], h, gyro)
        for r in range(6):
            f[i, r] -= gyro[r]


@kernel
def fill_tree_blocks(nodes, row_start, inertia, JA, JB, rhs, f, diag, up, b):
    """H's node blocks (body: its inertia; constraint: zero) and the coupling to each node's parent,
    and the right-hand side b = [f; rhs] in node order (``nodes``: ``TreeNodes``)."""
    kind, index, parent, side, dim, offset = nodes.kind, nodes.index, nodes.parent, nodes.up_side, nodes.dim, nodes.offset
    N = kind.shape[0]
    for i in range(N):
        ix = index[i]
        d = dim[i]
        o = offset[i]
        bd = inertia.shape[1]
        for r in range(6):
            for c in range(6):
                diag[i, r, c] = inertia[ix, r, c] if kind[i] == 0 and r < bd and c < bd else 0.0
                up[i, r, c] = 0.0
        if kind[i] == 0:
            for r in range(bd):
                b[o + r] = f[ix, r]
        else:
            for r in range(d):
                b[o + r] = rhs[row_start[ix] + r]
        p = parent[i]
        if p < 0:
            continue
        if kind[i] == 0:  # body → its parent constraint: H_body,con = (rows on this body)ᵀ
            k = index[p]
            r0 = row_start[k]
            for r in range(dim[p]):
                for c in range(d):
                    up[i, c, r] = JB[r0 + r, c] if side[i] == 1 else JA[r0 + r, c]
        else:  # constraint → its parent body: the rows on that body
            r0 = row_start[ix]
            for r in range(d):
                for c in range(dim[p]):
                    up[i, r, c] = JB[r0 + r, c] if side[i] == 1 else JA[r0 + r, c]


# ------------------------------------------------------------------ solver
class SymmetricSolve:
    """Solves with a symmetric positive semi-definite A (J M⁻¹ Jᵀ-like): Cholesky when A is definite,
    else the pseudo-inverse from its eigendecomposition, so redundant constraint rows (a planar
    loop closed by a hinge in 3D) give the minimum-norm multipliers instead of a failure."""

    def __init__(self, A, rtol: float = 1e-10):
        try:
            self._chol = scipy.linalg.cho_factor(A)
            self._pinv = None
        except np.linalg.LinAlgError:
            w, V = np.linalg.eigh(0.5 * (A + A.T))
            keep = w > rtol * max(float(w.max(initial=0.0)), 1e-300)
            self._pinv = (V[:, keep] / w[keep]) @ V[:, keep].T
            self._chol = None

    def solve(self, b):
        return scipy.linalg.cho_solve(self._chol, b) if self._chol is not None else self._pinv @ b


class BaraffSolver:
    """Accelerations and multipliers of a ``baraff.MaximalSystem`` at given poses and twists, by ``method``."""

    def __init__(self, system, method: str = "sparse", alpha: float = 0.0, beta: float = 0.0):
        if method not in METHODS:
            raise ValueError(f"unknown Baraff method {method!r}; expected one of {', '.join(METHODS)}")
        s = self.system = system
        self.method, self.alpha, self.beta = method, float(alpha), float(beta)
        n, N = s.n_bodies, len(s.node_kind)
        lp, la = s.primary.n_rows, s.aux.n_rows
        self.R, self.p = np.zeros((n, 3, 3)), np.zeros((n, 3))
        d = s.body_dim
        self.f = np.zeros((n, d))
        self.JA, self.JB = np.zeros((lp, d)), np.zeros((lp, d))
        self.rhs, self.err, self.verr = np.zeros(lp), np.zeros(lp), np.zeros(lp)
        self.JAa, self.JBa = np.zeros((la, d)), np.zeros((la, d))
        self.rhs_a, self.err_a, self.verr_a = np.zeros(la), np.zeros(la), np.zeros(la)
        self.diag, self.up = np.zeros((N, 6, 6)), np.zeros((N, 6, 6))
        self.D, self.Dinv, self.L = np.zeros((N, 6, 6)), np.zeros((N, 6, 6)), np.zeros((N, 6, 6))
        self.b, self.x, self.tmp6 = np.zeros(s.n_unknowns), np.zeros(s.n_unknowns), np.zeros(6)
        self.Minv = np.linalg.inv(s.inertia)  # constant in link coordinates
        self.g = np.ascontiguousarray(s.gravity, dtype=float)
        self.mass = np.ascontiguousarray(s.inertia[:, 0, 0]) if s.planar else None

    # -------------------------------------------------------------- rows
    def evaluate(self, qmax, phi, *, forces=True):
        """Poses, forces and the rows of every constraint at (qmax, φ)."""
        s = self.system
        if s.planar:
            v = np.ascontiguousarray(phi.reshape(-1))
            if forces:
                planar_body_forces(self.mass, self.g, self.f)
            planar_constraint_rows(s.primary, qmax, v, self.alpha, self.beta, self.JA, self.JB, self.rhs, self.err,
                                   self.verr)
            planar_constraint_rows(s.aux, qmax, v, self.alpha, self.beta, self.JAa, self.JBa, self.rhs_a, self.err_a,
                                   self.verr_a)
            self._factored = False
            return
        poses_from_q(qmax, self.R, self.p)
        if forces:
            body_forces(s.inertia, self.R, phi, self.g, self.f)
        joint_constraint_rows(s.primary, self.R, self.p, phi, self.alpha, self.beta, self.JA, self.JB, self.rhs,
                              self.err, self.verr)
        joint_constraint_rows(s.aux, self.R, self.p, phi, self.alpha, self.beta, self.JAa, self.JBa, self.rhs_a,
                              self.err_a, self.verr_a)
        self._factored = False

    def _dense_rows(self):
        """All constraint rows (primary, then auxiliary) as one dense (l, 6n) matrix."""
        s, n, d = self.system, self.system.n_bodies, self.system.body_dim
        J = np.zeros((s.primary.n_rows + s.aux.n_rows, d * n))
        r = 0
        for cons, JA, JB in ((s.primary, self.JA, self.JB), (s.aux, self.JAa, self.JBa)):
            for k, (a, b) in enumerate(cons.bodies):
                r0, m = cons.row_start[k], cons.rows[k]
                if a >= 0:
                    J[r + r0:r + r0 + m, d * a:d * a + d] = JA[r0:r0 + m]
                if b >= 0:
                    J[r + r0:r + r0 + m, d * b:d * b + d] = JB[r0:r0 + m]
            r += cons.n_rows
        return J

    # ------------------------------------------------------------ solve
    def solve(self, f=None, rhs=None, rhs_a=None):
        """(φ̇ (n, 6), λ (primary rows), μ (auxiliary rows)) with M φ̇ = f + Jᵀλ + Jᵃᵀμ, J φ̇ = rhs, Jᵃ φ̇ = rhs_a.

        Defaults: the forces and Baumgarte right-hand sides of the last ``evaluate``.
        """
        f = self.f if f is None else f
        rhs = self.rhs if rhs is None else rhs
        rhs_a = self.rhs_a if rhs_a is None else rhs_a
        if self.method == "sparse":
            return self._solve_sparse(f, rhs, rhs_a)
        return self._solve_dense(f, rhs, rhs_a, naive=self.method == "naive")

    def _factor(self):
        s = self.system
        fill_tree_blocks(s.nodes, s.primary.row_start, s.inertia, self.JA, self.JB, self.rhs, self.f, self.diag, self.up,
                         self.b)
        bad = tree_ldl_factor(s.node_parent, s.node_dim, self.diag, self.up, self.D, self.Dinv, self.L)
        if bad >= 0:
            what = (f"body '{s.body_names[s.node_index[bad]]}'" if s.node_kind[bad] == 0 else
                    f"primary constraint '{s.primary_names[s.node_index[bad]]}'")
            raise ModelError(f"Baraff factorization: singular pivot at {what} (redundant constraint rows?)")
        la = s.aux.n_rows
        self._Y = np.zeros((la, s.n_bodies, s.body_dim))  # M̂⁻¹ k_r: accelerations caused by aux row r's force
        self._Z = np.zeros((la, s.primary.n_rows))  # and the primary multipliers it causes
        for r in range(la):
            self.b[:] = 0.0
            self._add_aux_force(r, self.b)
            tree_ldl_solve(s.node_parent, s.node_dim, s.node_offset, self.Dinv, self.L, self.b, self.x, self.tmp6)
            self._Y[r], self._Z[r] = self._unpack(self.x)
        if la:
            self._A_aux = SymmetricSolve(self._apply_aux(self._Y))  # Jᵃ M̂⁻¹ K (Eq. 8), k × k
        self._factored = True

    def _add_aux_force(self, r, b):
        s = self.system
        k = int(np.searchsorted(s.aux.row_start, r, side="right") - 1)
        a, bb = s.aux.bodies[k]
        if a >= 0:
            b[s.body_slots[a]] += self.JAa[r]
        if bb >= 0:
            b[s.body_slots[bb]] += self.JBa[r]

    def _apply_aux(self, acc):
        """Jᵃ applied to accelerations acc (..., n, 6) → (..., l_aux)."""
        s = self.system
        a_idx = np.repeat(s.aux.bodies[:, 0], s.aux.rows)
        b_idx = np.repeat(s.aux.bodies[:, 1], s.aux.rows)
        out = np.zeros(acc.shape[:-2] + (len(a_idx),))
        ok = a_idx >= 0
        out[..., ok] += np.einsum("rk,...rk->...r", self.JAa[ok], acc[..., a_idx[ok], :])
        ok = b_idx >= 0
        out[..., ok] += np.einsum("rk,...rk->...r", self.JBa[ok], acc[..., b_idx[ok], :])
        return out

    def _unpack(self, x):
        """(φ̇ (n, 6), λ (primary rows)) from a solution in node order."""
        s = self.system
        return x[s.body_slots], -x[s.row_slots]

    def _solve_sparse(self, f, rhs, rhs_a):
        s = self.system
        if not self._factored:
            self._factor()
        self.b[s.body_slots] = f
        self.b[s.row_slots] = rhs
        tree_ldl_solve(s.node_parent, s.node_dim, s.node_offset, self.Dinv, self.L, self.b, self.x, self.tmp6)
        acc, lam = self._unpack(self.x)
        if not s.aux.n_rows:
            return acc, lam, np.zeros(0)
        mu = self._A_aux.solve(rhs_a - self._apply_aux(acc))  # Eq. 8
        return acc + np.einsum("r,rnk->nk", mu, self._Y), lam + mu @ self._Z, mu  # Eq. 7

    def _solve_dense(self, f, rhs, rhs_a, naive):
        s, n, d = self.system, self.system.n_bodies, self.system.body_dim
        J = self._dense_rows()
        c = np.concatenate([rhs, rhs_a])
        fv = f.reshape(-1)
        lp = s.primary.n_rows
        if naive:  # (J M⁻¹ Jᵀ) λ = c − J M⁻¹ f  (seed 002 Sec. 2.2)
            MinvJt = np.einsum("nij,njr->nir", self.Minv, J.T.reshape(n, d, -1)).reshape(d * n, -1)
            Minvf = np.einsum("nij,nj->ni", self.Minv, f).reshape(-1)
            lam = SymmetricSolve(J @ MinvJt).solve(c - J @ Minvf) if len(c) else np.zeros(0)
            acc = (Minvf + MinvJt @ lam).reshape(n, d)
        else:  # H = [[M, Jᵀ], [J, 0]] by a dense symmetric-indefinite factorization
            N = d * n + len(c)
            H = np.zeros((N, N))
            for i in range(n):
                H[d * i:d * i + d, d * i:d * i + d] = s.inertia[i]
            H[:d * n, d * n:] = J.T
            H[d * n:, :d * n] = J
            rhs_all = np.concatenate([fv, c])
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("error", scipy.linalg.LinAlgWarning)
                    x = scipy.linalg.solve(H, rhs_all, assume_a="sym")
            except (np.linalg.LinAlgError, scipy.linalg.LinAlgWarning):  # redundant rows: minimum-norm multipliers
                x = scipy.linalg.lstsq(H, rhs_all)[0]
            acc, lam = x[:d * n].reshape(n, d), -x[d * n:]
        return acc, lam[:lp], lam[lp:]
