"""The one-launch paths of engine.aba and engine.minv (FlatModel buffers, checks inside the kernel)
against the launches on model.tree / model.data, and their input checks."""
import numpy as np
import pytest
from hypothesis import given, settings

import engine
from engine.algorithms.aba import aba_kernel
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


@pytest.mark.parametrize("call", ["aba", "minv"])
def test_fast_path_inputs_are_checked_with_the_joint_named(call):
    model = _floating()
    q, qd = engine.random_configuration(model, np.random.default_rng(0))
    tau = np.zeros(model.nv)
    run = (lambda q, qd, tau: engine.aba(model, q, qd, tau)) if call == "aba" else (lambda q, qd, tau: engine.minv(model, q))
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
    if call == "aba":
        bad = qd.copy()
        bad[-1] = np.inf
        with pytest.raises(ModelError, match="qd"):
            run(q, bad, tau)
        with pytest.raises(ModelError, match="tau"):
            run(q, qd, np.zeros(model.nv - 1))
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
