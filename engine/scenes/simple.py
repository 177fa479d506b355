"""Small scenes for tests and demos."""
from __future__ import annotations

import numpy as np

from ..geometry import box_inertia
from ..model import ModelBuilder
from ..scene import Scene


def _rod_inertia(mass: float, length: float, radius: float = 0.02):
    """Principal moments (x, y, z) of a solid rod along z."""
    t = mass * (3 * radius**2 + length**2) / 12.0
    return (t, t, 0.5 * mass * radius**2)


def pendulum(length: float = 1.0, mass: float = 1.0, angle: float = 0.5, point_mass: bool = False) -> Scene:
    """A rod of ``length`` m and ``mass`` kg hinged about x at the origin, started ``angle`` rad from vertical;
    ``point_mass=True``: a bob of ``mass`` kg at ``length`` m instead (the textbook pendulum, whose exact period
    is 4 √(L/g) K(sin²(angle/2)))."""
    b = ModelBuilder()
    if point_mass:  # (a tiny inertia: the bob is a point, the builder needs a positive one)
        b.add_body("bob", joint="revolute", axis=(1, 0, 0), com=(0, 0, -length), mass=mass,
                   inertia=(1e-9 * mass,) * 3, joint_name="hinge")
    else:
        b.add_body("rod", joint="revolute", axis=(1, 0, 0), com=(0, 0, -length / 2), mass=mass,
                   inertia=_rod_inertia(mass, length), joint_name="hinge")
    return Scene(b.finalize(), name="pendulum", q0=np.array([angle]))


def hanging_spring(stiffness: float = 200.0, mass: float = 2.0, damping: float = 0.0, rest_length: float = 0.5,
                   drop: float | None = None) -> Scene:
    """A free ``mass`` kg ball hanging from the world point (0, 0, ``rest_length``) on a spring of ``stiffness`` N/m
    and ``damping`` N·s/m (rest length ``rest_length`` m), started at rest ``drop`` m below the spring's rest length
    (default: at the rest length, m g / k above its equilibrium): it bobs at ω = √(k/m), the damped amplitude
    falling as exp(−c t / 2m). The add-on's spring link between a passive and an active object, as a scene."""
    b = ModelBuilder()
    b.add_body("ball", joint="free", mass=mass, inertia=(0.4 * mass * 0.05 ** 2,) * 3, joint_name="free")
    model = b.finalize()
    q0 = model.neutral_q()
    q0[2] = -(0.0 if drop is None else float(drop))  # the free joint's position, then its quaternion
    scene = Scene(model, name="hanging_spring", q0=q0)
    scene.add_spring(-1, np.array([0.0, 0.0, rest_length]), 0, np.array([0.0, 0.0, q0[2]]), stiffness,
                     damping=damping, rest_length=rest_length, name="spring")
    return scene


def chain(n: int = 10, link_length: float = 0.25, link_mass: float = 0.5, angle: float = 0.3) -> Scene:
    """n rods hinged about x end to end, hanging from the origin; the first starts ``angle`` rad out."""
    if n < 1:
        raise ValueError("chain needs at least one link")
    b = ModelBuilder()
    for i in range(n):
        b.add_body(f"link{i}", parent=i - 1, joint="revolute", axis=(1, 0, 0),
                   joint_origin=(0, 0, -link_length if i else 0.0), com=(0, 0, -link_length / 2), mass=link_mass,
                   inertia=_rod_inertia(link_mass, link_length), joint_name=f"hinge{i}")
    q0 = np.zeros(n)
    q0[0] = angle
    return Scene(b.finalize(), name=f"chain{n}", q0=q0)


def hanging_chain(n: int = 64, *, link_length: float = 0.1, link_mass: float = 1.0, damping: float = 0.05,
                  speed: float = 0.1, seed: int = 0) -> Scene:
    """n rods of ``link_length`` m and ``link_mass`` kg hanging from the origin on hinges whose axes
    alternate between x and y (a chain an artist would rig), ``damping`` N·m·s/rad on every hinge,
    started straight down with small random joint velocities (uniform in ±``speed`` rad/s, ``seed``)."""
    if n < 1:
        raise ValueError("hanging_chain needs at least one link")
    b = ModelBuilder()
    for i in range(n):
        b.add_body(f"link{i}", parent=i - 1, joint="revolute", axis=(1, 0, 0) if i % 2 == 0 else (0, 1, 0),
                   joint_origin=(0, 0, -link_length if i else 0.0), com=(0, 0, -link_length / 2), mass=link_mass,
                   inertia=_rod_inertia(link_mass, link_length), joint_name=f"hinge{i}")
    qd0 = np.random.default_rng(seed).uniform(-speed, speed, n)
    scene = Scene(b.finalize(), name=f"hanging_chain{n}", q0=np.zeros(n), qd0=qd0)
    scene.joint_damping[:] = damping
    return scene


def rope(n: int = 32, length: float = 3.0, mass: float = 1.0, *, end: str = "weight", weight: float = 5.0,
         span: float | None = None, damping: float = 0.02, side_spring: float = 0.0) -> Scene:
    """A rope as an artist rigs one: ``n`` links (total ``length`` m and ``mass`` kg) on alternating x/y
    hinges hanging from a pin at the origin, ``damping`` N·m·s/rad per hinge.

    end: ``"weight"`` — a ``weight`` kg bob on the free end, started swinging 0.5 rad out of
    vertical; ``"pinned"`` — the far end pinned (ball loop closure) to the world at ``span`` m
    (default 0.7 × length): started as a V (down, then up at the same angle from vertical) from rest,
    it falls into a catenary.
    ``side_spring`` (N/m, 0 = none): a spring from the middle link's lower end to a world point
    1 m along +x (rest length = that distance), as a stiff handle pulling the rope aside."""
    if n < 2:
        raise ValueError("rope needs at least two links")
    if end not in ("weight", "pinned"):
        raise ValueError(f"rope: end must be 'weight' or 'pinned', got {end!r}")
    ell, m = length / n, mass / n
    b = ModelBuilder()
    for i in range(n):
        last = i == n - 1 and end == "weight"
        bm = m + (weight if last else 0.0)
        com = (0, 0, -ell / 2) if not last else (0, 0, -(m * ell / 2 + weight * ell) / bm)
        b.add_body(f"link{i}", parent=i - 1, joint="revolute", axis=(1, 0, 0) if i % 2 == 0 else (0, 1, 0),
                   joint_origin=(0, 0, -ell if i else 0.0), com=com, mass=bm,
                   inertia=_rod_inertia(bm, ell, 0.01), joint_name=f"hinge{i}")
    q0 = np.zeros(n)
    if end == "pinned":  # a V: down at α from vertical, then up at α, so the ends are `span` apart
        span = 0.7 * length if span is None else float(span)
        if not 0 < span < length:
            raise ValueError(f"rope: span must be in (0, length) m, got {span}")
        alpha = float(np.arcsin(span / length))
        q0[0] = alpha
        k = n // 2 if (n // 2) % 2 == 0 else n // 2 + 1  # an x hinge near the middle
        q0[k] = np.pi - 2 * alpha
    else:
        q0[0] = 0.5  # the weighted rope starts swinging from the first hinge
    scene = Scene(b.finalize(), name=f"rope{n}_{end}", q0=q0)
    scene.joint_damping[:] = damping
    if end == "pinned":
        tip = scene.world_point(n - 1, np.array([0.0, 0.0, -ell]))
        scene.add_loop_closure(n - 1, -1, tip, kind="point", name="far_pin")
    if side_spring > 0:
        mid = n // 2
        z = scene.world_point(mid, np.array([0.0, 0.0, -ell]))
        scene.add_spring(mid, z, -1, z + np.array([1.0, 0, 0]), side_spring, name="side_spring")
    return scene


def four_bar(crank: float = 0.4, coupler: float = 1.0, rocker: float = 0.8, ground: float = 1.0,
             crank_angle: float = 1.2) -> Scene:
    """Planar four-bar linkage in the yz plane, hinges about x.

    Crank (pivot at the origin) and coupler form a tree; the rocker hangs from
    the ground pivot at y = ``ground``; the coupler's end is pinned to the
    rocker's end by a hinge loop closure. Bar masses 1 kg per metre.
    """
    # solve the closed configuration: coupler end must meet the rocker end
    A = np.array([0.0, crank * np.cos(crank_angle), crank * np.sin(crank_angle)])
    D = np.array([0.0, ground, 0.0])
    d = np.linalg.norm(D - A)
    if not (abs(coupler - rocker) < d < coupler + rocker):
        raise ValueError("four_bar: these bar lengths cannot close at this crank angle")
    a = (coupler**2 - rocker**2 + d**2) / (2 * d)
    h = np.sqrt(coupler**2 - a**2)
    u = (D - A) / d
    perp = np.array([0.0, -u[2], u[1]])
    B = A + a * u + h * perp  # coupler/rocker joint
    b = ModelBuilder()

    def bar(name, parent, origin, direction_angle, length, jname):
        # bars lie along their link's local +y axis, rotated about x by direction_angle
        c, s = np.cos(direction_angle / 2), np.sin(direction_angle / 2)
        return b.add_body(name, parent=parent, joint="revolute", axis=(1, 0, 0), joint_origin=origin,
                          joint_rotation=(c, s, 0, 0), com=(0, length / 2, 0), mass=length,
                          inertia=(length**3 / 12 + 1e-4, 1e-4, length**3 / 12 + 1e-4), joint_name=jname)

    ang = lambda v: np.arctan2(v[2], v[1])  # noqa: E731
    bar("crank", -1, (0, 0, 0), crank_angle, crank, "crank_pivot")
    bar("coupler", "crank", (0, crank, 0), ang(B - A) - crank_angle, coupler, "crank_coupler")
    bar("rocker", -1, tuple(D), ang(B - D), rocker, "rocker_pivot")
    scene = Scene(b.finalize(), name="four_bar")
    scene.add_loop_closure("coupler", "rocker", B, kind="hinge", axis=(1, 0, 0), name="coupler_rocker")
    return scene


def tumbling_top(spin: float = 10.0, wobble: float = 0.3, size=(0.1, 0.2, 0.3), mass: float = 1.0) -> Scene:
    """A free brick of ``size`` m spinning at ``spin`` rad/s about its intermediate principal axis (y)
    with ``wobble`` rad/s about x, without gravity: it tumbles (the Dzhanibekov effect) while its
    energy and angular momentum stay constant. Every gyroscopic term of the rotation update is
    exercised, so it separates integrators that treat ω × Iω differently."""
    b = ModelBuilder(gravity=(0.0, 0.0, 0.0))
    b.add_body("brick", joint="free", mass=mass, inertia=box_inertia(mass, size),
               shape={"type": "box", "size": tuple(size)}, joint_name="free")
    scene = Scene(b.finalize(), name="tumbling_top")
    scene.qd0[:3] = (wobble, spin, 0.0)  # body-frame angular velocity [ω; v]
    return scene
