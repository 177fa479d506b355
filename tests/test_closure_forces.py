"""The closure forces a nearly straight loop's tension starts each solve from (stages/closure_solve.py,
``predict_forces``; issue #31): the same solve's forces of the last two steps extrapolated, checked as before by the
augmented-Lagrangian iteration (``forces_moved``)."""
import numpy as np
import pytest

from engine import Simulator, scenes
from engine.scenes.bridge import NORMAL_CAR


@pytest.mark.parametrize("integrator, most", [("bdf2", 1.25), ("euler", 1.2), ("tr-bdf2", 2.4)])
def test_heavy_car_bridge_mostly_solves_once_per_stage(integrator, most):
    """A 500× car on a flexible bridge pulls its deck nearly straight, and its tension changes by ~5 % a step:
    with the last step's forces as the guess 1.5 solves a step (BDF2, Euler; 2.6 for TR-BDF2's two stages) —
    with their extrapolation 1.12, 1.07 and 2.24 —, the closures held to 1e-10 either way."""
    sim = Simulator(scenes.bridge(7, 7, car_mass=500 * NORMAL_CAR), "pcg", dt=1 / 60, integrator=integrator)
    stepper = sim._stepper
    solves, worst = [], 0.0
    for _ in range(180):
        sim.step()
        solves.append(stepper.stats.solves)  # projected PCG: one solve per pass of the iteration
        worst = max(worst, stepper.stats.constraint_error)
    assert np.mean(solves) < most
    assert worst < 1e-9
    assert np.all(np.isfinite(sim.state.qd))


def test_predict_forces_extrapolates_the_same_solve_of_the_last_two_steps():
    sim = Simulator(scenes.bridge(7, 7), "pcg", dt=0.1)
    stepper = sim._stepper
    closures, gs = stepper._closure_solve, stepper._joint_gs

    def w(x):
        return np.full((stepper.model.n_bodies, 6), float(x))

    def solve(t, found):  # a solve at control time t: its first guess, then the forces it records
        closures.predict_forces(t)
        guess = gs.closure_wrench.copy()
        gs.closure_wrench = w(found)
        return guess[0, 0]

    closures.straight = True
    gs.closure_wrench = w(0)
    assert solve(0.0, 1) == 0  # nothing recorded yet: the last forces
    assert solve(0.1, 2) == 1  # one step recorded: still the last
    assert solve(0.2, 3.5) == 3  # 2 · 2 − 1
    assert solve(0.3, 5) == 5  # 2 · 3.5 − 2
    closures.straight = False
    assert solve(0.4, 6) == 5  # not a nearly straight loop: the last forces
    closures.straight = True
    assert solve(0.6, 7) == 6  # a step skipped (another state): the last forces
    assert solve(0.55, 7) == 7  # back in time: the last forces

    two = Simulator(scenes.bridge(7, 7), "pcg", dt=0.1)._stepper  # two solves a step at the same t (TR-BDF2)
    closures, gs = two._closure_solve, two._joint_gs
    closures.straight = True
    gs.closure_wrench = w(0)
    assert (solve(0.0, 1), solve(0.0, 10)) == (0, 1)
    assert (solve(0.1, 2), solve(0.1, 20)) == (10, 2)  # each stage from the last solve until it has two steps
    assert (solve(0.2, 3), solve(0.2, 30)) == (3, 30)  # then from its own: 2 · 2 − 1, 2 · 20 − 10
