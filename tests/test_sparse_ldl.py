"""The sparse LDLᵀ (symbolic once, numeric per step) against a dense solve."""
import numpy as np
import pytest
import scipy.sparse as sp

import engine
from engine.solvers.steppers.redmax import RedMaxStepper
from engine.solvers.linalg.sparse_ldl import SparseLDL


@pytest.mark.parametrize("n, density", [(1, 1.0), (7, 0.4), (60, 0.05), (200, 0.02)])
def test_factor_and_solve_random_spd(n, density):
    rng = np.random.default_rng(n)
    B = sp.random(n, n, density=density, random_state=n)
    pattern = (B + B.T + sp.eye(n)).tocsc()
    pattern.sort_indices()
    ldl = SparseLDL(pattern.indptr, pattern.indices, n, rng.permutation(n))
    for _ in range(3):  # the same pattern, new values: numeric refactorization only
        values = rng.normal(size=pattern.nnz)
        A = sp.csc_matrix((values, pattern.indices, pattern.indptr), shape=(n, n))
        A = A + A.T
        A = (A + sp.diags(np.abs(A).sum(axis=1).A1 + 1.0)).tocsc()
        A.sort_indices()
        dense = A.toarray()
        vals = dense[pattern.indices, np.repeat(np.arange(n), np.diff(pattern.indptr))]
        ldl.factor(vals)
        b = rng.normal(size=n)
        assert np.allclose(ldl.solve(b), np.linalg.solve(dense, b), rtol=1e-10, atol=1e-12)


def test_zero_pivot_is_reported():
    pattern = sp.csc_matrix(np.ones((2, 2)))
    ldl = SparseLDL(pattern.indptr, pattern.indices, 2)
    with pytest.raises(np.linalg.LinAlgError, match="zero pivot"):
        ldl.factor(np.ones(4))


def test_orderings_agree_on_the_tree_scene():
    scene = engine.scenes.tree(4)
    out = [RedMaxStepper(scene, 1 / 60, "direct", ordering=o).step(engine.State(scene.q0, scene.qd0, 0.0), scene.control(0.0)).qd
           for o in ("leaf-to-root", "rcm")]
    assert np.allclose(out[0], out[1], rtol=1e-10, atol=1e-12)
