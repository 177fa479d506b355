"""Maximal coordinates: each body with its own pose and twist, joints as constraint rows.

``state`` converts reduced (q, q̇) to per-body states and back; ``rows`` gives the 3D rows of any
engine joint type between two frames (the tree's joints and the loop closures alike), ``planar_rows``
the 2D ones, ``closures`` turns a scene's loop closures into such joints. Used by
``engine.solvers.steppers.baraff`` and ``engine.solvers.steppers.hard_constraints``.
"""
