"""The one-launch paths of engine.aba, rnea, crba and minv (FlatModel buffers, checks inside the kernel)
against the launches on model.tree / model.data, and their input checks."""
import numpy as np
import pytest
from hypothesis import given, settings

import engine
from engine.algorithms.aba import aba_kernel
from engine.algorithms.crba import crba_kernel
from engine.algorithms.rnea import rnea_kernel
from engine.algorithms.minv import minv_and_point_rows
from engine.errors import ModelError
from trees import random_trees, rel_err


@settings(max_examples=60, deadline=None)
@given(random_trees())
def test_flat_aba_equals_the_kernel_on_the_model_workspace(tree):
    model, rng = tree
    q, qd = engine.random_configuration(model, rng)
    tau = rng.normal(size=model.nv)
    f_ext = rng.normal(size=(model.n_bodies, 6))
    expected = np.empty(model.nv)
    aba_kernel(model.tree, q, qd, tau, f_ext, model.data, expected)
    out = np.full(model.nv, np.nan)
    assert engine.aba(model, q, qd, tau, f_ext, out=out) is out
    assert rel_err(out, expected) < 1e-13
    # lists and strided views take the converting path to the same launch
    assert rel_err(engine.aba(model, list(q), np.repeat(qd, 2)[::2], list(tau), f_ext), expected) < 1e-13


@settings(max_examples=40, deadline=None)
@given(random_trees())
def test_flat_rnea_and_crba_equal_the_kernels_on_the_model_workspace(tree):
    model, rng = tree
    q, qd = engine.random_configuration(model, rng)
    qdd = rng.normal(size=model.nv)
    f_ext = rng.normal(size=(model.n_bodies, 6))
    tau = np.empty(model.nv)
    rnea_kernel(model.tree, q, qd, qdd, f_ext, 1.0, model.data, tau)
    assert rel_err(engine.rnea(model, q, qd, qdd, f_ext), tau) < 1e-13
    rnea_kernel(model.tree, q, qd, qdd, np.zeros((model.n_bodies, 6)), 0.0, model.data, tau)
    assert rel_err(engine.rnea(model, list(q), qd[::1].copy(), list(qdd), gravity=False), tau) < 1e-13
    M = np.zeros((model.nv, model.nv))
    crba_kernel(model.tree, q, model.data, M)
    assert rel_err(engine.crba(model, q), M) < 1e-13
    assert rel_err(engine.crba(model, list(q)), M) < 1e-13


@settings(max_examples=60, deadline=None)
@given(random_trees())
def test_flat_minv_equals_the_launches_on_model_data(tree):
    model, rng = tree
    q, _ = engine.random_configuration(model, rng)
    Minv = engine.minv(model, q)
    assert np.array_equal(Minv, Minv.T)
    assert rel_err(Minv, engine.minv(model, q, threads=2)) < 1e-13
    assert rel_err(Minv, minv_and_point_rows(model, q, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                                             np.zeros((0, 3, 6)), ws=model.make_workspace())[0]) < 1e-13
    assert rel_err(Minv @ engine.crba(model, q), np.eye(model.nv)) < 1e-9


def _floating():
    return engine.random_tree(4, branching="chain", seed=3, floating_base=True)


@pytest.mark.parametrize("call", ["aba", "rnea", "crba", "minv"])
def test_fast_path_inputs_are_checked_with_the_joint_named(call):
    model = _floating()
    q, qd = engine.random_configuration(model, np.random.default_rng(0))
    tau = np.zeros(model.nv)
    run = {"aba": lambda q, qd, tau: engine.aba(model, q, qd, tau),
           "rnea": lambda q, qd, tau: engine.rnea(model, q, qd, tau),
           "crba": lambda q, qd, tau: engine.crba(model, q),
           "minv": lambda q, qd, tau: engine.minv(model, q)}[call]
    bad = q.copy()
    bad[model.q_start[2]] = np.nan
    with pytest.raises(ModelError, match=model.joint_names[2]):
        run(bad, qd, tau)
    bad = q.copy()
    bad[3:7] *= 1.01  # the free joint's quaternion
    with pytest.raises(ModelError, match="norm"):
        run(bad, qd, tau)
    with pytest.raises(ModelError, match="shape"):
        run(np.zeros(model.nq + 1), qd, tau)
    if call in ("aba", "rnea"):
        bad = qd.copy()
        bad[-1] = np.inf
        with pytest.raises(ModelError, match=r"qd\[\d+\] is inf"):
            run(q, bad, tau)
        with pytest.raises(ModelError, match="tau" if call == "aba" else "qdd"):
            run(q, qd, np.zeros(model.nv - 1))
    if call == "aba":
        with pytest.raises(ModelError, match="out"):
            engine.aba(model, q, qd, tau, out=np.zeros(model.nv + 1))


def test_with_gravity_gets_its_own_flat_buffers():
    model = engine.random_tree(3, branching="chain", seed=1)
    q, qd = engine.random_configuration(model, np.random.default_rng(1))
    tau = np.zeros(model.nv)
    engine.aba(model, q, qd, tau)  # builds the model's flat buffers
    free = model.with_gravity((0.0, 0.0, 0.0))
    assert not np.allclose(engine.aba(free, q, qd, tau), engine.aba(model, q, qd, tau))
    assert rel_err(engine.aba(free, q, qd, tau), np.linalg.solve(engine.crba(free, q), -engine.bias_forces(free, q, qd))) < 1e-9


@settings(max_examples=40, deadline=None)
@given(random_trees())
def test_revolute_straight_line_paths_equal_the_general_joint_code(tree):
    """joint_pass, velocity_pass and the ABA inward step take revolute joints through their own code
    (chosen from the joint type); body by body it must give what the general functions give."""
    from engine.algorithms.aba import articulated_child_inertia, project_joint
    from engine.joints import REVOLUTE, joint_motion_subspace, joint_transform
    from engine.spatial import (add_transformed_inertia, compose_transforms, cross_force, cross_motion,
                                transform_force_transpose)
    model, rng = tree
    q, qd = engine.random_configuration(model, rng)
    tau = rng.normal(size=model.nv)
    ws, t = model.make_workspace(), model.tree
    f_ext = rng.normal(size=(model.n_bodies, 6))
    aba_kernel(t, q, qd, tau, f_ext, ws, np.empty(model.nv))
    ref = model.make_workspace()
    for i in np.flatnonzero(t.joint_type == REVOLUTE):
        vs, qs = t.v_start[i], t.q_start[i]
        EJ, rJ = np.empty((3, 3)), np.empty(3)
        joint_transform(REVOLUTE, t.joint_axis[i], q, qs, EJ, rJ)
        compose_transforms(EJ, rJ, t.tree_E[i], t.tree_r[i], ref.Xup_E[i], ref.Xup_r[i])
        joint_motion_subspace(REVOLUTE, t.joint_axis[i], q, qs, ref.S, vs)
        assert np.abs(ws.Xup_E[i] - ref.Xup_E[i]).max() < 1e-15 and np.array_equal(ws.Xup_r[i], ref.Xup_r[i])
        assert np.array_equal(ws.S[vs], ref.S[vs])
        vJ = ref.S[vs] * qd[vs]
        c = np.empty(6)
        cross_motion(ws.v[i], vJ, c)
        assert rel_err(ws.c[i], c) < 1e-14
        # the inward step's U, D⁻¹, u from the final articulated inertia of body i (ws.IA[i])
        ref.IA[i] = ws.IA[i]
        project_joint(t, i, ref, ref.zero_nv)
        assert rel_err(ws.U[vs], ref.U[vs]) < 1e-14 and rel_err(ws.Dinv[i, 0, 0], ref.Dinv[i, 0, 0]) < 1e-14
        assert rel_err(ws.u[vs], tau[vs] - ref.S[vs] @ ws.pA[i]) < 1e-14
    # every parent's articulated inertia and bias force from its children by the general code
    # (project_joint, articulated_child_inertia), starting from the kernel's per-body results
    ref.S[:] = ws.S  # (the revolute rows were checked above)
    IA, pA = t.link_inertia.copy(), np.empty((model.n_bodies, 6))
    for i in range(model.n_bodies):
        Iv = t.link_inertia[i] @ ws.v[i]
        cross_force(ws.v[i], Iv, pA[i])
    pA -= f_ext
    for i in range(model.n_bodies - 1, -1, -1):
        p, vs, nv = t.parent[i], t.v_start[i], t.joint_nv[i]
        assert rel_err(ws.IA[i], IA[i]) < 1e-12 and rel_err(ws.pA[i], pA[i]) < 1e-12
        if p < 0:
            continue
        ref.IA[i] = ws.IA[i]
        project_joint(t, i, ref, ref.zero_nv)
        Ia = np.empty((6, 6))
        articulated_child_inertia(t, i, ref, Ia)
        U, Dinv = ref.U[vs:vs + nv], ref.Dinv[i, :nv, :nv]
        pa = ws.pA[i] + Ia @ ws.c[i] + U.T @ (Dinv @ ws.u[vs:vs + nv])
        add_transformed_inertia(ws.Xup_E[i], ws.Xup_r[i], Ia, IA[p])
        f = np.empty(6)
        transform_force_transpose(ws.Xup_E[i], ws.Xup_r[i], pa, f)
        pA[p] += f
