"""Identities between the recursive algorithms on random trees (spatial_v2 style).

Every joint type, fixed and floating base; 200 trees per property (the
``nojit`` profile runs a few, with numba switched off, from test_nojit.py).
"""
import numpy as np
from hypothesis import given, settings

import engine
from trees import random_trees, rel_err

TOL = 1e-9
N = 200


@settings(max_examples=N)
@given(random_trees())
def test_rnea_inverts_aba(tree):
    model, rng = tree
    q, qd = engine.random_configuration(model, rng)
    tau = rng.normal(size=model.nv)
    f_ext = rng.normal(size=(model.n_bodies, 6))
    qdd = engine.aba(model, q, qd, tau, f_ext)
    assert rel_err(engine.rnea(model, q, qd, qdd, f_ext), tau) < TOL


@settings(max_examples=N)
@given(random_trees())
def test_crba_columns_equal_rnea_unit_accelerations(tree):
    model, rng = tree
    q, _ = engine.random_configuration(model, rng)
    M = engine.crba(model, q)
    zero = np.zeros(model.nv)
    for k in range(model.nv):
        e = np.zeros(model.nv)
        e[k] = 1.0
        assert rel_err(M[:, k], engine.rnea(model, q, zero, e, gravity=False)) < TOL
    assert np.array_equal(M, M.T)


@settings(max_examples=N)
@given(random_trees())
def test_minv_times_crba_is_identity(tree):
    model, rng = tree
    q, _ = engine.random_configuration(model, rng)
    M = engine.crba(model, q)
    Minv = engine.minv(model, q)
    assert rel_err(Minv @ M, np.eye(model.nv)) < TOL
    assert rel_err(Minv, engine.cholesky_inverse(M)) < TOL * max(1.0, np.linalg.cond(M))


@settings(max_examples=N)
@given(random_trees())
def test_ltdl_solve_equals_dense_solve(tree):
    model, rng = tree
    q, qd = engine.random_configuration(model, rng)
    M = engine.crba(model, q)
    b = rng.normal(size=model.nv)
    x = engine.ltdl_solve(model, engine.ltdl(model, M), b)
    assert rel_err(x, np.linalg.solve(M, b)) < TOL * max(1.0, np.linalg.cond(M))
    assert rel_err(M @ x, b) < TOL


@settings(max_examples=N)
@given(random_trees())
def test_aba_equals_dense_forward_dynamics(tree):
    model, rng = tree
    q, qd = engine.random_configuration(model, rng)
    tau = rng.normal(size=model.nv)
    M = engine.crba(model, q)
    C = engine.bias_forces(model, q, qd)
    assert rel_err(engine.aba(model, q, qd, tau), engine.cholesky_solve(M, tau - C)) < TOL * max(1.0, np.linalg.cond(M))


@settings(max_examples=N)
@given(random_trees())
def test_configuration_from_poses_inverts_link_poses(tree):
    """q → link poses → q: the same poses (and the same q up to angle wrap and quaternion sign)."""
    model, rng = tree
    q, _ = engine.random_configuration(model, rng)
    R, p = engine.link_poses(model, q)
    q2 = engine.configuration_from_poses(model, R, p)
    R2, p2 = engine.link_poses(model, q2)
    assert rel_err(R2, R) < TOL and rel_err(p2, p) < TOL
    for j in range(model.n_bodies):  # joint by joint: the coordinates themselves agree
        jt, qs = int(model.joint_type[j]), slice(model.q_start[j], model.q_start[j] + model.joint_nq[j])
        angles = jt in (engine.joints.REVOLUTE, engine.joints.UNIVERSAL)  # equal up to whole turns
        v = np.angle(np.exp(1j * (q2[qs] - q[qs]))) if angles else engine.joints.difference(jt, q[qs], q2[qs])
        assert np.abs(v).max(initial=0.0) < 1e-8, (engine.joints.JOINT_TYPE_NAMES[jt], q[qs], q2[qs])
