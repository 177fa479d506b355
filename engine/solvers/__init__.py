"""Time steppers built on the recursive algorithms; ``registry.STEPPERS`` names them (``engine.stepper``)."""
