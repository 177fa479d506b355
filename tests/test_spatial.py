"""Spatial algebra kernels against dense 6×6 matrices."""
import numpy as np

from engine import spatial as sp


def _rot(rng):
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def test_kernels_match_dense_matrices():
    rng = np.random.default_rng(0)
    for _ in range(50):
        E, r = _rot(rng), rng.normal(size=3)
        X = sp.transform_matrix(E, r)
        m, f = rng.normal(size=6), rng.normal(size=6)
        A = rng.normal(size=(6, 6))
        I = A @ A.T
        out = np.empty(6)
        sp.transform_motion(E, r, m, out)
        assert np.allclose(out, X @ m)
        sp.transform_motion_inverse(E, r, m, out)
        assert np.allclose(out, np.linalg.solve(X, m))
        sp.transform_force_transpose(E, r, f, out)
        assert np.allclose(out, X.T @ f)
        acc = np.eye(6)
        sp.add_transformed_inertia(E, r, I, acc)
        assert np.allclose(acc, np.eye(6) + X.T @ I @ X)
        sp.cross_motion(m, f, out)
        assert np.allclose(out, sp.cross_motion_matrix(m) @ f)
        sp.cross_force(m, f, out)
        assert np.allclose(out, -sp.cross_motion_matrix(m).T @ f)
        E2, r2 = _rot(rng), rng.normal(size=3)
        Ec, rc = np.empty((3, 3)), np.empty(3)
        sp.compose_transforms(E2, r2, E, r, Ec, rc)
        assert np.allclose(sp.transform_matrix(Ec, rc), sp.transform_matrix(E2, r2) @ X)


def test_spatial_inertia_of_offset_point_mass():
    """A point mass at c: I ω × ... reduces to m [c̃ c̃ᵀ, c̃; c̃ᵀ, 1]."""
    c = np.array([0.0, 2.0, 0.0])
    I = sp.spatial_inertia(3.0, c, np.zeros((3, 3)))
    v = np.array([1.0, 0, 0, 0, 0, 0])  # spin about x through the origin
    h = I @ v
    assert np.allclose(h[3:], 3.0 * np.cross(v[:3], c))  # linear momentum m ω × c
