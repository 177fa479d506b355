"""Without numba installed the engine says so once, on stderr; turned off on purpose (ENGINE_DISABLE_JIT=1) it
stays quiet (issue #35: `engine advise` outside the venv silently took 200× longer)."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HIDE_NUMBA = "import sys; sys.modules['numba'] = None; import engine; engine.aba; engine.aba; print('ok')"


def run(env_extra):
    env = dict(os.environ, PYTHONPATH=str(ROOT), **env_extra)
    env.pop("ENGINE_DISABLE_JIT", None) if "ENGINE_DISABLE_JIT" not in env_extra else None
    return subprocess.run([sys.executable, "-c", HIDE_NUMBA], env=env, capture_output=True, text=True, timeout=120)


def test_missing_numba_is_said_once():
    res = run({})
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr
    lines = [l for l in res.stderr.splitlines() if "numba could not be imported" in l]
    assert len(lines) == 1 and "plain Python" in lines[0]


def test_numba_turned_off_on_purpose_is_quiet():
    res = run({"ENGINE_DISABLE_JIT": "1"})
    assert res.returncode == 0 and "numba could not be imported" not in res.stderr
