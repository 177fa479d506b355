"""The viewer's UI actions without a window (engine.apps.viewer.session): scene building and rebuilds,
solver switch, time step and substeps, gravity, play/pause in real time, the mouse drag, and the
arrays it draws (engine.apps.viewer.frame); plus the engine additions they use."""
from pathlib import Path

import numpy as np
import pytest

import engine
from engine.errors import ModelError, URDFError
from engine.apps.viewer import (
    SCENES,
    SceneParams,
    SceneSource,
    ViewerSession,
    available_scenes,
)
from engine.apps.viewer.frame import CUBE_CORNERS, CUBE_FACES, frame_geometry, scene_shapes

DATA = Path(__file__).parent / "data"


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def session(name="chain", **kwargs):
    params = kwargs.pop("params", SceneParams(size=kwargs.pop("size", None)))
    return ViewerSession(SceneSource.preset(name), params, **kwargs)


# ---------------------------------------------------------------- scenes and parameters
@pytest.mark.parametrize("name", sorted(SCENES))
def test_every_preset_builds_and_steps(name):
    s = session(name, params=SceneParams(size=SCENES[name].size_range[0] if SCENES[name].default_size else None))
    s.step_frame()
    assert s.time == pytest.approx(1 / 60)
    assert np.isfinite(s.history["energy"][-1])


def test_available_scenes_lists_presets_and_argument_free_factories():
    names = available_scenes()
    assert list(SCENES) == list(names)[:len(SCENES)]
    assert "rib_angle" not in names  # a helper with required arguments, not a scene


def test_unknown_scene_names_the_choices():
    with pytest.raises(ModelError, match=r"unknown scene 'brige' \(available: bridge, umbrella"):
        session("brige")


def test_size_change_rebuilds_the_scene_from_its_start():
    s = session("chain", size=4)
    s.step_frame()
    version = s.scene_version
    s.set_params(size=7)
    assert s.scene.model.n_bodies == 7 and s.time == 0.0 and s.scene_version == version + 1
    assert not s.history["time"]
    assert s.shapes.n_bodies == 7


def test_bad_size_keeps_the_old_scene():
    s = session("chain", size=4)
    scene = s.scene
    with pytest.raises(ModelError, match="size must be between 1 and 100"):
        s.set_params(size=0)
    assert s.scene is scene and s.params.size == 4


def test_bridge_default_is_the_61_body_demo_with_30_cables_and_a_car():
    s = session("bridge")
    m = s.scene.model
    assert (m.n_bodies, s.scene.n_pairs, len(s.scene.loop_closures)) == (61, 30, 2)
    (car,) = s.scene.moving_loads
    assert car.force[2] == pytest.approx(-9.81 * 1500.0)


def test_stiffness_scale_and_car_mass_rebuild():
    s = session("bridge", params=SceneParams(size=7))
    k0 = np.array([p[4] for p in s.scene.pairs])
    s.set_params(stiffness_scale=0.5, car_mass=2e5)
    assert np.allclose([p[4] for p in s.scene.pairs], 0.5 * k0)
    assert s.scene.moving_loads[0].force[2] == pytest.approx(-9.81 * 2e5)
    s.set_params(car_mass=0.0)
    assert s.scene.moving_loads == []
    with pytest.raises(ModelError, match="stiffness scale"):
        s.set_params(stiffness_scale=-1.0)


def test_switch_scene_resets_parameters():
    s = session("chain", size=3)
    s.set_scene(SceneSource.preset("pendulum"))
    assert s.scene.name == "pendulum" and s.params == SceneParams()
    with pytest.raises(ModelError):
        s.set_scene(SceneSource.preset("nope"))
    assert s.scene.name == "pendulum"


def test_urdf_and_scene_file_sources(tmp_path):
    s = ViewerSession(SceneSource.urdf(DATA / "pendulum.urdf"))
    assert s.scene.model.body_names == ["base", "rod"]
    assert not s.shapes.movable[0] and s.shapes.movable[1]
    with pytest.raises(URDFError, match="cannot read URDF"):
        ViewerSession(SceneSource.urdf(tmp_path / "missing.urdf"))
    path = engine.save_scene(engine.scenes.four_bar(), tmp_path / "four_bar.json")
    s = ViewerSession(SceneSource.file(path))
    assert len(s.scene.loop_closures) == 1
    s.step_frame()


# ---------------------------------------------------------------- solver, time step, gravity
def test_solver_switch_keeps_the_state_and_agrees():
    a, b = session("chain", size=5), session("chain", size=5)
    for _ in range(3):
        a.step_frame()
        b.step_frame()
    q_before, t_before = b.sim.state.q.copy(), b.time
    b.set_solver("direct")
    assert b.solver == "direct" and b.sim.solver == "direct"
    assert np.array_equal(b.sim.state.q, q_before) and b.time == t_before  # the switch keeps the state
    assert np.allclose(a.sim.state.q, b.sim.state.q, rtol=0, atol=1e-12)  # (PCG reductions may differ in the last bit)
    # a new Simulator starts the default step's BDF2 history afresh (an Euler step first): the PCG session gets a
    # new Simulator too (there and back), so both restart alike and only the linear solvers differ
    a.set_solver("dense")
    a.set_solver("pcg")
    for _ in range(5):
        a.step_frame()
        b.step_frame()
    assert np.allclose(a.sim.state.q, b.sim.state.q, atol=1e-6)
    assert b.history["iterations"][-1] == 0  # a direct solver
    assert a.history["iterations"][-1] >= 1


def test_explicit_solver_refused_with_loop_closures():
    s = session("four_bar")
    with pytest.raises(ValueError, match="loop closures"):
        s.set_solver("explicit")
    assert s.solver == "pcg"
    s.step_frame()
    s = session("chain", size=3, solver="explicit")
    chain = s.scene
    with pytest.raises(ValueError, match="loop closures"):
        s.set_scene(SceneSource.preset("four_bar"))
    assert s.scene is chain and s.source.name == "chain" and s.sim.scene is chain  # all of it unchanged


def test_dt_and_substeps():
    s = session("chain", size=3)
    s.set_substeps(4)
    assert s.sim.dt == pytest.approx(1 / 240)
    s.step_frame()
    assert s.sim.stats.steps == 4 and s.time == pytest.approx(1 / 60)
    s.set_dt(0.01)
    assert s.sim.dt == pytest.approx(0.0025) and s.time == pytest.approx(1 / 60)  # state kept
    s.step_frame()
    assert s.time == pytest.approx(1 / 60 + 0.01)
    with pytest.raises(ValueError, match="time step"):
        s.set_dt(0.0)
    with pytest.raises(ValueError, match="substeps"):
        s.set_substeps(0)
    assert s.dt == 0.01 and s.substeps == 4


def test_gravity_toggle():
    s = session("pendulum")
    q0 = s.sim.state.q.copy()
    s.set_gravity(False)
    assert np.array_equal(s.scene.model.gravity, np.zeros(3))
    for _ in range(10):
        s.step_frame()
    assert np.allclose(s.sim.state.q, q0)  # at rest without gravity: stays
    s.set_gravity(True)
    assert np.allclose(s.scene.model.gravity, (0, 0, -9.81))
    for _ in range(10):
        s.step_frame()
    assert s.sim.state.q[0] < q0[0] - 0.01  # falls back towards the vertical
    s.set_params(size=None, car_mass=1.0)  # a rebuild keeps gravity's setting
    s.set_gravity(False)
    s.reset()
    assert np.array_equal(s.scene.model.gravity, np.zeros(3))


def test_model_with_gravity_leaves_the_original():
    model = engine.scenes.chain(3).model
    zero = model.with_gravity((0, 0, 0))
    assert np.allclose(model.gravity, (0, 0, -9.81)) and np.allclose(model.tree.gravity[3:], (0, 0, -9.81))
    assert np.array_equal(zero.tree.gravity, np.zeros(6))
    q = np.array([0.3, 0.2, -0.1])
    assert np.allclose(engine.rnea(zero, q, np.zeros(3), np.zeros(3)), 0.0)
    assert not np.allclose(engine.rnea(model, q, np.zeros(3), np.zeros(3)), 0.0)
    with pytest.raises(ModelError):
        model.with_gravity((0, 0))


# ---------------------------------------------------------------- play, pause, real time, reset
def test_play_pause_and_real_time_stepping():
    clock = FakeClock()
    s = session("chain", size=3, clock=clock)
    assert s.advance() == 0  # paused
    s.play()
    assert s.advance() == 1
    for _ in range(10):
        clock.now += 1 / 60
        assert s.advance() == 1
    assert s.realtime_factor() == pytest.approx(1.0)
    clock.now += 5 / 60  # drawing was slow: the next call catches up
    assert s.advance() == 5
    clock.now += 1 / 120  # drawing faster than the scene: no frame due yet
    assert s.advance() == 0
    assert s.dropped_frames == 0
    clock.now += 10.0  # far behind: capped, then real time again from there
    assert s.advance() == s.max_frames_per_advance
    assert s.dropped_frames == 600 - s.max_frames_per_advance  # 10 s of frames were due
    clock.now += 1 / 60
    assert s.advance() == 1
    s.realtime = False
    assert s.advance() == 1
    s.toggle_play()
    assert not s.playing and s.advance() == 0


def test_reset_goes_back_to_the_start():
    s = session("chain", size=3)
    for _ in range(5):
        s.step_frame()
    s.grab(1, s.frame().body_position[1])
    s.reset()
    assert s.time == 0.0 and np.array_equal(s.sim.state.q, s.scene.q0) and s.drag is None
    assert s.frames == 0 and not s.history["energy"]


def test_status_lines_and_history():
    s = session("four_bar")
    s.step_frame()
    lines = s.status_lines()
    assert any(line.startswith("PCG iterations per step") for line in lines)
    assert any("constraint drift" in line for line in lines)
    assert {len(v) for k, v in s.history.items() if k != "realtime_factor"} == {1}


# ---------------------------------------------------------------- mouse drag
def test_pick_hits_the_nearest_movable_body():
    s = session("chain", size=4)
    f = s.frame()
    target = f.body_position[2]
    hit = s.pick(target + np.array([-5.0, 0, 0]), (1.0, 0, 0))  # the chain hangs in the yz plane
    assert hit is not None and hit[0] == 2
    assert hit[1][0] == pytest.approx(target[0] - s.shapes.half_size[2][np.argmax(np.abs(f.body_rotation[2][0]))], abs=1e-9)
    assert s.pick(target + np.array([-5.0, 0, 0]), (-1.0, 0, 0)) is None  # behind the ray
    assert s.pick((0, 0, 50.0), (1.0, 0, 0)) is None


def test_pick_skips_bodies_welded_to_the_world():
    s = ViewerSession(SceneSource.urdf(DATA / "pendulum.urdf"))  # massless base at the origin, rod hinged at z = 1
    f = s.frame()
    assert np.allclose(f.body_position[0], 0.0) and np.allclose(f.body_position[1], (0, 0, 0.5))
    assert s.pick((-5.0, 0, 0.0), (1.0, 0, 0)) is None  # through the base only
    assert s.pick((-5.0, 0, 0.5), (1.0, 0, 0))[0] == 1


def test_drag_pulls_the_body_towards_the_target_and_release_stops_it():
    s = session("pendulum")
    s.set_gravity(False)
    f = s.frame()
    com = f.body_position[0]  # 0.5 m from the hinge at the origin, 0.5 rad from the vertical
    s.grab(0, com)
    target = 0.5 * np.array([0.0, np.sin(0.9), -np.cos(0.9)])  # reachable: 0.4 rad further round
    s.drag_to(target)
    force = s.drag_force()
    assert force[1] > 0 and abs(force[0]) < 1e-9
    for _ in range(120):
        s.step_frame()
    grabbed, tgt = s.drag_line()
    assert np.linalg.norm(grabbed - target) < 0.02 * np.linalg.norm(com - target)  # there, and stable
    assert np.array_equal(tgt, target)
    assert s.scene.point_force_names == ["mouse drag"]  # applied as one of the scene's point forces
    assert np.linalg.norm(s.scene.point_forces[-1][2]) > 0
    s.release()
    assert s.drag is None and s.drag_line() is None
    assert s.scene.point_force_names == []  # … which leaves with the drag
    assert np.array_equal(s.drag_force(), np.zeros(3))


def test_drag_needs_a_solver_that_takes_point_forces():
    s = session("pendulum")
    s.set_solver("baraff")
    with pytest.raises(ValueError, match="switch to one of pcg"):
        s.grab(0, s.frame().body_position[0])
    assert s.drag is None and s.scene.point_force_names == []
    s.step_frame()


def test_drag_along_ray_keeps_the_depth_plane():
    s = session("chain", size=3)
    p = s.frame().body_position[1]
    s.grab(1, p)
    s.drag_along_ray(p + np.array([-4.0, 0.0, 1.0]), (1.0, 0.0, 0.0), (1.0, 0.0, 0.0))
    assert np.allclose(s.drag.target, p + np.array([0.0, 0.0, 1.0]))
    s.drag_along_ray((0, 0, 0), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0))  # parallel to the plane: ignored
    assert np.allclose(s.drag.target, p + np.array([0.0, 0.0, 1.0]))


def test_drag_on_the_bridge_stays_stable():
    s = session("bridge", params=SceneParams(size=9, car_mass=0.0))
    f = s.frame()
    deck = s.scene.model.body_index("deck2")
    s.grab(deck, f.body_position[deck])
    s.drag_to(f.body_position[deck] + np.array([0.0, 0.0, 3.0]))
    for _ in range(60):
        s.step_frame()
    assert s.frame().body_position[deck][2] > f.body_position[deck][2] + 1e-4  # a stiff bridge: it gives a little
    assert np.linalg.norm(s.drag_force()) == pytest.approx(s.drag_max_weights * 9.81 * 3 * 5760.0)  # capped: 3 pieces


# ---------------------------------------------------------------- what is drawn
def test_cube_faces_point_outwards():
    for tri in CUBE_FACES:
        a, b, c = CUBE_CORNERS[tri]
        assert np.cross(b - a, c - a) @ (a + b + c) > 0
    assert len({tuple(sorted(t)) for t in CUBE_FACES}) == 12


def test_frame_geometry_of_the_bridge():
    scene = engine.scenes.bridge(9, 0, car_mass=1500.0)
    shapes = scene_shapes(scene)
    f = frame_geometry(scene, shapes, scene.q0, 1.0)
    n = scene.model.n_bodies
    assert f.box_vertices.shape == (8 * n, 3) and shapes.faces.shape == (12 * n, 3)
    deck = scene.model.body_index("deck4")
    edges = 2 * shapes.half_size[deck]
    assert sorted(edges) == pytest.approx(sorted([2.0, 4.0, 0.3]))  # the deck piece's own box
    assert np.allclose(f.closure_a, f.closure_b, atol=1e-9)  # closures hold at the start
    assert np.all(f.tension > 0)  # pre-tensioned cables
    assert f.loads_active.all() and abs(f.loads[0, 2] - 0.15) < 0.2  # the car is on the deck
    f_end = frame_geometry(scene, shapes, scene.q0, 10.0)
    assert not f_end.loads_active.any()  # … and gone after crossing
    assert len(f.joints) == sum(scene.model.joint_nv > 0)


def test_slack_cable_has_no_tension():
    scene = engine.scenes.umbrella(2)  # canopy cables are slack while folded
    f = frame_geometry(scene, scene_shapes(scene), scene.q0, 0.0)
    assert np.all(f.tension == 0.0)


# ---------------------------------------------------------------- engine additions used by the viewer
def test_set_point_force_steers_a_running_simulation():
    scene = engine.scenes.pendulum(angle=0.0)
    i = scene.add_point_force("rod", (0, 0, -1.0), (0, 0, 0))
    sim = engine.Simulator(scene, dt=1 / 240)
    sim.step(10)
    assert sim.state.q[0] == pytest.approx(0.0, abs=1e-12)
    scene.set_point_force(i, (0, 5.0, 0))
    sim.step(10)
    assert sim.state.q[0] > 1e-3  # pushed along +y about the x hinge
    with pytest.raises(ModelError, match="no such point force"):
        scene.set_point_force(3, (0, 0, 0))
    with pytest.raises(ModelError, match="finite"):
        scene.set_point_force(i, (0, np.nan, 0))
    scene.remove_point_force(i)
    assert scene.point_forces == [] and scene.point_force_names == []


def test_set_pair_changes_springs_for_new_simulators():
    scene = engine.scenes.bridge(7, 0)
    k, rest = scene.pairs[0][4], scene.pairs[0][6]
    scene.set_pair(0, stiffness=2 * k, rest_length=rest * 0.5)
    assert scene.pairs[0][4] == 2 * k and scene.pairs[0][6] == rest * 0.5 and scene.pairs[0][7]
    with pytest.raises(ModelError, match="stiffness must be ≥ 0"):
        scene.set_pair(0, stiffness=-1.0)
    with pytest.raises(ModelError, match="no such spring"):
        scene.set_pair(99)


def test_centipede_preset_walks_in_the_viewer():
    """The contact scene plays in a session: segments slider, ground contact, the gait controller."""
    from engine.apps.viewer.session import SceneSource, ViewerSession

    session = ViewerSession(SceneSource("preset", "centipede"))
    session.set_params(size=3)
    assert session.scene.model.n_bodies == 15 and session.sim.contact is not None
    x0 = session.sim.state.q[0]
    for _ in range(30):
        session.step_frame()
    assert session.sim.state.q[0] > x0 and len(session.sim.contact.last.contacts) == 6
    with pytest.raises(ValueError, match="baraff"):  # the UI shows the message; the session keeps going
        session.set_solver("baraff")
    assert session.solver == "pcg"


def test_shapes_are_drawn_where_they_are():
    """A box shape off the COM and rotated in its link frame, a sphere and a capsule: the drawn box's
    corners are the shape's (no longer an inertia box at the COM)."""
    b = engine.ModelBuilder()
    Rz = np.array([[0.0, -1, 0], [1, 0, 0], [0, 0, 1]])
    b.add_body("plate", joint="free", com=(0.1, 0, 0), shape={"type": "box", "size": (0.1, 0.2, 0.4),
                                                              "center": (0.3, 0, 0), "rotation": Rz})
    b.add_body("ball", joint="free", shape={"type": "sphere", "radius": 0.05, "center": (0, 0, 1)})
    b.add_body("rod", joint="free", shape={"type": "capsule", "radius": 0.02, "length": 0.3, "axis": (0, 0, 1)})
    scene = engine.Scene(b.finalize())
    f = frame_geometry(scene, scene_shapes(scene), scene.q0, 0.0)
    plate = f.box_vertices[:8]
    assert np.allclose(plate.min(axis=0), [0.3 - 0.1, -0.05, -0.2]) and np.allclose(plate.max(axis=0), [0.3 + 0.1, 0.05, 0.2])
    ball = f.box_vertices[8:16]
    assert np.allclose(ball.mean(axis=0), [0, 0, 1]) and np.allclose(np.ptp(ball, axis=0), 0.1)
    rod = f.box_vertices[16:24]
    assert np.allclose(np.ptp(rod, axis=0), [0.04, 0.04, 0.34])


def test_collision_presets_draw_their_static_colliders():
    """The staircase mesh is drawn as its own triangles, the rope bridge's two posts as boxes, the ground plane
    not at all (polyscope's ground is under every scene)."""
    from engine.apps.viewer.frame import static_geometry
    from engine.scenes.collisions import staircase_mesh

    stairs = session("chain_on_stairs", size=4)
    V, F = static_geometry(stairs.scene)
    assert F.shape == staircase_mesh(6)[1].shape and np.isfinite(V).all()
    bridge = session("crate_on_bridge", size=30)
    assert bridge.substeps == 4  # the preset's least (1/240 s steps)
    V, F = static_geometry(bridge.scene)
    assert F.shape == (24, 3) and V.shape == (16, 3)
    assert np.allclose(np.ptp(V[:8], axis=0), (0.5, 1.4, 1.0))  # the near post
    assert static_geometry(session("chain").scene)[1].shape == (0, 3)
