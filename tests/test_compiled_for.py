"""``_jit.compiled_for`` remembers entry points by argument key: an array of another layout, writeability
or dtype, a tuple of another class, an int numba types differently must never reach an entry point
compiled for other types."""
from collections import namedtuple

import numpy as np
import pytest

from engine import _jit
from engine._jit import compiled_for, kernel

pytestmark = pytest.mark.skipif(not _jit.JIT_ENABLED, reason="numba is off")

Pair = namedtuple("Pair", "a b")
Other = namedtuple("Other", "a b")


@kernel
def _scaled_sum(x, out, pair, c):
    """out[i] = c x[i] + pair.a[i] + pair.b[i]; returns Σ out."""
    total = 0.0
    for i in range(x.shape[0]):
        out[i] = c * x[i] + pair.a[i] + pair.b[i]
        total += out[i]
    return total


def _args(x, out, pair, c=2.0):
    return x, out, pair, c


def _expected(x, pair, c):
    return c * np.asarray(x, float) + pair.a + pair.b


def test_an_array_of_another_layout_after_a_cached_one_gets_its_own_entry_and_the_right_result():
    n = 6
    pair = Pair(np.arange(n, dtype=float), np.ones(n))
    x = np.linspace(0.0, 1.0, n)
    entry = compiled_for(_scaled_sum, _args(x, np.empty(n), pair))
    assert compiled_for(_scaled_sum, _args(x.copy(), np.empty(n), pair)) is entry  # same types: remembered

    strided = np.linspace(0.0, 1.0, 2 * n)[::2]  # non-contiguous: numba's layout "A"
    out = np.empty(n)
    e2 = compiled_for(_scaled_sum, _args(strided, out, pair))
    assert e2 is not entry
    assert e2(*_args(strided, out, pair)) == pytest.approx(_expected(strided, pair, 2.0).sum())
    np.testing.assert_array_equal(out, _expected(strided, pair, 2.0))

    # a non-contiguous member of the namedtuple, and a tuple of another class with the same members
    pair_strided = Pair(np.arange(2 * n, dtype=float)[::2], np.ones(n))
    e3 = compiled_for(_scaled_sum, _args(x, out, pair_strided))
    assert e3 not in (entry, e2)
    e3(*_args(x, out, pair_strided))
    np.testing.assert_array_equal(out, _expected(x, pair_strided, 2.0))
    other = Other(*pair)
    assert compiled_for(_scaled_sum, _args(x, out, other)) is not entry

    ints = np.arange(n, dtype=np.int64)  # another dtype
    e4 = compiled_for(_scaled_sum, _args(ints, out, pair))
    assert e4 is not entry
    e4(*_args(ints, out, pair))
    np.testing.assert_array_equal(out, _expected(ints, pair, 2.0))


def test_a_read_only_output_after_a_cached_writeable_one_is_refused():
    n = 4
    pair = Pair(np.zeros(n), np.zeros(n))
    x = np.ones(n)
    compiled_for(_scaled_sum, _args(x, np.empty(n), pair))
    frozen = np.empty(n)
    frozen.flags.writeable = False
    with pytest.raises(Exception, match="(?i)read.?only|immutable"):
        compiled_for(_scaled_sum, _args(x, frozen, pair))
    # read-only inputs are fine (numba types them readonly: another entry point), with the right result
    ro_x = np.full(n, 3.0)
    ro_x.flags.writeable = False
    out = np.empty(n)
    e = compiled_for(_scaled_sum, _args(ro_x, out, pair))
    assert e is not compiled_for(_scaled_sum, _args(x, out, pair))
    e(*_args(ro_x, out, pair))
    np.testing.assert_array_equal(out, np.full(n, 6.0))


@pytest.mark.parametrize("value", [
    1.5, 3, -(2 ** 40), 2 ** 63, True, np.float32(1.0), np.int32(2), (1.0, 2), (), Pair(1, 2.0), Pair(1.0, 2),
    np.zeros(3), np.zeros((3, 2)), np.zeros((3, 2), order="F"), np.zeros((3, 2))[:, 0], np.zeros(3, np.float32),
    np.zeros(0), np.zeros((1, 1)),
])
def test_equal_keys_mean_equal_numba_types(value):
    import numba

    for other in [1.5, 3, 2 ** 63, -(2 ** 40), True, np.float32(1.0), (1.0, 2), Pair(1, 2.0), Pair(1.0, 2), np.zeros(3),
                  np.zeros((3, 2)), np.zeros((3, 2), order="F"), np.zeros((4, 2))[::2]]:
        if _jit._type_key(value) == _jit._type_key(other):
            assert numba.typeof(value) == numba.typeof(other), (value, other)
    assert _jit._type_key(value) == _jit._type_key(value)
