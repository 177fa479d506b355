"""Shared pytest setup: hypothesis profiles (``nojit`` runs fewer examples)."""
import os

from hypothesis import HealthCheck, settings

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("nojit", deadline=None, max_examples=6, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
