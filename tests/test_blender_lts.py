"""The add-on's mapping, bake and registration tests again, in Blender 4.5 LTS (the `bpy` 4.5 wheel).

The LTS wheel needs its own interpreter (one `bpy` per environment), named by
``REDMAX_LTS_PYTHON`` (``.ci/run`` builds ``.venv-lts`` with ``pip install -e ".[test,blender-lts]"``).
Without it the test is skipped, unless ``REDMAX_CI=1`` (set in CI) turns the skip into a failure.
"""
import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # re-runs the add-on tests in a second interpreter

ROOT = Path(__file__).resolve().parents[1]
LTS_TESTS = ["tests/test_addon_bake.py", "tests/test_addon_rigid.py", "tests/test_addon_registration.py"]


def _lts_python():
    exe = os.environ.get("REDMAX_LTS_PYTHON", "")
    if not exe or not Path(exe).exists():
        if os.environ.get("REDMAX_CI") == "1":
            pytest.fail(f"REDMAX_CI=1 but REDMAX_LTS_PYTHON={exe!r} is not an interpreter")
        pytest.skip("no Blender 4.5 LTS interpreter (set REDMAX_LTS_PYTHON)")
    return exe


def test_addon_tests_pass_in_blender_45_lts():
    exe = _lts_python()
    version = subprocess.run([exe, "-c", "import bpy; print(bpy.app.version_string)"], capture_output=True,
                             text=True, env={**os.environ, "BLENDER_USER_RESOURCES": str(ROOT / ".blender_user_lts")})
    assert version.returncode == 0 and version.stdout.startswith("4.5"), version.stdout + version.stderr
    run = subprocess.run([exe, "-m", "pytest", "-q", "-p", "no:cacheprovider", *LTS_TESTS], cwd=ROOT,
                         capture_output=True, text=True, timeout=1200,
                         env={**os.environ, "BLENDER_USER_RESOURCES": str(ROOT / ".blender_user_lts")})
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and " failed" not in run.stdout and " skipped" not in run.stdout, run.stdout[-2000:]
