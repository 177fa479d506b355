"""Hypothesis strategies and helpers shared by the engine's property tests."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import engine

BRANCHINGS = ("chain", "binary", "random", 0.3)


@st.composite
def random_trees(draw, max_bodies: int = 9):
    """(model, rng): a random tree with every joint type, fixed or floating base."""
    n = draw(st.integers(1, max_bodies))
    branching = draw(st.sampled_from(BRANCHINGS))
    floating = draw(st.booleans())
    seed = draw(st.integers(0, 2**31 - 1))
    model = engine.random_tree(n, branching=branching, seed=seed, floating_base=floating)
    return model, np.random.default_rng(seed)


def rel_err(a, b) -> float:
    """max|a − b| / max(1, max|b|): relative to the result's scale."""
    a, b = np.asarray(a), np.asarray(b)
    return float(np.abs(a - b).max(initial=0.0) / max(1.0, np.abs(b).max(initial=0.0)))
