"""Appendix B of seed 003: the splitting heuristic, Eq. (14), the bandwidth bound, and that splitting
changes nothing physically."""
from __future__ import annotations

import numpy as np
import pytest

from engine.solvers.linalg.graph_split import bandwidth, hub_system, matrix_entries, part_sizes, split_counts


def test_heuristic_follows_the_appendix_and_its_parts_add_up():
    assert split_counts(26) == (-1, 0) and split_counts(27) == (0, 0) and split_counts(36) == (0, 0)
    assert split_counts(37)[0] == 1
    for n in range(1, 2000):
        z = part_sizes(n)
        assert sum(z) == n and min(z) > 0
        inner = z[1:-1]
        assert not inner or max(inner) - min(inner) <= 1  # "differ by 1 at most"
    assert part_sizes(1000)[1:-1].count(10) > 90  # "10 for the inner parts" for large n


def test_eq14_closed_form_and_the_heuristic_against_brute_force():
    """The rewritten n_M equals Eq. (14); the heuristic's n_M is the brute-force minimum over (p, m)
    at every n in [38, 218], as the appendix claims ('optimal for n ∈ [38, 218]')."""
    for n in (40, 77, 150, 218):
        for p in range(0, 12):
            for m in ([0] if p == 0 else range(p, n - 2, 7)):
                z = part_sizes(n, p, m)
                if min(z) <= 0:
                    continue
                inner, outer = z[1:-1], (z[0], z[-1])
                closed = (sum(k * k + 23 * k for k in inner) + sum(k * k for k in outer) + 11 * sum(outer)
                          + 102 * len(z) - 174)
                assert matrix_entries(z) == closed
    worst = 0.0
    for n in range(38, 219):
        best = min(matrix_entries(part_sizes(n, p, m)) for p in range(0, n // 6)
                   for m in ([0] if p == 0 else range(p, n - 1)) if min(part_sizes(n, p, m)) > 0)
        worst = max(worst, matrix_entries(part_sizes(n)) / best - 1.0)
    assert worst == 0.0


@pytest.mark.parametrize("joints", [9, 20, 45, 120])
def test_split_system_is_banded_and_counts_as_eq14(joints):
    """β ≤ 11 + 2 z_max on the split hub; its off-diagonal entries are Eq. (14) plus the couplings of
    joints whose rows straddle two parts (2 r₁ r₂ each); unsplit, the hub's rows are a dense block."""
    split, whole = hub_system(joints, True), hub_system(joints, False)
    A = split.A
    assert bandwidth(A) <= 11 + 2 * max(split.part_rows)
    bounds = np.cumsum(split.part_rows)[:-1]
    straddling = sum(2 * (b % 3) * (3 - b % 3) for b in bounds)
    assert A.nnz - A.shape[0] == matrix_entries(split.part_rows) + straddling
    n = 3 * joints
    assert bandwidth(whole.A) == n - 1 and whole.A.nnz == n * n


@pytest.mark.parametrize("joints", [12, 70])
def test_splitting_changes_no_velocity(joints):
    """Constraint impulses on the split system move the satellites exactly as on the unsplit one,
    and the welded parts keep one common twist."""
    rng = np.random.default_rng(4)
    whole, split = hub_system(joints, False), hub_system(joints, True)
    v = rng.normal(size=6 * (1 + joints))
    v_whole = whole.impulse_velocities(v)
    n_p = split.n_parts
    v_split = split.impulse_velocities(np.concatenate([np.tile(v[:6], n_p), v[6:]]))
    assert np.abs(v_split[6 * n_p:] - v_whole[6:]).max() < 1e-9
    assert np.abs(v_split[:6 * n_p].reshape(n_p, 6) - v_whole[:6]).max() < 1e-9
    assert np.abs(split.J @ v_split).max() < 1e-9
