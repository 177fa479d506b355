"""Splitting a body with many constraints so the constraint system stays banded (seed 003, Appendix B).

A hub body with n scalar constraint rows couples every pair of them: J M⁻¹ Jᵀ is
dense on those rows and its factorization is cubic. Splitting the hub into n_P
parts chained by *extra joints* (welds, 6 rows each), part k carrying z_k of the
original rows, leaves a band: ordered part by part,

    C_0, W_0, C_1, W_1, …, W_{n_P−2}, C_{n_P−1}     (C_k: part k's rows, W_k: weld k ↔ k+1)

each row only meets rows of its own part and of the welds on either side, so
the bandwidth of the appendix, β(A) = max_i (i − min{j : A_ij ≠ 0}), is at most
11 + 2 z_max and the factorization and the solve are linear in n.

``split_counts(n)`` is the appendix's heuristic for the number of inner parts
p (n_P = p + 2) and their total rows m; ``part_sizes`` spreads the rows (outer
parts share n − m, inner parts ⌊m/p⌋ or one more); ``matrix_entries`` is Eq. (14),
the count of off-diagonal entries the heuristic minimizes.

``hub_system`` builds the test case of the bench: a free hub body with n/3 ball
joints to small satellite bodies (3 rows each), unsplit or split by the
heuristic. Rows of one joint may land on two neighbouring parts, as the
appendix allows ("breaking apart the constraints between a pair of bodies");
the satellite then closes a small loop, at most 2·r·(3−r) ≤ 4 extra entries
per split joint here (the appendix's 18 for a 6-row joint), without fill.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse

from ...spatial import skew
from .sparse_ldl import SparseLDL


def split_counts(n: int) -> tuple[int, int]:
    """(p, m): inner parts and their total rows for a body with n constraint rows (Appendix B).

    p = −1: no split (one part); p = 0: two outer parts only.
    """
    if n < 27:
        return -1, 0
    if n < 37:
        return 0, 0
    if n < 219:
        p = 1 if n == 37 else int(round((n - 12) / math.sqrt(102) - 2))
        return p, int(round((n - 12) * p / (p + 2)))
    m = n - 32
    p = m // 10
    if p + 1 - m % (p + 1) < m % p:
        p += 1
    return p, m


def part_sizes(n: int, p: int | None = None, m: int | None = None) -> list[int]:
    """Rows per part z_0 … z_{n_P−1} (outer parts first and last), from ``split_counts`` by default."""
    if p is None:
        p, m = split_counts(n)
    if p < 0:
        return [n]
    if (p == 0 and m != 0) or not 0 <= m <= n - 2:
        raise ValueError(f"part_sizes: {p} inner parts cannot hold {m} of {n} rows")
    outer = n - m
    inner = [] if p == 0 else [m // p + (1 if k < m % p else 0) for k in range(p)]
    return [outer - outer // 2] + inner + [outer // 2]


def matrix_entries(z) -> int:
    """Eq. (14): off-diagonal entries n_M of the split system with parts of z_k rows (n_P ≥ 2):
    within parts Σ z_k (z_k − 1), within welds 30 (n_P − 1), between neighbouring welds
    72 (n_P − 2), between parts and their welds 12 (z_first + z_last) + 24 Σ_inner z_k."""
    z = list(z)
    n_p = len(z)
    if n_p < 2:
        return z[0] * (z[0] - 1)
    return (sum(k * (k - 1) for k in z) + 30 * (n_p - 1) + 72 * (n_p - 2) + 12 * (z[0] + z[-1])
            + 24 * sum(z[1:-1]))


def bandwidth(A) -> int:
    """β(A) = max_i (i − min{j ≤ i : A_ij ≠ 0}) (Appendix B, after [BBK05])."""
    A = scipy.sparse.csr_matrix(A)
    A.eliminate_zeros()
    beta = 0
    for i in range(A.shape[0]):
        cols = A.indices[A.indptr[i]:A.indptr[i + 1]]
        cols = cols[cols <= i]
        if cols.size:
            beta = max(beta, i - int(cols.min()))
    return beta


@dataclass
class HubSystem:
    """Bodies with 6×6 inverse inertias ``Minv`` (b, 6, 6), velocities [ω; v] at their COM,
    constraint rows ``J`` (sparse, rows × 6b), ordered for a band when split."""

    J: scipy.sparse.csr_matrix
    Minv: np.ndarray
    n_parts: int
    part_rows: list          # z_k
    satellites: np.ndarray   # body indices of the satellites
    n_joint_rows: int        # n: the hub's original rows (3 per ball joint)

    @property
    def A(self) -> scipy.sparse.csc_matrix:
        """J M⁻¹ Jᵀ (rows × rows)."""
        Minv = scipy.sparse.block_diag(list(self.Minv), format="csr")
        return scipy.sparse.csc_matrix(self.J @ Minv @ self.J.T)

    def impulse_velocities(self, v: np.ndarray, solve=None) -> np.ndarray:
        """v⁺ = v + M⁻¹ Jᵀ λ with A λ = −J v: the velocities after the constraint impulses."""
        A = self.A
        b = -(self.J @ v)
        lam = (solve or factor_and_solve)(A, b)
        f = (self.J.T @ lam).reshape(-1, 6)
        return v + np.einsum("bij,bj->bi", self.Minv, f).ravel()


WELD_POINT = np.array([0.3, 0.2, 0.1])  # where the extra joints sit, relative to the hub's COM (m)


def hub_system(n_joints: int, split: bool = True, seed: int = 0) -> HubSystem:
    """A free hub (10 kg) with ``n_joints`` ball joints (3 rows each) to 0.1 kg satellites at random
    points of its surface; split by the heuristic when ``split``. Body 0 … n_P−1: hub parts (each
    1/n_P of the hub's mass and inertia, all at its COM); then the satellites."""
    rng = np.random.default_rng(seed)
    n = 3 * n_joints
    z = part_sizes(n) if split else [n]
    n_p = len(z)
    anchors = rng.normal(size=(n_joints, 3))
    anchors /= np.linalg.norm(anchors, axis=1, keepdims=True)
    Rh = np.linalg.qr(rng.normal(size=(3, 3)))[0]  # hub's principal axes, off the world axes
    hub_Iinv = Rh @ np.diag(1.0 / np.array([2.0, 3.0, 4.0])) @ Rh.T
    part = np.zeros((6, 6))
    part[:3, :3], part[3:, 3:] = n_p * hub_Iinv, np.eye(3) * n_p / 10.0  # 1/n_P of the hub's inertia and mass
    Minv = [part] * n_p
    sat_offset = 0.05 * rng.normal(size=(n_joints, 3))  # joint point relative to each satellite's COM
    Minv += [np.diag(np.r_[np.full(3, 1.0 / 1e-4), np.full(3, 10.0)])] * n_joints
    rows, cols, vals = [], [], []
    row = 0

    def put(r, body, block):  # block (k, 6) on body's columns
        for a in range(block.shape[0]):
            for c in range(6):
                if block[a, c] != 0.0:
                    rows.append(r + a)
                    cols.append(6 * body + c)
                    vals.append(block[a, c])

    bounds = np.cumsum([0] + z)
    for k in range(n_p):
        for scalar in range(bounds[k], bounds[k + 1]):  # part k's rows: ball rows e_a·(v_hub(x) − v_sat(x)) = 0
            j, a = divmod(scalar, 3)
            e = np.eye(3)[a]
            hub_row = np.r_[np.cross(anchors[j], e), e]       # e·(v + ω × r) = (r × e)·ω + e·v
            sat_row = -np.r_[np.cross(-sat_offset[j], e), e]  # the satellite's point sits at −offset from... its COM
            put(row, k, hub_row[None])
            put(row, n_p + j, sat_row[None])
            row += 1
        if k < n_p - 1:  # weld k ↔ k+1 at a point w: equal twists there (all parts share the COM)
            X = np.eye(6)
            X[3:, :3] = -skew(WELD_POINT)  # twist at w: [ω; v + ω × w]
            put(row, k, X)
            put(row, k + 1, -X)
            row += 6
    J = scipy.sparse.csr_matrix((vals, (rows, cols)), shape=(row, 6 * (n_p + n_joints)))
    return HubSystem(J, np.array(Minv), n_p, z, np.arange(n_p, n_p + n_joints), n)


def factor_and_solve(A, b) -> np.ndarray:
    """λ = A⁻¹ b by the sparse LDLᵀ in the given (banded) row order: symbolic + numeric + solve."""
    A = scipy.sparse.csc_matrix(A)
    A.sort_indices()
    f = SparseLDL(A.indptr, A.indices, A.shape[0])
    f.factor(A.data)
    return f.solve(b)
