"""Ready-made scenes: they run, the three solvers agree, and the bridge behaves."""
import numpy as np
import pytest

import engine
from engine.scenes.bridge import NORMAL_CAR
from trees import rel_err


def _run(scene, solver, seconds, dt):
    sim = engine.Simulator(scene, solver, dt=dt, tol=1e-11)
    qs = []
    for _ in range(int(round(seconds / dt))):
        sim.step()
        qs.append(sim.state.q.copy())
    return sim, np.array(qs)


@pytest.mark.parametrize("make", [
    lambda: engine.scenes.pendulum(),
    lambda: engine.scenes.chain(6),
    lambda: engine.scenes.four_bar(),
    lambda: engine.scenes.bridge(9, 0, car_mass=NORMAL_CAR),
    lambda: engine.scenes.bridge(9, 2),
    lambda: engine.scenes.tree(3, "siblings"),
    lambda: engine.scenes.tree(3, "square"),
], ids=["pendulum", "chain", "four_bar", "bridge_rigid", "bridge_flexible", "tree", "tree_square"])
def test_scene_runs_5s_and_solvers_agree(make):
    traj = {s: _run(make(), s, 5.0, 1 / 60)[1] for s in ("pcg", "direct", "dense")}
    assert rel_err(traj["pcg"], traj["dense"]) < 1e-6
    assert rel_err(traj["direct"], traj["dense"]) < 1e-6


@pytest.mark.parametrize("n_deck", [7, 15, 31])
def test_rigid_tower_bridge_needs_one_pcg_iteration_per_step(n_deck):
    sim, _ = _run(engine.scenes.bridge(n_deck, 0, car_mass=NORMAL_CAR), "pcg", 1.0, 1 / 60)
    assert sim.stats.iterations == [1] * 60


def _peak_deflection(car_mass):
    scene = engine.scenes.bridge(15, 2, car_mass=car_mass)
    sim = engine.Simulator(scene, "pcg", dt=1 / 60)
    _, rest = engine.forward_kinematics(scene.model, scene.q0)
    deck = [scene.model.body_index(f"deck{i}") for i in range(15)]
    towers = [i for i, n in enumerate(scene.model.body_names) if n.startswith("tower")]
    peak_deck = peak_tower = drift = 0.0
    for _ in range(300):
        sim.step()
        _, com = engine.forward_kinematics(scene.model, sim.state.q)
        peak_deck = max(peak_deck, float(np.max(rest[deck, 2] - com[deck, 2])))
        peak_tower = max(peak_tower, float(np.max(np.linalg.norm(com[towers] - rest[towers], axis=1))))
        drift = max(drift, sim.stats.constraint_error)
    return peak_deck, peak_tower, drift


def test_heavy_car_bends_deck_and_towers_more_and_deck_stays_connected():
    normal = _peak_deflection(NORMAL_CAR)
    heavy = _peak_deflection(500 * NORMAL_CAR)
    assert normal[2] < 1e-6 and heavy[2] < 1e-6  # loop-closure drift (m)
    assert heavy[0] > 5 * normal[0] and heavy[0] > 0.01  # deck sags visibly more (m)
    assert heavy[1] > 5 * normal[1]  # and the flexible towers bend more


def test_four_bar_stays_closed():
    sim, _ = _run(engine.scenes.four_bar(), "pcg", 5.0, 1 / 240)
    assert sim.stats.constraint_error < 1e-6


def test_umbrella_opens_and_solvers_agree():
    traj, sims = {}, {}
    for solver in ("pcg", "direct", "dense"):
        sims[solver], traj[solver] = _run(engine.scenes.umbrella(2), solver, 5.0, 1 / 60)
    assert rel_err(traj["pcg"], traj["dense"]) < 1e-6
    assert rel_err(traj["direct"], traj["dense"]) < 1e-6
    scene = sims["pcg"].scene
    assert engine.scenes.rib_angle(scene, scene.q0) < 0.2
    assert engine.scenes.rib_angle(scene, traj["pcg"][-1]) > 1.0  # opened (rad from the downward vertical)
    assert sims["pcg"].stats.constraint_error < 1e-6
    assert max(sims["pcg"].stats.iterations) > 1  # the taut canopy couples neighbouring ribs


def test_collision_scenes_by_name_fall_onto_what_they_should():
    """engine.scenes' collision demos (docs/contact.md): a chain dropped onto the staircase mesh comes to lie on
    the steps, no link deeper in a step or another link than 2 mm; the crate lands on the rope bridge's deck."""
    assert {"chain_on_stairs", "crate_on_bridge", "box_stack", "box_pile"} <= set(engine.scenes.SCENE_NAMES)
    with pytest.raises(ValueError, match="n"):
        engine.scenes.chain_on_stairs("eight")
    scene = engine.scenes.chain_on_stairs(8)
    assert scene.has_contact and [c.name for c in scene.static_colliders] == ["stairs"]
    sim = engine.Simulator(scene, "pcg", dt=1 / 48)
    deepest = 0.0
    for _ in range(96):
        sim.step()
        deepest = max(deepest, float(sim.contact.last.contacts.depth.max(initial=0.0)))
    R, p = engine.link_poses(scene.model, sim.state.q)
    assert deepest < 2e-3 and np.abs(sim.state.qd).max() < 1.0  # lying on the steps, nearly still
    top = scene.metadata["steps"] * scene.metadata["rise"]
    assert p[:, 2].max() < top + 0.1 and p[:, 2].min() > 0.0  # on the stairs, not above them nor through them
    bridge = engine.scenes.crate_on_bridge()
    sim = engine.Simulator(bridge, "pcg", dt=1 / 240)  # (the closure's step: test_collision_physics.py)
    crate = bridge.model.body_index("crate")
    sim.step(240)
    R, p = engine.link_poses(bridge.model, sim.state.q)
    centre = p[:30] + R[:30, :, 0] * 0.15  # plank centres (their joints at one end)
    under = np.argmin(np.abs(centre[:, 0] - p[crate, 0]))
    assert 0.2 < p[crate, 2] - centre[under, 2] < 0.4  # on the plank under it (0.325 m: half the crate, half a plank)
