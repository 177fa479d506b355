"""ModelBuilder validation, layout and conventions."""
import numpy as np
import pytest

import engine
from engine import ModelError


def _pendulum_builder():
    b = engine.ModelBuilder()
    b.add_body("arm", joint="revolute", axis=(1, 0, 0), com=(0, 0, -0.5), mass=2.0, inertia=(0.1, 0.1, 0.01))
    return b


def test_cycle_is_reported_with_body_names():
    b = engine.ModelBuilder()
    b.add_body("root", joint="revolute")
    b.add_body("a", parent="c")
    b.add_body("b", parent="a")
    b.add_body("c", parent="b")
    with pytest.raises(ModelError, match="cycle in the joint tree") as err:
        b.finalize()
    assert all(f"'{name}'" in str(err.value) for name in "abc") and "'root'" not in str(err.value)


def test_unknown_parent_names_body_and_parent():
    b = engine.ModelBuilder()
    b.add_body("root")
    b.add_body("hand", parent="forearm")
    with pytest.raises(ModelError, match="body 'hand'.*unknown parent body 'forearm'"):
        b.finalize()
    with pytest.raises(ModelError, match="body 'x'.*unknown parent handle 7"):
        b.add_body("x", parent=7)


def test_zero_length_axis_names_joint():
    b = engine.ModelBuilder()
    with pytest.raises(ModelError, match="joint 'knee_l': axis has zero length"):
        b.add_body("shin_l", joint="revolute", axis=(0, 0, 0), joint_name="knee_l")


@pytest.mark.parametrize("mass", [0.0, -1.0, float("nan")])
def test_bad_mass_names_body(mass):
    with pytest.raises(ModelError, match="body 'arm': mass must be > 0"):
        engine.ModelBuilder().add_body("arm", mass=mass)


def test_other_bad_input():
    b = engine.ModelBuilder()
    with pytest.raises(ModelError, match="body 'a'.*not positive definite"):
        b.add_body("a", inertia=np.diag([1.0, -1.0, 1.0]))
    with pytest.raises(ModelError, match="unknown joint type 'hinge'"):
        b.add_body("a", joint="hinge")
    b.add_body("a")
    with pytest.raises(ModelError, match="body 'a': a body with this name already exists"):
        b.add_body("a")
    with pytest.raises(ModelError, match="joint 'j'.*joint_origin"):
        b.add_body("b", joint_origin=(0, np.nan, 0), joint_name="j")
    with pytest.raises(ModelError, match="no bodies"):
        engine.ModelBuilder().finalize()


def test_nan_in_q_names_the_joint():
    model = engine.random_tree(4, branching="chain", joint_types=("revolute",), seed=0)
    q = np.zeros(model.nq)
    q[2] = np.nan
    with pytest.raises(ModelError, match=r"q\[2\] is nan \(joint 'j2'\)"):
        engine.aba(model, q, np.zeros(model.nv), np.zeros(model.nv))
    with pytest.raises(ModelError, match=r"qd: expected shape \(4,\)"):
        engine.rnea(model, np.zeros(4), np.zeros(3), np.zeros(4))


def test_layout_and_slices():
    model = engine.random_tree(6, seed=2, floating_base=True)
    assert all(model.body_parent[i] < i for i in range(model.n_bodies))
    assert model.joint_type[0] == engine.joints.FREE and model.is_floating
    assert model.q_slice("j0") == slice(0, 7) and model.v_slice("j0") == slice(0, 6)
    assert model.nq == sum(model.joint_nq) and model.nv == sum(model.joint_nv)
    with pytest.raises(KeyError, match="no joint named 'nope'"):
        model.q_slice("nope")


def test_forward_references_are_sorted_topologically():
    b = engine.ModelBuilder()
    b.add_body("hand", parent="arm")
    b.add_body("arm", parent=-1)
    model = b.finalize()
    assert model.body_names == ["arm", "hand"] and list(model.body_parent) == [-1, 0]


def test_conventions_gravity_z_down_and_spatial_order():
    """Z up, g = (0, 0, −9.81); spatial vectors are [angular; linear]."""
    b = engine.ModelBuilder()
    b.add_body("ball", joint="free", mass=1.0)
    model = b.finalize()
    assert np.allclose(model.gravity, [0, 0, -9.81])
    qdd = engine.aba(model, model.neutral_q(), np.zeros(6), np.zeros(6))
    assert np.allclose(qdd, [0, 0, 0, 0, 0, -9.81])


def test_body_frame_sits_at_com_on_principal_axes():
    b = engine.ModelBuilder()
    R = np.array([[0.0, -1, 0], [1, 0, 0], [0, 0, 1]])
    b.add_body("box", joint="revolute", axis=(0, 0, 1), com=(1.0, 0, 0), inertia=R @ np.diag([1.0, 2.0, 3.0]) @ R.T)
    model = b.finalize()
    Rb, p = engine.forward_kinematics(model, np.array([np.pi / 2]))
    assert np.allclose(p[0], [0, 1, 0])  # COM swung from +x to +y
    Iw = Rb[0] @ np.diag(model.body_principal_inertia[0]) @ Rb[0].T
    Rz = np.array([[0.0, -1, 0], [1, 0, 0], [0, 0, 1]])
    assert np.allclose(Iw, Rz @ R @ np.diag([1.0, 2.0, 3.0]) @ R.T @ Rz.T)


def test_compound_pendulum_matches_analytic_acceleration():
    model = _pendulum_builder().finalize()
    for th in (0.1, 1.0, -2.0):
        qdd = engine.aba(model, np.array([th]), np.zeros(1), np.zeros(1))
        # about x, COM at −0.5 z: θ̈ = −m g L sin θ / (I + m L²)
        assert np.isclose(qdd[0], -2.0 * 9.81 * 0.5 * np.sin(th) / (0.1 + 2.0 * 0.25), rtol=1e-12)


def test_model_arrays_are_frozen():
    model = _pendulum_builder().finalize()
    with pytest.raises(ValueError):
        model.body_mass[0] = 3.0
