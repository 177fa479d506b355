"""``_jit.EntryPoints``: a kernel's compiled entry point resolved at its first call and called directly after, the
same results as numba's dispatcher; ``CHECK`` catches a call with other argument types; without numba, or for a
callable that is no kernel, the callable itself."""
from collections import namedtuple

import numpy as np
import pytest

from engine import _jit
from engine._jit import EntryPoints, kernel

Pair = namedtuple("Pair", "a b")


@kernel
def _pair_sum(pair, x, out):
    for i in range(x.shape[0]):
        out[i] = pair.a[i] * x[i] + pair.b[i]


def _expected(pair, x):
    return pair.a * x + pair.b


def test_entry_points_give_the_dispatchers_results_and_resolve_once():
    n = 5
    pair = Pair(np.linspace(1.0, 2.0, n), np.arange(n, dtype=float))
    k = EntryPoints()
    for step in range(3):
        x, out, ref = np.full(n, 0.5 + step), np.empty(n), np.empty(n)
        k(_pair_sum, pair, x, out)
        _pair_sum(pair, x, ref)
        assert np.array_equal(out, ref) and np.array_equal(out, _expected(pair, x))
    assert len(k._entries) == 1
    if _jit.JIT_ENABLED:  # the entry point numba compiled, not its dispatcher
        assert k._entries[(_pair_sum, None)] is not _pair_sum
    k(_pair_sum, pair, np.ones((2, n))[:, 0].copy(), np.empty(n), variant="other")
    assert len(k._entries) == 2


@pytest.mark.skipif(not _jit.JIT_ENABLED, reason="numba is off")
def test_check_catches_another_layout(monkeypatch):
    monkeypatch.setattr(EntryPoints, "CHECK", True)
    n = 4
    pair = Pair(np.ones(n), np.zeros(n))
    k = EntryPoints()
    k(_pair_sum, pair, np.ones(n), np.empty(n))
    k(_pair_sum, pair, np.full(n, 2.0), np.empty(n))  # same types: fine
    strided = np.ones(2 * n)[::2]
    with pytest.raises(TypeError, match="_pair_sum"):
        k(_pair_sum, pair, strided, np.empty(n))


def test_without_numba_or_for_a_plain_callable_the_callable_itself(monkeypatch):
    calls = []

    def plain(a, b):
        calls.append((a, b))
        return a + b

    k = EntryPoints()
    assert k(plain, 1, 2) == 3 and k._entries[(plain, None)] is plain
    monkeypatch.setattr(_jit, "JIT_ENABLED", False)
    k2 = EntryPoints()
    pair = Pair(np.ones(3), np.ones(3))
    out = np.empty(3)
    k2(_pair_sum, pair, np.ones(3), out)
    assert k2._entries[(_pair_sum, None)] is _pair_sum and np.array_equal(out, np.full(3, 2.0))


@pytest.mark.skipif(not _jit.JIT_ENABLED, reason="numba is off")
@pytest.mark.parametrize("solver,options", [("pcg", {}), ("direct", {}), ("dense", {}),
                                            ("pcg", {"closure_method": "dual"})])
def test_the_bridge_steps_call_every_entry_point_with_its_first_calls_types(monkeypatch, solver, options):
    """The stepper's and the closure stage's call sites keep the types they promise (``CHECK`` raises otherwise):
    the taut bridge under a heavy car (closure forces solved again), and the crate landing on the closed rope
    bridge (contact rows held in the post-stabilization)."""
    import engine
    from engine import scenes
    from engine.scenes.bridge import NORMAL_CAR
    from engine.scenes.collisions import crate_on_bridge

    monkeypatch.setattr(EntryPoints, "CHECK", True)
    for scene, dt, steps in ((scenes.bridge(7, 7, car_mass=500 * NORMAL_CAR), 1 / 60, 30),
                             (crate_on_bridge(closed_at="middle"), 1 / 48, 36)):
        sim = engine.Simulator(scene, solver, dt=dt, **options)
        sim.step(steps)
        assert np.all(np.isfinite(sim.state.q)) and sim.stats.constraint_error < 1e-3
        assert len(sim._stepper.kernels._entries) >= 4
