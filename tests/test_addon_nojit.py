"""Without numba the add-on still bakes, on the engine's pure-Python path (``ENGINE_DISABLE_JIT=1``,
the same switch a missing numba flips), and reports it to the panel via ``engine.JIT_ENABLED``."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("bpy")

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import json, sys
import bpy
sys.path.insert(0, sys.argv[1])
import addon
from addon._engine import engine
addon.register()
bpy.ops.wm.read_homefile(use_empty=True)
assert bpy.ops.redmax.add_demo_scene(scene="CHAIN", size=3) == {"FINISHED"}
scene = bpy.context.scene
scene.frame_start, scene.frame_end = 1, 6
res = {"jit": engine.JIT_ENABLED, "bake": sorted(bpy.ops.redmax.bake()), "frames": scene.redmax.last_frames,
       "baked": sum(ob.redmax.is_baked for ob in scene.objects)}
print(json.dumps(res))
"""


def test_addon_bakes_on_the_pure_python_path(tmp_path):
    env = {**os.environ, "ENGINE_DISABLE_JIT": "1", "BLENDER_USER_RESOURCES": str(tmp_path / "user")}
    run = subprocess.run([sys.executable, "-c", SCRIPT, str(ROOT)], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    res = json.loads(run.stdout.strip().splitlines()[-1])
    assert res == {"jit": False, "bake": ["FINISHED"], "frames": 6, "baked": 3}
