"""Fuzz the doors issue #36 found open (hypothesis): junk written into a scene's public arrays or a running
Simulator's state, junk option dictionaries, junk sweep specs. Each either works or fails with the documented
error type whose message names the element; no other exception, no wrong answer without a word."""
from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine
from engine.errors import ModelError, SimulationError, SimulatorOptionError

NUMBERS = [np.nan, np.inf, -np.inf, -1.0, -1e-12, 0.0, 0.5, 2.0, 1e300, -1e300]
OBJECTS = [None, "x", [], [1.0, 2.0], {}, True, np.zeros((2, 2))]
SCENE_ARRAYS = ("q0", "qd0", "joint_rest", "joint_stiffness", "joint_damping", "body_damping")


def _scene(springs=True):
    b = engine.ModelBuilder()
    b.add_body("a", joint="revolute", axis=(0, 1, 0), com=(0.5, 0, 0), joint_name="hinge")
    b.add_body("b", parent="a", joint="spherical", joint_origin=(1, 0, 0), com=(0.5, 0, 0), joint_name="ball")
    scene = engine.Scene(b.finalize(), name="fuzz")
    if springs:
        scene.add_joint_spring("ball", 1.0, 0.1)
    return scene


def _step(scene_or_sim, solver="pcg", n=2):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence notes of absurd but valid numbers
        sim = scene_or_sim if isinstance(scene_or_sim, engine.Simulator) else engine.Simulator(scene_or_sim, solver,
                                                                                                 dt=0.01)
        sim.step(n)
    return sim


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(SCENE_ARRAYS), st.data(), st.sampled_from(["pcg", "explicit"]))
def test_junk_in_a_scenes_public_arrays_is_named(array, data, solver):
    scene = _scene()
    if data.draw(st.booleans(), label="replace the whole array"):
        setattr(scene, array, data.draw(st.sampled_from(OBJECTS + NUMBERS), label="value"))
    else:
        values = getattr(scene, array)
        values[data.draw(st.integers(0, len(values) - 1), label="index")] = data.draw(st.sampled_from(NUMBERS))
    try:
        sim = _step(scene, solver)
    except ModelError as e:
        assert re.search(rf"scene 'fuzz': {array}|joint spring on '(hinge|ball)'|body damping on body '[ab]'",
                         str(e)), str(e)
        return
    except SimulationError as e:  # a valid but absurd scene may diverge: named by step
        assert re.search(r"step \d+", str(e)), str(e)
        return
    if array in ("joint_damping", "body_damping", "joint_stiffness"):  # what ran holds the rule
        assert np.all(np.asarray(getattr(scene, array)) >= 0)
    assert np.isfinite(sim.state.q).all()


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["q", "qd", "t"]), st.data(), st.sampled_from(["pcg", "explicit", "baraff"]))
def test_junk_in_sim_state_is_named_and_the_step_not_taken(field, data, solver):
    sim = _step(_scene(springs=solver != "baraff"), solver)
    if field == "t" or data.draw(st.booleans(), label="replace"):
        setattr(sim.state, field, data.draw(st.sampled_from(OBJECTS + NUMBERS), label="value"))
    else:
        values = getattr(sim.state, field)
        values[data.draw(st.integers(0, len(values) - 1), label="index")] = data.draw(st.sampled_from(NUMBERS))
    try:
        _step(sim, n=1)
    except ModelError as e:
        assert str(e).startswith(f"sim.state.{field}"), str(e)
        assert sim.stats.steps == 2
        return
    except SimulationError as e:
        assert re.search(r"step 3\b", str(e)), str(e)
        return
    q = sim.state.q
    assert sim.stats.steps == 3 and abs(math.sqrt(float(q[1:5] @ q[1:5])) - 1) < 1e-6  # unit, as the rule says


CONTACT_KEYS = ["max_iter", "tol", "margin", "baumgarte", "slop", "bounce_speed", "speculative_speed", "mu", "margn",
                "method", "restitution", 3, ""]
LIMIT_KEYS = ["margin", "baumgarte", "slop", "restitution", "bounce_speed", "max_iter", "tol", "restitutoin", "mu"]
VALUES = NUMBERS + OBJECTS + [1, 50, 0, -3]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["contact_options", "limit_options"]), st.data())
def test_junk_option_dictionaries_are_simulator_option_errors(option, data):
    b = engine.ModelBuilder()
    b.add_body("ball", joint="free", shape={"type": "sphere", "radius": 0.1})
    b.add_body("arm", parent="ball", joint="revolute", axis=(0, 1, 0), com=(0.3, 0, 0), limits=(-0.5, 0.5))
    scene = engine.Scene(b.finalize(), name="drop", q0=np.array([0, 0, 0.2, 1, 0, 0, 0, 0.0]))
    scene.set_ground()
    keys = CONTACT_KEYS if option == "contact_options" else LIMIT_KEYS
    if data.draw(st.booleans(), label="not a dict"):
        value = data.draw(st.sampled_from(VALUES), label="value")
    else:
        value = data.draw(st.dictionaries(st.sampled_from(keys), st.sampled_from(VALUES), max_size=3), label="dict")
    try:
        _step(engine.Simulator(scene, "pcg", dt=0.01, **{option: value}), n=3)
    except SimulatorOptionError as e:
        assert option in str(e), str(e)
    except SimulationError as e:  # valid but absurd settings (a 1e300 margin) may diverge: named by step
        assert re.search(r"step \d+", str(e)), str(e)


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if value != value else "inf" if value == math.inf else "-inf" if value == -math.inf else repr(value)
    if isinstance(value, (int, str)):
        return repr(value) if isinstance(value, int) else '"' + value + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"


SPEC_JUNK = [5, -1, 0, 1, 1.5, 1e9, "x", "", True, [], [1, "a"], [0, 2], {"a": 1}, float("nan"), [[1]]]
SPEC_KEYS = ["scene", "solver", "substeps", "dt", "stiffness", "fps", "frames", "label", "params", "options",
             "sweep", "grid", "out", "stiffnes"]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(SPEC_KEYS), st.sampled_from(SPEC_JUNK))
def test_junk_sweep_specs_fail_at_load_naming_the_key(tmp_path_factory, key, junk):
    sweep = pytest.importorskip("engine.apps.sweep")
    grid = {"scene": "pendulum", "solver": ["pcg", "explicit"], "frames": 3, "params": {"mass": [1.0, 2.0]}}
    head = {"fps": 30}
    top = {}
    if key in ("sweep", "grid"):
        top[key] = junk
    elif key == "out":
        head["out"] = junk
    else:
        grid[key] = junk
    text = "".join(f"{k} = {_toml(v)}\n" for k, v in top.items())
    if "sweep" not in top:
        text += "[sweep]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in head.items())
    if "grid" not in top:
        text += "[[grid]]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in grid.items())
    path = tmp_path_factory.mktemp("spec") / "s.toml"
    path.write_text(text)
    try:
        spec = sweep.load_spec(path)
    except sweep.SpecError as e:
        named = re.search(rf"\b({key}|params\.\w+|unknown key|exactly one of|\[\[grid\]\]|not valid TOML|solver)\b",
                          str(e))
        assert named, str(e)
        return
    assert 1 <= len(spec["cells"]) <= sweep.MAX_CELLS
    for cell in spec["cells"]:
        assert 2 <= cell["frames"] <= sweep.MAX_FRAMES and isinstance(cell["solver"], str)
