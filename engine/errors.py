"""Exceptions the engine raises for bad input; messages name the offending element."""


class ModelError(ValueError):
    """A model description is invalid (builder, URDF, scene)."""


class URDFError(ModelError):
    """A URDF file is malformed; the message names the link or joint."""


class SimulationError(RuntimeError):
    """A simulation diverged or was given invalid state; says which step and quantity."""
