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


def test_scene_facts_pick_the_step_the_bake_runs():
    """closures=True: only the staged step with closures; False: only the step without (the one-call PCG
    step, or with contact the contact group's); None: both, as before the facts were known."""
    with_closures = [g.name for g in warmup.kernel_groups("pcg", closures=True)]
    assert len(with_closures) == 2 and "loop closures" in with_closures[1]
    without = [g.name for g in warmup.kernel_groups("pcg", closures=False, limits=False)]
    assert len(without) == 2 and "PCG step:" in without[1]
    assert [g.name for g in warmup.kernel_groups("pcg", contact=True, closures=False, limits=False)][1:] == [
        "ground contact (minv)"]
    limited = [g.name for g in warmup.kernel_groups("pcg", closures=False, limits=True)]
    assert len(limited) == 2 and "joint limits" in limited[1]
    assert len(warmup.kernel_groups("pcg", closures=False)) == 3  # limits not known: with and without
    assert len(warmup.kernel_groups("pcg", contact=True)) == 4
    bridge = engine.scenes.bridge(7, 0)
    assert warmup.scene_facts(bridge) == {"contact": False, "closures": True, "limits": False, "body_damping": False}
    chain = engine.scenes.chain(3)
    chain.set_body_damping(0.1)
    assert warmup.scene_facts(chain) == {"contact": False, "closures": False, "limits": False, "body_damping": True}


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


def test_a_stamp_with_open_facts_covers_the_known_ones(stamp_dir, monkeypatch):
    entries = {"engine.joints:matrix_to_quat_kernel": ["(float32,)"]}  # not in any cache: that entry is cold
    monkeypatch.setattr(warmup, "_entry_cached", lambda entry: entry != entries)
    stamp = {"source": warmup._source_key(), "groups": {"pcg/closures": {}}}
    (stamp_dir / warmup.STAMP_NAME).write_text(json.dumps(stamp))
    assert not warmup.is_warm("pcg", closures=True)  # an empty entry is no warm-up
    stamp["groups"] = {"pcg/closures": {"engine.joints:joint_transform": []}}
    (stamp_dir / warmup.STAMP_NAME).write_text(json.dumps(stamp))
    assert warmup.is_warm("pcg", closures=True) and warmup.is_warm("pcg", closures=True, body_damping=False)
    assert not warmup.is_warm("pcg", closures=False) and not warmup.is_warm("pcg")
    stamp["groups"] = {"pcg": {"engine.joints:joint_transform": []}, "pcg/no-closures": entries}
    (stamp_dir / warmup.STAMP_NAME).write_text(json.dumps(stamp))
    assert warmup.is_warm("pcg", closures=False, body_damping=True)  # the open-facts warm-up covers it
    assert not warmup.is_warm("direct", closures=False)


def test_cancel_stops_between_groups(stamp_dir):
    calls = []
    with pytest.raises(warmup.WarmupCancelled, match="after 1 of 3"):
        warmup.compile_kernels("pcg", progress=lambda *a: calls.append(a), cancel=lambda: len(calls) >= 1)
    assert len(calls) == 1
    assert not (stamp_dir / warmup.STAMP_NAME).exists()
