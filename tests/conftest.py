"""Shared pytest setup: the quick run, hypothesis profiles (``nojit`` runs fewer examples) and the add-on
tests' Blender preamble (recipes §1): a private ``BLENDER_USER_RESOURCES`` before any ``import bpy``, the
add-on registered once per test module (``addon_registered``) and an empty scene per test (``ctx``).

Tests marked ``slow`` (cold numba caches in fresh processes, benchmark smoke runs, the extension zip,
long walks) are left out of ``pytest`` unless ``--run-slow`` is given (or ``-m slow`` selects them):
the quick run is the one to run while working; CI runs both."""
import atexit
import os
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("nojit", deadline=None, max_examples=6, suppress_health_check=[HealthCheck.too_slow])
# CI (REDMAX_CI=1, .ci/run) runs a fixed example sequence: a land must not hinge on which random trees a run draws;
# local runs keep exploring (and failures found there are replayed from hypothesis's database)
settings.register_profile("ci", deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("REDMAX_CI") else "default"))

if "BLENDER_USER_RESOURCES" not in os.environ:  # before `import bpy`, else it writes into ~/.config/blender
    _user_dir = tempfile.mkdtemp(prefix="redmax_blender_")
    atexit.register(shutil.rmtree, _user_dir, ignore_errors=True)
    os.environ["BLENDER_USER_RESOURCES"] = _user_dir


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", help="also run the tests marked slow (CI does)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow") or "slow" in (config.getoption("markexpr") or ""):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


@pytest.fixture(scope="module")
def addon_registered():
    """The add-on registered for one test module (a module using it says ``autouse`` in its own fixture)."""
    pytest.importorskip("bpy")
    import addon

    addon.register()
    yield addon
    addon.unregister()


@pytest.fixture()
def ctx(addon_registered):
    """An empty scene at 60 fps with the add-on registered; returns ``bpy.context``."""
    import bpy

    bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
    bpy.context.scene.render.fps = 60
    return bpy.context
