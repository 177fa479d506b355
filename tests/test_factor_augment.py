"""Appendix C of seed 003: rows and columns added to an existing Cholesky / LDLᵀ factor."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.solvers.linalg.factor_augment import CholeskyFactor, LDLFactor


def random_system(rng, n, na, symmetric, sparse_pattern):
    X = rng.normal(size=(n, n))
    if sparse_pattern:  # a banded SPD matrix, as a constraint system with splitting is
        X = np.triu(np.tril(X, 2), -2)
    A = X @ X.T + n * np.eye(n)
    A12 = rng.normal(size=(n, na))
    A21 = A12.T.copy() if symmetric else rng.normal(size=(na, n))
    A22 = rng.normal(size=(na, na))
    A22 = (A22 @ A22.T if symmetric else A22) + (n + 5) * np.eye(na)
    return A, A12, A21, A22


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 60), st.integers(1, 3), st.booleans(), st.sampled_from(["cholesky", "ldl"]),
       st.sampled_from(["dense", "sparse"]), st.booleans(), st.integers(0, 2**31 - 1))
def test_augmented_solve_equals_refactor_and_solve(n, na, symmetric, kind, storage, permuted, seed):
    """Acceptance 2: 1–3 added rows (symmetric or not) on dense and sparse factors of random SPD
    systems, with and without a permutation, agree with solving the full matrix to 1e-10."""
    rng = np.random.default_rng(seed)
    A, A12, A21, A22 = random_system(rng, n, na, symmetric, storage == "sparse")
    full = np.block([[A, A12], [A21, A22]])
    if np.linalg.cond(full) > 1e8:
        return
    b = rng.normal(size=n + na)
    reference = np.linalg.solve(full, b)
    matrix = scipy.sparse.csc_matrix(A) if storage == "sparse" else A
    cls = CholeskyFactor if kind == "cholesky" else LDLFactor
    factor = cls.factor(matrix, rng.permutation(n) if permuted else None)
    x1, x2 = factor.augment(A12, A21, A22).solve(b[:n], b[n:])
    assert np.abs(np.concatenate([x1, x2]) - reference).max() <= 1e-10 * np.abs(reference).max()
    assert np.allclose(factor.solve(b[:n]), np.linalg.solve(A, b[:n]), rtol=1e-10, atol=1e-12)


def test_one_factor_serves_many_contacts():
    """The factor is never touched: augmenting it again and again gives each system's own solution."""
    rng = np.random.default_rng(3)
    A, *_ = random_system(rng, 40, 1, True, True)
    factor = LDLFactor.factor(scipy.sparse.csc_matrix(A), np.arange(40)[::-1])
    L_before = factor.tri.sparse[2].copy()
    for na in (1, 2, 3, 3, 1):
        _, A12, A21, A22 = random_system(rng, 40, na, False, False)
        b = rng.normal(size=40 + na)
        x = np.concatenate(factor.augment(A12, A21, A22).solve(b[:40], b[40:]))
        assert np.allclose(x, np.linalg.solve(np.block([[A, A12], [A21, A22]]), b), rtol=1e-10, atol=1e-12)
    assert np.array_equal(L_before, factor.tri.sparse[2])


def test_bad_input_is_explained():
    A = np.eye(3)
    with pytest.raises(ValueError, match="square"):
        CholeskyFactor.factor(np.ones((2, 3)))
    with pytest.raises(ValueError, match="permutation"):
        LDLFactor.factor(A, perm=[0, 0, 1])
    f = LDLFactor.factor(A)
    with pytest.raises(ValueError, match="expected A12"):
        f.augment(np.ones((3, 2)), np.ones((1, 3)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="singular"):
        f.augment(np.ones((3, 1)), np.ones((1, 3)), np.array([[3.0]]))  # Schur complement 3 − 3 = 0
    with pytest.raises(ValueError, match="b1 must have 3"):
        f.augment(np.ones((3, 1)), np.ones((1, 3)), np.array([[5.0]])).solve(np.ones(2), [1.0])
    with pytest.raises(np.linalg.LinAlgError):
        CholeskyFactor.factor(-np.eye(3))
