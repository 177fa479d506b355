"""URDF loading: analytic pendulum, names, floating base, inertia rotation, malformed files."""
from pathlib import Path

import numpy as np
import pytest

import engine
from engine import URDFError
from engine.spatial import spatial_inertia
from engine.urdf import load_urdf_string, rpy_to_matrix

DATA = Path(__file__).parent / "data"


def test_pendulum_matches_analytic_angular_acceleration():
    model = engine.load_urdf(DATA / "pendulum.urdf")
    assert model.nv == 1 and model.joint_names[1] == "hinge"
    m, L, Ic = 2.0, 0.5, 0.1
    for th in (0.05, 0.7, 2.5, -1.2):
        qdd = engine.aba(model, np.array([th]), np.zeros(1), np.zeros(1))[0]
        assert np.isclose(qdd, -m * 9.81 * L * np.sin(th) / (Ic + m * L * L), rtol=1e-9)


def test_branched_arm_names_limits_and_slices():
    model = engine.load_urdf(DATA / "branched_arm.urdf")
    assert model.body_names[0] == "base" and set(model.joint_names) >= {"shoulder_l", "elbow_l", "wrist_l", "slide_r"}
    assert model.nv == 4 and model.nq == 4
    sl = model.v_slice("slide_r")
    assert model.joint_lower[sl][0] == 0.0 and model.joint_upper[sl][0] == 0.2
    assert model.v_slice("wrist_l").stop - model.v_slice("wrist_l").start == 0
    q = np.array([0.3, -0.4, 1.0, 0.1])
    M = engine.crba(model, q)
    assert np.allclose(engine.minv(model, q) @ M, np.eye(4), atol=1e-9)


def test_inertial_rpy_rotates_the_tensor_into_link_axes():
    model = engine.load_urdf(DATA / "branched_arm.urdf")
    i = model.body_index("upper_l")
    R = rpy_to_matrix((0.3, 0, 0.2))
    I = np.array([[0.02, 0.001, 0], [0.001, 0.03, 0], [0, 0, 0.005]])
    expected = spatial_inertia(1.5, (0, 0, 0.2), R @ I @ R.T)
    assert np.allclose(model.tree.link_inertia[i], expected, atol=1e-12)


def test_quadruped_floating_base():
    model = engine.load_urdf(DATA / "quadruped.urdf", floating_base=True)
    assert model.is_floating and model.nv == 6 + 12 and model.joint_names[0] == "torso_floating"
    q, _ = engine.random_configuration(model, np.random.default_rng(0))
    assert np.allclose(engine.minv(model, q) @ engine.crba(model, q), np.eye(model.nv), atol=1e-9)


_LINK = '<link name="{n}"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>'
_JOINT = '<joint name="{n}" type="{t}"><parent link="{p}"/><child link="{c}"/><axis xyz="0 0 1"/></joint>'


def _robot(*parts):
    return '<robot name="r">' + "".join(parts) + "</robot>"


@pytest.mark.parametrize("text, needle", [
    (_robot(_LINK.format(n="a"), _LINK.format(n="b"), _JOINT.format(n="j1", t="planar", p="a", c="b")), "joint 'j1'"),
    (_robot(_LINK.format(n="a"), _JOINT.format(n="j1", t="revolute", p="ghost", c="a")), "joint 'j1': parent link 'ghost'"),
    (_robot(_LINK.format(n="a"), _LINK.format(n="b").replace('value="1"', 'value="-2"'),
            _JOINT.format(n="j1", t="revolute", p="a", c="b")), "link 'b': mass must be > 0"),
    (_robot(_LINK.format(n="a"), _LINK.format(n="b").replace('ixx="1"', 'ixx="-1"'),
            _JOINT.format(n="j1", t="revolute", p="a", c="b")), "link 'b': inertia tensor is not positive definite"),
    (_robot(_LINK.format(n="r"), _LINK.format(n="a"), _LINK.format(n="b"),
            _JOINT.format(n="j0", t="revolute", p="r", c="a"), _JOINT.format(n="j1", t="revolute", p="a", c="b"),
            _JOINT.format(n="j2", t="revolute", p="b", c="a")), "link 'a'"),
    (_robot(_LINK.format(n="a"), _LINK.format(n="b"), _JOINT.format(n="j1", t="revolute", p="a", c="b"),
            _JOINT.format(n="j2", t="revolute", p="b", c="a")), "cycle"),
    (_robot(_LINK.format(n="a"), '<link name="b"/>', _JOINT.format(n="j1", t="revolute", p="a", c="b")),
     "link 'b': has no <inertial> but moves on joint 'j1'"),
    (_robot(_LINK.format(n="a"), _LINK.format(n="b"),
            _JOINT.format(n="j1", t="revolute", p="a", c="b").replace('xyz="0 0 1"', 'xyz="0 0 0"')), "joint 'j1': axis has zero length"),
    ("<robot><link", "not valid XML"),
    ("<model/>", "expected <robot>"),
])
def test_malformed_urdf_names_the_element(text, needle):
    with pytest.raises(URDFError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        load_urdf_string(text)


def test_unreadable_file(tmp_path):
    with pytest.raises(URDFError, match="cannot read URDF"):
        engine.load_urdf(tmp_path / "missing.urdf")
