"""``python -m engine view``: bad input is one ``error:`` line and exit code 2, never a traceback;
``--save-scene`` writes a scene file; ``python -m engine --help`` lists the command."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import engine
from engine.__main__ import main

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"


def cli(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


def assert_one_line_error(result, fragment):
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert fragment in lines[0]
    assert "Traceback" not in result.stderr


def test_help_lists_the_commands():
    result = cli("--help")
    assert result.returncode == 0 and "bench" in result.stdout and "view" in result.stdout


@pytest.mark.parametrize("args, fragment", [
    (("view", "brigde", "--screenshot", "x.png"), "unknown scene 'brigde' (available: bridge, umbrella"),
    (("view", "--urdf", "no/such/robot.urdf"), "cannot read URDF 'no/such/robot.urdf'"),
    (("view", "--urdf", "MALFORMED"), "bad.urdf: not valid XML"),
    (("view", "--scene-file", "BADJSON"), "not valid JSON"),
])
def test_bad_input_is_one_line_and_exit_code_2(tmp_path, args, fragment):
    bad_urdf = tmp_path / "bad.urdf"
    bad_urdf.write_text("<robot name='r'><link name='a'>")
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{oops")
    args = [str(bad_urdf) if a == "MALFORMED" else str(bad_json) if a == "BADJSON" else a for a in args]
    assert_one_line_error(cli(*args), fragment)


@pytest.mark.parametrize("args, fragment", [
    ((), "give exactly one of a scene name, --urdf FILE or --scene-file FILE"),
    (("chain", "--urdf", "x.urdf"), "give exactly one of"),
    (("chain", "--solver", "magic"), "unknown solver 'magic'"),
    (("four_bar", "--solver", "explicit", "--save-scene", "x.json"), "does not handle loop closures"),
    (("chain", "--size", "0", "--save-scene", "x.json"), "size must be between 1 and 100"),
    (("chain", "--dt", "-1", "--save-scene", "x.json"), "time step must be a positive number"),
    (("chain", "--screenshot", "shot.txt"), "must end in .png"),
    (("chain", "--record", "movie.avi"), "must end in .gif or .mp4"),
    (("chain", "--screenshot", "a.png", "--record", "b.gif"), "one of --screenshot, --record"),
    (("chain", "--screenshot", "README.md/a.png"),  # (a missing folder is made; one under a file cannot be)
     "cannot write --screenshot 'README.md/a.png': its folder 'README.md': it is a file, not a folder"),
    (("chain", "--substeps", "0", "--save-scene", "x.json"), "--substeps must be 1 … 1000, got 0"),
    (("chain", "--resolution", "big", "--screenshot", "a.png"), "--resolution must look like 1280x720"),
])
def test_bad_options(capsys, args, fragment):
    assert main(["view", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and fragment in err[0], err


def test_save_scene_writes_a_scene_file(tmp_path, capsys):
    out = tmp_path / "bridge.json"
    assert main(["view", "bridge", "--size", "7", "--car-mass", "0", "--stiffness-scale", "2", "--save-scene", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    scene = engine.load_scene(out)
    reference = engine.scenes.bridge(7, 7)
    assert scene.model.n_bodies == reference.model.n_bodies and not scene.moving_loads
    assert scene.pairs[0][4] == 2 * reference.pairs[0][4]
    assert main(["view", "--scene-file", str(out), "--save-scene", str(tmp_path / "again.json")]) == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="without DISPLAY only X11/Wayland systems lack a window")
def test_window_without_a_display_is_one_line():
    pytest.importorskip("polyscope", reason="the viewer extra is not installed")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "REDMAX_VIEWER_BACKEND")}
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run([sys.executable, "-m", "engine", "view", "pendulum"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    assert_one_line_error(result, "cannot open a window")
