"""Mesh mass properties against closed forms."""
import numpy as np
import pytest

from engine.geometry import box_inertia, equivalent_box, mesh_mass_properties, mesh_mass_properties_many

CUBE_V = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], float)
CUBE_T = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                   [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])


def _rotation(seed):
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(3, 3)))
    return q * np.sign(np.linalg.det(q))


@pytest.mark.parametrize("seed", range(5))
def test_box_mesh_matches_the_solid_box_anywhere_in_space(seed):
    rng = np.random.default_rng(seed)
    size, R, t = rng.uniform(0.2, 3, 3), _rotation(seed), rng.normal(size=3) * 5
    V = ((CUBE_V - 0.5) * size) @ R.T + t
    mp = mesh_mass_properties(V, CUBE_T, density=700.0)
    mass = 700.0 * np.prod(size)
    assert mp.volume == pytest.approx(np.prod(size), rel=1e-12)
    assert mp.mass == pytest.approx(mass, rel=1e-12)
    np.testing.assert_allclose(mp.com, t, atol=1e-10)
    np.testing.assert_allclose(mp.inertia, R @ np.diag(box_inertia(mass, size)) @ R.T, rtol=1e-10, atol=1e-10 * mass)
    np.testing.assert_allclose(equivalent_box(mass, box_inertia(mass, size)), size, rtol=1e-10)


def test_non_convex_mesh_is_the_sum_of_its_parts():
    two = np.vstack([CUBE_V, CUBE_V + [1, 0, 0]])  # two unit cubes side by side = a 2 × 1 × 1 box
    mp = mesh_mass_properties(two, np.vstack([CUBE_T, CUBE_T + 8]), 1.0)
    np.testing.assert_allclose(mp.com, [1, 0.5, 0.5])
    np.testing.assert_allclose(mp.inertia, np.diag(box_inertia(2.0, (2, 1, 1))), atol=1e-12)


def test_open_or_inside_out_mesh_is_refused():
    with pytest.raises(ValueError, match="closed and outward-facing"):
        mesh_mass_properties(CUBE_V, CUBE_T[:, ::-1], 1.0)
    with pytest.raises(ValueError, match="no triangles"):
        mesh_mass_properties(CUBE_V, np.zeros((0, 3), int), 1.0)


def test_many_meshes_at_once_equal_one_at_a_time_and_mark_the_ones_without_volume():
    rng = np.random.default_rng(7)
    meshes = []
    for seed in range(6):
        V = ((CUBE_V - 0.5) * rng.uniform(0.2, 3, 3)) @ _rotation(seed).T + rng.normal(size=3) * 5
        meshes.append((V, CUBE_T[:-2] if seed == 3 else CUBE_T))  # (an open one: no volume... or a wrong one)
    meshes.append((CUBE_V, CUBE_T[:, ::-1]))  # inside out
    offsets = np.cumsum([0] + [len(V) for V, _ in meshes[:-1]])
    mass, com, inertia, volume = mesh_mass_properties_many(
        np.concatenate([V for V, _ in meshes]), np.concatenate([T + o for (_, T), o in zip(meshes, offsets)]),
        [len(T) for _, T in meshes], 700.0)
    for k, (V, T) in enumerate(meshes):
        try:
            one = mesh_mass_properties(V, T, 700.0)
        except ValueError:
            assert np.isnan(mass[k]) and np.isnan(volume[k]), k
            continue
        assert mass[k] == pytest.approx(one.mass, rel=1e-12) and volume[k] == pytest.approx(one.volume, rel=1e-12)
        np.testing.assert_allclose(com[k], one.com, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(inertia[k], one.inertia, rtol=1e-11, atol=1e-12 * np.abs(one.inertia).max())
    assert np.isnan(mass[-1])  # the inside-out cube
