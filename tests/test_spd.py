"""Stable PD (seed 001): MABA vs dense / sparse / PCG, limits, stability, characters and motions."""
import numpy as np
import pytest
from hypothesis import given, settings

import engine
from engine import joints as J
from engine.control import configuration_difference, motion_for, spd, spd_torques, track
from engine.control.spd import METHODS
from engine.scenes.characters import depth_in_dofs
from trees import random_trees, rel_err

TOL = 1e-9
CHARACTERS = {"humanoid": lambda: engine.scenes.humanoid(), "dog": lambda: engine.scenes.dog(),
              "snake36": lambda: engine.scenes.snake(36), "snake72": lambda: engine.scenes.snake(72),
              "snake195": lambda: engine.scenes.snake(195)}
MOTION = {"humanoid": "run", "dog": "canter", "snake36": "slither", "snake72": "slither", "snake195": "slither"}


def _random_problem(model, rng, gain_scale=1.0):
    q, qd = engine.random_configuration(model, rng)
    q_target, _ = engine.random_configuration(model, rng)
    kp = rng.uniform(0.0, 100.0, model.nv) * gain_scale
    kd = rng.uniform(0.0, 10.0, model.nv) * gain_scale
    dt = float(rng.uniform(1e-3, 1 / 30))
    tau_ext = rng.normal(size=model.nv)
    return q, qd, q_target, kp, kd, dt, tau_ext


def _reference_qdd(model, q, qd, q_target, kp, kd, dt, tau_ext):
    """Eq. 7 assembled with numpy: (M + Δt K_d) q̈ = −K_p((q ⊖ q̄) + Δt q̇) − K_d q̇ + τ_ext − C."""
    M = engine.crba(model, q)
    C = engine.bias_forces(model, q, qd)
    e = np.concatenate([J.difference(int(model.joint_type[j]), q_target[model.q_slice(n)], q[model.q_slice(n)])
                        for j, n in enumerate(model.joint_names)]) + dt * qd
    A = M + np.diag(kd * dt)
    return np.linalg.solve(A, -kp * e - kd * qd + tau_ext - C), np.linalg.cond(A), M, C


# --------------------------------------------------------------- 1. four methods agree
@settings(max_examples=200)
@given(random_trees())
def test_four_methods_agree_on_random_trees(tree):
    """Every joint type, fixed and floating base; 1e-9 relative (measured worst over 600 trees: 2e-12, PCG)."""
    model, rng = tree
    q, qd, q_target, kp, kd, dt, tau_ext = _random_problem(model, rng)
    want, cond, M, C = _reference_qdd(model, q, qd, q_target, kp, kd, dt, tau_ext)
    got = {m: spd(model, q, qd, q_target, kp, kd, dt, tau_ext, method=m) for m in METHODS}
    for method, (qdd, tau) in got.items():
        assert rel_err(qdd, got["maba"][0]) < TOL, method
        assert rel_err(qdd, want) < TOL * max(1.0, cond), method  # numpy's solve has its own round-off
        # Eq. 5 with the SPD torques of Eq. 6
        assert rel_err(M @ qdd + C, tau + tau_ext) < TOL * max(1.0, cond), method


@pytest.mark.parametrize("name", list(CHARACTERS))
def test_four_methods_agree_on_characters_with_paper_gains(name):
    scene = CHARACTERS[name]()
    model = scene.model
    motion = motion_for(scene, MOTION[name])
    q, qd = motion(0.31), motion.velocity(0.31)
    q_target = motion(0.31 + 1 / 30)
    got = {m: spd(model, q, qd, q_target, 75000.0, 4000.0, 1 / 30, method=m, root_kp=20000.0, root_kd=2000.0)
           for m in METHODS}
    for method, (qdd, tau) in got.items():
        assert rel_err(qdd, got["maba"][0]) < TOL, method
        assert rel_err(tau, got["maba"][1]) < TOL, method


def test_joint_difference_kernel_matches_joints_difference():
    for seed in range(20):
        model = engine.random_tree(6, seed=seed, floating_base=bool(seed % 2))
        rng = np.random.default_rng(seed)
        q0, _ = engine.random_configuration(model, rng)
        q1, _ = engine.random_configuration(model, rng, scale=0.5)
        want = np.concatenate([J.difference(int(model.joint_type[j]), q0[model.q_slice(n)], q1[model.q_slice(n)])
                               for j, n in enumerate(model.joint_names)])
        got = configuration_difference(model, q0, q1)
        assert np.allclose(got, want, atol=1e-12), seed
        back = engine.integrate(model, q0, got, 1.0)  # equal to q1 up to each quaternion's sign
        assert np.abs(configuration_difference(model, q1, back)).max() < 1e-10


# --------------------------------------------------------------- 2. limits
@settings(max_examples=50)
@given(random_trees())
def test_zero_gains_maba_is_exactly_aba(tree):
    model, rng = tree
    q, qd, q_target, _, _, dt, tau_ext = _random_problem(model, rng)
    z = np.zeros(model.nv)
    qdd, tau = spd(model, q, qd, q_target, z, z, dt, tau_ext)
    assert np.array_equal(qdd, engine.aba(model, q, qd, tau_ext))
    assert not np.any(tau)


@settings(max_examples=50)
@given(random_trees())
def test_vanishing_time_step_gives_plain_pd(tree):
    model, rng = tree
    q, qd, q_target, kp, kd, _, tau_ext = _random_problem(model, rng)
    e = configuration_difference(model, q_target, q)
    tau_pd = -kp * e - kd * qd  # Eq. 2
    want = engine.aba(model, q, qd, tau_pd + tau_ext)
    cond = np.linalg.cond(engine.crba(model, q))
    for dt in (1e-4, 1e-7, 1e-10):
        qdd, tau = spd(model, q, qd, q_target, kp, kd, dt, tau_ext)
        assert rel_err(tau, tau_pd - dt * (kp * qd + kd * qdd)) < 1e-12  # Eq. 6 is PD plus O(Δt) terms
        assert rel_err(qdd, want) < max(1.0, cond) * (1e4 * dt + 1e-12)


def test_scalar_gains_leave_a_floating_root_untracked_unless_root_gains_given():
    scene = engine.scenes.humanoid()
    model = scene.model
    q = scene.q0.copy()
    q[:3] += (0.3, -0.2, 0.1)  # root displaced, internal joints on target
    qd = np.zeros(model.nv)
    _, tau = spd(model, q, qd, scene.q0, 75000.0, 4000.0, 1 / 30)
    assert not np.any(tau[:6])
    _, tau = spd(model, q, qd, scene.q0, 75000.0, 4000.0, 1 / 30, root_kp=20000.0, root_kd=2000.0)
    assert np.abs(tau[3:6]).max() > 1000.0  # hand-of-God force pulls the root back
    assert spd_torques(model, q, qd, scene.q0, 75000.0, 4000.0, 1 / 30) is not None


def test_per_dof_gains_and_qd_target():
    model = engine.random_tree(5, seed=3, floating_base=True)
    rng = np.random.default_rng(3)
    q, qd, q_target, kp, kd, dt, tau_ext = _random_problem(model, rng)
    qd_target = rng.normal(size=model.nv)
    qdd, tau = spd(model, q, qd, q_target, kp, kd, dt, tau_ext, qd_target=qd_target, method="dense")
    e = configuration_difference(model, q_target, q) + dt * qd
    assert rel_err(tau, -kp * e - kd * (qd + dt * qdd - qd_target)) < 1e-12  # Eq. 6 with a velocity target
    assert rel_err(spd(model, q, qd, q_target, kp, kd, dt, tau_ext, qd_target=qd_target)[0], qdd) < TOL


@pytest.mark.parametrize("bad, match", [
    (dict(dt=0.0), "dt"), (dict(dt=-1.0), "dt"), (dict(dt=float("nan")), "dt"),
    (dict(kp=-1.0), "kp"), (dict(kd=np.full(3, 1.0)), "kd"), (dict(kp=float("nan")), "kp"),
    (dict(q=np.zeros(2)), "q"), (dict(qd=np.full(12, np.nan)), "qd"), (dict(q_target=np.ones(5)), "q_target"),
    (dict(tau_ext=np.zeros(3)), "tau_ext"), (dict(method="lu"), "method"),
])
def test_bad_input_raises_value_error_naming_the_argument(bad, match):
    model = engine.random_tree(4, seed=0, floating_base=True)
    args = dict(q=model.neutral_q(), qd=np.zeros(model.nv), q_target=model.neutral_q(), kp=10.0, kd=1.0, dt=0.01,
                tau_ext=None, method="maba")
    args.update(bad)
    with pytest.raises(ValueError, match=match):
        spd(model, **args)


# --------------------------------------------------------------- 3. stability
@pytest.mark.parametrize("name", list(CHARACTERS))
def test_maba_tracks_stably_at_30hz_where_explicit_pd_diverges(name):
    scene = CHARACTERS[name]()
    motion = motion_for(scene, MOTION[name])
    common = dict(dt=1 / 30, duration=2.0, kp=75000.0, kd=4000.0, root_kp=20000.0, root_kd=2000.0)
    spd_run = track(scene, motion, method="maba", **common)
    pd_run = track(scene, motion, method="pd", **common)
    err = spd_run.joint_error()
    assert not spd_run.diverged and spd_run.steps == 60
    assert np.all(np.isfinite(err)) and err.max() < 0.2  # rad RMS over internal dofs
    assert err[-15:].max() < 2 * err[15:45].max() + 1e-3  # bounded: no growth over the run
    assert pd_run.diverged and pd_run.steps < 10  # |q̇| > 1e6 within a few steps


def test_dense_tracks_the_same_trajectory_as_maba():
    scene = engine.scenes.dog()
    motion = motion_for(scene, "canter")
    runs = {m: track(scene, motion, method=m, dt=1 / 60, duration=1.0, root_kp=20000.0, root_kd=2000.0)
            for m in ("maba", "dense", "sparse", "pcg")}
    runs["standalone"] = track(scene, motion, method="maba", standalone=True, dt=1 / 60, duration=1.0,
                               root_kp=20000.0, root_kd=2000.0)
    for m, r in runs.items():
        assert rel_err(r.q, runs["maba"].q) < 1e-8, m
    assert runs["pcg"].iterations > 1 and runs["dense"].iterations == 0


def test_root_tracking_keeps_the_root_on_the_reference():
    scene = engine.scenes.humanoid()
    motion = motion_for(scene, "walk")
    free = track(scene, motion, duration=1.0)
    held = track(scene, motion, duration=1.0, root_kp=20000.0, root_kd=2000.0)
    drop_free = free.q_ref[-1, 2] - free.q[-1, 2]
    drop_held = held.q_ref[-1, 2] - held.q[-1, 2]
    assert drop_free > 3.0  # free fall: ½ g t² ≈ 4.9 m
    assert abs(drop_held) < 0.1
    assert np.nanmax(held.end_effector_error()) < 0.3


# --------------------------------------------------------------- characters and motions
@pytest.mark.parametrize("name, n, d", [("humanoid", 34, 13), ("dog", 72, 24), ("snake36", 36, 36),
                                        ("snake72", 72, 72), ("snake195", 195, 195)])
def test_characters_match_table_1(name, n, d):
    scene = CHARACTERS[name]()
    assert (scene.model.nv, depth_in_dofs(scene.model)) == (n, d) == scene.metadata["table1"]
    assert scene.model.is_floating
    assert np.all(scene.model.body_mass > 0)


def test_snake_sizes_and_bad_sizes():
    assert engine.scenes.snake(780).model.nv == 780
    for bad in (35, 6, "x"):
        with pytest.raises(ValueError, match="n_dof"):
            engine.scenes.snake(bad)


@pytest.mark.parametrize("scene_name, motion", [("humanoid", "walk"), ("humanoid", "run"), ("dog", "trot"),
                                                ("dog", "canter"), ("snake36", "slither"), ("snake195", "slither")])
def test_motions_are_periodic_smooth_and_inside_joint_limits(scene_name, motion):
    scene = CHARACTERS[scene_name]()
    model = scene.model
    m = motion_for(scene, motion)
    t = np.linspace(0.0, m.period, 200)
    c = m.channels(t)[:, 6:]  # internal joints: the channels are the limited coordinates
    assert np.all(c >= model.joint_lower[6:] - 1e-12) and np.all(c <= model.joint_upper[6:] + 1e-12)
    a, b = m(0.2), m(0.2 + m.period)
    d = configuration_difference(model, a, b)
    assert np.abs(d[:3]).max() < 1e-9 and np.abs(d[6:]).max() < 1e-9  # periodic up to the root's travel
    assert np.abs(m.velocity(0.2)).max() < 50.0
    assert np.abs(m(0.0)).max() < 10 and m(0.0).shape == (model.nq,)
    with pytest.raises(ValueError, match="motion"):
        motion_for(scene, "backflip")


# --------------------------------------------------------------- pure-Python fallback
_NOJIT_SCRIPT = """
import json, sys, numpy as np, engine
from engine.control import spd, track, motion_for
assert not engine.JIT_ENABLED
m = engine.random_tree(6, seed=2, floating_base=True)
rng = np.random.default_rng(2)
q, qd = engine.random_configuration(m, rng)
qt, _ = engine.random_configuration(m, rng)
out = {k: spd(m, q, qd, qt, 50.0, 5.0, 0.02, method=k, root_kp=10.0, root_kd=1.0)[0].tolist()
       for k in ("maba", "dense", "sparse", "pcg")}
s = engine.scenes.snake(12)
out["track"] = track(s, motion_for(s, "slither"), steps=5, root_kp=2e4, root_kd=2e3).q[-1].tolist()
json.dump(out, sys.stdout)
"""


def test_spd_and_tracking_without_numba_match():
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, ENGINE_DISABLE_JIT="1", PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-c", _NOJIT_SCRIPT], env=env, capture_output=True, text=True, check=True)
    got = json.loads(res.stdout)
    m = engine.random_tree(6, seed=2, floating_base=True)
    rng = np.random.default_rng(2)
    q, qd = engine.random_configuration(m, rng)
    qt, _ = engine.random_configuration(m, rng)
    for k in ("maba", "dense", "sparse", "pcg"):
        want = spd(m, q, qd, qt, 50.0, 5.0, 0.02, method=k, root_kp=10.0, root_kd=1.0)[0]
        assert rel_err(got[k], want) < 1e-10, k
    s = engine.scenes.snake(12)
    want = track(s, motion_for(s, "slither"), steps=5, root_kp=2e4, root_kd=2e3).q[-1]
    assert rel_err(got["track"], want) < 1e-10
