"""Force fields → ``engine.Scene.add_force_field``: Force, Wind, Vortex, Harmonic, Turbulence and Drag fields
push the simulated active rigid bodies as Blender's rigid body world does (``engine.forces.fields``: each
field's formula, evaluated at the body's origin every substep, applied as a central force, divided by the
frame rate), weighted by the world's Effector Weights (All × the field type's weight; only the fields in the
weights' collection when it is set). Every number is sampled at every frame of the bake (a keyed strength or
a moving field object acts as on playback). Other field types, shapes and settings are named in the Scene
Summary."""
from __future__ import annotations

import numpy as np

from .._engine import engine
from .common import matrix

KINDS = {"FORCE": "force", "WIND": "wind", "VORTEX": "vortex", "HARMONIC": "harmonic", "TURBULENCE": "turbulence",
         "DRAG": "drag"}
WEIGHTS = {"FORCE": "force", "WIND": "wind", "VORTEX": "vortex", "HARMONIC": "harmonic", "TURBULENCE": "turbulence",
           "DRAG": "drag", "MAGNET": "magnetic", "GUIDE": "curve_guide", "TEXTURE": "texture", "CHARGE": "charge",
           "LENNARDJ": "lennardjones", "BOID": "boid", "FLUID_FLOW": "smokeflow"}
SHAPES = {"POINT": "point", "LINE": "line", "PLANE": "plane"}
# per-sample numbers: engine parameter name → how to read it from (field settings, effector weights)
NUMBERS = {
    "strength": lambda f, w: f.strength,
    "flow": lambda f, w: f.flow,
    "damping": lambda f, w: f.linear_drag if f.type == "DRAG" else f.harmonic_damping,
    "rest_length": lambda f, w: f.rest_length,
    "size": lambda f, w: f.size,
    "weight": lambda f, w: (w.all * getattr(w, WEIGHTS[f.type])) if w is not None else 1.0,
    "power": lambda f, w: f.falloff_power,
    "min_distance": lambda f, w: f.distance_min,
    "max_distance": lambda f, w: f.distance_max,
    "radial_power": lambda f, w: f.radial_falloff,
    "min_radius": lambda f, w: f.radial_min,
    "max_radius": lambda f, w: f.radial_max,
}


def field_objects(bscene) -> list:
    """Objects with a force field that may act on rigid bodies: in the world's effector collection when set."""
    w = bscene.rigidbody_world
    coll = w.effector_weights.collection if w is not None else None
    pool = coll.all_objects if coll is not None else bscene.objects
    return [ob for ob in pool if ob.field is not None and ob.field.type != "NONE"]


def _supported(ob, b=None) -> bool:
    """Whether the field of ``ob`` is mapped; names it in ``b`` (a Builder) when it is not."""
    f = ob.field
    what = f"force field '{ob.name}'"
    if f.type not in KINDS:
        if b is not None:
            b.ignore(what, f"type {f.type}", "only Force, Wind, Vortex, Harmonic, Turbulence and Drag fields push "
                                             "rigid bodies in the bake")
        return False
    if f.shape not in SHAPES:
        if b is not None:
            b.ignore(what, f"Shape {f.shape}", "a field's shape must be Point, Line or Plane for the bake")
        return False
    return bool(f.apply_to_location)


class FieldSampler:
    """Samples the supported fields' numbers, origin and Z axis at each frame of a ``Timeline``."""

    def __init__(self, bscene, n_frames: int):
        self.bscene = bscene
        self.objects = [ob for ob in field_objects(bscene) if _supported(ob)]
        self.samples = {ob.name: {"origin": np.zeros((n_frames, 3)), "axis": np.zeros((n_frames, 3)),
                                  **{k: np.zeros(n_frames) for k in NUMBERS}} for ob in self.objects}

    def __call__(self, k: int) -> None:
        w = self.bscene.rigidbody_world
        weights = w.effector_weights if w is not None else None
        for ob in self.objects:
            s, W = self.samples[ob.name], matrix(ob.matrix_world)
            s["origin"][k], s["axis"][k] = W[:3, 3], W[:3, 2]
            for key, read in NUMBERS.items():
                s[key][k] = read(ob.field, weights)


def add_fields(b, scene, bscene, targets, timeline) -> None:
    """Add the supported fields to ``scene``, pushing every simulated active rigid body; name the rest in ``b``."""
    samples = getattr(timeline, "fields", None) or {}
    pushed = [(name, t.object) for name, t in targets.items()
              if t.keyed and not t.bone and t.object.rigid_body is not None and t.object.rigid_body.type == "ACTIVE"]
    w = bscene.rigidbody_world
    weights = w.effector_weights if w is not None else None
    fps = float(bscene.render.fps)  # Blender's vel_to_sec: frames per second without the fps base
    for ob in field_objects(bscene):
        if not _supported(ob, b):
            continue
        f = ob.field
        what = f"force field '{ob.name}'"
        bodies = [(n, o) for n, o in pushed if o != ob]
        if not bodies:
            continue
        s = samples.get(ob.name)
        if s is None:  # one sample, the current frame (Scene Summary, live preview)
            W = matrix(ob.matrix_world)
            s = {"origin": W[:3, 3][None], "axis": W[:3, 2][None],
                 **{k: np.array([read(f, weights)]) for k, read in NUMBERS.items()}}
        n = len(s["strength"])
        times = np.arange(n) * timeline.frame_time
        try:
            scene.add_force_field(ob.name, KINDS[f.type], bodies=[n_ for n_, _ in bodies], shape=SHAPES[f.shape],
                                  times=times, origin=s["origin"], axis=s["axis"],
                                  points=[matrix(o.matrix_world)[:3, 3] for _, o in bodies],
                                  frame_rate=fps, falloff_type=f.falloff_type.lower(),
                                  z_direction=f.z_direction.lower(), use_min_distance=f.use_min_distance,
                                  use_max_distance=f.use_max_distance, use_min_radius=f.use_radial_min,
                                  use_max_radius=f.use_radial_max, gravitation=f.use_gravity_falloff,
                                  global_coordinates=f.use_global_coords, seed=int(f.seed),
                                  **{k: s[k] for k in NUMBERS})
        except engine.ModelError as err:
            raise ValueError(f"{what}: {err}") from None
