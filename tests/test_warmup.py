"""engine.warmup: the kernel groups a solver needs, progress and cancel, and the warm-cache stamp."""
import json

import pytest

import engine
from engine import warmup


def test_groups_per_solver_and_contact():
    names = [g.name for g in warmup.kernel_groups("pcg")]
    assert len(names) == 3 and "PCG" in names[1]
    assert "DIRECT" in warmup.kernel_groups("direct")[1].name
    with_contact = warmup.kernel_groups("dense", contact=True, contact_method="cholesky")
    assert len(with_contact) == 4 and "cholesky" in with_contact[-1].name
    with pytest.raises(ValueError, match="'baraff'"):
        warmup.kernel_groups("baraff")


@pytest.fixture()
def stamp_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(warmup, "cache_dir", lambda: tmp_path)
    return tmp_path


@pytest.mark.skipif(not engine.JIT_ENABLED, reason="the stamp describes numba's cache")
def test_compile_reports_every_group_and_leaves_a_stamp_that_is_checked(stamp_dir):
    assert not warmup.is_warm("pcg")  # no stamp in this directory
    seen = []
    result = warmup.compile_kernels("pcg", progress=lambda done, total, name: seen.append((done, total, name)))
    names = [g.name for g in warmup.kernel_groups("pcg")]
    assert seen == [(k, 3, n) for k, n in enumerate(names)] + [(3, 3, "")]
    assert set(result.seconds) == set(names) and result.kernels >= 10
    assert warmup.is_warm("pcg")
    assert not warmup.is_warm("pcg", contact=True)  # another kernel set, not compiled here
    stamp = json.loads((stamp_dir / warmup.STAMP_NAME).read_text())
    kernels = stamp["groups"]["pcg"]
    assert any(name.endswith(":pcg_solve") for name in kernels)
    # a kernel whose cached signature is gone (a changed source, a cleared cache) makes it cold again
    first = next(iter(kernels))
    kernels[first] = kernels[first] + ["(float32,)"]
    (stamp_dir / warmup.STAMP_NAME).write_text(json.dumps(stamp))
    assert not warmup.is_warm("pcg")
    stamp["source"] = "another tree"
    (stamp_dir / warmup.STAMP_NAME).write_text(json.dumps(stamp))
    assert not warmup.is_warm("pcg")


def test_cancel_stops_between_groups(stamp_dir):
    calls = []
    with pytest.raises(warmup.WarmupCancelled, match="after 1 of 3"):
        warmup.compile_kernels("pcg", progress=lambda *a: calls.append(a), cancel=lambda: len(calls) >= 1)
    assert len(calls) == 1
    assert not (stamp_dir / warmup.STAMP_NAME).exists()
