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

import numpy as np

from .._jit import contiguous_view, kernel
from ..model import KinematicTree, Workspace

# ints: [n, nv, nq] then parent, joint_type, q_start, v_start, joint_nv (n each), dof_body (nv)
_HEADER = 3


def _workspace_shapes(n: int, nv: int):
    """Shapes of the Workspace fields, in field order (as ``Model.make_workspace``)."""
    return ((n, 3, 3), (n, 3), (n, 3, 3), (n, 3), (nv, 6), (n, 6), (n, 6), (n, 6), (n, 6), (n, 6, 6), (n, 6),
            (nv, 6), (n, 6, 6), (nv,), (n, 6), (6,), (6,), (4, 3, 3), (6, 6), (6, 6), (nv,))


class FlatModel:
    """ints (int64, with model.dof_body), floats (float64, read-only): the model's tree; work (float64): one workspace;
    ``ws``: that workspace as a ``Workspace`` of views (for Python-side launches and tests);
    ``zero_forces`` (n, 6): zeros, never written (the default external forces)."""

    def __init__(self, model):
        t = model.tree
        n, nv = model.n_bodies, model.nv
        self.ints = np.concatenate([[n, nv, model.nq], t.parent, t.joint_type, t.q_start, t.v_start,
                                    t.joint_nv, model.dof_body]).astype(np.int64)
        self.floats = np.concatenate([t.joint_axis.ravel(), t.tree_E.ravel(), t.tree_r.ravel(),
                                      t.link_inertia.ravel(), t.gravity.ravel()]).astype(np.float64)
        shapes = _workspace_shapes(n, nv)
        self.work = np.zeros(sum(int(np.prod(s)) for s in shapes))
        self.ints.flags.writeable = False
        self.floats.flags.writeable = False
        views, o = [], 0
        for s in shapes:
            size = int(np.prod(s))
            views.append(self.work[o:o + size].reshape(s))
            o += size
        self.ws = Workspace(*views)
        self.zero_forces = np.zeros((n, 6))
        self.zero_forces.flags.writeable = False


def flat_model(model) -> FlatModel:
    """The model's FlatModel, built on first use and kept on the model (like ``model.data``)."""
    flat = model.__dict__.get("_flat")
    if flat is None:
        flat = model.__dict__["_flat"] = FlatModel(model)
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
    """The Workspace of views into the FlatModel's work buffer (field order of ``_workspace_shapes``)."""
    n = ints[0]
    nv = ints[1]
    o1 = 9 * n
    o2 = o1 + 3 * n
    o3 = o2 + 9 * n
    o4 = o3 + 3 * n
    o5 = o4 + 6 * nv
    o6 = o5 + 6 * n
    o7 = o6 + 6 * n
    o8 = o7 + 6 * n
    o9 = o8 + 6 * n
    o10 = o9 + 36 * n
    o11 = o10 + 6 * n
    o12 = o11 + 6 * nv
    o13 = o12 + 36 * n
    o14 = o13 + nv
    o15 = o14 + 6 * n
    o16 = o15 + 6
    o17 = o16 + 6
    o18 = o17 + 36
    o19 = o18 + 36
    o20 = o19 + 36
    return Workspace(contiguous_view(work, 0, (n, 3, 3)), contiguous_view(work, o1, (n, 3)),
                     contiguous_view(work, o2, (n, 3, 3)), contiguous_view(work, o3, (n, 3)),
                     contiguous_view(work, o4, (nv, 6)), contiguous_view(work, o5, (n, 6)),
                     contiguous_view(work, o6, (n, 6)), contiguous_view(work, o7, (n, 6)),
                     contiguous_view(work, o8, (n, 6)), contiguous_view(work, o9, (n, 6, 6)),
                     contiguous_view(work, o10, (n, 6)), contiguous_view(work, o11, (nv, 6)),
                     contiguous_view(work, o12, (n, 6, 6)), contiguous_view(work, o13, (nv,)),
                     contiguous_view(work, o14, (n, 6)), contiguous_view(work, o15, (6,)),
                     contiguous_view(work, o16, (6,)), contiguous_view(work, o17, (4, 3, 3)),
                     contiguous_view(work, o18, (6, 6)), contiguous_view(work, o19, (6, 6)),
                     contiguous_view(work, o20, (nv,)))
