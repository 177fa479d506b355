"""Entry checks shared by the public algorithm launchers (sizes, NaN, dtype)."""
from __future__ import annotations

import numpy as np

from .._jit import kernel
from ..errors import ModelError
from ..joints import JOINT_QUATERNION_AT, UNIT_QUATERNION_TOL
from ._flat import unpack_tree

F8 = np.dtype(np.float64)
_NDARRAY = np.ndarray
# what a flat launch (``aba_flat``, ``rnea_flat``, …) returns: done, an input failed its checks (the launcher
# reruns the Python checks, which name the joint), or finite inputs gave a non-finite result (overflow)
DONE, BAD_INPUT, OVERFLOW = 0, 1, 2


def plain_vector(x) -> bool:
    """True when x is a 1-D contiguous float64 ndarray, which the one-launch paths take as it is (their kernel
    checks size and values); anything else goes through ``as_q``/``as_v`` first."""
    return type(x) is _NDARRAY and x.dtype is F8 and x.strides == (8,)


def _offender(model, index: int, starts, sizes) -> str:
    j = int(np.searchsorted(starts, index, side="right") - 1)
    while j > 0 and sizes[j] == 0:
        j -= 1
    return model.joint_names[j]


def as_q(model, q, name: str = "q") -> np.ndarray:
    """(nq,) contiguous float64 copy-free view of q, or a ModelError naming the joint; quaternions
    must have unit norm to ``joints.UNIT_QUATERNION_TOL`` (the one rule: raise, never renormalise)."""
    a = _as_vector(model, q, model.nq, model.q_start, model.joint_nq, name)
    at = JOINT_QUATERNION_AT[model.joint_type]
    joints = np.flatnonzero(at >= 0)
    if len(joints):
        starts = model.q_start[joints] + at[joints]
        norms = np.sqrt((a[starts[:, None] + np.arange(4)] ** 2).sum(axis=1))
        bad = np.flatnonzero(np.abs(norms - 1.0) > UNIT_QUATERNION_TOL)
        if len(bad):
            j, s, n = joints[bad[0]], starts[bad[0]], norms[bad[0]]
            raise ModelError(f"{name}: the quaternion of joint '{model.joint_names[j]}' (q[{s}:{s + 4}]) has norm "
                             f"{n:.6g}; quaternions must have unit length (to {UNIT_QUATERNION_TOL:g})")
    return a


def as_v(model, v, name: str) -> np.ndarray:
    """(nv,) contiguous float64 vector (qd, qdd, tau), or a ModelError naming the joint."""
    return _as_vector(model, v, model.nv, model.v_start, model.joint_nv, name)


def _as_vector(model, x, size, starts, sizes, name) -> np.ndarray:
    try:
        if isinstance(x, (str, bytes, dict)):
            raise TypeError
        a = np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ModelError(f"{name}: expected {size} numbers, got {x!r}") from None
    if a.shape != (size,):
        raise ModelError(f"{name}: expected shape ({size},), got {np.shape(x)}")
    if not np.all(np.isfinite(a)):
        bad = int(np.flatnonzero(~np.isfinite(a))[0])
        raise ModelError(f"{name}[{bad}] is {a[bad]} (joint '{_offender(model, bad, starts, sizes)}')")
    return a


def as_body_forces(model, f_ext) -> np.ndarray:
    """(n_bodies, 6) spatial forces (link coordinates), zeros when None."""
    if f_ext is None:
        return np.zeros((model.n_bodies, 6))
    f = np.ascontiguousarray(f_ext, dtype=np.float64)
    if f.shape != (model.n_bodies, 6):
        raise ModelError(f"f_ext: expected shape ({model.n_bodies}, 6), got {np.shape(f_ext)}")
    if not np.all(np.isfinite(f)):
        bad = int(np.flatnonzero(~np.isfinite(f).all(axis=1))[0])
        raise ModelError(f"f_ext on body '{model.body_names[bad]}' is not finite")
    return f


@kernel(inline=True)
def all_finite(x):
    for k in range(x.shape[0]):
        if not np.isfinite(x[k]):
            return False
    return True


@kernel(inline=True)
def all_finite_2d(x):
    for r in range(x.shape[0]):
        for c in range(x.shape[1]):
            if not np.isfinite(x[r, c]):
                return False
    return True


def overflow_error(function: str, result: str, inputs) -> ModelError:
    """The error of a launch whose finite inputs gave a non-finite result: they are beyond what float64
    arithmetic holds (e.g. τ = 1e308 N·m: M⁻¹τ overflows). inputs: (name, array) pairs."""
    sizes = ", ".join(f"|{name}| up to {np.abs(np.asarray(a, dtype=float)).max(initial=0.0):.3g}" for name, a in inputs)
    return ModelError(f"{function}: {result} overflowed to inf/NaN from finite inputs ({sizes}); they are too large "
                      "for float64 arithmetic (SI units: N·m, rad/s, m)")


@kernel(inline=True)
def configuration_ok(tree, q):
    """as_q's checks in a kernel: finite q and unit quaternions."""
    if not all_finite(q):
        return False
    for i in range(tree.parent.shape[0]):
        at = JOINT_QUATERNION_AT[tree.joint_type[i]]
        if at >= 0:
            s = tree.q_start[i] + at
            norm = np.sqrt(q[s] ** 2 + q[s + 1] ** 2 + q[s + 2] ** 2 + q[s + 3] ** 2)
            if not abs(norm - 1.0) <= UNIT_QUATERNION_TOL:
                return False
    return True


@kernel(inline=True)
def inputs_ok(tree, q, qd, tau):
    """The checks of as_q / as_v in a kernel: finite q, qd, tau and unit quaternions. On False the
    launcher reruns the Python checks, which name the offending joint."""
    return all_finite(qd) and all_finite(tau) and configuration_ok(tree, q)


@kernel(refcounts=False)
def state_ok_flat(ints, floats, q, qd, rest):
    """A step's start on a FlatModel's buffers (one cheap launch): q (nq,) and the joint springs' rest
    configuration (nq,) finite with unit quaternions, qd (nv,) finite. On False the caller reruns
    ``as_q`` / ``as_v``, which name the entry and its joint."""
    tree = unpack_tree(ints, floats)
    return (q.shape[0] == ints[2] and rest.shape[0] == ints[2] and qd.shape[0] == ints[1] and all_finite(qd)
            and configuration_ok(tree, q) and configuration_ok(tree, rest))
