"""The steppers' linear algebra: PCG with the projected block Jacobi preconditioner, the reduced
operators, sparse and tree LDLᵀ, the direct solver's backends, factor augmentation, graph splitting,
Baraff's KKT system."""
