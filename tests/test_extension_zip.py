"""The built linux-x64 extension zip installs into a fresh Blender user folder, enables, bakes
the demo bridge and uninstalls (real ``bpy`` wheel, in a subprocess: bpy is imported once per
process and the install changes Blender's user preferences). The zip ships the PCG kernel groups
compiled for the x86-64-v3 baseline: on a CPU that has it the bake compiles nothing and nothing is
written beside the installed sources (the full set: ``scripts/first_use.py``, docs/kernels.md)."""
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("bpy")  # noqa: E402  (only to skip without the wheel; the work is in the subprocess)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_extension  # noqa: E402

DRIVER = r'''
import json, sys, os
import bpy, addon_utils

zip_path, out = sys.argv[1], sys.argv[2]
res = {}
res["install"] = sorted(bpy.ops.extensions.package_install_files(filepath=zip_path, repo="user_default",
                                                                  enable_on_install=True))
mod = "bl_ext.user_default.redmax"
res["enabled"] = mod in {m.__name__ for m in addon_utils.modules() if addon_utils.check(m.__name__)[1]}
res["engine_module"] = sys.modules[mod + ".addon.bake"].engine.__name__
res["jit"] = sys.modules[mod + ".engine"].JIT_ENABLED
site = os.path.join(os.environ["BLENDER_USER_RESOURCES"], "extensions", ".local", "lib",
                    "python3.11", "site-packages")
res["wheels_unpacked"] = sorted(n.split("-")[0] for n in os.listdir(site) if n.endswith(".dist-info"))
bpy.ops.wm.read_homefile(use_empty=True)
res["demo"] = sorted(bpy.ops.redmax.add_demo_scene(scene="BRIDGE", size=7))
scene = bpy.context.scene
scene.frame_start, scene.frame_end = 1, 24
res["bake"] = sorted(bpy.ops.redmax.bake())
res["message"] = scene.redmax.last_message
res["baked"] = sum(1 for ob in scene.objects if ob.redmax.is_baked and ob.animation_data and ob.animation_data.action)
res["frames"] = scene.redmax.last_frames
res["compile_now_in_preferences"] = bpy.context.preferences.addons[mod].preferences is not None
res["warm_after_bake"] = not sys.modules[mod + ".addon.kernels"].needed(scene.redmax)
cache = os.environ.get("NUMBA_CACHE_DIR", "")
res["numba_cache"] = cache
res["cached_kernels"] = sum(n.endswith(".nbi") for _, _, files in os.walk(cache) for n in files) if cache else 0
repo_index = [r.module for r in bpy.context.preferences.extensions.repos].index("user_default")
jit = sys.modules[mod + ".engine._jit"]
res["kernels"] = jit.kernel_counts()
res["shipped"] = jit.TARGET.shipped is not None
res["describe"] = jit.describe()
ext_dir = os.path.join(os.environ["BLENDER_USER_RESOURCES"], "extensions", "user_default", "redmax")
res["cache_files_in_package"] = sorted(os.path.relpath(os.path.join(d, n), ext_dir) for d, _, files in os.walk(ext_dir)
                                       for n in files if n.endswith((".nbi", ".nbc")) and "_shipped_kernels" not in d)
res["uninstall"] = sorted(bpy.ops.extensions.package_uninstall(repo_index=repo_index, pkg_id="redmax"))
res["gone"] = not os.path.isdir(os.path.join(os.environ["BLENDER_USER_RESOURCES"], "extensions", "user_default", "redmax"))
res["ops_gone"] = not hasattr(bpy.types, "REDMAX_OT_bake")
json.dump(res, open(out, "w"))
'''


@pytest.fixture(scope="module")
def linux_zip(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    zips = build_extension.build(["--platforms", "linux-x64", "--split-platforms", "--output-dir", str(out),
                                  "--kernel-groups", "pcg"])
    assert [z.name for z in zips] == ["redmax-0.1.0-linux_x64.zip"]
    return zips[0]


def test_zip_ships_engine_addon_and_wheels_but_no_tests(linux_zip):
    names = zipfile.ZipFile(linux_zip).namelist()
    assert "__init__.py" in names and "blender_manifest.toml" in names
    assert any(n.startswith("engine/solvers/") for n in names) and any(n.startswith("addon/") for n in names)
    assert sorted(n.split("/")[1].split("-")[0] for n in names if n.startswith("wheels/")) == ["llvmlite", "numba"]
    manifest = json.loads(zipfile.ZipFile(linux_zip).read("engine/_shipped_kernels/manifest.json"))
    assert manifest["cpu_name"] == "x86-64-v3" and manifest["groups"] == ["pcg"] and manifest["python"] == "3.11"
    assert sum(n.endswith(".nbi") for n in names) > 50
    assert not [n for n in names if n.startswith(("tests/", "scripts/", "blend_scenes/", "docs/")) or "__pycache__" in n]


def test_zip_carries_only_the_apps_the_addon_imports(linux_zip):
    """An app ships when the add-on imports it (``addon/_engine.py``): no viewer, Gymnasium or sweep code."""
    from test_layering import addon_engine_imports

    used = {m.split(".")[2] for m in addon_engine_imports()["addon/_engine.py"] if m.startswith("engine.apps.")}
    assert used == {"advise", "bench", "warmup"}
    names = zipfile.ZipFile(linux_zip).namelist()
    shipped = {n.split("/")[2].removesuffix(".py") for n in names if n.startswith("engine/apps/") and n.count("/") >= 2}
    assert shipped - {"__init__", "common", ""} == used
    assert "engine/envs.py" not in names and "engine/__main__.py" not in names


@pytest.mark.slow
def test_zip_installs_enables_bakes_the_bridge_and_uninstalls(linux_zip, tmp_path):
    user = tmp_path / "blender_user"
    out = tmp_path / "result.json"
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}
    env["BLENDER_USER_RESOURCES"] = str(user)
    run = subprocess.run([sys.executable, str(script), str(linux_zip), str(out)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0 and out.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    res = json.loads(out.read_text())
    assert res["install"] == ["FINISHED"] and res["enabled"]
    assert res["engine_module"] == "bl_ext.user_default.redmax.engine"  # the zip's engine, not the checkout's
    assert res["wheels_unpacked"] == ["llvmlite", "numba"] and res["jit"]
    assert res["demo"] == ["FINISHED"] and res["bake"] == ["FINISHED"], res["message"]
    assert res["frames"] == 24 and res["baked"] > 10
    assert res["compile_now_in_preferences"] and res["warm_after_bake"]
    if res["shipped"]:  # this CPU has the baseline: the shipped kernels served the whole bake
        assert res["kernels"]["compiled"] == 0 and res["kernels"]["loaded_shipped"] > 0, res
    else:
        assert "lacks" in res["describe"] and res["kernels"]["compiled"] > 0, res
    assert res["cache_files_in_package"] == []
    assert res["uninstall"] == ["FINISHED"] and res["gone"] and res["ops_gone"]
    # compiled kernels went to the extension's user folder, not beside the installed sources
    assert Path(res["numba_cache"]) == user / "extensions" / ".user" / "user_default" / "redmax" / "numba_cache"
    assert res["cached_kernels"] > 10 or res["shipped"]
