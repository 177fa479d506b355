"""scripts/bake_demo.py refuses arguments that cannot make a bake, naming the argument, before Blender starts."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import bake_demo  # noqa: E402


@pytest.mark.parametrize("argv, message", [
    (["--substeps", "0"], "argument --substeps: must be at least 1, got 0"),
    (["--frames", "1"], "argument --frames: must be at least 2, got 1"),
    (["--frames", "-5"], "argument --frames: must be at least 2, got -5"),
    (["--frames", "many"], "argument --frames: invalid integer value: 'many'"),
    (["--scene", "teapot"], "argument --scene: invalid choice: 'TEAPOT'"),
])
def test_bad_arguments_are_refused_by_name(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        bake_demo.parse(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_scene_and_solver_names_in_any_case():
    args = bake_demo.parse(["--scene", "umbrella", "--solver", "direct", "--frames", "2"])
    assert (args.scene, args.solver, args.frames, args.substeps) == ("UMBRELLA", "DIRECT", 2, 2)


def test_refused_before_blender_is_imported():
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "bake_demo.py"), "--substeps", "0"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--substeps" in done.stderr and "Traceback" not in done.stderr
