"""A cold numba cache announces its one-time compile on stderr (once per process); a warm one says nothing,
and ``warmup.compile_kernels`` with a progress callback (which reports progress itself) says nothing."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine import _jit

ROOT = Path(__file__).resolve().parents[1]
FIRST_ABA = ("import numpy as np, engine; m = engine.random_tree(3, branching='binary', seed=1); "
             "q, qd = engine.random_configuration(m, np.random.default_rng(0)); "
             "engine.aba(m, q, qd, np.zeros(m.nv)); engine.aba(m, q, qd, np.zeros(m.nv))")


def _stderr(code: str, cache: Path) -> str:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stderr


@pytest.mark.slow
@pytest.mark.skipif(not _jit.JIT_ENABLED, reason="no numba: nothing compiles")
def test_cold_cache_says_so_once_and_warm_cache_is_silent(tmp_path):
    cold = _stderr(FIRST_ABA, tmp_path)
    assert cold.count("engine: compiling numba kernels for first use") == 1, cold
    assert str(tmp_path) in cold  # where the kernels are cached
    assert "compiling" not in _stderr(FIRST_ABA, tmp_path)  # cached now


@pytest.mark.skipif(not _jit.JIT_ENABLED, reason="no numba: nothing compiles")
def test_compile_kernels_with_progress_is_silent(tmp_path):
    """The warm-up's first group (forward kinematics) on a cold cache, with a progress callback."""
    code = ("from engine.apps import warmup; groups = warmup.kernel_groups('pcg', closures=False, limits=False); "
            "warmup.kernel_groups = lambda *a, **k: groups[:1]; "
            "r = warmup.compile_kernels('pcg', closures=False, limits=False, progress=lambda *a: None); "
            "assert r.total_seconds > 0")
    assert "compiling" not in _stderr(code, tmp_path)
