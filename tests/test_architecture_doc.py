"""docs/architecture.md's worked example of adding a solver runs as written."""
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import engine
from engine.solvers import registry

DOC = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"


def _example_module():
    text = DOC.read_text(encoding="utf-8")
    code = re.search(r"`engine/solvers/steppers/rk4\.py`:\s*```python\n(.*?)```", text, re.S).group(1)
    assert '"rk4": RK4Stepper' in text  # the registry entry the doc shows
    mod = types.ModuleType("engine.solvers.steppers.rk4")
    mod.__package__ = "engine.solvers.steppers"
    sys.modules[mod.__name__] = mod
    try:
        exec(compile(code, str(DOC), "exec"), mod.__dict__)
    finally:
        del sys.modules[mod.__name__]
    return mod


def test_the_worked_example_adds_a_solver(monkeypatch):
    mod = _example_module()
    monkeypatch.setitem(registry.STEPPERS, "rk4", mod.RK4Stepper)
    sim = engine.Simulator(engine.scenes.pendulum(angle=1.0), solver="rk4", dt=1e-2)
    e0 = sim.energy()
    sim.step(100)
    assert abs(sim.energy() - e0) < 1e-6 * abs(e0) + 1e-9  # RK4: energy error O(h⁴)
    ref = engine.Simulator(engine.scenes.pendulum(angle=1.0), solver="explicit", dt=1e-4)
    ref.step(10000)
    assert abs(sim.state.t - ref.state.t) < 1e-9
    assert np.abs(sim.state.q - ref.state.q).max() < 2e-3  # symplectic Euler at h = 1e-4: O(h) phase error
    assert sim.stats.steps == 100 and sim.stats.iterations[-1] == 0


def test_the_worked_example_refuses_what_it_does_not_model(monkeypatch):
    mod = _example_module()
    monkeypatch.setitem(registry.STEPPERS, "rk4", mod.RK4Stepper)
    scene = engine.scenes.pendulum()
    scene.add_joint_spring("hinge", 10.0)
    with pytest.raises(ValueError, match="solver 'rk4' takes gravity and joints only; scene 'pendulum'"):
        engine.Simulator(scene, solver="rk4", dt=1e-2)
