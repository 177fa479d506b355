"""The pure-Python fallback (ENGINE_DISABLE_JIT=1) gives the same results as numba."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import numpy as np

import engine

ROOT = Path(__file__).resolve().parents[1]

_SCRIPT = """
import json, sys, numpy as np, engine
assert not engine.JIT_ENABLED
out = {}
for seed, fb in ((1, False), (2, True)):
    m = engine.random_tree(6, seed=seed, floating_base=fb)
    rng = np.random.default_rng(seed)
    q, qd = engine.random_configuration(m, rng)
    tau = rng.normal(size=m.nv)
    M = engine.crba(m, q)
    out[f"{seed}"] = dict(aba=engine.aba(m, q, qd, tau).tolist(), rnea=engine.rnea(m, q, qd, tau).tolist(),
                          crba=M.tolist(), minv=engine.minv(m, q).tolist(),
                          ltdl=engine.ltdl_solve(m, engine.ltdl(m, M), tau).tolist())
json.dump(out, sys.stdout)
"""


def _env():
    env = dict(os.environ, ENGINE_DISABLE_JIT="1", HYPOTHESIS_PROFILE="nojit")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_fallback_matches_numba_results():
    res = subprocess.run([sys.executable, "-c", _SCRIPT], env=_env(), capture_output=True, text=True, check=True)
    got = json.loads(res.stdout)
    for seed, fb in ((1, False), (2, True)):
        m = engine.random_tree(6, seed=seed, floating_base=fb)
        rng = np.random.default_rng(seed)
        q, qd = engine.random_configuration(m, rng)
        tau = rng.normal(size=m.nv)
        M = engine.crba(m, q)
        want = dict(aba=engine.aba(m, q, qd, tau), rnea=engine.rnea(m, q, qd, tau), crba=M, minv=engine.minv(m, q),
                    ltdl=engine.ltdl_solve(m, engine.ltdl(m, M), tau))
        for key, value in want.items():
            assert np.allclose(got[str(seed)][key], value, rtol=1e-10, atol=1e-10), key


@pytest.mark.slow
def test_property_suite_passes_without_numba():
    """A subset of the property tests (few examples each) with numba switched off."""
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(ROOT / "tests" / "test_properties.py"), str(ROOT / "tests" / "test_joints.py"),
                          "-k", "not integration_stays"],
                         env=_env(), capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert " passed" in res.stdout
