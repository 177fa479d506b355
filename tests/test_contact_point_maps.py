"""The compiled contact frames and point maps (``jacobian.contact_point_maps``) against the numpy definition."""
import numpy as np

from engine.contact.jacobian import contact_directions, contact_point_maps, point_maps


def test_compiled_point_maps_equal_numpy_ones():
    rng = np.random.default_rng(3)
    normal = rng.normal(size=(200, 3))
    normal[:50] = [[1.0, 0.0, 0.0]] * 50  # |n_x| ≥ 0.9: the other seed axis
    normal[50:60] = [[0.0, 0.0, -1.0]] * 10
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    point = rng.normal(size=(200, 3))
    F = np.empty((200, 3, 6))
    contact_point_maps(point, normal, F)
    np.testing.assert_allclose(F, point_maps(point, contact_directions(normal)), rtol=0, atol=1e-14)
    dirs = F[:, :, 3:]  # rows n, t₁, t₂: orthonormal and right-handed
    np.testing.assert_allclose(np.einsum("kij,klj->kil", dirs, dirs), np.broadcast_to(np.eye(3), (200, 3, 3)),
                               atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(dirs), 1.0, atol=1e-12)
