"""Fuzz the doors (hypothesis): valid scene files and URDFs with one field replaced by junk load,
or fail with the documented error type (SceneFileError / URDFError) whose message names an
element; a loaded scene then simulates a step or fails with ModelError / SimulationError."""
from __future__ import annotations

import copy
import json
import re
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
from engine.errors import ModelError, SceneFileError, SimulationError, URDFError
from engine.scene_file import scene_from_dict, scene_to_dict
from engine.urdf import load_urdf_string

DATA = Path(__file__).resolve().parent / "data"
JUNK = [None, True, 0, -1, 2.5, 1e308, float("nan"), float("inf"), "", "x", "heavy", [], [1], [1, 2], [[1, 2], [3]],
        {}, {"type": "teapot"}, [0.0, 0.0, 0.0], [float("nan")] * 3, list(range(9)), (5 * np.eye(3)).ravel().tolist()]
ELEMENTS = ("body", "joint", "spring", "cable", "damper", "point force", "moving load", "loop closure", "ground",
            "body_contacts", "metadata", "gravity", "q0", "qd0", "version", "bodies", "file", "not a scene file",
            "joint_springs", "springs", "point_forces", "moving_loads", "loop_closures", "body_damping", "scene")


def _base_scenes():
    b = engine.ModelBuilder()
    cap = {"type": "capsule", "radius": 0.05, "length": 0.8, "axis": [1, 0, 0], "center": [0.5, 0, 0]}
    b.add_body("a", joint="revolute", axis=(0, 1, 0), com=(0.5, 0, 0), limits=(-1, 1), shape=cap)
    b.add_body("b", parent="a", joint="spherical", joint_origin=(1, 0, 0), com=(0.5, 0, 0), shape=dict(cap),
               limits=((-0.5, -0.5, -0.5), (0.5, 0.5, 0.5)))
    b.add_body("c", parent="b", joint="revolute", axis=(0, 1, 0), joint_origin=(1, 0, 0), com=(0.5, 0, 0))
    scene = engine.Scene(b.finalize(), name="fuzz")
    scene.add_spring("a", (0.5, 0, 0), "c", (2.5, 0, 0), 20.0, damping=0.1, name="strap")
    scene.add_point_force("c", (2.5, 0, 0), (0, 0, -1), name="push")
    scene.add_joint_spring("a_joint", 2.0, 0.1)
    scene.add_loop_closure("c", "world", (3.0, 0, 0), kind="point", name="pin")
    scene.set_ground(height=-2.0)
    data = scene_to_dict(scene)
    data["moving_loads"] = [{"name": "car", "force": [0, 0, -1], "path": [{"body": "a", "start": [0, 0, 0], "end": [1, 0, 0]}],
                             "t_start": 0.0, "t_end": 1.0}]
    return [json.loads(json.dumps(data)), json.loads(json.dumps(scene_to_dict(engine.scenes.four_bar())))]


BASES = _base_scenes()


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


def _set(data, path, value, delete):
    node = data
    for k in path[:-1]:
        node = node[k]
    if delete and isinstance(node, dict):
        del node[path[-1]]
    else:
        node[path[-1]] = value


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(BASES) - 1), st.data())
def test_mutated_scene_files_fail_only_with_named_scene_file_errors(base, data):
    doc = copy.deepcopy(BASES[base])
    paths = [p for p in _paths(doc) if p]
    for _ in range(data.draw(st.integers(1, 2), label="mutations")):
        paths = [p for p in _paths(doc) if p]
        path = data.draw(st.sampled_from(paths), label="path")
        _set(doc, path, copy.deepcopy(data.draw(st.sampled_from(JUNK), label="junk")), data.draw(st.booleans(), label="delete"))
    try:
        scene = scene_from_dict(doc, "fuzz.json")
    except SceneFileError as e:
        message = str(e)
        assert message.startswith("scene file 'fuzz.json': "), message
        rest = message[len("scene file 'fuzz.json': "):]
        assert rest.startswith(ELEMENTS) or re.match(r"^(version|not a)", rest), message
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # overflow / convergence warnings of absurd but valid numbers
        try:
            engine.Simulator(scene, "pcg", dt=1 / 60).step(2)
        except (ModelError, SimulationError) as e:
            assert re.search(r"'[^']+'|step \d+", str(e)), str(e)  # names an element (or the step)


@pytest.mark.parametrize("path, junk", [(("point_forces", 0, "point", 0), 1e308),
                                        (("loop_closures", 0, "point_b"), None)])
def test_examples_hypothesis_found(path, junk):
    """A point force 1e308 m out (finite, but its forces are not: LAPACK then fails inside the step)
    and a required vector written as null: named errors, not LinAlgError or a numpy ValueError."""
    data = copy.deepcopy(BASES[0])
    _set(data, path, junk, False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises((ModelError, SimulationError), match=r"step \d+|'point_b'"):
            engine.Simulator(scene_from_dict(data, "fuzz.json"), "pcg", dt=1 / 60).step(2)


URDF_JUNK = ["", "nan", "inf", "-1", "0", "1 2", "abc", "1e400", "0 0 0", "1 0 0 0"]


def _urdf_elements(root):
    return [el for el in root.iter()]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_mutated_urdfs_fail_only_with_named_urdf_errors(data):
    root = ET.fromstring((DATA / "branched_arm.urdf").read_text(encoding="utf-8"))
    elements = _urdf_elements(root)
    el = data.draw(st.sampled_from(elements), label="element")
    action = data.draw(st.sampled_from(["attribute", "remove", "mimic", "duplicate"]), label="action")
    if action == "attribute" and el.attrib:
        key = data.draw(st.sampled_from(sorted(el.attrib)), label="attribute")
        el.set(key, data.draw(st.sampled_from(URDF_JUNK), label="value"))
    elif action == "remove":
        parent = next((p for p in root.iter() if el in list(p)), None)
        if parent is not None:
            parent.remove(el)
    elif action == "mimic" and el.tag == "joint":
        ET.SubElement(el, "mimic", joint="shoulder_l")
    elif action == "duplicate" and el is not root:
        root.append(copy.deepcopy(el))
    text = ET.tostring(root, encoding="unicode")
    try:
        load_urdf_string(text, source="fuzz.urdf")
    except URDFError as e:
        assert re.search(r"(link|joint) '[^']*'|fuzz\.urdf", str(e)), str(e)


API_JUNK = [None, True, "x", [], [1, 2], {}, float("nan"), -1, 1e308, (0, 0, 0), (1, 0, 0, 0), [[1, 2], [3]]]
BODY_KEYS = ["parent", "joint", "axis", "joint_origin", "joint_rotation", "mass", "com", "inertia", "joint_name", "limits",
             "shape"]


def _two_body_scene():
    b = engine.ModelBuilder()
    b.add_body("a", joint="revolute", axis=(0, 1, 0), com=(0.5, 0, 0))
    b.add_body("b", parent="a", joint="spherical", joint_origin=(1, 0, 0), com=(0.5, 0, 0))
    return engine.Scene(b.finalize(), name="s")


SCENE_CALLS = {  # method: (arguments of a valid call, keyword names past the positional ones)
    "add_spring": ("a", (0, 0, 0), "b", (1, 0, 0), 10.0),
    "add_cable": ("a", (0, 0, 0), "b", (1, 0, 0), 10.0),
    "add_damper": ("a", (0, 0, 0), "b", (1, 0, 0), 1.0),
    "add_point_force": ("b", (1, 0, 0), (0, 0, 1)),
    "add_joint_spring": ("a_joint", 1.0, 0.1, 0.2),
    "set_body_damping": (0.1, "a"),
    "add_loop_closure": ("a", "b", (1, 0, 0)),
    "add_moving_load": ((0, 0, -1), [("a", (0, 0, 0), (1, 0, 0))], 0.0, 1.0),
    "set_ground": (0.0, (0, 0, 1), 0.8, 0.0),
}


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(BODY_KEYS), st.sampled_from(API_JUNK))
def test_builder_arguments_fail_only_with_model_errors(key, junk):
    b = engine.ModelBuilder()
    b.add_body("base", joint="revolute")
    try:
        b.add_body("x", **{key: copy.deepcopy(junk)})
        engine.Simulator(engine.Scene(b.finalize()), "pcg", dt=0.01).step(2)
    except ModelError as e:
        assert re.search(r"(body|joint) '[^']+'|gravity", str(e)), str(e)
    except SimulationError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(SCENE_CALLS)), st.data())
def test_scene_methods_fail_only_with_model_errors(method, data):
    args = list(SCENE_CALLS[method])
    k = data.draw(st.integers(0, len(args) - 1), label="argument")
    args[k] = copy.deepcopy(data.draw(st.sampled_from(API_JUNK), label="junk"))
    try:
        getattr(_two_body_scene(), method)(*args)
    except ModelError:
        pass


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["aba", "crba", "minv", "rnea"]), st.sampled_from(API_JUNK))
def test_algorithm_inputs_fail_only_with_model_errors(name, junk):
    model = engine.random_tree(4, seed=1)
    args = {"aba": (junk, np.zeros(model.nv), np.zeros(model.nv)), "crba": (junk,), "minv": (junk,),
            "rnea": (model.neutral_q(), junk, np.zeros(model.nv))}[name]
    try:
        getattr(engine, name)(model, *args)
    except ModelError as e:
        assert re.search(r"^(q|qd|qdd|tau)\b", str(e)), str(e)
