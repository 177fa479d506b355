"""The steppers behind the solver names (``solvers.registry``): explicit, RedMax (pcg, direct, dense),
Baraff, hard constraints; each composes the step's stages (``solvers.stages``) on its linear algebra
(``solvers.linalg``)."""
