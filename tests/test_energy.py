"""Energy behaviour of conservative scenes (no springs, no damping)."""
import numpy as np

import engine


def _chain(n=10):
    b = engine.ModelBuilder()
    rng = np.random.default_rng(7)
    for i in range(n):
        axis = rng.normal(size=3)
        b.add_body(f"link{i}", parent=i - 1, joint="revolute", axis=axis, joint_origin=(0.0, 0.0, -0.3 if i else 0.0),
                   mass=0.5 + 0.1 * i, com=(0.0, 0.05, -0.15), inertia=(0.004, 0.004, 0.001))
    return b.finalize()


def _simulate(model, stepper, dt, T, q, qd):
    accel = lambda q_, qd_, t: engine.aba(model, q_, qd_, np.zeros(model.nv))  # noqa: E731
    energies = []
    for k in range(int(round(T / dt))):
        q, qd = stepper(model, q, qd, dt, accel, k * dt)
        energies.append(engine.energy(model, q, qd))
    return np.array(energies), q


def test_undamped_chain_conserves_energy_with_rk4():
    model = _chain(10)
    q = np.full(model.nv, 0.4)
    qd = np.zeros(model.nv)
    E0 = engine.energy(model, q, qd)
    E, q_end = _simulate(model, engine.rk4_step, 1e-3, 2.0, q, qd)
    scale = abs(E0) + engine.kinetic_energy(model, q, np.ones(model.nv))  # nonzero scale even if E0 ≈ 0
    assert np.abs(E - E0).max() / scale < 1e-4
    # and it really moved, exchanging kinetic and potential energy
    assert np.abs(q_end - q).max() > 0.3


def test_symplectic_euler_energy_error_stays_bounded():
    """Semi-implicit Euler does not conserve energy exactly, but its error does not grow."""
    model = _chain(4)
    q = np.full(model.nv, 0.3)
    qd = np.zeros(model.nv)
    E0 = engine.energy(model, q, qd)
    E, _ = _simulate(model, engine.semi_implicit_euler_step, 1e-3, 4.0, q, qd)
    first, last = np.abs(E[:2000] - E0).max(), np.abs(E[2000:] - E0).max()
    assert last < 3.0 * first + 1e-9


def test_kinetic_energy_equals_half_qd_M_qd():
    model = engine.random_tree(8, seed=4, floating_base=True)
    q, qd = engine.random_configuration(model, np.random.default_rng(4))
    M = engine.crba(model, q)
    assert np.isclose(engine.kinetic_energy(model, q, qd), 0.5 * qd @ M @ qd, rtol=1e-12)


def test_energies_from_a_workspace_equal_the_recomputed_ones():
    """The one sum of T and V_gravity (energy.kinetic_and_gravity) reads the link velocities and poses a
    workspace's kinematics passes left: the same numbers as ½ q̇ᵀ M q̇ (CRBA) and −Σ m g·c from the centres of
    mass of forward_kinematics."""
    from engine.algorithms.kinematics import joint_pass, velocity_pass, world_pass
    from engine.energy import kinetic_and_gravity

    model = engine.random_tree(9, seed=11, floating_base=True)
    q, qd = engine.random_configuration(model, np.random.default_rng(3))
    ws = model.make_workspace()
    joint_pass(model.tree, q, ws)
    world_pass(model.tree, ws)
    velocity_pass(model.tree, q, qd, ws)
    kin, pot = kinetic_and_gravity(model.tree, ws, model.body_mass, model.body_com, model.gravity, True)
    _, com = engine.forward_kinematics(model, q)
    np.testing.assert_allclose(kin, 0.5 * qd @ engine.crba(model, q) @ qd, rtol=1e-12)
    np.testing.assert_allclose(pot, -float(model.body_mass @ (com @ model.gravity)), rtol=1e-12, atol=1e-12)
    assert kin > 0.0 and pot != 0.0
