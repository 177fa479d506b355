"""The closure forces a nearly straight loop's tension starts each solve from (stages/closure_solve.py,
``predict_forces``; issue #31): the same solve's forces of the last two steps extrapolated where they follow a trend,
checked as before by the augmented-Lagrangian iteration (``forces_moved``)."""
import numpy as np
import pytest

from engine import Simulator, scenes
from engine.scenes.bridge import NORMAL_CAR


@pytest.mark.parametrize("integrator, most", [("bdf2", 1.25), ("euler", 1.2), ("tr-bdf2", 2.4)])
def test_heavy_car_bridge_mostly_solves_once_per_stage(integrator, most):
    """A 500× car on a flexible bridge pulls its deck nearly straight, and its tension changes by ~5 % a step:
    with the last step's forces as the guess 1.5 solves a step (BDF2, Euler; 2.6 for TR-BDF2's two stages) —
    with their extrapolation 1.13, 1.08 and 2.26 —, the closures held to 1e-10 either way."""
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


def test_predict_forces_extrapolates_the_same_solve_of_the_last_steps_where_they_follow_a_trend():
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
    assert solve(0.1, 2) == 1  # too few steps recorded to judge a trend: the last forces
    assert solve(0.2, 3) == 2
    assert solve(0.3, 5) == 4  # 2 · 3 − 2 (it would have foreseen 3 exactly)
    assert solve(0.4, 7) == 7  # 2 · 5 − 3 (off by 1 where the last forces were off by 2)
    assert solve(0.5, 6) == 9  # 2 · 7 − 5
    assert solve(0.6, 8) == 6  # ringing: 2 · 7 − 5 was off by 3, 7 by 1 — the last forces
    closures.straight = False
    assert solve(0.7, 10) == 8  # not a nearly straight loop: the last forces
    closures.straight = True
    assert solve(0.9, 12) == 10  # a step skipped (another state): the last forces
    assert solve(0.85, 13) == 12  # back in time: the last forces

    two = Simulator(scenes.bridge(7, 7), "pcg", dt=0.1)._stepper  # two solves a step at the same t (TR-BDF2)
    closures, gs = two._closure_solve, two._joint_gs
    closures.straight = True
    gs.closure_wrench = w(0)
    assert (solve(0.0, 1), solve(0.0, 10)) == (0, 1)
    assert (solve(0.1, 2), solve(0.1, 20)) == (10, 2)  # the last solve's forces until a stage has three steps
    assert (solve(0.2, 3), solve(0.2, 30)) == (20, 3)
    assert (solve(0.3, 4), solve(0.3, 40)) == (4, 40)  # then each from its own: 2 · 3 − 2, 2 · 30 − 20
