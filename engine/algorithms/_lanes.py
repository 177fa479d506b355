"""Eight independent recursions side by side: rows of LANES doubles as tuples of scalars.

A kernel that runs the same recursion for several right-hand sides (the columns
of M⁻¹) keeps one row of LANES values per quantity, the lanes on the innermost
axis of a (rows, LANES) array. These helpers move a row in and out of a tuple
and do the arithmetic lane by lane in straight-line code: loads of a row
precede the stores, so LLVM's SLP vectorizer (on for kernels compiled with
``kernel(lanes=True)``) turns each helper into a few SIMD instructions, which a
loop over the lanes — with stores that might alias its loads — never becomes.
"""
from __future__ import annotations

from .._jit import kernel

LANES = 8


@kernel(inline=True)
def load(a, r):
    """Row r of a (rows, LANES) as a tuple."""
    return (a[r, 0], a[r, 1], a[r, 2], a[r, 3], a[r, 4], a[r, 5], a[r, 6], a[r, 7])


@kernel(inline=True)
def load_at(a, r, c0):
    """a[r, c0:c0 + LANES] as a tuple."""
    return (a[r, c0], a[r, c0 + 1], a[r, c0 + 2], a[r, c0 + 3], a[r, c0 + 4], a[r, c0 + 5], a[r, c0 + 6], a[r, c0 + 7])


@kernel(inline=True)
def store_at(a, r, c0, x):
    """a[r, c0:c0 + LANES] = x."""
    a[r, c0], a[r, c0 + 1], a[r, c0 + 2], a[r, c0 + 3] = x[0], x[1], x[2], x[3]
    a[r, c0 + 4], a[r, c0 + 5], a[r, c0 + 6], a[r, c0 + 7] = x[4], x[5], x[6], x[7]


@kernel(inline=True)
def zeros():
    """All lanes 0."""
    return (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


@kernel(inline=True)
def store(a, r, x):
    """a[r, :] = x."""
    a[r, 0], a[r, 1], a[r, 2], a[r, 3] = x[0], x[1], x[2], x[3]
    a[r, 4], a[r, 5], a[r, 6], a[r, 7] = x[4], x[5], x[6], x[7]


@kernel(inline=True)
def zero(a, r):
    """a[r, :] = 0."""
    a[r, 0], a[r, 1], a[r, 2], a[r, 3] = 0.0, 0.0, 0.0, 0.0
    a[r, 4], a[r, 5], a[r, 6], a[r, 7] = 0.0, 0.0, 0.0, 0.0


@kernel(inline=True)
def _dot6(w, a, r, b):
    # two partial sums: half the dependency chain of a running sum
    return (w[0] * a[r, b] + w[1] * a[r + 1, b] + w[2] * a[r + 2, b]) + \
        (w[3] * a[r + 3, b] + w[4] * a[r + 4, b] + w[5] * a[r + 5, b])


@kernel(inline=True)
def dot6(w, a, r):
    """Lane b: Σ_c w[c] a[r + c, b] for a (6,) vector w and the six rows r … r+5 of a."""
    return (_dot6(w, a, r, 0), _dot6(w, a, r, 1), _dot6(w, a, r, 2), _dot6(w, a, r, 3),
            _dot6(w, a, r, 4), _dot6(w, a, r, 5), _dot6(w, a, r, 6), _dot6(w, a, r, 7))


@kernel(inline=True)
def dot6_relative(w, a, r, ro):
    """dot6(w, a, r) − dot6(w, a, ro); dot6(w, a, r) alone when ro < 0 (e.g. the world, at rest)."""
    x = dot6(w, a, r)
    if ro >= 0:
        x = sub(x, dot6(w, a, ro))
    return x


@kernel(inline=True)
def axpy(x, s, y):
    """x + s y."""
    return (x[0] + s * y[0], x[1] + s * y[1], x[2] + s * y[2], x[3] + s * y[3],
            x[4] + s * y[4], x[5] + s * y[5], x[6] + s * y[6], x[7] + s * y[7])


@kernel(inline=True)
def scale(s, x):
    """s x."""
    return (s * x[0], s * x[1], s * x[2], s * x[3], s * x[4], s * x[5], s * x[6], s * x[7])


@kernel(inline=True)
def sub(x, y):
    """x − y."""
    return (x[0] - y[0], x[1] - y[1], x[2] - y[2], x[3] - y[3], x[4] - y[4], x[5] - y[5], x[6] - y[6], x[7] - y[7])


@kernel(inline=True)
def add(x, y):
    """x + y."""
    return (x[0] + y[0], x[1] + y[1], x[2] + y[2], x[3] + y[3], x[4] + y[4], x[5] + y[5], x[6] + y[6], x[7] + y[7])
