"""PCG reports what it did: per-step convergence, a count, one warning or an error; tol and
max_iter are checked at the door (no NaN reported as "try a smaller dt")."""
import warnings

import numpy as np
import pytest

import engine
from engine.errors import ConvergenceError, ConvergenceWarning, SimulationError, SimulatorOptionError


def chain():
    return engine.scenes.bridge(9, 2)  # springs couple the tree: PCG needs ~5 iterations


def test_capped_pcg_is_counted_and_warned_once():
    sim = engine.Simulator(chain(), "pcg", dt=1 / 60, max_iter=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sim.step(24)
    ours = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(ours) == 1 and "max_iter=2" in str(ours[0].message) and "step 1 " in str(ours[0].message)
    capped = [its == 2 for its in sim.stats.iterations]
    assert sim.stats.converged == [not c for c in capped]
    assert sim.stats.unconverged_steps == sum(capped) >= 20


def test_converged_pcg_reports_converged_steps():
    sim = engine.Simulator(chain(), "pcg", dt=1 / 60)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        sim.step(10)
    assert sim.stats.unconverged_steps == 0 and all(sim.stats.converged) and len(sim.stats.converged) == 10


def test_on_unconverged_raise_and_ignore():
    sim = engine.Simulator(chain(), "pcg", dt=1 / 60, max_iter=2, on_unconverged="raise")
    q0 = sim.state.q.copy()
    with pytest.raises(ConvergenceError, match=r"PCG did not reach tol=1e-08 within max_iter=2 iterations at step 1"):
        sim.step()
    assert np.array_equal(sim.state.q, q0) and sim.stats.steps == 0  # the rejected step is not taken
    sim = engine.Simulator(chain(), "pcg", dt=1 / 60, max_iter=2, on_unconverged="ignore")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        sim.step(5)
    assert sim.stats.unconverged_steps == 5


@pytest.mark.parametrize("options, message", [
    ({"tol": 0}, r"'tol' \(PCG relative residual\) must be in \(0, 1\), got 0.0"),
    ({"tol": -1}, r"'tol' \(PCG relative residual\) must be in \(0, 1\), got -1.0"),
    ({"tol": float("nan")}, "'tol' must be finite"),
    ({"tol": "1e-8"}, r"'tol' must be a number, got '1e-8' \(str\)"),
    ({"max_iter": 0}, "'max_iter' must be a positive integer, got 0"),
    ({"max_iter": 2.5}, "'max_iter' must be a positive integer, got 2.5"),
    ({"on_unconverged": "shout"}, "'on_unconverged' must be one of 'warn', 'raise', 'ignore', got 'shout'"),
    ({"dt": "0.01"}, r"'dt' must be a number, got '0.01' \(str\)"),
    ({"dt": -0.01}, "'dt' must be a positive number of seconds, got -0.01"),
])
def test_bad_options_are_named(options, message):
    dt = options.pop("dt", 1 / 60)
    with pytest.raises(SimulatorOptionError, match=message) as err:
        engine.Simulator(chain(), "pcg", dt=dt, **options)
    assert isinstance(err.value, ValueError) and isinstance(err.value, SimulationError)
    assert "smaller dt" not in str(err.value)


@pytest.mark.parametrize("n, message", [(-3, "n must be ≥ 0, got -3"), (2.7, r"whole number of steps, got 2.7 \(float\)"),
                                        ("2", "whole number of steps, got '2'"), (True, "whole number of steps")])
def test_step_count_is_checked(n, message):
    sim = engine.Simulator(chain(), "pcg", dt=1 / 60)
    with pytest.raises(SimulatorOptionError, match=message):
        sim.step(n)
    sim.step(np.int64(2))
    sim.step(0)
    assert sim.stats.steps == 2
