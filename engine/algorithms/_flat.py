"""A model's kernel arrays in three flat buffers, for launches that must cost little.

Numba checks the type of every argument of every call; for the grouped
structures (``model.tree``, a ``Workspace``: namedtuples of 10 and 21 arrays)
that check alone costs about 4.5 µs, more than a whole small-model ABA. A
``FlatModel`` holds the same arrays packed into one int64 buffer, one float64
buffer (read-only, like the tree's) and one float64 workspace buffer; a kernel
takes those three plain arrays and rebuilds the namedtuples as views inside
(``unpack_tree``, ``unpack_workspace``: no copies), so it runs the very same
algorithm kernels with the very same argument types.
"""
from __future__ import annotations

import math
import numpy as np

from .._jit import contiguous_view, kernel
from ..model import KinematicTree, Workspace

# ints: [n, nv, nq] then parent, joint_type, q_start, v_start, joint_nv (n each), dof_body (nv), and the
# offsets of the workspace fields in work (21)
_HEADER = 3


def _workspace_shapes(n: int, nv: int):
    """Shapes of the Workspace fields, in field order (as ``Model.make_workspace``)."""
    return ((n, 3, 3), (n, 3), (n, 3, 3), (n, 3), (nv, 6), (n, 6), (n, 6), (n, 6), (n, 6), (n, 6, 6), (n, 6),
            (nv, 6), (n, 6, 6), (nv,), (n, 6), (6,), (6,), (4, 3, 3), (6, 6), (6, 6), (nv,))


class FlatModel:
    """ints (int64, also dof_body and the workspace offsets) and floats (float64), both read-only: the
    model's tree; work (float64): one workspace, ``ws`` the same as a ``Workspace`` of views;
    ``zero_forces`` (n, 6): zeros, never written (the default external forces)."""

    def __init__(self, model):
        t = model.tree
        n, nv = model.n_bodies, model.nv
        shapes = _workspace_shapes(n, nv)
        sizes = [math.prod(s) for s in shapes]  # (np.prod: ≈ 1.5 µs a call, a new Simulator's 21)
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        self.ints = np.concatenate([[n, nv, model.nq], t.parent, t.joint_type, t.q_start, t.v_start,
                                    t.joint_nv, model.dof_body, offsets]).astype(np.int64)
        self.floats = np.concatenate([t.joint_axis.ravel(), t.tree_E.ravel(), t.tree_r.ravel(),
                                      t.link_inertia.ravel(), t.gravity.ravel()]).astype(np.float64)
        self.work = np.zeros(sum(sizes))
        self.ints.flags.writeable = False
        self.floats.flags.writeable = False
        self.ws = Workspace(*(self.work[o:o + size].reshape(s) for o, size, s in zip(offsets, sizes, shapes)))
        self.zero_forces = np.zeros((n, 6))
        self.zero_forces.flags.writeable = False


def flat_model(model) -> FlatModel:
    """The model's FlatModel for the calling thread, built on its first use there and kept on the model
    (``model._per_thread``, like ``model.data``): its work buffer is that thread's alone."""
    mine = model._per_thread
    flat = mine.flat
    if flat is None:
        flat = mine.flat = FlatModel(model)
    return flat


@kernel(inline=True)
def unpack_tree(ints, floats):
    """The KinematicTree of views into the FlatModel buffers."""
    n = ints[0]
    h = _HEADER
    return KinematicTree(contiguous_view(ints, h, (n,)), contiguous_view(ints, h + n, (n,)),
                         contiguous_view(floats, 0, (n, 3)), contiguous_view(ints, h + 2 * n, (n,)),
                         contiguous_view(ints, h + 3 * n, (n,)), contiguous_view(ints, h + 4 * n, (n,)),
                         contiguous_view(floats, 3 * n, (n, 3, 3)), contiguous_view(floats, 12 * n, (n, 3)),
                         contiguous_view(floats, 15 * n, (n, 6, 6)), contiguous_view(floats, 51 * n, (6,)))


@kernel(inline=True)
def unpack_dof_body(ints):
    """model.dof_body (nv,): the body of every dof, as a view into the FlatModel's ints."""
    return contiguous_view(ints, _HEADER + 5 * ints[0], (ints[1],))


@kernel(inline=True)
def unpack_workspace(ints, work):
    """The Workspace of views into the FlatModel's work buffer (field order of ``_workspace_shapes``;
    the fields' offsets follow dof_body in ints)."""
    n = ints[0]
    nv = ints[1]
    o = _HEADER + 5 * n + nv
    return Workspace(contiguous_view(work, ints[o], (n, 3, 3)), contiguous_view(work, ints[o + 1], (n, 3)),
                     contiguous_view(work, ints[o + 2], (n, 3, 3)), contiguous_view(work, ints[o + 3], (n, 3)),
                     contiguous_view(work, ints[o + 4], (nv, 6)), contiguous_view(work, ints[o + 5], (n, 6)),
                     contiguous_view(work, ints[o + 6], (n, 6)), contiguous_view(work, ints[o + 7], (n, 6)),
                     contiguous_view(work, ints[o + 8], (n, 6)), contiguous_view(work, ints[o + 9], (n, 6, 6)),
                     contiguous_view(work, ints[o + 10], (n, 6)), contiguous_view(work, ints[o + 11], (nv, 6)),
                     contiguous_view(work, ints[o + 12], (n, 6, 6)), contiguous_view(work, ints[o + 13], (nv,)),
                     contiguous_view(work, ints[o + 14], (n, 6)), contiguous_view(work, ints[o + 15], (6,)),
                     contiguous_view(work, ints[o + 16], (6,)), contiguous_view(work, ints[o + 17], (4, 3, 3)),
                     contiguous_view(work, ints[o + 18], (6, 6)), contiguous_view(work, ints[o + 19], (6, 6)),
                     contiguous_view(work, ints[o + 20], (nv,)))
