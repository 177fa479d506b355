"""Collision scenes (``engine.contact``): things falling on things.

* ``chain_on_stairs`` — a chain of capsule links on ball joints dropped across a staircase (a static
  triangle mesh, ``staircase_mesh``) that ends on a floor; the links collide with the steps and with
  each other.
* ``crate_on_bridge`` — a rope bridge of hinged planks between two posts (static boxes; the loop closed at
  the far post or, as the add-on maps a Blender rig, in the middle) and a 100 kg crate dropped on its middle.
* ``box_stack`` — boxes stacked on a plane; ``box_pile`` — boxes on a jittered grid dropped onto a
  mesh floor (``python -m engine bench contact``).

SI units, Z up. Friction and restitution are per shape and per collider, combined as Blender's Rigid
Body does (docs/contact.md).
"""
from __future__ import annotations

import numpy as np

from ..algorithms.kinematics import link_poses
from ..geometry import box_inertia, rod_inertia
from ..model import ModelBuilder
from ..scene import Scene


def staircase_mesh(steps: int = 6, rise: float = 0.15, run: float = 0.3, width: float = 1.2):
    """(vertices (n, 3), triangles (T, 3)) of a closed staircase climbing along +x from x = 0, its treads at
    z = rise, 2 rise, …, centred on y = 0; outward-facing, treads and risers sharing their edges."""
    index: dict = {}
    verts: list = []

    def v(x, y, z):
        key = (round(x, 9), round(y, 9), round(z, 9))
        if key not in index:
            index[key] = len(verts)
            verts.append(key)
        return index[key]

    tris: list = []

    def quad(a, b, c, d):  # counter-clockwise seen from outside
        tris.extend([(a, b, c), (a, c, d)])

    w = 0.5 * width
    for i in range(steps):
        x0, x1, top, below = i * run, (i + 1) * run, (i + 1) * rise, i * rise
        quad(v(x0, -w, top), v(x1, -w, top), v(x1, w, top), v(x0, w, top))              # tread (+z)
        quad(v(x0, -w, below), v(x0, -w, top), v(x0, w, top), v(x0, w, below))          # riser (−x)
        quad(v(x0, -w, 0), v(x0, w, 0), v(x1, w, 0), v(x1, -w, 0))                      # bottom (−z)
        quad(v(x0, -w, 0), v(x1, -w, 0), v(x1, -w, top), v(x0, -w, top))                # side (−y)
        quad(v(x1, w, 0), v(x0, w, 0), v(x0, w, top), v(x1, w, top))                     # side (+y)
    # (each column's side quads end where the next begins: edges with T-junctions, on the sides only)
    xe, ze = steps * run, steps * rise
    quad(v(xe, -w, 0), v(xe, w, 0), v(xe, w, ze), v(xe, -w, ze))                          # back (+x)
    return np.array(verts, float), np.array(tris, np.int64)


def chain_on_stairs(n: int = 20, steps: int = 6, link_length: float = 0.15, radius: float = 0.025,
                    link_mass: float = 0.2, height: float = 0.5, friction: float = 1.0) -> Scene:
    """A chain of n capsule links (ball joints) lying along x ``height`` m above a staircase of ``steps``
    steps (rise 0.15 m, run 0.3 m) with a floor beyond, dropped at rest. friction: every shape's and collider's μ
    (1 by default: a pair's μ is the product, and a chain draped over stair noses creeps down them below about 0.8)."""
    if n < 2:
        raise ValueError("chain_on_stairs needs at least two links")
    b = ModelBuilder()
    inertia = rod_inertia(link_mass, link_length, radius)[[1, 0, 2]]  # rod along x: the axial moment on x
    shape = {"type": "capsule", "radius": radius, "length": link_length, "axis": (1, 0, 0), "friction": friction}
    for i in range(n):
        b.add_body(f"link{i}", parent=i - 1, joint="free" if i == 0 else "spherical",
                   joint_origin=(0.0, 0.0, 0.0) if i == 0 else (link_length, 0.0, 0.0),
                   com=(0.5 * link_length, 0.0, 0.0), mass=link_mass, inertia=inertia, shape=shape,
                   joint_name=f"joint{i}")
    model = b.finalize()
    q0 = model.neutral_q()
    q0[:3] = (0.1, 0.0, steps * 0.15 + height)  # the first link above the top step's far end, the rest down the stairs
    scene = Scene(model, name=f"chain_on_stairs_{n}", q0=q0)
    scene.metadata.update(steps=steps, rise=0.15, run=0.3)
    vertices, triangles = staircase_mesh(steps)
    # the stairs descend towards +x: the mesh mirrored so the chain, lying along +x, drapes down them
    vertices = vertices * np.array([-1.0, 1.0, 1.0]) + np.array([steps * 0.3, 0.0, 0.0])
    scene.add_static_collider("stairs", {"type": "mesh", "vertices": vertices, "triangles": triangles[:, ::-1]},
                              friction=friction)
    scene.set_ground(friction=friction)
    scene.set_body_contacts(friction=friction)
    return scene


def crate_on_bridge(n_planks: int = 30, crate_mass: float = 100.0, drop: float = 1.0, friction: float = 0.5, *,
                    crate: bool = True, closed_at: str = "far_post") -> Scene:
    """A rope bridge of n_planks planks (0.3 × 1 × 0.05 m, 5 kg) hinged end to end about y between two posts
    (static boxes) 1 m up, in a symmetric hang, and a crate (0.6 m cube of ``crate_mass`` kg) ``drop`` m above
    the middle plank (``crate=False``: no crate). ``closed_at``: where the loop closes — ``"far_post"`` (one
    chain from the near post, a hinge loop closure to the far one) or ``"middle"`` (a chain from each post, a
    hinge closure between the two middle planks: how the add-on maps the Blender rig, growing its joint trees
    from both posts)."""
    if n_planks < 3:
        raise ValueError("crate_on_bridge needs at least three planks")
    if closed_at not in ("far_post", "middle"):
        raise ValueError(f"crate_on_bridge: closed_at must be 'far_post' or 'middle', got {closed_at!r}")
    plank, width, thick, mass = 0.3, 1.0, 0.05, 5.0
    sag = 0.02  # rad per hinge: a slight hang, so the deck is not a straight (singular) line
    half = n_planks // 2
    hang = sag * (n_planks - 1) / 2  # a symmetric hang: the first plank down by this, each hinge turning it back up
    angles = hang - sag * np.arange(n_planks)  # each plank's pitch (about y; positive: its far end lower)
    ends = np.vstack([(0.0, 0.0, 1.0), (0.0, 0.0, 1.0) + plank * np.cumsum(
        np.stack([np.cos(angles), np.zeros(n_planks), -np.sin(angles)], axis=1), axis=0)])  # the hinge points
    b = ModelBuilder()
    inertia = box_inertia(mass, (plank, width, thick))
    shape = {"type": "box", "size": (plank, width, thick), "friction": friction}
    near = range(n_planks) if closed_at == "far_post" else range(half)
    for i in near:  # from the near post, each plank's link frame at its near hinge
        b.add_body(f"plank{i}", parent=i - 1, joint="revolute", axis=(0, 1, 0),
                   joint_origin=tuple(ends[0]) if i == 0 else (plank, 0.0, 0.0), com=(0.5 * plank, 0.0, 0.0),
                   mass=mass, inertia=inertia, shape=shape, joint_name=f"hinge{i}")
    for i in range(n_planks - 1, len(near) - 1, -1):  # from the far post (closed_at="middle"): frames at far hinges
        b.add_body(f"plank{i}", parent=-1 if i == n_planks - 1 else f"plank{i + 1}", joint="revolute", axis=(0, 1, 0),
                   joint_origin=tuple(ends[-1]) if i == n_planks - 1 else (-plank, 0.0, 0.0),
                   com=(-0.5 * plank, 0.0, 0.0), mass=mass, inertia=inertia, shape=shape, joint_name=f"hinge{i + 1}")
    size = 0.6
    if crate:
        b.add_body("crate", joint="free", mass=crate_mass, inertia=box_inertia(crate_mass, (size,) * 3),
                   shape={"type": "box", "size": (size,) * 3, "friction": friction}, joint_name="crate")
    model = b.finalize()
    q0 = model.neutral_q()
    for i in near:
        q0[model.q_slice(f"hinge{i}")] = angles[0] if i == 0 else angles[i] - angles[i - 1]
    for i in range(n_planks - 1, len(near) - 1, -1):
        q0[model.q_slice(f"hinge{i + 1}")] = angles[i] if i == n_planks - 1 else angles[i] - angles[i + 1]
    span = n_planks * plank
    if crate:
        qc = model.q_slice("crate").start  # over the middle plank's near half (its near hinge at ends[half])
        q0[qc:qc + 3] = (ends[half][0] + 0.5 * plank, 0.0, ends[half][2] + 0.5 * thick + 0.5 * size + drop)
    scene = Scene(model, name=f"crate_on_bridge_{n_planks}", q0=q0)
    if closed_at == "far_post":
        scene.add_loop_closure(f"plank{n_planks - 1}", -1, ends[-1], kind="hinge", axis=(0, 1, 0), name="far_post")
    else:
        scene.add_loop_closure(f"plank{half - 1}", f"plank{half}", ends[half], kind="hinge", axis=(0, 1, 0),
                               name="middle")
    for name, x in (("near_post", -0.25), ("far_post_block", ends[-1][0] + 0.25)) if crate else ():
        scene.add_static_collider(name, {"type": "box", "size": (0.5, 1.4, 1.0)}, position=(x, 0.0, 0.5),
                                  friction=friction, bodies=["crate"])  # (the planks hang from them)
    scene.set_ground(friction=friction)
    scene.set_body_contacts(friction=friction, bodies=[f"plank{i}" for i in range(n_planks)] + ["crate"] * crate)
    scene.metadata.update(span=span, n_planks=n_planks, closed_at=closed_at)
    if crate:
        scene.metadata["crate"] = model.body_index("crate")
    return scene


def box_stack(n: int = 10, size: float = 0.5, mass: float = 1.0, friction: float = 0.5) -> Scene:
    """n cubes of edge ``size`` stacked on a plane, each 0.1 mm above the one below."""
    b = ModelBuilder()
    for i in range(n):
        b.add_body(f"box{i}", joint="free", mass=mass, inertia=box_inertia(mass, (size,) * 3),
                   shape={"type": "box", "size": (size,) * 3, "friction": friction}, joint_name=f"box{i}")
    model = b.finalize()
    q0 = model.neutral_q()
    for i in range(n):
        qs = model.q_slice(f"box{i}").start
        q0[qs:qs + 3] = (0.0, 0.0, size * (i + 0.5) + 1e-4 * i)
    scene = Scene(model, name=f"box_stack_{n}", q0=q0)
    scene.set_ground(friction=friction)
    scene.set_body_contacts(friction=friction)
    return scene


def box_pile(n: int = 100, size: float = 0.2, mass: float = 1.0, friction: float = 0.5, seed: int = 0) -> Scene:
    """n cubes of edge ``size`` on a jittered grid (2 size apart, in layers 2 size apart, turned at random)
    dropped onto a 20 × 20 m mesh floor of 800 triangles."""
    from ..joints import matrix_to_quat
    from ..spatial import rotation_exp

    rng = np.random.default_rng(seed)
    side = max(int(np.ceil(np.sqrt(n / 4.0))), 1)  # about four layers
    b = ModelBuilder()
    for i in range(n):
        b.add_body(f"box{i}", joint="free", mass=mass, inertia=box_inertia(mass, (size,) * 3),
                   shape={"type": "box", "size": (size,) * 3, "friction": friction}, joint_name=f"box{i}")
    model = b.finalize()
    q0 = model.neutral_q()
    pitch = 2.0 * size  # (more than a turned cube's diagonal)
    for i in range(n):
        layer, cell = divmod(i, side * side)
        gx, gy = divmod(cell, side)
        x = (gx - 0.5 * (side - 1)) * pitch + rng.uniform(-0.1, 0.1) * size
        y = (gy - 0.5 * (side - 1)) * pitch + rng.uniform(-0.1, 0.1) * size
        z = size + layer * pitch
        qs = model.q_slice(f"box{i}")
        q0[qs.start:qs.start + 3] = (x, y, z)
        q0[qs.start + 3:qs.start + 7] = matrix_to_quat(rotation_exp(rng.normal(size=3) * 0.5)[None])[0]
    scene = Scene(model, name=f"box_pile_{n}", q0=q0)
    k = 20  # a 20 × 20 grid of quads, 40 m² of floor
    g = np.linspace(-10.0, 10.0, k + 1)
    X, Y = np.meshgrid(g, g, indexing="ij")
    vertices = np.column_stack([X.ravel(), Y.ravel(), np.zeros(X.size)])
    tris = []
    for i in range(k):
        for j in range(k):
            a, bb, c, d = i * (k + 1) + j, (i + 1) * (k + 1) + j, (i + 1) * (k + 1) + j + 1, i * (k + 1) + j + 1
            tris += [(a, bb, c), (a, c, d)]
    scene.add_static_collider("floor", {"type": "mesh", "vertices": vertices, "triangles": np.array(tris)},
                              friction=friction)
    scene.set_body_contacts(friction=friction)
    return scene
