"""Ready-made scenes: ``engine.scenes.<name>(...) -> Scene``.

Simple scenes for tests and demos (``pendulum``, ``chain``, ``hanging_chain``, ``rope``, ``four_bar``, ``tumbling_top``,
``hanging_spring``), the ``rope_bridge`` between two posts (taut or slack), and
the thesis's benchmark scenes (``bridge``, ``umbrella``, ``tree``), and the
stable-PD characters (``humanoid``, ``dog``, ``snake``; seed 001, Table 1), and
the seed-002 bar mechanisms in the xy plane (``serial_arm_2d``, ``binary_tree_2d``,
``four_bar_2d``, ``closed_chain_2d``), and the seed-004 ``centipede`` walking on the ground, and the seed-003 linkages ``strandbeest`` and
``trike`` (motors for the ``hard-constraints`` solver), and the collision scenes (``chain_on_stairs``,
``crate_on_bridge``, ``box_stack``, ``box_pile``: things falling on things, ``engine.contact``).
All in SI units with the engine's conventions (Z up, gravity −9.81 m/s²).
"""
from __future__ import annotations

import importlib

from .._lazy import keep_functions
from ._params import checked_parameters

# scene name -> the module that defines it; a scene's module is imported when the scene is first used (the
# CLI's help lists the names without importing the engine's kernels)
_MODULES = {"bridge": "bridge", "centipede": "centipede", "strandbeest": "linkages", "trike": "linkages",
            "dog": "characters", "humanoid": "characters", "snake": "characters", "binary_tree_2d": "planar",
            "closed_chain_2d": "planar", "four_bar_2d": "planar", "serial_arm_2d": "planar", "chain": "simple",
            "four_bar": "simple", "hanging_chain": "simple", "hanging_spring": "simple", "pendulum": "simple",
            "rope": "simple", "tumbling_top": "simple", "tree": "tree", "rib_angle": "umbrella", "umbrella": "umbrella",
            "rope_bridge": "rope_bridge", "chain_on_stairs": "collisions", "crate_on_bridge": "collisions",
            "box_stack": "collisions", "box_pile": "collisions"}

__all__ = ["pendulum", "chain", "four_bar", "bridge", "umbrella", "rib_angle", "tree", "humanoid", "dog", "snake",
           "serial_arm_2d", "binary_tree_2d", "four_bar_2d", "closed_chain_2d", "centipede", "strandbeest", "trike",
           "tumbling_top", "hanging_chain", "rope", "rope_bridge", "hanging_spring", "chain_on_stairs",
           "crate_on_bridge", "box_stack", "box_pile"]
# the scene constructors (``__all__`` also exports ``rib_angle``, the umbrella's measure of how far it opened)
SCENE_NAMES = tuple(name for name in __all__ if name != "rib_angle")


def __getattr__(name: str):
    """A scene constructor (each argument checked against its annotation: scenes/_params.py), or a submodule."""
    if name not in _MODULES:
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    return _public(name, importlib.import_module(f".{_MODULES[name]}", __name__))


def _public(name: str, module):
    """Public ``name`` from its ``module``, a scene constructor wrapped in its argument checks; remembered."""
    value = globals().get(name)
    if value is None or isinstance(value, type(importlib)):
        value = getattr(module, name)
        if name in SCENE_NAMES:
            value = checked_parameters(value, name)
        globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


# a scene module named as its scene (bridge, tree, umbrella, centipede) leaves the scene function here when imported
keep_functions(__name__, lambda name, module: _public(name, module) if name in _MODULES else None)
