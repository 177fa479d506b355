"""Finite-difference checks of every maximal force's stiffness K and damping D."""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from engine.forces.point_force import point_force_kernel
from engine.forces.point_pair import PairArrays, point_pair_kernel


def _poses(rng, n):
    R = Rotation.random(n, random_state=rng).as_matrix()
    return np.ascontiguousarray(np.transpose(R, (0, 2, 1))), rng.normal(size=(n, 3))


def _perturbed(X0_E, X0_r, body, delta):
    """Pose E → E exp(δ) for one body: R ← R exp([δω]), p ← p + R δv."""
    E, r = X0_E.copy(), X0_r.copy()
    R = E[body].T
    E[body] = (R @ Rotation.from_rotvec(delta[:3]).as_matrix()).T
    r[body] = X0_r[body] + R @ delta[3:]
    return E, r


def _pair_eval(X0_E, X0_r, v, args):
    n = X0_E.shape[0]
    m = args[0].shape[0]
    w, wd = np.zeros((n, 6)), np.zeros((n, 6))
    K, D = np.zeros((m, 12, 12)), np.zeros((m, 12, 12))
    act = np.zeros(m, dtype=np.int64)
    V = point_pair_kernel(X0_E, X0_r, v, PairArrays(*args), True, w, wd, K, D, act)
    return w, wd, K, D, V


def _pair_args(a, b, la, lb, k, c, L, tension):
    return (np.array([a]), np.array([b]), np.array([la], float), np.array([lb], float), np.array([k], float),
            np.array([c], float), np.array([L], float), np.array([tension], np.bool_))


def _fd_stiffness(wrench_of, bodies, n, eps=1e-6):
    """−∂w/∂δ by central differences over the given bodies' 6-dof perturbations, symmetrized."""
    cols = []
    for body in bodies:
        for k in range(6):
            d = np.zeros(6)
            d[k] = eps
            cols.append(-(wrench_of(body, d) - wrench_of(body, -d)) / (2 * eps))
    Kfd = np.array(cols).T
    rows = np.concatenate([np.arange(6 * b, 6 * b + 6) for b in bodies])
    Kfd = Kfd[rows]
    return 0.5 * (Kfd + Kfd.T)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("world_end", [False, True])
def test_spring_stiffness_matches_finite_differences(seed, world_end):
    rng = np.random.default_rng(seed)
    X0_E, X0_r = _poses(rng, 3)
    la, lb = rng.normal(size=3), rng.normal(size=3)
    b = -1 if world_end else 2
    # rest length below the current length: the spring is in tension (nothing clamped)
    _, _, _, _, _ = _pair_eval(X0_E, X0_r, np.zeros((3, 6)), _pair_args(0, b, la, lb, 1.0, 0.0, 0.0, False))
    x1 = X0_r[0] + X0_E[0].T @ la
    x2 = lb if world_end else X0_r[2] + X0_E[2].T @ lb
    L = 0.6 * np.linalg.norm(x2 - x1)
    args = _pair_args(0, b, la, lb, 1e3 * (1 + seed), 0.0, L, seed % 2 == 0)
    _, _, K, _, _ = _pair_eval(X0_E, X0_r, np.zeros((3, 6)), args)

    def wrench_of(body, d):
        E, r = _perturbed(X0_E, X0_r, body, d)
        return _pair_eval(E, r, np.zeros((3, 6)), args)[0].ravel()

    bodies = [0] if world_end else [0, 2]
    Kfd = _fd_stiffness(wrench_of, bodies, 3)
    Kk = K[0][:6, :6] if world_end else K[0]
    assert np.abs(Kk - Kfd).max() < 1e-6 * np.abs(Kfd).max()
    assert np.allclose(K[0], K[0].T)


def test_spring_force_is_minus_gradient_of_energy():
    rng = np.random.default_rng(11)
    X0_E, X0_r = _poses(rng, 2)
    args = _pair_args(0, 1, rng.normal(size=3), rng.normal(size=3), 50.0, 0.0, 0.3, False)
    w, _, _, _, _ = _pair_eval(X0_E, X0_r, np.zeros((2, 6)), args)
    eps = 1e-6
    for body in (0, 1):
        for k in range(6):
            d = np.zeros(6)
            d[k] = eps
            Vp = _pair_eval(*_perturbed(X0_E, X0_r, body, d), np.zeros((2, 6)), args)[4]
            Vm = _pair_eval(*_perturbed(X0_E, X0_r, body, -d), np.zeros((2, 6)), args)[4]
            assert np.isclose(w[body, k], -(Vp - Vm) / (2 * eps), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_damper_matrix_matches_finite_differences_in_velocity(seed):
    rng = np.random.default_rng(seed)
    X0_E, X0_r = _poses(rng, 2)
    args = _pair_args(0, 1, rng.normal(size=3), rng.normal(size=3), 10.0, 7.0, 0.0, False)
    v = rng.normal(size=(2, 6))
    _, wd, _, D, _ = _pair_eval(X0_E, X0_r, v, args)
    eps = 1e-6
    Dfd = np.zeros((12, 12))
    for j in range(12):
        dv = np.zeros(12)
        dv[j] = eps
        wp = _pair_eval(X0_E, X0_r, v + dv.reshape(2, 6), args)[1].ravel()
        wm = _pair_eval(X0_E, X0_r, v - dv.reshape(2, 6), args)[1].ravel()
        Dfd[:, j] = -(wp - wm) / (2 * eps)
    assert np.abs(D[0] - Dfd).max() < 1e-6 * np.abs(Dfd).max()
    assert np.allclose(wd.ravel(), -D[0] @ v.ravel())


def test_slack_cable_carries_nothing_and_switches_on_continuously():
    X0_E = np.repeat(np.eye(3)[None], 1, axis=0)
    forces = []
    for z in (-0.9, -0.99, -1.0, -1.001, -1.1):
        X0_r = np.array([[0.0, 0.0, z]])
        args = _pair_args(0, -1, np.zeros(3), np.zeros(3), 1e4, 5.0, 1.0, True)
        w = _pair_eval(X0_E, X0_r, np.zeros((1, 6)), args)[0]
        forces.append(w[0, 5])
    assert forces[0] == forces[1] == forces[2] == 0.0
    assert np.isclose(forces[3], 10.0) and np.isclose(forces[4], 1000.0)


@pytest.mark.parametrize("seed", range(4))
def test_point_force_stiffness_matches_finite_differences(seed):
    rng = np.random.default_rng(seed)
    X0_E, X0_r = _poses(rng, 2)
    body = np.array([1])
    point = rng.normal(size=(1, 3))
    force = rng.normal(size=(1, 3)) * 10

    def ev(E, r):
        w, K = np.zeros((2, 6)), np.zeros((1, 6, 6))
        V = point_force_kernel(E, r, body, point, force, True, w, K)
        return w, K, V

    _, K, _ = ev(X0_E, X0_r)
    Kfd = _fd_stiffness(lambda b, d: ev(*_perturbed(X0_E, X0_r, b, d))[0].ravel(), [1], 2)
    assert np.abs(K[0] - Kfd).max() < 1e-6 * max(1.0, np.abs(Kfd).max())
