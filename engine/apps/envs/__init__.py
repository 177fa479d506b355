"""Gymnasium environments (optional extra ``.[learn]``; the core engine does not need Gymnasium).

Importing this package registers

* ``RedMax/Imitate-v0`` — ``engine.apps.envs.imitation.ImitationEnv``: a character (``humanoid``,
  ``dog``, ``snake``) on the ground imitating its reference motion (DeepMimic's reward), actuated
  only through stable PD on its internal joints, e.g.
  ``gymnasium.make("RedMax/Imitate-v0", character="humanoid", spd="maba", dt=1/30)``.

The simulation itself (``engine.apps.envs.core.ImitationSim``) needs no Gymnasium.
"""
from __future__ import annotations

from .core import CHARACTERS, ImitationSim

ENV_ID = "RedMax/Imitate-v0"

try:
    import gymnasium as _gym
except ImportError:  # pragma: no cover - the learn extra is optional
    _gym = None

if _gym is not None:
    from .imitation import ImitationEnv

    if ENV_ID not in _gym.registry:
        _gym.register(id=ENV_ID, entry_point=f"{__name__}.imitation:ImitationEnv")
    __all__ = ["ENV_ID", "ImitationEnv", "ImitationSim", "CHARACTERS"]
else:
    __all__ = ["ENV_ID", "ImitationSim", "CHARACTERS"]
