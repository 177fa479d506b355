"""Ready-made scenes: ``engine.scenes.<name>(...) -> Scene``.

Simple scenes for tests and demos (``pendulum``, ``chain``, ``hanging_chain``, ``rope``, ``four_bar``, ``tumbling_top``,
``hanging_spring``), the ``rope_bridge`` between two posts (taut or slack), and
the thesis's benchmark scenes (``bridge``, ``umbrella``, ``tree``), and the
stable-PD characters (``humanoid``, ``dog``, ``snake``; seed 001, Table 1), and
the seed-002 bar mechanisms in the xy plane (``serial_arm_2d``, ``binary_tree_2d``,
``four_bar_2d``, ``closed_chain_2d``), and the seed-004 ``centipede`` walking on the ground, and the seed-003 linkages ``strandbeest`` and
``trike`` (motors for the ``hard-constraints`` solver).
All in SI units with the engine's conventions (Z up, gravity −9.81 m/s²).
"""
from ._params import checked_parameters
from .bridge import bridge
from .centipede import centipede
from .linkages import strandbeest, trike
from .characters import dog, humanoid, snake
from .planar import binary_tree_2d, closed_chain_2d, four_bar_2d, serial_arm_2d
from .rope_bridge import rope_bridge
from .simple import chain, four_bar, hanging_chain, hanging_spring, pendulum, rope, tumbling_top
from .tree import tree
from .umbrella import rib_angle, umbrella

__all__ = ["pendulum", "chain", "four_bar", "bridge", "umbrella", "rib_angle", "tree", "humanoid", "dog", "snake",
           "serial_arm_2d", "binary_tree_2d", "four_bar_2d", "closed_chain_2d", "centipede", "strandbeest", "trike",
           "tumbling_top", "hanging_chain", "rope", "rope_bridge", "hanging_spring"]
# the scene constructors (``__all__`` also exports ``rib_angle``, the umbrella's measure of how far it opened)
SCENE_NAMES = tuple(name for name in __all__ if name != "rib_angle")

for _name in SCENE_NAMES:  # each argument checked against its annotation (scenes/_params.py)
    globals()[_name] = checked_parameters(globals()[_name], _name)
del _name
