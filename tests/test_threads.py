"""Every public algorithm and Simulators from 8 threads at once, on one shared model and one shared scene, give
bit-identical results to the same calls made one after another (issue #36). The kernels release the GIL, so
before each thread had its own workspaces (``model.PerThreadWorkspaces``) 680–2006 of 3000 calls per thread
came back wrong. ``test_threads_10000_calls`` is the acceptance run (10 000 calls of each function and 10 000
steps per thread; slow); ``test_threads_quick`` runs the same check with fewer calls in every test run."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import engine

THREADS = 8
INPUTS = 16  # distinct inputs per function: threads at different places of the cycle compute different things


def _model():
    return engine.random_tree(16, seed=7, floating_base=True)  # spherical and free joints: quaternions in q


def _inputs(model):
    rng = np.random.default_rng(11)
    out = []
    for _ in range(INPUTS):
        q = engine.random_configuration(model, rng)[0]
        q_target = engine.random_configuration(model, rng)[0]
        out.append((q, rng.standard_normal(model.nv), rng.standard_normal(model.nv), q_target))
    return out


def _calls(model):
    """name → function of one input (q, qd, u, q_target), returning arrays (a tuple for several)."""
    return {
        "aba": lambda q, qd, u, qt: engine.aba(model, q, qd, u),
        "rnea": lambda q, qd, u, qt: engine.rnea(model, q, qd, u),
        "crba": lambda q, qd, u, qt: engine.crba(model, q),
        "minv": lambda q, qd, u, qt: engine.minv(model, q),
        "spd": lambda q, qd, u, qt: engine.spd(model, q, qd, qt, 50.0, 5.0, 0.01, tau_ext=u, root_kp=10.0),
        "spd_dense": lambda q, qd, u, qt: engine.spd(model, q, qd, qt, 50.0, 5.0, 0.01, method="dense"),
        "link_poses": lambda q, qd, u, qt: engine.link_poses(model, q),
        "bias_forces": lambda q, qd, u, qt: engine.bias_forces(model, q, qd),
        "energy": lambda q, qd, u, qt: np.array([engine.energy(model, q, qd)]),
    }


def _flat(result):
    return np.concatenate([np.ravel(r) for r in result]) if isinstance(result, tuple) else np.ravel(result)


def _scene():
    """A chain with joint springs whose rest a controller moves (Simulators share the scene and its controller)."""
    scene = engine.scenes.hanging_chain(6)
    for name in scene.model.joint_names:
        scene.add_joint_spring(name, 2.0, 0.1)
    rest0 = scene.joint_rest.copy()

    def sway(sc, t):
        sc.joint_rest[:] = rest0 + 0.3 * np.sin(3.0 * t)

    scene.add_controller(sway)
    return scene


SOLVERS = ("pcg", "explicit", "direct")


def _simulate(scene, solver, steps):
    """The final state and a fingerprint of the whole trajectory (the sum of every q and q̇)."""
    sim = engine.Simulator(scene, solver, dt=1 / 240)
    total = 0.0
    for _ in range(steps):
        s = sim.step()
        total += float(s.q.sum()) + float(s.qd.sum())
    return np.concatenate([sim.state.q, sim.state.qd, [total]])


def _hammer(calls_per_function: int, steps: int):
    model, scene = _model(), _scene()
    inputs = _inputs(model)
    calls = _calls(model)
    expected = {name: [_flat(f(*x)) for x in inputs] for name, f in calls.items()}
    expected_sim = {solver: _simulate(scene, solver, steps) for solver in SOLVERS}
    wrong: dict = {}
    errors: list = []
    barrier = threading.Barrier(THREADS)

    def worker(k):
        try:
            barrier.wait()
            for i in range(calls_per_function):
                j = (i + 3 * k) % INPUTS
                for name, f in calls.items():
                    if not np.array_equal(_flat(f(*inputs[j])), expected[name][j]):
                        wrong[(name, k)] = wrong.get((name, k), 0) + 1
            solver = SOLVERS[k % len(SOLVERS)]
            if not np.array_equal(_simulate(scene, solver, steps), expected_sim[solver]):
                wrong[(f"Simulator {solver}", k)] = 1
        except Exception as err:  # noqa: BLE001 - reported below with the thread
            errors.append((k, repr(err)))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert wrong == {}, f"wrong results (function, thread): count — {wrong}"


def test_threads_quick():
    _hammer(calls_per_function=200, steps=300)


@pytest.mark.slow
def test_threads_10000_calls():
    _hammer(calls_per_function=10_000, steps=10_000)


def test_a_model_copied_or_pickled_gets_workspaces_of_its_own():
    import copy
    import pickle

    model = _model()
    q = model.neutral_q()
    engine.aba(model, q, np.zeros(model.nv), np.ones(model.nv))
    for other in (copy.copy(model), copy.deepcopy(model), pickle.loads(pickle.dumps(model)),
                  model.with_gravity((0, 0, -1))):
        assert other._per_thread is not model._per_thread
        assert other.data is not model.data
        assert np.array_equal(engine.crba(other, q), engine.crba(model, q))
