"""Checks at the door of the scene constructors: each argument against its annotation.

``engine.scenes.bridge("31")`` used to fail deep inside with "'<' not supported between instances of
'str' and 'int'", and ``bridge(car_mass=-5)`` simulated a car of negative mass. Every constructor's
parameters are annotated (``int``, ``float``, ``bool``, ``str``, ``X | None``), so one wrapper checks
them all and raises a ``ModelError`` naming the scene and the parameter; a parameter named like a
mass (``mass``, ``link_mass``, ``car_mass``, ...) must also be positive, and a size at most ``SIZE_LIMITS``
(about ``MAX_SCENE_BODIES`` bodies).
"""
from __future__ import annotations

import functools
import inspect
import math
import numbers
import types

import numpy as np

from ..errors import ModelError


def _kind_ok(value, kind) -> bool:
    if kind is bool:
        return isinstance(value, (bool, np.bool_))
    if isinstance(value, (bool, np.bool_)):
        return False  # True is an int to Python, not a size or a length
    if kind is int:
        return isinstance(value, numbers.Integral)
    if kind is float:
        return isinstance(value, numbers.Real) and math.isfinite(float(value))
    if kind is str:
        return isinstance(value, str)
    return True  # tuples and other annotations: the constructor's own business


_WHAT = {int: "a whole number", float: "a finite number", bool: "True or False", str: "a string"}

MAX_SCENE_BODIES = 20_000  # a ready-made scene builds in seconds up to this size; beyond, use ModelBuilder
# the largest value of each size parameter (a whole number not listed here: MAX_SCENE_BODIES), so that no
# constructor builds much more than MAX_SCENE_BODIES bodies (hanging_chain(10**7) ran for hours)
SIZE_LIMITS = {
    ("tree", "levels"): 12,               # 12 286 bodies: twice as many per level
    ("binary_tree_2d", "height"): 14,     # 2^height − 1 bodies
    ("umbrella", "n_rib"): 1_250,         # 16 bodies per n_rib
    ("strandbeest", "phases"): 800,       # 24 bodies per phase
    ("snake", "n_dof"): 3 * MAX_SCENE_BODIES,  # 3 dofs per body
    ("bridge", "n_tower"): MAX_SCENE_BODIES // 2,
}
UNBOUNDED = ("seed",)


def checked_parameters(fn, scene: str):
    """``fn`` with its annotated arguments checked on every call (ModelError naming ``scene`` and the parameter)."""
    sig = inspect.signature(fn)
    kinds = {}
    for name, annotation in inspect.get_annotations(fn, eval_str=True).items():
        if name == "return":
            continue
        options = annotation.__args__ if isinstance(annotation, types.UnionType) else (annotation,)
        kinds[name] = (tuple(k for k in options if k is not type(None)), type(None) in options)

    @functools.wraps(fn)
    def constructor(*args, **kwargs):
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as err:
            raise ModelError(f"scene '{scene}': {err}; it takes {', '.join(sig.parameters) or 'no parameters'}") from None
        for name, value in bound.arguments.items():
            allowed, optional = kinds.get(name, ((), True))
            if value is None and optional or not allowed:
                continue
            if not any(_kind_ok(value, k) for k in allowed):
                expected = " or ".join(_WHAT.get(k, getattr(k, "__name__", str(k))) for k in allowed)
                raise ModelError(f"scene '{scene}': {name} must be {expected}{' or None' if optional else ''}, "
                                 f"got {value!r} ({type(value).__name__})")
            limit = SIZE_LIMITS.get((scene, name), MAX_SCENE_BODIES)
            if int in allowed and name not in UNBOUNDED and isinstance(value, numbers.Integral) and value > limit:
                raise ModelError(f"scene '{scene}': {name} must be at most {limit:,} (ready-made scenes stop near "
                                 f"{MAX_SCENE_BODIES:,} bodies; build larger models with ModelBuilder), got {value:,}")
            if name.endswith("mass") and isinstance(value, numbers.Real) and not value > 0:
                raise ModelError(f"scene '{scene}': {name} must be positive (kg), got {value!r}")
        return fn(*args, **kwargs)

    return constructor
