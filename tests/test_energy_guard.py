"""The energy guard of the RedMax step (engine/solvers/stages/energy_guard.py) and the backward-Euler
refinement on the incremental potential (engine/solvers/steppers/incremental_potential.py), issue #22."""
import numpy as np
import pytest

from engine import Simulator
from engine.energy import kinetic_energy, potential_energy
from engine.integrators import configuration_difference
from engine.errors import SimulationError
from engine.model import State
from engine.scenes import hanging_chain
from engine.solvers.steppers.incremental_potential import IncrementalPotentialStep


def test_guard_keeps_a_conservative_chain_below_its_starting_energy():
    """The thesis's step (no geometric stiffness) diverges on this chain at 1/30 s; with the guard the
    energy never exceeds E(0) — unless a step lifted the chain above E(0), when the guard stops it
    (q̇⁺ = 0; the guard cannot move q⁺) — and the guard is what acted."""
    with pytest.raises(SimulationError):
        Simulator(hanging_chain(64, damping=0.0), "pcg", dt=1 / 30, geometric_stiffness=False,
                  energy_guard=False).step(300)
    sim = Simulator(hanging_chain(64, damping=0.0), "pcg", dt=1 / 30, geometric_stiffness=False)
    e0, excess = sim.energy(), []
    for _ in range(300):
        sim.step(1)
        if kinetic_energy(sim.model, sim.state.q, sim.state.qd) > 0:
            excess.append(sim.energy() - e0)
    assert max(excess) <= 1e-6 * abs(e0)
    assert sim._stepper._energy_guard.clamped_steps > 0


def test_guard_budget_follows_the_joint_dampers():
    """With damping the budget falls by h Σ c q̇⁺² per step, so the energy stays below E(0) minus that."""
    sim = Simulator(hanging_chain(32, damping=0.5), "pcg", dt=1 / 30)
    e0 = sim.energy()
    sim.step(60)
    guard = sim._stepper._energy_guard
    assert guard.budget < e0
    assert sim.energy() <= guard.budget + 1e-6 * abs(guard.budget)


def test_guard_is_off_where_it_does_not_apply():
    """Implicit Euler's guard ("cap", issue #22) stays off on loop closures (and contact, limits); the default
    step's budget ("hold", issue #31) applies there too; energy_guard=False turns either off."""
    from engine.scenes import rope
    assert Simulator(rope(8, end="pinned"), "pcg", dt=1 / 30, integrator="euler")._stepper._energy_guard is None
    assert Simulator(rope(8, end="pinned"), "pcg", dt=1 / 30)._stepper._energy_guard.policy == "hold"
    assert Simulator(hanging_chain(4), "pcg", dt=1 / 30, energy_guard=False)._stepper._energy_guard is None
    assert Simulator(hanging_chain(4), "pcg", dt=1 / 30, integrator="euler")._stepper._energy_guard.policy == "cap"


def test_512_link_chain_is_stable_at_30_hz():
    """Acceptance 1's stability at 512 links (pcg; direct and the swing: ``bench chains``)."""
    sim = Simulator(hanging_chain(512), "pcg", dt=1 / 30)
    sim.step(300)
    assert np.all(np.isfinite(sim.state.qd))


def _stepper_with_spring():
    sc = hanging_chain(8, damping=0.3)
    z = sc.world_point(3, np.array([0.0, 0.0, -0.1]))
    sc.add_spring(3, z, -1, z + np.array([1.0, 0.0, 0.0]), 1e3, name="side")
    return sc, Simulator(sc, "direct", dt=1 / 30, integrator="euler", newton_iterations=8)._stepper


def test_incremental_potential_gradient_matches_finite_differences():
    sc, st = _stepper_with_spring()
    ip = st._newton
    rng = np.random.default_rng(1)
    q, qd, u = rng.uniform(-1, 1, 8), rng.uniform(-3, 3, 8), rng.uniform(-3, 3, 8)
    control = sc.control(0.0)
    ip.predict(q, qd)
    _, grad, _ = ip.merit(q, u, control)
    eps, fd = 1e-6, np.empty(8)
    for i in range(8):
        e = np.zeros(8)
        e[i] = eps
        fd[i] = (ip.merit(q, u + e, control, False)[0] - ip.merit(q, u - e, control, False)[0]) / (2 * eps)
    assert np.abs(st.dt * grad - fd).max() < 1e-6 * np.abs(fd).max()


def test_newton_on_the_incremental_potential_converges():
    """From the linear step's rates, Newton with line search reaches a stationary point of Φ (the
    backward Euler step): its decrement below etol, Φ lower than at the linear step's rates."""
    sc, st = _stepper_with_spring()
    assert isinstance(st._newton, IncrementalPotentialStep)
    rng = np.random.default_rng(2)
    q, qd = rng.uniform(-1, 1, 8), rng.uniform(-3, 3, 8)
    control = sc.control(0.0)
    linear = Simulator(sc, "direct", dt=1 / 30, integrator="euler")._stepper.step(State(q.copy(), qd.copy(), 0.0),
                                                                                 control).qd
    out = st.step(State(q.copy(), qd.copy(), 0.0), control).qd
    ip = st._newton
    assert ip.iterations >= 1 and not ip.line_search_failed and ip.decrement <= ip.etol
    ip.predict(q, qd)
    assert ip.merit(q, out, control, False)[0] < ip.merit(q, linear, control, False)[0]


@pytest.mark.parametrize("extra", ["none", "springs", "point_force"])
def test_one_energy_for_the_budget_the_simulator_and_the_step(extra):
    """One energy (engine/forces/energy.py): the budget's, ``Simulator.energy()``'s (the evaluator's) and the one-call
    pcg step's own, with a spring, a cable and a joint spring, or with a point force, are the same numbers; and
    they are T + V summed independently (``engine.kinetic_energy``, ``potential_energy`` and the forces' own
    potentials from their wrench kernels)."""
    sc = hanging_chain(16)
    if extra == "springs":
        z = sc.world_point(7, np.array([0.0, 0.0, -0.1]))
        sc.add_spring(7, z, -1, z + np.array([1.0, 0.0, 0.0]), 1e3, name="side")
        sc.add_cable(2, np.zeros(3), 12, np.zeros(3), 5e2, rest_length=0.3, name="taut")
        sc.add_cable(2, np.zeros(3), 4, np.zeros(3), 5e2, rest_length=5.0, name="slack")
        sc.joint_stiffness[3] = 50.0
    if extra == "point_force":
        sc.add_point_force(5, np.array([0.0, 0.0, -0.05]), np.array([3.0, -1.0, 2.0]))
    sim = Simulator(sc, "pcg", dt=1 / 30, integrator="euler")  # (Euler: the one-call step also has E(q, q̇))
    st = sim._stepper
    guard = st._energy_guard
    rng = np.random.default_rng(3)
    q, qd = rng.uniform(-2, 2, 16), rng.uniform(-2, 2, 16)
    control = sc.control(0.0)
    energy = guard._energy(q, qd, control)
    assert energy == st.forces.energy(State(q, qd, 0.0), control) == sim.energy(State(q, qd, 0.0))
    # independently: the tree's T and V, the springs' and point forces' potentials from their force kernels
    # (evaluate), the joint springs' ½ K d² from the joint difference
    st.forces.evaluate(q, qd, control, st.model.make_workspace())
    d = configuration_difference(st.model, sc.joint_rest, q)
    independent = (kinetic_energy(sc.model, q, qd) + potential_energy(sc.model, q) + st.forces.spring_energy
                   + st.forces.point_force_energy + 0.5 * float(sc.joint_stiffness @ (d * d)))
    assert energy == pytest.approx(independent, rel=1e-13, abs=1e-12)
    # the one-call pcg step's own E(q, q̇), T(q⁺, q̇⁺) and V(q⁺) (before the guard may scale q̇⁺: qd_guess)
    assert st._one_call
    out = st.step(State(q.copy(), qd.copy(), 0.0), control)
    e0, kin, pot, _ = st._energies
    end = State(out.q, st.qd_guess, 0.0)
    assert e0 == pytest.approx(energy, rel=1e-15, abs=1e-15)  # (inlined in the step: round-off may differ)
    assert kin == pytest.approx(kinetic_energy(sc.model, out.q, st.qd_guess), rel=1e-14, abs=1e-14)
    assert kin + pot == pytest.approx(st.forces.energy(end, control), rel=1e-15, abs=1e-15)


def test_guard_on_the_explicit_step():
    """The explicit step diverges on this chain at 1/30 s; with the guard it stays bounded."""
    with pytest.raises(SimulationError):
        Simulator(hanging_chain(64, damping=0.0), "explicit", dt=1 / 30).step(300)
    sim = Simulator(hanging_chain(64, damping=0.0), "explicit", dt=1 / 30, energy_guard=True)
    e0 = sim.energy()
    sim.step(300)
    kinetic = kinetic_energy(sim.model, sim.state.q, sim.state.qd)
    assert (sim.energy() <= e0 + 1e-6 * abs(e0) or kinetic == 0) and sim._stepper._energy_guard.clamped_steps > 0


def test_hold_lets_a_deep_contacts_push_out_stand():
    """The dog with a 5 cm sphere on every body, one of them starting 2 cm in the ground (step_cost_versus's
    dog_ground): its joint limits undo the contact stage's projection and hold spheres deeper than it leaves any,
    so the contact pushes them out by its rates (Baumgarte). That push lifts the dog: energy the impulses add. The
    budget "hold" charged it to the motion and scaled the rates down, to 0 from step 42 on, and the dog stayed
    sunk (188 mm after 100 steps, deeper still after 150); it climbs out as without a budget (124 mm deep after 50
    steps, 16 mm after 100, 2.3 mm after 150, under 1 mm after 200 either way)."""
    from engine.scenes import dog

    def depth_after(steps, **options):
        scene = dog()
        for b in range(scene.model.n_bodies):
            scene.model.body_shapes[b] = {"type": "sphere", "radius": 0.05}
        scene.set_ground()
        sim = Simulator(scene, "pcg", dt=1 / 60, **options)
        sim.step(steps)
        return float(sim.contact.detect(sim.state.q).depth.max(initial=0.0)), sim

    held, sim = depth_after(200)
    assert sim._stepper._energy_guard.policy == "hold"
    free, _ = depth_after(200, energy_guard=False)
    assert held < 1.5e-3 and free < 1.5e-3
