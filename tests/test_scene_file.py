"""The JSON scene format (engine.scene_file): round trips simulate identically; hand-written files
with world coordinates; errors name the file and the element."""
import json
from pathlib import Path

import numpy as np
import pytest

import engine
from engine.errors import ModelError
from engine.scene_file import scene_from_dict, scene_to_dict


@pytest.mark.parametrize("make", [lambda: engine.scenes.bridge(9, 2, car_mass=2e5), lambda: engine.scenes.umbrella(2),
                                  engine.scenes.four_bar, lambda: engine.scenes.tree(2)],
                         ids=["bridge_car", "umbrella", "four_bar", "tree"])
def test_round_trip_simulates_identically(make, tmp_path):
    scene = make()
    scene.set_body_damping(0.1)
    path = engine.save_scene(scene, tmp_path / "scene.json")
    loaded = engine.load_scene(path)
    assert loaded.name == scene.name and loaded.model.body_names == scene.model.body_names
    assert loaded.pair_names == scene.pair_names and len(loaded.loop_closures) == len(scene.loop_closures)
    a, b = engine.Simulator(scene, dt=1 / 120), engine.Simulator(loaded, dt=1 / 120)
    a.step(40)
    b.step(40)
    assert np.allclose(a.state.q, b.state.q, rtol=0, atol=1e-12)  # inertia tensors re-diagonalized: round-off only
    assert a.energy() == pytest.approx(b.energy(), rel=1e-10)
    assert json.loads(path.read_text())["format"] == "redmax-scene"


def test_round_trip_keeps_limits_point_forces_and_metadata(tmp_path):
    b = engine.ModelBuilder(gravity=(0, 0, -3.0))
    b.add_body("arm", joint="revolute", axis=(1, 0, 0), com=(0, 0, -0.5), mass=2.0, inertia=(0.2, 0.2, 0.01),
               limits=(-1.0, 1.5))
    b.add_body("slider", parent="arm", joint="prismatic", axis=(0, 0, 1), mass=0.5, limits=(None, 0.3))
    scene = engine.Scene(b.finalize(), name="arm", q0=[0.2, 0.1])
    scene.add_point_force("slider", (0, 0.1, 0), (1.0, 0, 0), frame="body", name="push")
    scene.add_joint_spring("slider_joint", 30.0, 0.5, rest=0.05)
    scene.metadata["note"] = {"made": "by hand", "sizes": np.array([1, 2])}
    scene.metadata["callback"] = print  # not plain data: left out
    loaded = scene_from_dict(json.loads(json.dumps(scene_to_dict(scene))))
    m = loaded.model
    assert np.allclose(m.gravity, (0, 0, -3.0))
    assert m.joint_lower.tolist() == [-1.0, -np.inf] and m.joint_upper.tolist() == [1.5, 0.3]
    assert loaded.point_force_names == ["push"] and np.allclose(loaded.point_forces[0][1], scene.point_forces[0][1])
    assert loaded.joint_rest[1] == 0.05 and loaded.joint_stiffness[1] == 30.0
    assert loaded.metadata == {"note": {"made": "by hand", "sizes": [1, 2]}}


def test_hand_written_file_in_world_coordinates(tmp_path):
    data = {
        "format": "redmax-scene", "name": "two_pendulums",
        "bodies": [
            {"name": "left", "joint": "revolute", "axis": [1, 0, 0], "com": [0, 0, -0.5], "mass": 1.0},
            {"name": "right", "joint": "revolute", "axis": [1, 0, 0], "joint_origin": [1, 0, 0], "com": [0, 0, -0.5],
             "mass": 1.0},
        ],
        "q0": [0.3, 0.0],
        "springs": [{"type": "spring", "body_a": "left", "point_a": [0, 0, -1], "body_b": "right",
                     "point_b": [1, 0, -1], "stiffness": 50.0}],
        "loop_closures": [{"body_a": "right", "body_b": None, "point": [1, 0, -1.0], "kind": "point"}],
    }
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(data))
    scene = engine.load_scene(path)
    assert scene.n_pairs == 1 and scene.loop_closures[0].body_b == -1
    assert scene.pairs[0][6] == pytest.approx(np.linalg.norm(np.array([1, 0, -1]) - scene.world_point(0, scene.pairs[0][2])))
    sim = engine.Simulator(scene, dt=1 / 120)
    sim.step(20)
    assert sim.stats.constraint_error < 1e-8


@pytest.mark.parametrize("text, message", [
    ("{not json", r"not valid JSON \(.*line 1"),
    ('{"format": "something"}', "not a scene file"),
    ('{"format": "redmax-scene", "bodies": [{"joint": "revolute", "mass": 1}]}', r"body 0: missing 'name'"),
    ('{"format": "redmax-scene", "bodies": [{"name": "a", "joint": "hinge", "mass": 1}]}', r"body 'a': unknown joint type"),
    ('{"format": "redmax-scene", "bodies": [{"name": "a", "joint": "revolute", "mass": 1, "com": [0, 0]}]}',
     r"body 'a': 'com' must be 3 finite numbers"),
    ('{"format": "redmax-scene", "bodies": [{"name": "a", "joint": "revolute", "mass": 1}], '
     '"springs": [{"body_a": "a", "point_a": [0,0,0], "body_b": "b", "point_b": [0,0,1], "stiffness": 1}]}',
     r"no body named 'b'"),
    ('{"format": "redmax-scene", "bodies": [{"name": "a", "joint": "revolute", "mass": 1}], "q0": [1, 2]}',
     r"'q0' must be 1 finite numbers"),
    ('{"format": "redmax-scene", "bodies": [3]}', r"bodies\[0\]: expected an object"),
])
def test_errors_name_the_file_and_element(tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ModelError, match=message) as info:
        engine.load_scene(path)
    assert "bad.json" in str(info.value)


def test_unreadable_file(tmp_path):
    with pytest.raises(ModelError, match="cannot read scene file"):
        engine.load_scene(tmp_path / "missing.json")


def test_the_example_in_the_docs_loads(tmp_path):
    text = (Path(__file__).resolve().parents[1] / "docs" / "viewer.md").read_text(encoding="utf-8")
    example = text.split("```json\n", 1)[1].split("```", 1)[0]
    scene = scene_from_dict(json.loads(example), "docs/viewer.md")
    assert scene.name == "two_pendulums" and scene.n_pairs == 1 and len(scene.loop_closures) == 1
    sim = engine.Simulator(scene, dt=1 / 120)
    sim.step(20)
    assert sim.stats.constraint_error < 1e-8


def test_round_trip_keeps_the_ground_and_contact_shapes(tmp_path):
    """A centipede (gait stripped: controllers are code) saved and loaded steps identically on the ground."""
    scene = engine.scenes.centipede(2, gait=False, friction=0.6)
    scene.set_body_contacts(0.3, bodies=["lower_r0", "lower_r1"])
    path = engine.scene_file.save_scene(scene, tmp_path / "centipede.json")
    loaded = engine.scene_file.load_scene(path)
    assert loaded.ground == scene.ground and loaded.contact_bodies == scene.contact_bodies
    assert loaded.body_contact == scene.body_contact
    a, b = (engine.Simulator(s, "pcg", dt=1 / 240) for s in (scene, loaded))
    a.step(60)
    b.step(60)
    assert np.array_equal(a.state.q, b.state.q)
    data = scene_to_dict(scene)
    data["ground"]["friction"] = -1
    with pytest.raises(ModelError, match="friction must be ≥ 0"):
        scene_from_dict(data, "bad.json")


def test_a_required_vector_written_as_null_is_a_named_error():
    """Hypothesis (test_fuzz_inputs) found ``"point_b": null`` reaching the solver as None; a
    required vector must be numbers, an optional one (``q0``) may be null."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "viewer.md").read_text(encoding="utf-8")
    data = scene_to_dict(scene_from_dict(json.loads(text.split("```json\n", 1)[1].split("```", 1)[0]), "viewer.md"))
    assert "q0" in data
    data["q0"] = None
    scene_from_dict(json.loads(json.dumps(data)), "ok.json")
    data["loop_closures"][0]["point_b"] = None
    with pytest.raises(ModelError, match=r"scene file 'bad.json': loop closure .*'point_b' must be 3 finite numbers"):
        scene_from_dict(data, "bad.json")


def test_round_trip_keeps_static_colliders_and_the_pairs_kept_apart(tmp_path):
    """A mesh staircase, the bridge's box posts (convex parts) and a plane collider, with a pair kept apart: the
    loaded scene has them all and simulates identically (issue #30: the add-on's export of a collision scene)."""
    from engine.scenes.collisions import chain_on_stairs, crate_on_bridge

    for scene in (crate_on_bridge(5), chain_on_stairs(4)):
        scene.add_static_collider("slope", {"type": "plane", "normal": (0.1, 0.0, 1.0), "groups": [0, 3]},
                                  position=(0.0, 0.0, -2.0), restitution=0.3)
        scene.disable_collision(0, 2)
        path = engine.save_scene(scene, tmp_path / f"{scene.name}.json")
        loaded = engine.load_scene(path)
        assert [c.name for c in loaded.static_colliders] == [c.name for c in scene.static_colliders]
        assert loaded.collision_exclusions == [(0, 2)]
        for a, b in zip(scene.static_colliders, loaded.static_colliders):
            assert (a.kind, a.groups, a.bodies, a.friction, a.restitution) == (b.kind, b.groups, b.bodies, b.friction,
                                                                               b.restitution)
        sims = [engine.Simulator(s, "pcg", dt=1 / 240) for s in (scene, loaded)]
        for sim in sims:
            sim.step(60)
        assert np.array_equal(sims[0].state.q, sims[1].state.q)
