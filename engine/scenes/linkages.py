"""Mechanisms full of loops for the hard-constraints solver (seed 003): Jansen's Strandbeest and a trike.

Motors are rheonomic constraints listed in ``scene.metadata["motors"]`` as
(joint name, rate rad/s); the ``"hard-constraints"`` solver enforces them exactly.

The Strandbeest follows Jansen's "holy numbers" (cm): a = 38, b = 41.5, c = 39.3,
d = 40.1, e = 55.8, f = 39.4, g = 36.7, h = 65.7, i = 49, j = 50, k = 61.9,
l = 7.8, m = 15, drawn in the xz plane with the crank axle along y. Per leg:

* crank pin A (radius m about the axle O), fixed pivot B = O + (−a, −l);
* C: |CA| = j, |CB| = b (upper); D: |DA| = k, |DB| = c (lower);
* triangle B-C-E (b, d, e), E: |EB| = d, |EC| = e; F: |FE| = f, |FD| = g;
* triangle D-F-G (g, i, h) with the foot G: |GD| = i, |GF| = h.

Bodies per leg: triangle BCE (hinged to the chassis at B), bar BD (chassis at B),
bars AC and AD (crank pin A), bar EF (on BCE at E), triangle DFG (on BD at D);
loop closures (hinges about y) at C, D and F. A mirrored leg (pivot at +a) shares
the crank pin. Legs come in pairs at crank phases 0, 120°, 240° along y.
"""
from __future__ import annotations

import numpy as np

from ..model import ModelBuilder
from ..scene import Scene

HOLY = dict(a=38.0, b=41.5, c=39.3, d=40.1, e=55.8, f=39.4, g=36.7, h=65.7, i=49.0, j=50.0, k=61.9, l=7.8, m=15.0)
DENSITY = 2.0    # kg per metre of bar
FOOT_RADIUS = 0.025
BAR_RADIUS = 0.02  # m: the bars' thickness, for their inertia about their own axis


def _circles(p, r, q, s, pick):
    """The intersection of circles (p, r) and (q, s) in the xz plane (points (x, z)) chosen by ``pick``."""
    d = np.linalg.norm(q - p)
    if not abs(r - s) <= d <= r + s:
        raise ValueError("strandbeest: the linkage cannot close at this crank angle")
    a = (r * r - s * s + d * d) / (2 * d)
    hgt = np.sqrt(max(r * r - a * a, 0.0))
    u = (q - p) / d
    perp = np.array([-u[1], u[0]])
    return pick(p + a * u + hgt * perp, p + a * u - hgt * perp)


def jansen_points(theta: float, mirrored: bool = False) -> dict:
    """Joint positions (x, z) in metres of one leg at crank angle theta (crank axle at the origin)."""
    L = {k: v / 100.0 for k, v in HOLY.items()}
    s = -1.0 if mirrored else 1.0
    left = (lambda p1, p2: p1 if s * p1[0] < s * p2[0] else p2)  # the point away from the crank
    up = (lambda p1, p2: p1 if p1[1] > p2[1] else p2)
    down = (lambda p1, p2: p1 if p1[1] < p2[1] else p2)
    A = L["m"] * np.array([np.cos(theta), np.sin(theta)])
    B = np.array([-s * L["a"], -L["l"]])
    C = _circles(A, L["j"], B, L["b"], up)
    D = _circles(A, L["k"], B, L["c"], down)
    E = _circles(B, L["d"], C, L["e"], left)
    F = _circles(E, L["f"], D, L["g"], left)
    G = _circles(D, L["i"], F, L["h"], down)
    return dict(A=A, B=B, C=C, D=D, E=E, F=F, G=G)


def _rods_inertia(points, mass_per_length):
    """(mass, COM (3,), inertia (3, 3) about the COM) of thin rods between consecutive points (3D)."""
    segs = list(zip(points, points[1:] + ([points[0]] if len(points) > 2 else [])))
    masses = [mass_per_length * np.linalg.norm(q - p) for p, q in segs]
    mass = sum(masses)
    com = sum(mk * 0.5 * (p + q) for mk, (p, q) in zip(masses, segs)) / mass
    inertia = np.zeros((3, 3))
    for mk, (p, q) in zip(masses, segs):
        u = q - p
        ln = np.linalg.norm(u)
        u = u / ln
        c = 0.5 * (p + q) - com
        inertia += mk * ln * ln / 12.0 * (np.eye(3) - np.outer(u, u))   # the rod about its middle
        inertia += mk * BAR_RADIUS**2 / 2.0 * np.outer(u, u)              # … and about its own axis
        inertia += mk * (c @ c * np.eye(3) - np.outer(c, c))             # moved to the COM
    return mass, com, inertia


def strandbeest(phases: int = 3, *, sides: int = 2, crank_rate: float = 2.0, chassis_mass: float = 6.0,
                friction: float = 0.9, ground: bool = True, fixed_chassis: bool = False) -> Scene:
    """Jansen's Strandbeest: for each of ``phases`` crank phases (spread over a turn) and each of ``sides``
    (1 or 2: left and right of the chassis) a leg and its mirror share a crank pin — 4 × 3 = 12 legs by
    default, so that front and back feet on both sides always carry the chassis. Free chassis on the
    ground (or ``fixed_chassis`` on a test stand); the crank driven at ``crank_rate`` rad/s (positive
    walks along +x)."""
    if phases < 1 or sides not in (1, 2):
        raise ValueError("strandbeest: needs phases ≥ 1 and sides 1 or 2")
    b = ModelBuilder()
    side_signs = (1.0,) if sides == 1 else (-1.0, 1.0)
    legs = [(f"{k}{'lr'[side > 0]}", mirrored, 2 * np.pi * k / phases,
             side * (0.2 + 0.13 * k + (0.05 if mirrored else 0.0)))
            for k in range(phases) for side in side_signs for mirrored in (False, True)]
    pts = {(k, mir): jansen_points(phase, mir) for k, mir, phase, _ in legs}
    lowest = min(p["G"][1] for p in pts.values())
    height = -lowest + FOOT_RADIUS  # the crank axle above the ground
    span = 2 * max(abs(y) for *_, y in legs)
    b.add_body("chassis", joint="fixed" if fixed_chassis else "free", joint_origin=(0, 0, height),
               mass=chassis_mass, inertia=(chassis_mass * (span**2 + 0.1**2) / 12, chassis_mass * (0.8**2 + 0.1**2) / 12,
                                          chassis_mass * (0.8**2 + span**2) / 12),
               shape={"type": "box", "size": (0.8, span, 0.1), "collide": False}, joint_name="chassis")
    pins = [np.array([p["A"][0], y, p["A"][1]]) for (k, mir, _, y), p in zip(legs, pts.values())]
    mass, com, inertia = _rods_inertia([np.zeros(3)] + pins, 0.5 * DENSITY) if len(pins) > 1 else (0.2, np.zeros(3), None)
    b.add_body("crank", parent="chassis", joint="revolute", axis=(0, 1, 0), mass=mass, com=com, inertia=inertia,
               joint_name="crank")
    scene_closures = []
    for (k, mir, _, y), p in zip(legs, pts.values()):
        tag = f"{k}{'m' if mir else ''}"
        P = {name: np.array([xz[0], y, xz[1]]) for name, xz in p.items()}

        def body(name, parent, pivot, parent_pivot, points, foot=False):
            rel = [q - pivot for q in points]
            m_, c_, I_ = _rods_inertia(rel, DENSITY)
            shape = {"type": "sphere", "radius": FOOT_RADIUS, "center": tuple(P["G"] - pivot)} if foot else None
            b.add_body(f"{name}{tag}", parent=parent, joint="revolute", axis=(0, 1, 0),
                       joint_origin=tuple(pivot - parent_pivot), mass=m_, com=c_, inertia=I_, shape=shape,
                       joint_name=f"{name}{tag}")

        origin = np.zeros(3)
        body("bce", "chassis", P["B"], origin, [P["B"], P["C"], P["E"]])
        body("bd", "chassis", P["B"], origin, [P["B"], P["D"]])
        body("ac", "crank", P["A"], origin, [P["A"], P["C"]])
        body("ad", "crank", P["A"], origin, [P["A"], P["D"]])
        body("ef", f"bce{tag}", P["E"], P["B"], [P["E"], P["F"]])
        body("dfg", f"bd{tag}", P["D"], P["B"], [P["D"], P["F"], P["G"]], foot=True)
        scene_closures += [(f"ac{tag}", f"bce{tag}", P["C"], f"C{tag}"), (f"ad{tag}", f"bd{tag}", P["D"], f"D{tag}"),
                           (f"ef{tag}", f"dfg{tag}", P["F"], f"F{tag}")]
    model = b.finalize()
    q0 = model.neutral_q()
    scene = Scene(model, name=f"strandbeest{len(legs)}", q0=q0)
    for a_, b_, point, name in scene_closures:
        world = point + np.array([0.0, 0.0, height])
        scene.add_loop_closure(a_, b_, world, kind="hinge", axis=(0, 1, 0), name=name)
    if ground:
        scene.set_ground(friction=friction, bodies=[f"dfg{k}{'m' if mir else ''}" for k, mir, _, _ in legs])
    scene.metadata["motors"] = [("crank", float(crank_rate))]
    return scene


def trike(*, motor_rate: float = 4.0, wheel_radius: float = 0.15, friction: float = 0.9) -> Scene:
    """A trike: a chassis on a free joint, a driven rear axle with two wheels (one body, so it is
    a rigid axle), and a front wheel in a fork; spheres as wheels on the ground. The rear axle's
    hinge is driven at ``motor_rate`` rad/s (positive rolls along +x)."""
    b = ModelBuilder()
    r = wheel_radius
    b.add_body("chassis", joint="free", joint_origin=(0, 0, r), mass=8.0, inertia=(0.2, 0.5, 0.6),
               shape={"type": "box", "size": (0.9, 0.4, 0.1), "collide": False}, joint_name="chassis")
    b.add_body("rear_axle", parent="chassis", joint="revolute", axis=(0, 1, 0), joint_origin=(-0.4, 0, 0),
               mass=2.0, inertia=(0.05, 0.04, 0.05), joint_name="rear_axle")
    for side, y in (("left", 0.3), ("right", -0.3)):
        b.add_body(f"rear_{side}", parent="rear_axle", joint="fixed", joint_origin=(0, y, 0), mass=1.0,
                   inertia=(0.5 * r * r, r * r, 0.5 * r * r), shape={"type": "sphere", "radius": r},
                   joint_name=f"rear_{side}_hub")
    b.add_body("front_wheel", parent="chassis", joint="revolute", axis=(0, 1, 0), joint_origin=(0.45, 0, 0),
               mass=1.0, inertia=(0.5 * r * r, r * r, 0.5 * r * r), shape={"type": "sphere", "radius": r},
               joint_name="front_hub")
    model = b.finalize()
    scene = Scene(model, name="trike")
    scene.set_ground(friction=friction, bodies=["rear_left", "rear_right", "front_wheel"])
    scene.metadata["motors"] = [("rear_axle", float(motor_rate))]  # +ω about +y rolls towards +x
    return scene
