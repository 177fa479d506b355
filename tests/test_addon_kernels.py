"""The add-on compiles what the default bake misses in the background when enabled (in Blender's UI; not in
background mode), and its preferences say what is going on (real bpy wheel; subprocesses with their own cache)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

bpy = pytest.importorskip("bpy")  # (conftest.py gave Blender a throw-away user folder)

import engine  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

BACKGROUND = r"""
import json, sys
import bpy
sys.path.insert(0, sys.argv[1])
import addon
from addon import kernels
# a small default set for the test: the PCG step without closures, limits or contact (two groups)
kernels.BACKGROUND_RUNS = ({"solver": "pcg", "closures": False, "limits": False, "body_damping": False},)
addon.register()
out = {"scheduled": kernels.schedule_background(), "timer": bpy.app.timers.is_registered(kernels._start_background_timer)}
job = kernels.start_background()
out["same_job"] = kernels.start_background() is job
job.wait()
out["error"] = repr(job.error)
out["compiled_any"] = job.compiled_any
out["warm"] = kernels.warmup.is_warm(**kernels.BACKGROUND_RUNS[0])
bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
out["status"] = [text for text, icon in kernels.status_lines(bpy.context.scene.redmax)]
addon.unregister()
print("RESULT " + json.dumps(out))
"""


def _run(cache: Path, tmp_path: Path) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), BLENDER_USER_RESOURCES=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", BACKGROUND, str(ROOT)], env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(done.stdout.split("RESULT ", 1)[1])


@pytest.mark.slow
@pytest.mark.skipif(not engine.JIT_ENABLED, reason="without numba nothing compiles")
def test_background_compile_fills_a_cold_cache_and_skips_a_warm_one(tmp_path):
    cold = _run(tmp_path / "cache", tmp_path)
    assert cold["scheduled"] is False and cold["timer"] is False  # background mode: nothing starts by itself
    assert cold["same_job"] and cold["error"] == "None"
    assert cold["compiled_any"] and cold["warm"]
    assert any(line.startswith("Compiled in the background in") for line in cold["status"]), cold["status"]
    assert any("This session: " in line and "compiled" in line for line in cold["status"]), cold["status"]
    warm = _run(tmp_path / "cache", tmp_path)
    assert warm["error"] == "None" and not warm["compiled_any"] and warm["warm"]
    assert not any(line.startswith("Compiled in the background") for line in warm["status"])
    assert any(line.startswith("This session: 0 compiled") for line in warm["status"]), warm["status"]
