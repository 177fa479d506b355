"""Packages whose public names are imported on first use (PEP 562), for ``engine`` and ``engine.scenes``.

A package's ``__getattr__`` imports a name's module when the name is first read. Where a public function
has the name of the submodule that defines it (``engine.random_tree``, ``engine.scenes.bridge``), importing
that submodule makes Python set the package attribute to the module; ``keep_functions`` keeps the
function there instead, as the eager ``from .bridge import bridge`` used to.
"""
from __future__ import annotations

import sys
import types


def keep_functions(package_name: str, function_for) -> None:
    """Make package ``package_name`` replace a submodule assigned to one of its attributes by
    ``function_for(name, module)`` when that returns something other than None."""

    class _Package(types.ModuleType):
        def __setattr__(self, name, value):
            if isinstance(value, types.ModuleType):
                function = function_for(name, value)
                if function is not None:
                    value = function
            super().__setattr__(name, value)

    sys.modules[package_name].__class__ = _Package
