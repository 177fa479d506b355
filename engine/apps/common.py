"""Helpers several apps share: a progress bar on stderr and OpenBLAS limited to one thread
(bench, advise and sweep time the engine's one-threaded kernels against one-threaded LAPACK)."""
from __future__ import annotations

import contextlib
import ctypes
import sys
from pathlib import Path


@contextlib.contextmanager
def single_threaded_blas():
    """Limit every loaded OpenBLAS (numpy's, scipy's) to one thread inside the block.

    The engine's kernels run on one thread, so LAPACK baselines are timed on
    one thread too; multi-threaded OpenBLAS on a small shared machine also
    stalls for milliseconds when its second thread is not scheduled. Finds the
    libraries through /proc/self/maps (Linux); elsewhere it changes nothing.
    Yields the file names of the libraries it limited.
    """
    controls = list(_openblas_thread_controls())
    previous = [(set_threads, get_threads()) for _, set_threads, get_threads in controls]
    for _, set_threads, _ in controls:
        set_threads(1)
    try:
        yield [name for name, _, _ in controls]
    finally:
        for set_threads, n in previous:
            set_threads(n)


def _openblas_thread_controls():
    """(library file name, set_num_threads, get_num_threads) for each loaded OpenBLAS."""
    try:
        with open("/proc/self/maps") as fh:
            paths = sorted({line.split()[-1] for line in fh if "openblas" in line.lower() and "/" in line})
    except OSError:
        return
    for path in paths:
        lib = ctypes.CDLL(path)
        for prefix in ("openblas", "scipy_openblas"):
            for suffix in ("", "64_"):
                set_threads = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                get_threads = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                if set_threads is not None and get_threads is not None:
                    yield Path(path).name, set_threads, get_threads


class Progress:
    """A dependency-free progress bar on stderr.

    As an iterator wrapper: ``for case in Progress(cases, "algorithms"): ...``.
    As a context manager: ``with Progress(total=10, label="x") as bar: bar.update("step")``.
    """

    WIDTH = 30

    def __init__(self, items=None, label: str = "", *, total: int | None = None, stream=None):
        self.items = list(items) if items is not None else None
        self.total = len(self.items) if self.items is not None else int(total or 0)
        self.label = label
        self.done = 0
        self.stream = stream or sys.stderr

    def __iter__(self):
        with self:
            for item in self.items:
                self._draw(item)
                yield item
                self.done += 1

    def __enter__(self):
        self._draw("")
        return self

    def __exit__(self, *exc):
        self._draw("done" if exc[0] is None else "failed")
        self.stream.write("\n")
        self.stream.flush()
        return False

    def update(self, item="", step: int = 1) -> None:
        """Count ``step`` more items done and show ``item`` beside the bar."""
        self.done += step
        self._draw(item)

    def _draw(self, item) -> None:
        filled = int(self.WIDTH * self.done / max(self.total, 1))
        bar = "#" * filled + "." * (self.WIDTH - filled)
        self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total} {str(item)[:40]:<40}")
        self.stream.flush()
