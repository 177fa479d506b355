"""``Simulator.step_energy``: the energy the step's guard already computed, the same as ``energy()`` to
round-off, and None whenever it is not the current state's."""
import numpy as np
import pytest

from engine import Simulator
from engine.apps.advise.cli import build_scene


@pytest.mark.parametrize("name, params", [("hanging_chain", {"n": 6}), ("tree", {"levels": 2})])
def test_step_energy_is_the_energy_of_the_state_and_its_start(name, params):
    sim = Simulator(build_scene(name, params), "pcg", dt=1 / 60)
    assert sim.step_energy() is None and sim.step_energy(start=True) is None  # no step yet
    for _ in range(5):
        before = sim.state
        e_before = sim.energy()
        sim.step(1)
        e = sim.energy()
        assert sim.step_energy() == pytest.approx(e, rel=1e-12, abs=1e-12)
        assert sim.step_energy(start=True) == pytest.approx(e_before, rel=1e-12, abs=1e-12)
        assert sim.energy(before) == e_before
    # a state set from outside: not the step's, so nothing cached is returned
    sim.state = type(sim.state)(sim.state.q.copy(), sim.state.qd * 0.5, sim.state.t)
    assert sim.step_energy() is None and sim.step_energy(start=True) is None
    sim.step(1)
    assert sim.step_energy() == pytest.approx(sim.energy(), rel=1e-12, abs=1e-12)


def test_step_energy_is_none_without_the_guard_or_for_another_solver():
    scene = build_scene("hanging_chain", {"n": 4})
    for sim in (Simulator(scene, "pcg", dt=1 / 60, energy_guard=False), Simulator(scene, "explicit", dt=1 / 600)):
        sim.step(2)
        assert sim.step_energy() is None and sim.step_energy(start=True) is None
        assert np.isfinite(sim.energy())
