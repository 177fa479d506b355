"""URDF loading: analytic pendulum, names, floating base, inertia rotation, malformed files."""
import re
from pathlib import Path

import numpy as np
import pytest

import engine
from engine import URDFError
from engine.spatial import spatial_inertia
from engine.urdf import load_urdf_string, rpy_to_matrix

DATA = Path(__file__).parent / "data"


def _Rx(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def _Ry(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def _Rz(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


# ---------------------------------------------------------------- pendulum
def test_pendulum_matches_analytic_angular_acceleration():
    # hinge about +x at z = 1, COM at (0, 0, -L) in the link frame: rotating by θ about +x
    # puts the COM at (0, L sin θ, 1 - L cos θ), so gravity (0, 0, -g) gives θ̈ = -m g L sin θ / (I_c + m L²)
    model = engine.load_urdf(DATA / "pendulum.urdf")
    assert model.nv == 1 and model.joint_names == ["base_fixed", "hinge"] and model.body_names == ["base", "rod"]
    assert model.body_mass[0] == 0.0  # the massless root is kept as a massless body fixed to the world
    m, L, Ic, g = 2.0, 0.5, 0.1, 9.81
    for th in (0.05, 0.7, 2.5, -1.2, 3.0):
        qdd = engine.aba(model, np.array([th]), np.zeros(1), np.zeros(1))[0]
        expected = -m * g * L * np.sin(th) / (Ic + m * L * L)
        assert qdd == pytest.approx(expected, rel=1e-9)
        _, p = engine.forward_kinematics(model, np.array([th]))
        assert np.allclose(p[1], [0.0, L * np.sin(th), 1.0 - L * np.cos(th)], atol=1e-12)


def test_load_urdf_accepts_str_path_and_bytes():
    model = engine.load_urdf(str(DATA / "pendulum.urdf"))
    assert model.nv == 1
    text = (DATA / "pendulum.urdf").read_bytes()
    assert load_urdf_string(text).nv == 1
    assert load_urdf_string(text.decode()).nv == 1


# ------------------------------------------------------------ branched arm
def test_branched_arm_names_limits_and_slices():
    model = engine.load_urdf(DATA / "branched_arm.urdf")
    assert model.body_names[0] == "base" and model.joint_names[0] == "base_fixed"
    assert set(model.body_names) == {"base", "upper_l", "lower_l", "tool_l", "upper_r", "slider_r", "marker"}
    assert set(model.joint_names) == {"base_fixed", "shoulder_l", "elbow_l", "wrist_l", "shoulder_r", "slide_r", "marker_mount"}
    # parents before children, and the tree is the URDF's
    assert all(model.body_parent[i] < i for i in range(model.n_bodies))
    parent_of = {model.body_names[i]: model.body_names[p] for i, p in enumerate(model.body_parent) if p >= 0}
    assert parent_of == {"upper_l": "base", "lower_l": "upper_l", "tool_l": "lower_l", "upper_r": "base",
                         "slider_r": "upper_r", "marker": "base"}
    assert model.nv == 4 and model.nq == 4
    # every moving joint owns one coordinate; fixed joints own none
    slices = {name: model.v_slice(name) for name in ("shoulder_l", "elbow_l", "shoulder_r", "slide_r")}
    assert sorted(s.start for s in slices.values()) == [0, 1, 2, 3]
    for name, s in slices.items():
        assert s.stop - s.start == 1 and model.q_slice(name) == s
    for name in ("wrist_l", "marker_mount", "base_fixed"):
        assert model.v_slice(name).stop == model.v_slice(name).start
        assert model.q_slice(name).stop == model.q_slice(name).start
    # limits: revolute/prismatic from <limit>, continuous unlimited
    lo, hi = model.joint_lower, model.joint_upper
    assert (lo[slices["slide_r"]][0], hi[slices["slide_r"]][0]) == (0.0, 0.2)
    assert (lo[slices["elbow_l"]][0], hi[slices["elbow_l"]][0]) == (-2.0, 0.5)
    assert lo[slices["shoulder_r"]][0] == -np.inf and hi[slices["shoulder_r"]][0] == np.inf
    # joint axes normalised, joint origins / rpy carried over
    j = model.joint_index("elbow_l")
    assert np.allclose(model.joint_axis[j], np.array([1, 0, 1]) / np.sqrt(2))
    j = model.joint_index("shoulder_l")
    assert np.allclose(model.joint_origin[j], [0.2, 0.1, 0.3]) and np.allclose(model.joint_rotation[j], _Ry(0.2))
    # the massless marker sits 0.5 m above the base origin and moves with nothing
    q = np.zeros(4)
    q[slices["slide_r"]] = 0.1
    _, p = engine.link_poses(model, q)
    assert np.allclose(p[model.body_index("marker")], [0, 0, 0.5])
    # prismatic slide along the +z axis of upper_r, whose frame is 0.3 + 0.4 above the base
    assert np.allclose(p[model.body_index("slider_r")], [-0.2, 0.1, 0.8])
    q = np.array([0.3, -0.4, 1.0, 0.1])
    M = engine.crba(model, q)
    assert np.allclose(engine.minv(model, q) @ M, np.eye(4), atol=1e-9)


def test_inertial_rpy_rotates_the_tensor_into_link_axes():
    model = engine.load_urdf(DATA / "branched_arm.urdf")
    # upper_l: <origin xyz="0 0 0.2" rpy="0.3 0 0.2"/>, R = Rz(0.2) Ry(0) Rx(0.3)
    R = _Rz(0.2) @ _Rx(0.3)
    I = np.array([[0.02, 0.001, 0], [0.001, 0.03, 0], [0, 0, 0.012]])
    expected = spatial_inertia(1.5, np.array([0, 0, 0.2]), R @ I @ R.T)
    assert np.allclose(model.tree.link_inertia[model.body_index("upper_l")], expected, atol=1e-12)
    # slider_r: rpy="0 0.5 0" with an off-diagonal ixz
    R = _Ry(0.5)
    I = np.array([[0.004, 0, 0.0005], [0, 0.004, 0], [0.0005, 0, 0.001]])
    expected = spatial_inertia(0.8, np.array([0, 0, 0.1]), R @ I @ R.T)
    assert np.allclose(model.tree.link_inertia[model.body_index("slider_r")], expected, atol=1e-12)


def test_rpy_is_fixed_axis_roll_then_pitch_then_yaw():
    assert np.allclose(rpy_to_matrix((0, 0, np.pi / 2)) @ [1, 0, 0], [0, 1, 0])
    # roll about x first, then yaw about the fixed z: x stays x then goes to y; y goes to z then stays
    R = rpy_to_matrix((np.pi / 2, 0, np.pi / 2))
    assert np.allclose(R @ [1, 0, 0], [0, 1, 0]) and np.allclose(R @ [0, 1, 0], [0, 0, 1])
    a, b, c = 0.3, -0.7, 1.1
    assert np.allclose(rpy_to_matrix((a, b, c)), _Rz(c) @ _Ry(b) @ _Rx(a), atol=1e-15)


# ---------------------------------------------------------------- quadruped
def test_quadruped_floating_base():
    model = engine.load_urdf(DATA / "quadruped.urdf", floating_base=True)
    assert model.is_floating and model.nv == 6 + 12 and model.nq == 7 + 12
    assert model.joint_names[0] == "torso_floating" and model.body_names[0] == "torso"
    assert model.v_slice("torso_floating") == slice(0, 6) and model.q_slice("torso_floating") == slice(0, 7)
    q, _ = engine.random_configuration(model, np.random.default_rng(0))
    assert np.allclose(engine.minv(model, q) @ engine.crba(model, q), np.eye(model.nv), atol=1e-9)


def test_quadruped_fixed_base_by_default():
    model = engine.load_urdf(DATA / "quadruped.urdf")
    assert not model.is_floating and model.nv == 12 and model.joint_names[0] == "torso_fixed"


def test_zero_mass_inertial_is_a_massless_fixed_link():
    text = (DATA / "branched_arm.urdf").read_text().replace(
        '<link name="marker"/>',
        '<link name="marker"><inertial><mass value="0"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>')
    model = load_urdf_string(text)
    assert model.body_mass[model.body_index("marker")] == 0.0


# ---------------------------------------------------------- malformed files
_INERTIA = '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>'
_LINK = '<link name="{n}"><inertial><mass value="1"/>' + _INERTIA + '</inertial></link>'
_JOINT = '<joint name="{n}" type="{t}"><parent link="{p}"/><child link="{c}"/><axis xyz="0 0 1"/></joint>'


def L(n, **replace):
    s = _LINK.format(n=n)
    for k, v in replace.items():
        s = s.replace(f'{k}="1"', f'{k}="{v}"', 1)
    return s


def J(n, p, c, t="revolute"):
    return _JOINT.format(n=n, t=t, p=p, c=c)


def _robot(*parts):
    return '<robot name="r">' + "".join(parts) + "</robot>"


MALFORMED = {
    "planar": (_robot(L("a"), L("b"), J("j1", "a", "b", "planar")), "joint 'j1'.*'planar'"),
    "unknown_type": (_robot(L("a"), L("b"), J("j1", "a", "b", "ball")), "joint 'j1'.*'ball'"),
    "missing_type": (_robot(L("a"), L("b"), J("j1", "a", "b").replace(' type="revolute"', "")), "joint 'j1'"),
    "undefined_parent": (_robot(L("a"), J("j1", "ghost", "a")), "joint 'j1': parent link 'ghost'"),
    "undefined_child": (_robot(L("a"), J("j1", "a", "ghost")), "joint 'j1': child link 'ghost'"),
    "no_child_element": (_robot(L("a"), L("b"), J("j1", "a", "b").replace('<child link="b"/>', "")), "joint 'j1'.*<child"),
    "negative_mass": (_robot(L("a"), L("b", value=-2), J("j1", "a", "b")), "link 'b': mass must be >= 0"),
    "nan_mass": (_robot(L("a"), L("b", value="nan"), J("j1", "a", "b")), "link 'b'.*finite"),
    "inf_mass": (_robot(L("a"), L("b", value="inf"), J("j1", "a", "b")), "link 'b'.*finite"),
    "missing_mass_value": (_robot(L("a"), L("b").replace(' value="1"', ""), J("j1", "a", "b")), "link 'b'.*'value'"),
    "missing_mass": (_robot(L("a"), L("b").replace('<mass value="1"/>', ""), J("j1", "a", "b")), "link 'b'.*<mass>"),
    "missing_inertia": (_robot(L("a"), L("b").replace(_INERTIA, ""), J("j1", "a", "b")), "link 'b'.*<inertia>"),
    "missing_izz": (_robot(L("a"), L("b").replace(' izz="1"', ""), J("j1", "a", "b")), "link 'b'.*'izz'"),
    "not_positive_definite": (_robot(L("a"), L("b", ixx=-1), J("j1", "a", "b")), "link 'b': inertia tensor is not positive definite"),
    "child_of_two_joints": (_robot(L("r"), L("a"), L("b"), J("j0", "r", "a"), J("j1", "a", "b"), J("j2", "b", "a")),
                            "link 'a': child of two joints"),
    "cycle_no_root": (_robot(L("a"), L("b"), J("j1", "a", "b"), J("j2", "b", "a")), "cycle.*links 'a', 'b' and joints 'j2', 'j1'"),
    "cycle_beside_root": (_robot(L("r"), L("a"), L("b"), J("j1", "a", "b"), J("j2", "b", "a")), "cycle.*'b'"),
    "self_loop": (_robot(L("r"), L("a"), J("j0", "r", "r")), "cycle.*'r'.*joints 'j0'"),
    "two_roots": (_robot(L("a"), L("b")), "exactly one root.*'a', 'b'"),
    "duplicate_link": (_robot(L("a"), L("a")), "link 'a': defined twice"),
    "duplicate_joint": (_robot(L("a"), L("b"), L("c"), J("j1", "a", "b"), J("j1", "a", "c")), "joint 'j1': defined twice"),
    "moving_massless": (_robot(L("a"), '<link name="b"/>', J("j1", "a", "b")), "link 'b': massless.*joint 'j1'"),
    "moving_zero_mass": (_robot(L("a"), L("b", value=0), J("j1", "a", "b", "prismatic")), "link 'b': massless.*joint 'j1'"),
    "zero_axis": (_robot(L("a"), L("b"), J("j1", "a", "b").replace('xyz="0 0 1"', 'xyz="0 0 0"')), "joint 'j1': axis has zero length"),
    "bad_origin": (_robot(L("a"), L("b"), J("j1", "a", "b").replace("<axis", '<origin xyz="1 2"/><axis')), "joint 'j1' origin xyz"),
    "bad_rpy": (_robot(L("a"), L("b"), J("j1", "a", "b").replace("<axis", '<origin rpy="0 x 0"/><axis')), "joint 'j1' origin rpy"),
    "limits_crossed": (_robot(L("a"), L("b"), J("j1", "a", "b").replace("</joint>", '<limit lower="1" upper="-1"/></joint>')),
                       "joint 'j1': limit lower"),
    "reserved_root_joint_name": (_robot(L("a"), L("b"), J("a_fixed", "a", "b")), "joint 'a_fixed'"),
    "unnamed_link": (_robot('<link/>'), "<link> has no name"),
    "not_xml": ("<robot><link", "not valid XML"),
    "wrong_root_tag": ("<model/>", "expected <robot>"),
}


@pytest.mark.parametrize("text, pattern", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_urdf_names_the_element(text, pattern):
    with pytest.raises(URDFError, match=pattern) as info:
        load_urdf_string(text)
    assert isinstance(info.value, engine.ModelError)


def test_floating_base_needs_a_massive_root():
    with pytest.raises(URDFError, match=re.escape("link 'base': a floating base needs an <inertial>")):
        engine.load_urdf(DATA / "pendulum.urdf", floating_base=True)


def test_unreadable_file(tmp_path):
    with pytest.raises(URDFError, match="cannot read URDF"):
        engine.load_urdf(tmp_path / "missing.urdf")
