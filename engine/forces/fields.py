"""Force fields acting on bodies: Blender's Force, Wind, Vortex, Harmonic, Turbulence and Drag effectors as
its rigid body world applies them (``engine.Scene.add_force_field``).

Blender evaluates each field at every substep for each active rigid body, at the body's position and
linear velocity, and applies the sum as a *central* force (no torque; rigidbody.cc,
``rigidbody_update_external_forces``). The force of one field (effect.cc, ``get_effector_data``,
``effector_falloff``, ``do_physical_effector``), with x the body's evaluation point, v its velocity, o the
field's origin, n its unit Z axis, s the strength, f the falloff and r = ``frame_rate`` (Blender's
``vel_to_sec``: the scene's frames per second):

* the field point: o for shape ``"point"``; for ``"plane"`` the foot of x on the plane through o normal to n,
  for ``"line"`` (and every Vortex not of shape point) the foot of x on the line through o along n;
  e = x − field point, d = |e| (Harmonic with rest length L: e scaled by (d − L)/d);
* falloff f = weight · [z direction: 0 on the excluded side of the plane] · ``falloff_type``:
  sphere g(d); tube g(|h|)·g_r(ρ) with h = n·(x − o), ρ the distance from the axis; cone g(|h|)·g_r(angle in
  degrees from the axis), where g(u) = 0 beyond ``max_distance`` (when used), 1 within ``min_distance``
  (when used), else (1 + u − min)^(−power) (power 0: 1), and g_r the same with the radial settings;
* F_wind = s f n;  F_force = s f ê (``gravitation``: s/d² instead of s);
  F_vortex = s f (n × e)/|n × e| · d (shape point), else s² f² n × (n × (x − o)) + s f n × (x − o) − r v;
  F_harmonic = −s f e − 2 c √|s| r v (c = ``damping``);  F_turbulence = s f (2 N(x/size) − 1) per axis;
  F_drag = −f |v| r (min(s, 2) |v| r + min(c, 2)) v̂;
* applied: F/r − ``flow`` · f · v (the flow term for all but Harmonic and Drag): Blender divides the field's
  force by the frame rate for rigid bodies, so a Wind of strength 24 pushes with 1 N at 24 fps.

Turbulence uses this module's own gradient noise N ∈ [0, 1] (three octaves as Blender's
``BLI_noise_generic_turbulence``, same size and amplitude); Blender's noise table is not reproduced, so the
gusts have Blender's scale and strength but another pattern. Strength noise (``noise`` in Blender) is not
modelled (the add-on names it).

Parameters that Blender animates are given per sample: ``times`` (F,) in simulation seconds and per-sample
arrays; a step that starts at t ∈ [t_{k−1}, t_k) uses sample k (Blender steps from frame k−1 to k with frame k's
values). Fields are explicit forces, evaluated at the start of each step.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelError
from ..model import _float_array

FIELD_KINDS = ("force", "wind", "vortex", "harmonic", "turbulence", "drag")
FIELD_SHAPES = ("point", "line", "plane")
FALLOFF_TYPES = ("sphere", "tube", "cone")
Z_DIRECTIONS = ("both", "positive", "negative")
# the per-sample parameters, in the columns of ForceField.values
PARAMETERS = ("strength", "flow", "damping", "rest_length", "size", "weight", "power", "min_distance",
              "max_distance", "radial_power", "min_radius", "max_radius")


@dataclass
class ForceField:
    """One field (module docstring). origins, axes: (F, 3) world origin and unit Z axis per sample;
    values: (F, len(PARAMETERS)) per sample; times (F,) s. bodies (k,) the bodies it pushes, points (k, 3)
    the point of each in its link frame where the field is evaluated (Blender: the object's origin), coms
    (k, 3) where the force is applied (the body's centre of mass, link frame: a central force)."""

    name: str
    kind: str
    shape: str
    times: np.ndarray
    origins: np.ndarray
    axes: np.ndarray
    values: np.ndarray
    bodies: np.ndarray
    points: np.ndarray
    coms: np.ndarray
    frame_rate: float = 24.0
    falloff_type: str = "sphere"
    z_direction: str = "both"
    use_min_distance: bool = False
    use_max_distance: bool = False
    use_min_radius: bool = False
    use_max_radius: bool = False
    gravitation: bool = False
    global_coordinates: bool = False
    seed: int = 0
    _noise: np.ndarray | None = field(default=None, repr=False)

    def value(self, name: str, k: int) -> float:
        return float(self.values[k, PARAMETERS.index(name)])

    def sample_index(self, t: float) -> int:
        """The sample a step starting at t (s) uses (module docstring)."""
        if len(self.times) == 1:
            return 0
        return int(min(len(self.times) - 1, max(0, np.searchsorted(self.times, t + 1e-9 * max(1.0, abs(t)),
                                                                    side="right"))))


def make_field(name, kind, shape, times, origins, axes, parameters: dict, bodies, points, coms, **flags) -> ForceField:
    """A checked ForceField; ``parameters`` maps names of PARAMETERS to a number or one per sample (missing:
    0, weight 1)."""
    what = f"force field '{name}'"
    if kind not in FIELD_KINDS:
        raise ModelError(f"{what}: kind must be one of {', '.join(FIELD_KINDS)}, got {kind!r}")
    if shape not in FIELD_SHAPES:
        raise ModelError(f"{what}: shape must be one of {', '.join(FIELD_SHAPES)}, got {shape!r}")
    times = np.atleast_1d(_float_array(times, f"{what}: times"))
    F = len(times)
    if times.ndim != 1 or F == 0 or not np.all(np.isfinite(times)) or np.any(np.diff(times) <= 0):
        raise ModelError(f"{what}: times must be finite and increasing")
    try:
        origins = np.broadcast_to(_float_array(origins, f"{what}: origin"), (F, 3)).copy()
        axes = np.broadcast_to(_float_array(axes, f"{what}: axis"), (F, 3)).copy()
    except ValueError as err:
        if isinstance(err, ModelError):
            raise
        raise ModelError(f"{what}: origin and axis must be 3 numbers or {F} × 3, got shapes "
                         f"{np.shape(origins)} and {np.shape(axes)}") from None
    norms = np.linalg.norm(axes, axis=1)
    if not (np.all(np.isfinite(origins)) and np.all(np.isfinite(axes)) and np.all(norms > 1e-12)):
        raise ModelError(f"{what}: origins and axes must be finite, the axes non-zero")
    axes /= norms[:, None]
    values = np.zeros((F, len(PARAMETERS)))
    values[:, PARAMETERS.index("weight")] = 1.0
    for key, v in parameters.items():
        if key not in PARAMETERS:
            raise ModelError(f"{what}: unknown parameter {key!r}; expected one of {', '.join(PARAMETERS)}")
        try:
            col = np.broadcast_to(_float_array(v, f"{what}: {key}"), (F,))
        except ValueError as err:
            if isinstance(err, ModelError):
                raise
            raise ModelError(f"{what}: {key} must be a number or {F} numbers, got {v!r}") from None
        if not np.all(np.isfinite(col)):
            raise ModelError(f"{what}: {key} must be finite")
        values[:, PARAMETERS.index(key)] = col
    known = ("falloff_type", "z_direction", "use_min_distance", "use_max_distance", "use_min_radius", "use_max_radius",
             "gravitation", "global_coordinates", "seed", "frame_rate")
    unknown = [k for k in flags if k not in known]
    if unknown:
        raise ModelError(f"{what}: unknown setting {unknown[0]!r}; expected one of {', '.join(PARAMETERS + known)}")
    for key, allowed in (("falloff_type", FALLOFF_TYPES), ("z_direction", Z_DIRECTIONS)):
        if key in flags and flags[key] not in allowed:
            raise ModelError(f"{what}: {key} must be one of {', '.join(allowed)}, got {flags[key]!r}")
    from ..model import _number

    rate = _number(flags.pop("frame_rate", 24.0), f"{what}: frame_rate")
    if not (math.isfinite(rate) and rate > 0):
        raise ModelError(f"{what}: frame_rate must be > 0, got {rate}")
    bodies = np.asarray(bodies, np.int64).reshape(-1)
    points = np.asarray(points, float).reshape(len(bodies), 3)
    coms = np.asarray(coms, float).reshape(len(bodies), 3)
    return ForceField(name, kind, shape, times, origins, axes, values, bodies, points, coms, rate, **flags)


def _falloff_curve(u, use_min, lo, use_max, hi, power):
    """Blender's falloff_func (effect.cc)."""
    if use_max and u > hi:
        return 0.0
    if use_min and u < lo:
        return 1.0
    if not use_min:
        lo = 0.0
    return (1.0 + u - lo) ** (-power)


def _noise_table(seed: int) -> np.ndarray:
    rng = np.random.default_rng(0x5EED + int(seed))
    perm = rng.permutation(256)
    return np.concatenate([perm, perm]).astype(np.int64)


_GRADIENTS = np.array([[1, 1, 0], [-1, 1, 0], [1, -1, 0], [-1, -1, 0], [1, 0, 1], [-1, 0, 1], [1, 0, -1],
                       [-1, 0, -1], [0, 1, 1], [0, -1, 1], [0, 1, -1], [0, -1, -1], [1, 1, 0], [0, -1, 1],
                       [-1, 1, 0], [0, -1, -1]], dtype=float)


def gradient_noise(perm, x, y, z) -> float:
    """Improved gradient noise in [0, 1] (0.5 on the lattice), quintic fade (Perlin 2002)."""
    X, Y, Z = int(math.floor(x)) & 255, int(math.floor(y)) & 255, int(math.floor(z)) & 255
    x, y, z = x - math.floor(x), y - math.floor(y), z - math.floor(z)

    def fade(t):
        return t * t * t * (t * (t * 6 - 15) + 10)

    u, v, w = fade(x), fade(y), fade(z)
    total = 0.0
    for dx in (0, 1):
        for dy in (0, 1):
            for dz in (0, 1):
                g = _GRADIENTS[perm[perm[perm[X + dx] + Y + dy] + Z + dz] & 15]
                dot = g[0] * (x - dx) + g[1] * (y - dy) + g[2] * (z - dz)
                total += dot * (u if dx else 1 - u) * (v if dy else 1 - v) * (w if dz else 1 - w)
    return 0.5 + 0.5 * max(-1.0, min(1.0, total))


def turbulence(perm, size, x, y, z, octaves=2) -> float:
    """Three octaves of ``gradient_noise`` at 1/size, normalised to [0, 1] (Blender's generic turbulence)."""
    if size != 0.0:
        x, y, z = x / size, y / size, z / size
    total, amp, scale = 0.0, 1.0, 1.0
    for _ in range(octaves + 1):
        total += amp * gradient_noise(perm, scale * x, scale * y, scale * z)
        amp *= 0.5
        scale *= 2.0
    return total * (2 ** octaves) / (2 ** (octaves + 1) - 1)


def field_force(ff: ForceField, k: int, x, v) -> np.ndarray:
    """The force (3,) N field ``ff`` with sample k applies to a body at world point x moving at v (m/s)."""
    o, n = ff.origins[k], ff.axes[k]
    s, r = ff.value("strength", k), ff.frame_rate
    rel = x - o
    h = float(n @ rel)
    if ff.shape in ("plane", "line"):
        if ff.kind == "vortex" or ff.shape == "line":
            loc = o + h * n
        else:
            loc = x - h * n
    else:
        loc = o
    e = x - loc
    d = float(np.linalg.norm(e))
    rest = ff.value("rest_length", k)
    if ff.kind == "harmonic" and rest != 0.0 and d > 0.0:
        e = e * ((d - rest) / d)
    f = ff.value("weight", k)
    if (ff.z_direction == "positive" and h < 0.0) or (ff.z_direction == "negative" and h > 0.0):
        return np.zeros(3)
    dist = (ff.use_min_distance, ff.value("min_distance", k), ff.use_max_distance, ff.value("max_distance", k),
            ff.value("power", k))
    radial = (ff.use_min_radius, ff.value("min_radius", k), ff.use_max_radius, ff.value("max_radius", k),
              ff.value("radial_power", k))
    if ff.falloff_type == "sphere":
        f *= _falloff_curve(d, *dist)
    else:
        f *= _falloff_curve(abs(h), *dist)
        if f != 0.0:
            if ff.falloff_type == "tube":
                rho = float(np.linalg.norm(rel - h * n))
            else:
                length = float(np.linalg.norm(rel))
                rho = math.degrees(math.acos(max(-1.0, min(1.0, h / length)))) if length > 0 else 0.0
            f *= _falloff_curve(rho, *radial)
    if f <= 0.0:
        return np.zeros(3)
    c = ff.value("damping", k)
    if ff.kind == "wind":
        F = s * f * n
    elif ff.kind == "force":
        strength = s
        if ff.gravitation:
            strength = 0.0 if d < 1.1920929e-07 else s / (d * d)
        F = strength * f * (e / d if d > 0 else np.zeros(3))
    elif ff.kind == "vortex":
        if ff.shape == "point":
            t = np.cross(n, e)
            tn = float(np.linalg.norm(t))
            F = s * d * f * (t / tn if tn > 0 else t)
        else:
            t = s * f * np.cross(n, rel)
            F = s * f * np.cross(n, t) + t - r * v
    elif ff.kind == "harmonic":
        F = -s * f * e - 2.0 * c * math.sqrt(abs(s)) * r * v
    elif ff.kind == "turbulence":
        if ff._noise is None:
            ff._noise = _noise_table(ff.seed)
        p = x if ff.global_coordinates else rel + n
        size = ff.value("size", k)
        F = s * f * np.array([2.0 * turbulence(ff._noise, size, p[0], p[1], p[2]) - 1.0,
                              2.0 * turbulence(ff._noise, size, p[1], p[2], p[0]) - 1.0,
                              2.0 * turbulence(ff._noise, size, p[2], p[0], p[1]) - 1.0])
    else:  # drag
        speed = float(np.linalg.norm(v)) * r
        F = -f * speed * (min(s, 2.0) * speed + min(c, 2.0)) * (v / np.linalg.norm(v) if speed > 0 else v)
    out = F / r
    flow = ff.value("flow", k)
    if ff.kind not in ("harmonic", "drag") and flow != 0.0:
        out = out - flow * f * v
    return out


def field_point_forces(fields, R, p, link_velocity, t: float):
    """(body (m,), point (m, 3) link frame, force (m, 3) world N) of all fields at time t for links at
    (R (n, 3, 3), p (n, 3)) moving with link twists ``link_velocity`` (n, 6) [ω; v] in link coordinates."""
    bodies, points, forces = [], [], []
    for ff in fields:
        k = ff.sample_index(t)
        for b, x_link, com in zip(ff.bodies, ff.points, ff.coms):
            w, u = link_velocity[b, :3], link_velocity[b, 3:]
            x = p[b] + R[b] @ x_link
            v = R[b] @ (u + np.cross(w, x_link))
            F = field_force(ff, k, x, v)
            if np.any(F != 0.0):
                bodies.append(b)
                points.append(com)
                forces.append(F)
    m = len(bodies)
    return (np.array(bodies, np.int64), np.array(points, float).reshape(m, 3), np.array(forces, float).reshape(m, 3))
