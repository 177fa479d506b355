"""The kernel caches (engine/_kernel_store.py, _kernel_cache.py; docs/kernels.md), in subprocesses with fresh
cache folders: shipped kernels serve a read-only install wherever it is, with nothing compiled or written; a
cache for another CPU makes the engine compile natively, with progress and the same results; a damaged cache
is named, removed and rebuilt; an unusable cache folder is said once and nothing lands in the package.

The shipped kernels here are the warm-up's forward-kinematics group only (seconds to build); the full set is
built by scripts/build_extension.py and build_wheel.py and measured by scripts/first_use.py."""
import json
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from engine import _jit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_kernels  # noqa: E402

pytestmark = pytest.mark.skipif(not _jit.JIT_ENABLED, reason="numba is off: nothing is compiled or cached")

# forward kinematics (the warm-up's first group) on its tiny model at a random configuration
PROBE = r"""
import hashlib, json
import numpy as np
import engine
from engine import _jit
from engine.apps import warmup
from engine.algorithms import link_poses
from engine.joints import matrix_to_quat
m = warmup._tiny_model(False)
q, _ = engine.random_configuration(m, np.random.default_rng(3))
R, p = link_poses(m, q)
quat = matrix_to_quat(R)
print("RESULT " + json.dumps({"hash": hashlib.sha256(R.tobytes() + p.tobytes() + quat.tobytes()).hexdigest(),
                              "counts": _jit.kernel_counts(), "describe": _jit.describe(),
                              "shipped": _jit.TARGET.shipped is not None, "cpu": _jit.TARGET.cpu_name}))
"""


def probe(site: Path, cache: Path, **env) -> tuple[dict, str]:
    """Run PROBE with the engine under ``site`` and NUMBA_CACHE_DIR=``cache``; (result, stderr)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_CPU", "ENGINE_KERNELS", "_ENGINE_SET"))}
    full.update(PYTHONPATH=str(site), NUMBA_CACHE_DIR=str(cache), PYTHONDONTWRITEBYTECODE="1", **env)
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=site, env=full, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.split("RESULT ", 1)[1]), done.stderr


def install(where: Path, kernels: Path | None = None) -> Path:
    """A copy of the engine package under ``where`` (an install), with ``kernels`` as its shipped kernels."""
    shutil.copytree(ROOT / "engine", where / "engine", ignore=shutil.ignore_patterns("__pycache__", "_shipped_kernels"))
    if kernels is not None:
        shutil.copytree(kernels, where / "engine" / "_shipped_kernels")
    return where


def listing(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.stat().st_size for p in sorted(folder.rglob("*"))}


@contextmanager
def read_only(folder: Path):
    """``folder`` read-only for this process's children: a read-only bind mount where the system allows it
    (root in a container), else permissions (which do not stop root: then skip)."""
    mounted = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True).returncode == 0
    if mounted and subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)], capture_output=True).returncode:
        subprocess.run(["umount", str(folder)], capture_output=True)
        mounted = False
    if not mounted:
        if os.geteuid() == 0:
            pytest.skip("cannot make a folder read-only here (root without mount)")
        subprocess.run(["chmod", "-R", "a-w", str(folder)], check=True)
    try:
        yield
    finally:
        if mounted:
            subprocess.run(["umount", str(folder)], check=True)
        else:
            subprocess.run(["chmod", "-R", "u+w", str(folder)], check=True)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The forward-kinematics kernels compiled for the platform's baseline from a copy of this engine."""
    site = install(tmp_path_factory.mktemp("build_site"))
    out = tmp_path_factory.mktemp("kernels") / "shipped"
    manifest = build_kernels.build(out, site, "kinematics", echo=lambda *a: None)
    assert manifest["package"] == "engine" and manifest["groups"] == ["kinematics"]
    return out


def test_shipped_kernels_serve_a_read_only_install_elsewhere_with_nothing_compiled_or_written(built, tmp_path):
    site = install(tmp_path / "somewhere" / "else", built)
    before = listing(site)
    with read_only(site):
        result, err = probe(site, tmp_path / "cache")
    if not result["shipped"]:
        pytest.skip(f"this CPU cannot run the baseline: {result['describe']}")
    assert result["counts"]["compiled"] == 0 and result["counts"]["loaded_shipped"] > 0, result
    assert "compiling" not in err
    assert listing(site) == before  # nothing written into the package
    assert not list((tmp_path / "cache").rglob("*.nbi"))  # and nothing needed in the user cache


def test_a_populated_cache_on_a_read_only_file_system_is_used(tmp_path):
    site = install(tmp_path / "site")
    cache = tmp_path / "cache"
    first, _ = probe(site, cache)
    assert first["counts"]["compiled"] > 0
    before = listing(cache)
    with read_only(cache):
        again, err = probe(site, cache)
    assert again["counts"]["compiled"] == 0 and again["counts"]["loaded_user"] > 0, again
    assert again["hash"] == first["hash"] and listing(cache) == before
    assert "compiling" not in err


def test_kernels_for_another_cpu_make_the_engine_compile_natively_with_progress_and_the_same_results(built, tmp_path):
    """A host without the shipped kernels' CPU, simulated by kernels compiled for another CPU model."""
    other = tmp_path / "other_kernels"
    build_kernels.build(other, install(tmp_path / "build_site"), "kinematics", echo=lambda *a: None,
                        cpu="sapphirerapids", cpu_features="+amx-tile")
    site = install(tmp_path / "site", other)
    result, err = probe(site, tmp_path / "cache")
    assert not result["shipped"] and "not sapphirerapids" in result["describe"], result
    assert result["counts"]["compiled"] > 0 and result["counts"]["loaded_shipped"] == 0
    assert "engine: compiling numba kernels for first use" in err and str(tmp_path / "cache") in err
    shipped, _ = probe(install(tmp_path / "site2", built), tmp_path / "cache2")
    native, _ = probe(site, tmp_path / "cache3", ENGINE_KERNELS="native")
    assert result["hash"] == shipped["hash"] == native["hash"]  # bit for bit: no reassociation (_jit._FASTMATH)
    assert "ENGINE_KERNELS=native" in native["describe"]


def test_a_damaged_cache_is_named_removed_and_rebuilt(tmp_path):
    site = install(tmp_path / "site")
    cache = tmp_path / "cache"
    clean, _ = probe(site, cache)
    files = sorted(cache.rglob("*.nb[ic]"))
    assert files
    for k, f in enumerate(files):  # truncated index and data files, and one of garbage
        data = f.read_bytes()
        f.write_bytes(b"\x80\x05garbage" if k == 0 else data[: len(data) // 2])
    damaged, err = probe(site, cache)
    assert damaged["hash"] == clean["hash"]
    assert damaged["counts"]["compiled"] > 0 and damaged["counts"]["damaged"] > 0, damaged
    said = [line for line in err.splitlines() if "damaged file" in line]
    assert len(said) == 1 and f"the kernel cache in {_jit_folder(cache)} had a damaged file" in said[0], err
    rebuilt, err = probe(site, cache)
    assert rebuilt["counts"] == {"compiled": 0, "loaded_shipped": 0, "loaded_user": rebuilt["counts"]["loaded_user"],
                                 "damaged": 0} and rebuilt["counts"]["loaded_user"] > 0
    assert "damaged file" not in err


def _jit_folder(cache: Path) -> Path:
    (folder,) = cache.glob("engine-*")
    return folder


@pytest.mark.parametrize("kind", ["a file", "read-only"])
def test_an_unusable_cache_folder_is_said_once_and_nothing_goes_into_the_package(tmp_path, kind):
    site = install(tmp_path / "site")
    before = listing(site)
    if kind == "a file":
        cache = tmp_path / "not_a_folder"
        cache.write_text("")
        result, err = probe(site, cache)
    else:
        cache = tmp_path / "empty_cache"
        cache.mkdir()
        with read_only(cache):
            result, err = probe(site, cache)
    assert result["counts"]["compiled"] > 0
    assert err.count("is not writable") == 1 and str(cache) in err, err
    assert listing(site) == before  # numba's own locators would have written engine/**/__pycache__/*.nbi
