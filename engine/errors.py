"""Exceptions the engine raises for bad input; messages name the offending element.

One type per source (docs/errors.md has the table of inputs and messages):

* ``ModelError``          — the builder, ``Scene`` and the algorithms' inputs (body, joint, spring,
  loop closure, force named);
* ``SceneFileError``      — a scene file (JSON) — a ``ModelError`` that names the file and element;
* ``URDFError``           — a URDF file — a ``ModelError`` naming the link or joint;
* ``SimulationError``     — a simulation: divergence (names step and quantity) and, as
  ``SimulatorOptionError``, a bad ``Simulator`` option or ``step`` argument (names the option);
  ``ConvergenceError`` when PCG hits its iteration cap and ``on_unconverged="raise"``.
"""

class ModelError(ValueError):
    """A model description is invalid (builder, scene, algorithm inputs)."""


class URDFError(ModelError):
    """A URDF file is malformed; the message names the link or joint."""


class SceneFileError(ModelError):
    """A scene file is malformed; the message names the file and the element."""


class SimulationError(RuntimeError):
    """A simulation diverged or was given invalid state; says which step and quantity."""


class SimulatorOptionError(SimulationError, ValueError):
    """A ``Simulator`` option or ``step`` argument is invalid; names the option (also a ValueError)."""


class ConvergenceError(SimulationError):
    """PCG reached its iteration cap (``on_unconverged="raise"``); names the step."""


class ConvergenceWarning(RuntimeWarning):
    """PCG reached its iteration cap (``on_unconverged="warn"``, issued once per Simulator)."""



class OutputPathError(OSError):
    """A file or folder a command was told to write cannot be written (checked before the work starts,
    ``engine.output_paths``); the message is one line naming the option, the path and the reason."""
