"""Every setting of Blender's Rigid Body, Rigid Body Constraint, Rigid Body World, Force Field and Effector
Weights panels is honoured by the bake or named under "ignored" in the Scene Summary (acceptance 6 of issue #32):
the classification (addon/mapping/settings.py) covers every property ``bl_rna`` lists, and setting each ignored
one names it, with its object, before the bake."""
import math

import pytest

bpy = pytest.importorskip("bpy")

from addon import mapping  # noqa: E402
from addon.mapping import settings  # noqa: E402
from blender_rigs import artist_pendulum  # noqa: E402

STRUCTS = ("RigidBodyObject", "RigidBodyConstraint", "RigidBodyWorld", "FieldSettings", "EffectorWeights")


@pytest.fixture(scope="module", autouse=True)
def registered(addon_registered):
    yield


@pytest.mark.parametrize("struct", STRUCTS)
def test_every_property_blender_exposes_is_honoured_or_ignored_with_a_reason(struct):
    props = [p.identifier for p in getattr(bpy.types, struct).bl_rna.properties if p.identifier != "rna_type"]
    honoured, ignored = settings.HONOURED.get(struct, {}), settings.IGNORED.get(struct, {})
    missing = [p for p in props if p not in honoured and p not in ignored]
    both = [p for p in props if p in honoured and p in ignored]
    assert not missing, f"{struct}: not classified: {missing}"
    assert not both, f"{struct}: both honoured and ignored: {both}"
    assert all(isinstance(v, str) and v for v in (*honoured.values(), *ignored.values()))
    stale = [p for p in (*honoured, *ignored) if p not in props]
    assert not stale, f"{struct}: classified but not a property: {stale}"


def _summary_text(ctx):
    info = mapping.summary(ctx)
    assert not info["error"], info["error"]
    return info["ignored"], " | ".join(f"{e}: {s} — {w}" for e, s, w in info["ignored"])


def test_every_ignored_setting_is_named_with_its_object_in_the_summary_when_it_is_set(ctx):
    """A pendulum, a Wind field and the rigid body world with each ignored setting set away from what the bake
    can honour: the Scene Summary lists every one of them by the name Blender's panel shows, with the object."""
    top, bob = artist_pendulum()
    bpy.ops.object.effector_add(type="WIND", location=(0, 0, 2), rotation=(math.pi, 0, 0))
    wind = ctx.active_object
    wind.name = "wind"
    ignored, text = _summary_text(ctx)
    assert "Collisions" in text  # (two rigid bodies: collisions are not simulated yet)
    assert not any("Deactivation" in s or "Iterations" in s for _, s, _ in ignored)
    bob.rigid_body.use_deactivation = True
    ctx.scene.objects["hinge"].rigid_body_constraint.use_override_solver_iterations = True
    world = ctx.scene.rigidbody_world
    world.solver_iterations, world.use_split_impulse = 20, True
    wind.field.noise, wind.field.use_absorption = 1.0, True
    ignored, text = _summary_text(ctx)
    for struct, keys in settings.IGNORED.items():
        for key in keys:
            name = getattr(bpy.types, struct).bl_rna.properties[key].name
            assert name in text, f"{struct}.{key} ('{name}') is not named: {text}"
    elements = {e for e, _, _ in ignored}
    assert {"object 'bob'", "rigid body constraint on 'hinge'", "rigid body world", "force field 'wind'"} <= elements


@pytest.mark.parametrize("field_type", ["MAGNET", "CHARGE", "TEXTURE", "GUIDE", "LENNARDJ", "BOID", "FLUID_FLOW"])
def test_a_field_type_the_bake_does_not_simulate_is_named(ctx, field_type):
    artist_pendulum()
    bpy.ops.object.effector_add(type="FORCE", location=(0, 0, 2))
    field_ob = ctx.active_object
    field_ob.name = "field"
    field_ob.field.type = field_type
    ignored, text = _summary_text(ctx)
    assert any(e == "force field 'field'" and field_type in s for e, s, _ in ignored), text


def test_a_field_shape_the_bake_does_not_simulate_is_named(ctx):
    artist_pendulum()
    bpy.ops.mesh.primitive_plane_add(location=(0, 0, 2))
    ctx.active_object.name = "field"
    assert bpy.ops.object.forcefield_toggle() == {"FINISHED"}
    ctx.active_object.field.shape = "SURFACE"
    ignored, text = _summary_text(ctx)
    assert any(e == "force field 'field'" and "Shape SURFACE" in s for e, s, _ in ignored), text


def test_start_deactivated_is_named_where_the_bake_holds_the_body(ctx):
    """Start Deactivated: Bullet keeps the body asleep until something touches it; the bake (without collisions)
    holds it where it starts and says so — unless an active body in its island wakes it, as in Bullet."""
    from blender_rigs import artist_cube

    top, bob = artist_pendulum()
    artist_cube("other", 0.2, (3, 0, 0), "ACTIVE")
    bob.rigid_body.use_deactivation = bob.rigid_body.use_start_deactivated = True
    ignored, text = _summary_text(ctx)
    assert any(e == "object 'bob'" and s == "Start Deactivated" for e, s, _ in ignored), text
    assert "bob" not in {t.object.name for t in mapping.build(ctx).targets}


def test_the_panel_summary_follows_a_setting_as_it_changes(ctx):
    """The N-panel's summary (cached between redraws) is recomputed when an ignored setting is switched."""
    from addon import ui

    top, bob = artist_pendulum()
    bob.rigid_body.use_deactivation = False
    assert not any(e == "object 'bob'" for e, _, _ in ui.scene_summary(ctx)["ignored"])
    bob.rigid_body.use_deactivation = True
    assert any(e == "object 'bob'" and "Deactivation" in s for e, s, _ in ui.scene_summary(ctx)["ignored"])
