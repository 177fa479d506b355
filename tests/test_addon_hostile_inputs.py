"""Issue #36 in the add-on (real bpy wheel): a Substeps of 10⁷ and an *Add Demo Scene* of size 100 000 hung;
ESC could not act inside a long frame; *Export RedMax Scene* to an unwritable path gave a raw traceback; a
HINGE whose other end is a curve said "no rigid body constraint" without naming the curve. Each case now has
a documented bound or a named error, and a refused operation changes nothing."""
import time

import pytest

bpy = pytest.importorskip("bpy")

from addon import bake, demo, properties  # noqa: E402
from blender_rigs import artist_cube, artist_pendulum, constraint, differences, empty, scene_snapshot  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def registered(addon_registered):
    yield


def test_substeps_have_an_upper_bound(ctx):
    ctx.scene.redmax.substeps = 10**7
    assert ctx.scene.redmax.substeps == properties.MAX_SUBSTEPS == 1000
    assert "1 … 1000" in type(ctx.scene.redmax).bl_rna.properties["substeps"].description


@pytest.mark.parametrize("kind, size", [("CHAIN", 100_000), ("TREE", 40), ("BRIDGE", 10**6)])
def test_a_huge_demo_scene_is_refused_at_once_and_adds_nothing(ctx, kind, size):
    before = set(bpy.data.objects)
    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match=rf"{kind.lower()} demo: size must be 1 … {demo.MAX_SIZE[kind]} "
                                           rf"\(0 for the default, {demo.DEFAULT_SIZE[kind]}\), got {size}"):
        bpy.ops.redmax.add_demo_scene(scene=kind, size=size)
    assert time.perf_counter() - t0 < 10 and set(bpy.data.objects) == before


def test_esc_acts_inside_a_long_frame(ctx, monkeypatch):
    """A frame whose substeps outlast ``bake.LONG_FRAME`` yields between them (the modal loop sees ESC then);
    the keys are the same as those of a bake whose frames yield once."""
    ctx.scene.frame_start, ctx.scene.frame_end = 1, 4
    ctx.scene.redmax.substeps = 8
    artist_pendulum()
    monkeypatch.setattr(bake, "LONG_FRAME", 1e9)  # no frame is long: one yield a frame
    whole = bake.BakeJob(ctx)
    fractions_whole = list(whole.steps())
    whole.abort()
    monkeypatch.setattr(bake, "LONG_FRAME", -1.0)  # every frame counts as long: a yield after every substep
    job = bake.BakeJob(ctx)
    steps = job.steps()
    first = next(steps)
    assert len(job.qs) == 1 and 0 < first < 1 / 3  # inside frame 2 (of 3 simulated): ESC could act here
    fractions = [first, *steps]
    assert len(fractions) == 3 * 8 and len(fractions_whole) == 3
    assert fractions == sorted(fractions) and fractions[7::8] == fractions_whole
    assert all((a == b).all() for a, b in zip(job.qs, whole.qs))
    job.abort()


def test_export_to_an_unwritable_path_is_one_error_line_before_mapping(ctx, tmp_path):
    artist_pendulum()
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    with pytest.raises(RuntimeError, match=r"RedMax export failed: cannot write the export file '.*a_file/x.json': "
                                           r"its folder '.*a_file': it is a file, not a folder"):
        bpy.ops.redmax.export_scene(filepath=str(a_file / "x.json"))
    assert bpy.ops.redmax.export_scene(filepath=str(tmp_path / "ok.json")) == {"FINISHED"}
    assert (tmp_path / "ok.json").stat().st_size > 0


def test_a_hinge_to_a_curve_names_the_curve(ctx):
    """Only meshes move: a HINGE between an Empty and a curve simulates nothing, and says which objects and why."""
    curve = bpy.data.curves.new("wire", "CURVE")
    curve.splines.new("POLY")
    wire = bpy.data.objects.new("wire", curve)
    ctx.scene.collection.objects.link(wire)
    anchor = empty("anchor", (0, 0, 1))
    host = empty("hinge", (0, 0, 1))
    constraint(host, "HINGE", anchor, wire)
    objects = list(ctx.scene.objects)
    before = scene_snapshot(ctx.scene, objects)
    with pytest.raises(RuntimeError, match=r"nothing to simulate: the rigid body constraint on 'hinge' joins 'anchor' "
                                           r"\(an empty\), 'wire' \(a curve\), and none of them moves: only meshes"):
        bpy.ops.redmax.bake()
    assert differences(before, scene_snapshot(ctx.scene, objects)) == []


def test_a_hinge_from_a_mesh_to_a_curve_bakes_with_the_curve_as_the_anchor(ctx):
    cube = artist_cube("cube", 0.2, (0, 0, 0), "ACTIVE")
    curve = bpy.data.curves.new("wire", "CURVE")
    curve.splines.new("POLY")
    wire = bpy.data.objects.new("wire", curve)
    ctx.scene.collection.objects.link(wire)
    constraint(empty("hinge", (0, 0, 0.5)), "HINGE", cube, wire)
    ctx.scene.frame_end = 5
    assert bpy.ops.redmax.bake() == {"FINISHED"}
    assert cube.redmax.is_baked and not wire.redmax.is_baked
