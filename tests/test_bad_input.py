"""Bad input, as a new user would try it (issue #20): each case raises the documented error type
with a message that names the element. ``CASES`` is also the table of docs/errors.md
(``python tests/test_bad_input.py`` prints it from the real messages)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import engine
from engine.errors import ModelError, SceneFileError, SimulationError, SimulatorOptionError, URDFError
from engine.scene_file import scene_from_dict, scene_to_dict
from engine.urdf import load_urdf_string


def _add(**kw):
    b = engine.ModelBuilder()
    b.add_body("arm", **kw)
    return b


def _one_link(limits=None):
    b = engine.ModelBuilder()
    b.add_body("arm", joint="revolute", axis=(0, 1, 0), com=(0.5, 0, 0), joint_name="shoulder", limits=limits)
    return engine.Scene(b.finalize(), name="arm")


def _two_links():
    b = engine.ModelBuilder()
    b.add_body("a", joint="revolute", axis=(0, 1, 0), com=(0.5, 0, 0))
    b.add_body("b", parent="a", joint="revolute", axis=(0, 1, 0), joint_origin=(1, 0, 0), com=(0.5, 0, 0))
    return engine.Scene(b.finalize(), name="two")


def _ball():
    b = engine.ModelBuilder()
    b.add_body("ball", joint="spherical", com=(0, 0, -0.5), joint_name="socket")
    return b.finalize()


def _infeasible_closure():
    """A 2 m two-link arm whose tip is closed onto a world anchor 5 m away (link-frame form)."""
    data = scene_to_dict(_two_links())
    data["loop_closures"] = [{"name": "tip_to_anchor", "frame": "link", "body_a": "b", "point_a": [1, 0, 0],
                              "body_b": "world", "point_b": [5, 0, 0], "kind": "point"}]
    engine.Simulator(scene_from_dict(data, "arm.json"), "pcg", dt=0.01)


def _scene_file(mutate):
    data = scene_to_dict(_two_links())
    mutate(data)
    scene_from_dict(json.loads(json.dumps(data)), "arm.json")


def _urdf(joint_extra="", inertia='ixx="0.1" iyy="0.1" izz="0.1"'):
    return f"""<robot name="r"><link name="base"/>
      <link name="arm"><inertial><mass value="1"/><inertia {inertia} ixy="0" ixz="0" iyz="0"/></inertial></link>
      <link name="finger"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>
        <limit lower="-1" upper="1"/></joint>
      <joint name="grip" type="revolute"><parent link="arm"/><child link="finger"/><axis xyz="0 1 0"/>{joint_extra}
        <limit lower="-1" upper="1"/></joint></robot>"""


def _point_force_nan():
    _one_link().add_point_force("arm", (1, 0, 0), (0, np.nan, -1), name="push")


def _spring_to_true():
    _two_links().add_spring(True, (0, 0, 0), "b", (1, 0, 0), 10.0, name="strap")


def _zero_axis_b():
    _two_links().add_loop_closure("a", "b", (1, 0, 0), kind="universal", axis=(0, 1, 0), axis_b=(0, 0, 0), name="cross")


def _minv_non_unit():
    model = _ball()
    q = model.neutral_q()
    q[:4] = (2.0, 0.1, 0, 0)
    engine.minv(model, q)


def _scene_q0_non_unit():
    model = _ball()
    engine.Scene(model, q0=np.array([0.5, 0, 0, 0]), name="ball")


def _step(n):
    engine.Simulator(_one_link(), "pcg", dt=0.01).step(n)


def _negative_damping():
    scene = _two_links()
    scene.joint_damping[:] = -5
    engine.Simulator(scene, "pcg", dt=0.01)


def _state_quaternion():
    sim = engine.Simulator(engine.Scene(_ball(), name="ball"), "pcg", dt=0.01)
    sim.state.q[:4] = (1.0, 0.2, 0.0, 0.0)
    sim.step()


def _parent_true():
    b = engine.ModelBuilder()
    b.add_body("base")
    b.add_body("arm", parent=True)


# (id, input as the user wrote it, callable, error type, message pattern)
CASES = [
    ("inertia_triangle", "add_body('arm', inertia=(1, 1, 5))", lambda: _add(inertia=(1, 1, 5)), ModelError,
     r"body 'arm': principal moments \[1.0, 1.0, 5.0\] break the triangle inequality"),
    ("inertia_not_pd", "add_body('arm', inertia=(1, -1, 1))", lambda: _add(inertia=(1, -1, 1)), ModelError,
     r"body 'arm': inertia tensor is not positive definite"),
    ("mass_string", "add_body('arm', mass='heavy')", lambda: _add(mass="heavy"), ModelError,
     r"body 'arm': mass must be a number, got 'heavy'"),
    ("limits_nan", "add_body('arm', limits=(nan, 1))", lambda: _add(limits=(np.nan, 1), joint_name="elbow"), ModelError,
     r"joint 'elbow': limits must not be NaN"),
    ("limits_reversed", "add_body('arm', limits=(1, -1))", lambda: _add(limits=(1, -1), joint_name="elbow"), ModelError,
     r"joint 'elbow': lower limit above upper limit"),
    ("limits_free", "add_body('arm', joint='free', limits=(-1, 1))",
     lambda: _add(joint="free", limits=(-1, 1), joint_name="root"), ModelError, r"joint 'root': a free joint takes no limits"),
    ("joint_rotation_quat", "add_body('arm', joint_rotation=(2, 0, 0, 0))",
     lambda: _add(joint_rotation=(2, 0, 0, 0), joint_name="elbow"), ModelError,
     r"joint 'elbow': joint_rotation: rotation quaternion \(w, x, y, z\) must have unit length"),
    ("shape_teapot", "add_body('arm', shape={'type': 'teapot'})", lambda: _add(shape={"type": "teapot"}), ModelError,
     r"body 'arm' shape: type must be one of sphere, box, capsule, cylinder, cone, convex, compound, got 'teapot'"),
    ("spring_body_true", "scene.add_spring(True, …, name='strap')", _spring_to_true, ModelError,
     r"spring 'strap': a body is a name, an index or 'world', got True"),
    ("point_force_nan", "scene.add_point_force('arm', p, (0, nan, -1), name='push')", _point_force_nan, ModelError,
     r"point force 'push': force must be 3 finite numbers"),
    ("closure_zero_axis_b", "scene.add_loop_closure(…, kind='universal', axis_b=(0, 0, 0), name='cross')", _zero_axis_b,
     ModelError, r"loop closure 'cross': axis_b has zero length"),
    ("scene_q0_quaternion", "Scene(ball, q0=(0.5, 0, 0, 0))", _scene_q0_non_unit, ModelError,
     r"scene 'ball': q0: the quaternion of joint 'socket' \(q\[0:4\]\) has norm 0.5"),
    ("minv_quaternion", "engine.minv(ball, q with quaternion (2, 0.1, 0, 0))", _minv_non_unit, ModelError,
     r"q: the quaternion of joint 'socket' \(q\[0:4\]\) has norm 2.0025"),
    ("closure_infeasible", "link-frame closure 'tip_to_anchor' 5 m from a 2 m arm's reach", _infeasible_closure,
     ModelError, r"loop closure 'tip_to_anchor' of scene 'two' is not satisfied at the initial pose: its points are 3 m apart"),
    ("urdf_mimic", "URDF joint 'grip' with <mimic joint='shoulder'/>",
     lambda: load_urdf_string(_urdf('<mimic joint="shoulder" multiplier="1"/>')), URDFError,
     r"joint 'grip': <mimic> \(joint 'shoulder' copied\) is not supported"),
    ("urdf_triangle", "URDF link 'arm' with ixx=1 iyy=1 izz=5",
     lambda: load_urdf_string(_urdf(inertia='ixx="1" iyy="1" izz="5"')), URDFError,
     r"link 'arm': inertia principal moments .* break the triangle inequality"),
    ("file_shape_teapot", 'scene file body "a": "shape": {"type": "teapot"}',
     lambda: _scene_file(lambda d: d["bodies"][0].update(shape={"type": "teapot"})), SceneFileError,
     r"scene file 'arm.json': body 'a' shape: type must be one of sphere, box, capsule, cylinder, cone, convex, compound, got 'teapot'"),
    ("file_rest_rotation", 'scene file closure "lc": "rest_rotation": 5·I',
     lambda: _scene_file(lambda d: d.update(loop_closures=[{"name": "lc", "frame": "link", "body_a": "a", "point_a": [1, 0, 0],
                                                              "body_b": "b", "point_b": [0, 0, 0], "kind": "fixed",
                                                              "rest_rotation": (5 * np.eye(3)).ravel().tolist()}])),
     SceneFileError, r"scene file 'arm.json': loop closure 'lc': 'rest_rotation' must be a rotation matrix"),
    ("file_mass_string", 'scene file body "a": "mass": "heavy"',
     lambda: _scene_file(lambda d: d["bodies"][0].update(mass="heavy")), SceneFileError,
     r"scene file 'arm.json': body 'a': 'mass' must be a finite number, got 'heavy'"),
    ("file_stiffness_string", 'scene file spring: "stiffness": "stiff"',
     lambda: _scene_file(lambda d: d.update(springs=[{"name": "s", "body_a": "a", "point_a": [0, 0, 0], "body_b": "b",
                                                       "point_b": [1, 0, 0], "stiffness": "stiff"}])), SceneFileError,
     r"scene file 'arm.json': spring 's': 'stiffness' must be a finite number, got 'stiff'"),
    ("file_ground_height_list", 'scene file "ground": {"height": [0]}',
     lambda: _scene_file(lambda d: d.update(ground={"height": [0]})), SceneFileError,
     r"scene file 'arm.json': ground: 'height' must be a finite number, got \[0\]"),
    ("file_load_t_start", 'scene file moving load: "t_start": "soon"',
     lambda: _scene_file(lambda d: d.update(moving_loads=[{"force": [0, 0, -1], "path": [], "t_start": "soon", "t_end": 1}])),
     SceneFileError, r"scene file 'arm.json': moving load 0: 't_start' must be a finite number, got 'soon'"),
    ("file_joint_spring_joint", 'scene file joint spring: "joint": 3',
     lambda: _scene_file(lambda d: d.update(joint_springs=[{"joint": 3, "stiffness": 1}])), SceneFileError,
     r"scene file 'arm.json': joint spring 0: no joint named '3'"),
    ("file_contact_bodies", 'scene file "body_contacts": {"bodies": "a"}',
     lambda: _scene_file(lambda d: d.update(body_contacts={"bodies": "a"})), SceneFileError,
     r"scene file 'arm.json': body_contacts: 'bodies' must be a list of body names or indices, got 'a'"),
    ("file_metadata", 'scene file "metadata": [1]', lambda: _scene_file(lambda d: d.update(metadata=[1])), SceneFileError,
     r"scene file 'arm.json': metadata: expected an object, got list"),
    ("file_point_force_nan", 'scene file point force: "force": [0, NaN, -1]',
     lambda: _scene_file(lambda d: d.update(point_forces=[{"body": "a", "point": [0, 0, 0], "force": [0, float("nan"), -1]}])),
     SceneFileError, r"scene file 'arm.json': point force 0: 'force' must be 3 finite numbers"),
    ("scene_size_string", "engine.scenes.bridge('31')", lambda: engine.scenes.bridge("31"), ModelError,
     r"scene 'bridge': n_deck must be a whole number, got '31' \(str\)"),
    ("scene_negative_mass", "engine.scenes.bridge(31, car_mass=-5)", lambda: engine.scenes.bridge(31, car_mass=-5),
     ModelError, r"scene 'bridge': car_mass must be positive \(kg\), got -5"),
    ("dt_string", "Simulator(scene, dt='0.01')", lambda: engine.Simulator(_one_link(), "pcg", dt="0.01"),
     SimulatorOptionError, r"Simulator option 'dt' must be a number, got '0.01' \(str\)"),
    ("tol_zero", "Simulator(scene, tol=0)", lambda: engine.Simulator(_one_link(), "pcg", dt=0.01, tol=0),
     SimulatorOptionError, r"Simulator option 'tol' \(PCG relative residual\) must be in \(0, 1\), got 0.0"),
    ("tol_negative", "Simulator(scene, tol=-1)", lambda: engine.Simulator(_one_link(), "pcg", dt=0.01, tol=-1),
     SimulatorOptionError, r"Simulator option 'tol' \(PCG relative residual\) must be in \(0, 1\), got -1.0"),
    ("step_negative", "sim.step(-3)", lambda: _step(-3), SimulatorOptionError, r"step\(n\): n must be ≥ 0, got -3"),
    ("step_fraction", "sim.step(2.7)", lambda: _step(2.7), SimulatorOptionError,
     r"step\(n\): n must be a whole number of steps, got 2.7 \(float\)"),
    ("solver_typo", "Simulator(scene, 'pgc')", lambda: engine.Simulator(_one_link(), "pgc", dt=0.01),
     SimulatorOptionError, r"unknown solver 'pgc'; did you mean 'pcg'\? expected one of explicit, pcg, direct"),
    ("option_typo", "Simulator(scene, 'pcg', tol_=1e-3)", lambda: engine.Simulator(_one_link(), "pcg", dt=0.01, tol_=1e-3),
     SimulatorOptionError, r"Simulator option 'tol_' is not an option of solver 'pcg'; did you mean 'tol'\? its options: "
                           r"tol, max_iter, .*enforce_limits"),
    ("option_of_other_solver", "Simulator(scene, 'baraff', max_iter=3)",
     lambda: engine.Simulator(_one_link(), "baraff", dt=0.01, max_iter=3), SimulatorOptionError,
     r"Simulator option 'max_iter' is not an option of solver 'baraff'; its options: method, "),
    ("ordering_unknown", "Simulator(scene, 'direct', ordering='amd')",
     lambda: engine.Simulator(_one_link(), "direct", dt=0.01, ordering="amd"), SimulatorOptionError,
     r"Simulator option 'ordering' must be one of leaf-to-root, rcm, got 'amd'"),
    ("geometric_stiffness_yes", "Simulator(scene, geometric_stiffness='yes')",
     lambda: engine.Simulator(_one_link(), "pcg", dt=0.01, geometric_stiffness="yes"), SimulatorOptionError,
     r"Simulator option 'geometric_stiffness' must be one of False, True, 'joints'"),
    ("parent_bool", "add_body('arm', parent=True)", _parent_true, ModelError,
     r"body 'arm': parent must be a handle, a body name or -1, got True"),
    ("scene_negative_damping", "scene.joint_damping[:] = -5; Simulator(scene)", _negative_damping, ModelError,
     r"joint spring on 'a_joint': damping must be ≥ 0, got -5 \(scene.joint_damping\[0\]\)"),
    ("state_quaternion", "sim.state.q[:4] = (1, 0.2, 0, 0); sim.step()", _state_quaternion, ModelError,
     r"sim.state.q: the quaternion of joint 'socket' \(q\[0:4\]\) has norm 1.0198"),
    ("aba_overflow", "engine.aba(arm, q, qd, tau=[1e308, 1e308])",
     lambda: engine.aba(_two_links().model, np.zeros(2), np.zeros(2), [1e308, 1e308]), ModelError,
     r"aba: q̈ overflowed to inf/NaN from finite inputs"),
    ("scene_too_large", "engine.scenes.hanging_chain(10**7)", lambda: engine.scenes.hanging_chain(10**7), ModelError,
     r"scene 'hanging_chain': n must be at most 20,000"),
    ("contact_options_mu", "Simulator(scene, contact_options={'mu': 3})",
     lambda: engine.Simulator(_one_link(), "pcg", dt=0.01, contact_options={"mu": 3}), SimulatorOptionError,
     r"Simulator option 'contact_options': 'mu' is not a setting \(friction is the ground's"),
    ("contact_options_int", "Simulator(scene, contact_options=5)",
     lambda: engine.Simulator(_one_link(), "pcg", dt=0.01, contact_options=5), SimulatorOptionError,
     r"Simulator option 'contact_options' must be a dict of settings, got 5 \(int\)"),
    ("limit_options_typo", "Simulator(scene, limit_options={'restitutoin': .5})",
     lambda: engine.Simulator(_one_link(), "pcg", dt=0.01, limit_options={"restitutoin": 0.5}), SimulatorOptionError,
     r"'restitutoin' is not a setting; did you mean 'restitution'\?"),
    ("limits_baraff", "Simulator(limited scene, 'baraff')", lambda: engine.Simulator(_one_link((-1, 1)), "baraff", dt=0.01),
     SimulatorOptionError, r"the 'baraff' solver does not enforce joint limits, and scene 'arm' has them \(joints 'shoulder'\)"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_gives_the_documented_error(case):
    _, _, run, error, pattern = case
    with pytest.raises(error, match=pattern) as info:
        run()
    assert type(info.value).__name__ == error.__name__ or issubclass(type(info.value), error)
    if error in (ModelError, URDFError, SceneFileError):  # one type per source (Scene, builder, algorithms: ModelError)
        assert isinstance(info.value, ModelError) and not isinstance(info.value, SimulationError)
    if error is SimulatorOptionError:
        assert isinstance(info.value, SimulationError)
    assert "smaller dt" not in str(info.value)


def table() -> str:
    """The markdown table input → error type → message (docs/errors.md)."""
    rows = ["| input | error | message |", "|---|---|---|"]
    for _, text, run, error, _ in CASES:
        try:
            run()
        except Exception as e:  # noqa: BLE001 - printing what each case raises
            message = str(e).replace("|", "\\|").replace(str(Path.cwd()), ".")
            rows.append(f"| `{text}` | `{type(e).__name__}` | {message} |")
        else:
            rows.append(f"| `{text}` | (accepted) | |")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.stdout.write(table() + "\n")


@pytest.mark.parametrize("solver", ["pcg", "explicit"])
def test_non_finite_state_set_from_outside_is_named_not_blamed_on_dt(solver):
    sim = engine.Simulator(_one_link(), solver, dt=0.01)
    sim.step(2)
    sim.state.qd[0] = np.nan
    with pytest.raises(ModelError, match=r"sim.state.qd\[0\] is nan \(joint 'shoulder'\)"):
        sim.step()
    assert sim.stats.steps == 2  # the failed step was not taken
