"""Joint models: Ṡ by finite differences, manifold integration, transforms."""
import numpy as np
import pytest

import engine
from engine import joints as J
from engine.integrators import configuration_difference
from engine.spatial import transform_matrix


def _single_joint_model(kind, seed=0):
    return engine.random_tree(1, joint_types=(kind,), seed=seed, floating_base=(kind == "free"))


def _relative_twist_in_parent(model, q, v):
    """X_J(q)⁻¹ S(q) v: the child's velocity relative to the parent-side joint frame."""
    E = np.empty((3, 3))
    r = np.empty(3)
    S = np.empty((model.nv, 6))
    t = int(model.joint_type[0])
    J.joint_transform(t, model.joint_axis[0], q, 0, E, r)
    J.joint_motion_subspace(t, model.joint_axis[0], q, 0, S, 0)
    return np.linalg.solve(transform_matrix(E, r), S.T @ v), E, r


@pytest.mark.parametrize("kind", ["revolute", "prismatic", "universal", "spherical", "free"])
@pytest.mark.parametrize("seed", range(5))
def test_sdot_matches_finite_differences(kind, seed):
    """d/dt [X_J⁻¹ S q̇] = X_J⁻¹ (S q̈ + Ṡ q̇) along q(t) = q0 ⊕ (q̇ t + ½ q̈ t²).

    The curve has velocity q̇ and acceleration q̈ at t = 0 on every manifold,
    so this checks c_J = Ṡ q̇ (Eq. 2.34 for the universal joint) together with
    the consistency of X_J, S and integrate.
    """
    model = _single_joint_model(kind, seed)
    rng = np.random.default_rng(seed)
    q0, qd = engine.random_configuration(model, rng)
    qdd = rng.normal(size=model.nv)
    h = 1e-3  # nested central differences: truncation O(h²), round-off O(ε/h²)

    def curve(t):
        return engine.integrate(model, q0, qd * t + 0.5 * qdd * t * t, 1.0)

    def twist(t):  # S(q(t)) v(t) with v(t) from central differences of the curve
        v = np.array([J.difference(int(model.joint_type[0]), curve(t - h), curve(t + h))]).ravel() / (2 * h)
        return _relative_twist_in_parent(model, curve(t), v)[0]

    fd = (twist(h) - twist(-h)) / (2 * h)
    _, E, r = _relative_twist_in_parent(model, q0, qd)
    S = np.empty((model.nv, 6))
    cJ = np.empty(6)
    t = int(model.joint_type[0])
    J.joint_motion_subspace(t, model.joint_axis[0], q0, 0, S, 0)
    J.joint_bias_acceleration(t, model.joint_axis[0], q0, 0, qd, qd, 0, cJ)
    expected = np.linalg.solve(transform_matrix(E, r), S.T @ qdd + cJ)
    assert np.abs(fd - expected).max() < 1e-4 * max(1.0, np.abs(expected).max())
    if kind == "universal":
        assert np.abs(cJ).max() > 0  # the only joint with a nonzero Ṡ


@pytest.mark.parametrize("kind", ["spherical", "free"])
def test_integration_stays_on_the_manifold(kind):
    model = _single_joint_model(kind)
    rng = np.random.default_rng(1)
    q, _ = engine.random_configuration(model, rng)
    o = 0 if kind == "spherical" else 3
    for _ in range(20000):
        q = engine.integrate(model, q, rng.normal(size=model.nv) * 3.0, 0.01)
    assert abs(np.linalg.norm(q[o:o + 4]) - 1.0) < 1e-12


@pytest.mark.parametrize("kind", ["revolute", "prismatic", "universal", "spherical", "free"])
def test_difference_inverts_integrate(kind):
    model = _single_joint_model(kind, 3)
    rng = np.random.default_rng(3)
    q, v = engine.random_configuration(model, rng)
    q1 = engine.integrate(model, q, v, 0.3)
    assert np.allclose(J.difference(int(model.joint_type[0]), q, q1), 0.3 * v, atol=1e-12)


@pytest.mark.parametrize("angle", [1e-10, 1.2e-8, 3e-8, 1e-7, 1e-4, 9e-3, 1.1e-2, 0.3, 1.0])
def test_free_joint_difference_of_a_small_turn_is_finite_and_inverts_integrate(angle):
    """The SE(3) log's V⁻¹ coefficient divides by 1 − cos θ, exactly 0 for θ ≲ 1.5e-8: a nearly still free body's
    q ⊖ q⁻ (BDF2's extrapolation) was NaN there (a stack of four boxes under the default step, issue #30). Both
    twins — ``joints.difference`` and the kernel behind ``configuration_difference`` — give the twist back."""
    model = _single_joint_model("free", 3)
    rng = np.random.default_rng(4)
    q, _ = engine.random_configuration(model, rng)
    w = rng.normal(size=3)
    v = np.concatenate([angle * w / np.linalg.norm(w), rng.normal(size=3)])
    q1 = engine.integrate(model, q, v, 1.0)
    for d in (J.difference(int(model.joint_type[0]), q, q1), configuration_difference(model, q, q1)):
        assert np.all(np.isfinite(d))
        np.testing.assert_allclose(d, v, rtol=0, atol=1e-12)


def test_universal_rotation_is_rx_then_ry():
    """Eq. 2.31: R = Rx(q1) Ry(q2)."""
    E = np.empty((3, 3))
    r = np.empty(3)
    a, b = 0.3, -0.7
    J.joint_transform(J.UNIVERSAL, np.zeros(3), np.array([a, b]), 0, E, r)
    Rx = np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])
    Ry = np.array([[np.cos(b), 0, np.sin(b)], [0, 1, 0], [-np.sin(b), 0, np.cos(b)]])
    assert np.allclose(E.T, Rx @ Ry)
