"""Random kinematic trees for property tests and benchmarks."""
from __future__ import annotations

import numbers

import numpy as np

from . import joints as J
from .errors import ModelError
from .model import MAX_BODIES, Model, ModelBuilder

_MOVING = ("revolute", "prismatic", "universal", "spherical", "fixed")


def _random_rotation(rng) -> np.ndarray:
    qv = rng.normal(size=4)
    return qv / np.linalg.norm(qv)


def random_tree(
    n_bodies: int,
    *,
    branching: str | float = "random",
    seed: int = 0,
    joint_types=None,
    floating_base: bool = False,
    random_frames: bool = True,
) -> Model:
    """A random tree of ``n_bodies`` bodies.

    branching: ``"chain"`` (each body's parent is the previous one),
    ``"binary"`` (balanced binary tree, parent of i is (i−1)//2),
    ``"random"`` (parent drawn uniformly from the bodies so far), or a float
    p ∈ [0, 1]: parent is the previous body with probability 1 − p, else random.
    joint_types: names to draw from (default: revolute, prismatic, universal,
    spherical, fixed — the root is never fixed). floating_base: the root gets
    a free joint. random_frames: random joint offsets, rotations, COMs and
    inertia axes (else simple unit-length links along x).
    """
    if isinstance(n_bodies, (bool, np.bool_)) or not isinstance(n_bodies, numbers.Integral):
        raise ModelError(f"random_tree: n_bodies must be a whole number, got {n_bodies!r}")
    if not 1 <= n_bodies <= MAX_BODIES:
        raise ModelError(f"random_tree: n_bodies must be 1 … {MAX_BODIES:,}, got {n_bodies:,}")
    if not (branching in ("chain", "binary", "random") or isinstance(branching, numbers.Real) and
            not isinstance(branching, (bool, np.bool_)) and 0.0 <= branching <= 1.0):
        raise ModelError(f"random_tree: branching must be 'chain', 'binary', 'random' or a probability in [0, 1], "
                         f"got {branching!r}")
    rng = np.random.default_rng(seed)
    kinds = tuple(joint_types) if joint_types is not None else _MOVING
    for k in kinds:
        J.joint_type_id(k)
    b = ModelBuilder()
    for i in range(n_bodies):
        if i == 0:
            parent = -1
        elif branching == "chain":
            parent = i - 1
        elif branching == "binary":
            parent = (i - 1) // 2
        elif branching == "random":
            parent = int(rng.integers(0, i))
        else:
            p = float(branching)
            parent = int(rng.integers(0, i)) if rng.random() < p else i - 1
        if i == 0 and floating_base:
            jt = "free"
        else:
            choices = [k for k in kinds if not (i == 0 and k == "fixed")] or ["revolute"]
            jt = choices[int(rng.integers(0, len(choices)))]
        mass = float(rng.uniform(0.5, 2.0)) if random_frames else 1.0
        if random_frames:
            axis = rng.normal(size=3)
            origin = rng.uniform(-0.5, 0.5, size=3) + (np.array([1.0, 0, 0]) if i else 0)
            rot = _random_rotation(rng)
            com = rng.uniform(-0.3, 0.3, size=3)
            A = rng.normal(size=(3, 3))
            S = A @ A.T * 0.05 + np.eye(3) * 0.02  # second moment of a random mass cloud (per kg)
            inertia = (np.trace(S) * np.eye(3) - S) * mass  # its inertia: physical, triangle inequality holds
        else:
            axis, origin, rot, com = (0.0, 0.0, 1.0), ((1.0, 0, 0) if i else (0, 0, 0)), None, (0.5, 0, 0)
            inertia = np.diag([0.01, 1.0 / 12 + 0.01, 1.0 / 12 + 0.01]) * mass
        b.add_body(f"b{i}", parent=parent, joint=jt, axis=axis, joint_origin=origin, joint_rotation=rot,
                   mass=mass, com=com, inertia=inertia, joint_name=f"j{i}")
    return b.finalize()


def random_configuration(model: Model, rng, scale: float = 1.0):
    """Random (q, qd) for a model: angles/offsets ~ N(0, scale), random unit quaternions."""
    q = np.empty(model.nq)
    for i in range(model.n_bodies):
        qs, nq = int(model.q_start[i]), int(model.joint_nq[i])
        q[qs:qs + nq] = J.random_q(int(model.joint_type[i]), rng, scale)
    qd = rng.normal(size=model.nv) * scale
    return q, qd
