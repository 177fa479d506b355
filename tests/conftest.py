"""Shared pytest setup: hypothesis profiles (``nojit`` runs fewer examples); a throw-away Blender
user folder before any test imports ``bpy`` (otherwise the import writes into ~/.config/blender,
recipes §1)."""
import atexit
import os
import shutil
import tempfile

from hypothesis import HealthCheck, settings

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("nojit", deadline=None, max_examples=6, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

if "BLENDER_USER_RESOURCES" not in os.environ:
    _user_dir = tempfile.mkdtemp(prefix="redmax_blender_")
    atexit.register(shutil.rmtree, _user_dir, ignore_errors=True)
    os.environ["BLENDER_USER_RESOURCES"] = _user_dir
