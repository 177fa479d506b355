"""``import engine.envs`` registers the Gymnasium environments (a pinned name); they live in
``engine.apps.envs`` (optional extra ``.[envs]``)."""
from .apps.envs import *  # noqa: F401,F403
from .apps.envs import __all__  # noqa: F401
