"""Numba's cache folder is keyed by the engine's sources (engine/_jit.py): a kernel never runs machine
code compiled from an older version of a file it inlines or calls."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine import _jit

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not _jit.JIT_ENABLED, reason="numba is off")

PROBE = "import engine, engine._jit as j; print(j.cache_folder()); print(j.source_digest())"


def _probe(cache: Path, root: Path = ROOT):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(root))
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, cwd=root, check=True)
    return out.stdout.split()


def test_cache_folder_is_named_by_the_sources_and_old_ones_are_pruned(tmp_path):
    cache = tmp_path / "cache"
    for k in range(5):  # caches of five older engine versions, oldest first
        d = cache / f"engine-old{k}"
        d.mkdir(parents=True)
        os.utime(d, (1_000_000 + k, 1_000_000 + k))
    (cache / "unrelated").mkdir()
    folder, digest = _probe(cache)
    assert Path(folder) == cache / f"engine-{digest}"
    left = sorted(p.name for p in cache.iterdir())
    assert left == sorted(["unrelated", f"engine-{digest}"] + [f"engine-old{k}" for k in range(5 - (_jit.KEEP_CACHES - 1), 5)])


def test_an_edit_in_any_engine_file_changes_the_cache_folder(tmp_path):
    copy = tmp_path / "src"
    copy.mkdir()
    subprocess.run(["cp", "-r", str(ROOT / "engine"), str(copy / "engine")], check=True)
    _, before = _probe(tmp_path / "cache", copy)
    spatial = copy / "engine" / "spatial.py"
    spatial.write_text(spatial.read_text() + "\n# an edit\n")
    _, after = _probe(tmp_path / "cache", copy)
    assert before != after
