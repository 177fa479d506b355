"""Every registered solver keeps the stepper contract of engine/stepper.py (docs/architecture.md)."""
import numpy as np
import pytest

import engine
from engine.solvers.registry import SOLVERS, STEPPERS, make_stepper
from engine.stepper import StepStats


@pytest.mark.parametrize("solver", SOLVERS)
def test_every_solver_keeps_the_contract(solver):
    scene = engine.scenes.pendulum(angle=0.7)
    st = make_stepper(solver, scene, 1e-3)
    state = engine.State(scene.q0.copy(), scene.qd0.copy(), 0.25)
    e0 = st.energy(state, scene.control(state.t))
    new = st.step(state, scene.control(state.t))
    assert isinstance(new, engine.State) and new.t == pytest.approx(0.25 + 1e-3, abs=1e-15)
    assert new.q.shape == (scene.model.nq,) and new.qd.shape == (scene.model.nv,)
    assert abs(new.qd[0]) > 0  # it fell
    assert isinstance(st.stats, StepStats) and st.stats.iterations >= 0 and st.stats.constraint_error >= 0
    assert st.contact is None and isinstance(st.divergence_hint, str)
    assert abs(st.energy(new, scene.control(new.t)) - e0) < 1e-3 * abs(e0)  # one small step keeps the energy
    np.testing.assert_array_equal(state.q, scene.q0)  # the step did not write into its input


def test_unknown_solver_names_the_choices():
    with pytest.raises(ValueError, match="unknown solver 'magic'; expected one of explicit, pcg"):
        make_stepper("magic", engine.scenes.pendulum(), 1e-3)
    assert tuple(STEPPERS) == SOLVERS == engine.simulator.SOLVERS


def test_the_explicit_step_is_aba_with_symplectic_euler():
    """The explicit stepper's own forces stage gives the step ABA + symplectic Euler would."""
    scene = engine.scenes.pendulum(angle=0.7)
    scene.add_joint_spring("hinge", 3.0, 0.2, rest=0.1)
    st = make_stepper("explicit", scene, 1e-3)
    q, qd = scene.q0, np.array([0.4])
    new = st.step(engine.State(q, qd, 0.0), scene.control(0.0))
    tau = -3.0 * (q - 0.1) - 0.2 * qd
    qd1 = qd + 1e-3 * engine.aba(scene.model, q, qd, tau)
    np.testing.assert_allclose(new.qd, qd1, rtol=1e-12)
    np.testing.assert_allclose(new.q, q + 1e-3 * qd1, rtol=1e-12)


def test_two_simulators_on_one_model_do_not_share_a_workspace():
    scene = engine.scenes.pendulum(angle=0.7)
    a, b = engine.Simulator(scene, "pcg", dt=1e-3), engine.Simulator(scene, "pcg", dt=1e-3)
    assert a._stepper.ws is not b._stepper.ws and a._stepper.ws is not scene.model.data
    a.step(5)
    b.step(2)
    b.step(3)
    np.testing.assert_array_equal(a.state.q, b.state.q)


def test_steppers_are_built_from_a_frozen_snapshot_of_the_scene():
    """Scene.finalize() copies what steppers are built from; later edits reach only new simulators,
    while what changes over time (joint rest, point forces) comes in the Control of each step."""
    scene = engine.scenes.pendulum(angle=0.7)
    scene.add_joint_spring("hinge", 3.0, rest=0.0)
    frozen = scene.finalize()
    sim = engine.Simulator(scene, "pcg", dt=1e-3)
    assert isinstance(sim._stepper.scene, engine.scene.FrozenScene) and frozen.finalize() is frozen
    scene.add_joint_spring("hinge", 50.0)  # an edit after the simulator was made
    scene.joint_rest[:] = 0.3              # … and a time-varying input
    assert frozen.joint_stiffness[0] == 3.0 and sim._stepper.forces.joint_stiffness[0] == 3.0
    control = scene.control(0.0)
    assert control.joint_rest[0] == 0.3 and frozen.joint_rest[0] == 0.0
    f, _ = sim._stepper.reduced_forces(np.array([0.5]), control.joint_rest)
    np.testing.assert_allclose(f, -3.0 * (0.5 - 0.3))


def test_the_contact_stage_has_its_own_workspace():
    scene = engine.scenes.centipede(2)
    sim = engine.Simulator(scene, "pcg", dt=1 / 240)
    assert sim.contact.ws is not scene.model.data and sim.contact.ws is not sim._stepper.ws
    sim.step(3)
    assert len(sim.contact.last.contacts) > 0

