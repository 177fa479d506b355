"""Shapes and colliders: what is refused by name, what a compound, a margin, a mesh and the pair filter do,
and the contacts the detection finds for simple set-ups (box on a plane and across the seam of a mesh
floor, box on box, capsule on a stair's edge)."""
from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.algorithms.kinematics import link_poses
from engine.contact.handler import scene_detector
from engine.contact.static_mesh import validate_mesh
from engine.errors import ModelError
from engine.geometry import box_inertia
from engine.scene import Scene
from engine.scenes.collisions import staircase_mesh

FLOOR = {"type": "mesh", "vertices": [(-5, -5, 0), (5, -5, 0), (5, 5, 0), (-5, 5, 0)], "triangles": [(0, 1, 2), (0, 2, 3)]}


def one_body(shape):
    b = engine.ModelBuilder()
    b.add_body("body", joint="free", shape=shape)
    return b


@pytest.mark.parametrize("shape, message", [
    ({"type": "convex", "vertices": []}, "convex hull of an empty vertex list"),
    ({"type": "convex", "vertices": [(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0), (0.5, 0.5, 0)]},
     "convex hull of 5 vertices is flat"),
    ({"type": "convex", "vertices": [(0, 0, 0), (1, 1, 1), (2, 2, 2), (3, 3, 3)]}, "is flat"),
    ({"type": "convex", "vertices": [(0, 0, 0)] * 5}, "is degenerate"),
    ({"type": "convex", "vertices": [(0, 0, 0), (1, 0, np.nan), (0, 1, 0), (0, 0, 1)]}, "must be finite"),
    ({"type": "box", "size": (1, 0, 1)}, "three positive edge lengths"),
    ({"type": "box", "size": (1, 1, 1), "margin": 0.5}, "must be smaller than half the box's smallest edge"),
    ({"type": "cylinder", "radius": 0.1, "length": 1.0, "margin": 0.2}, "cylinder's radius and half length"),
    ({"type": "cone", "radius": 0.1, "length": 0.1, "margin": 0.045}, "leaves the cone no core"),
    ({"type": "capsule", "radius": 0.1, "length": 1.0, "axis": (0, 0, 0)}, "capsule 'axis' has zero length"),
    ({"type": "sphere", "radius": 1.0, "groups": [20]}, "numbered 0–19"),
    ({"type": "sphere", "radius": 1.0, "groups": 0}, "at least one of the 20"),
    ({"type": "sphere", "radius": 1.0, "restitution": 1.5}, "'restitution' must be in \\[0, 1\\]"),
    ({"type": "compound", "shapes": []}, "a compound needs 'shapes'"),
    ({"type": "compound", "shapes": [{"type": "compound", "shapes": [{"type": "sphere", "radius": 1}]}]},
     "cannot hold another compound"),
    ({"type": "torus"}, "type must be one of sphere, box, capsule, cylinder, cone, convex, compound"),
])
def test_bad_shapes_are_refused_by_name(shape, message):
    with pytest.raises(ModelError, match="body 'body' shape.*" + message):
        one_body(shape)


def test_bad_static_colliders_are_refused_by_name_and_nothing_is_added():
    b = engine.ModelBuilder()
    b.add_body("ball", joint="free", shape={"type": "sphere", "radius": 0.1})
    b.add_body("plain", joint="free")
    scene = Scene(b.finalize())
    cases = [
        ({"type": "mesh", "vertices": [(0, 0, 0)], "triangles": []}, "static collider 'c': mesh has no triangles"),
        ({"type": "mesh", "vertices": [(0, 0, 0), (1, 0, 0), (2, 0, 0)], "triangles": [(0, 1, 2)]},
         "every triangle of the mesh has no area"),
        ({"type": "mesh", "vertices": [(0, 0, 0), (1, 0, 0), (0, 1, 0)], "triangles": [(0, 1, 3)]},
         "triangle indices must be in 0 … 2"),
        ({"type": "mesh", "vertices": [(0, 0, np.inf), (1, 0, 0), (0, 1, 0)], "triangles": [(0, 1, 2)]},
         "mesh vertices must be finite"),
        ({"type": "plane", "normal": (0, 0, 0)}, "plane 'normal' must be 3 finite numbers, not all zero"),
        ({"type": "box", "size": (1, 1, -1)}, "static collider 'c'.*three positive edge lengths"),
    ]
    for shape, message in cases:
        with pytest.raises(ModelError, match=message):
            scene.add_static_collider("c", shape)
    with pytest.raises(ModelError, match="static collider 'c': friction must be ≥ 0"):
        scene.add_static_collider("c", FLOOR, friction=-1)
    with pytest.raises(ModelError, match="static collider 'c'.*body 'plain' has no contact shape"):
        scene.add_static_collider("c", FLOOR, bodies=["plain"])
    assert scene.static_colliders == [] and not scene.has_contact
    scene.add_static_collider("c", FLOOR)
    with pytest.raises(ModelError, match="a collider with this name already exists"):
        scene.add_static_collider("c", FLOOR)
    with pytest.raises(ModelError, match="disable_collision: needs two different bodies"):
        scene.disable_collision("ball", "ball")


def test_a_non_manifold_mesh_collides_face_wise_and_says_how_many_edges_are_shared_oddly():
    """Three triangles on one edge (a fin) and a pair wound against each other: kept, their edges sharp."""
    V = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (1, 1, 0)]
    F = [(0, 1, 2), (0, 1, 3), (0, 1, 4), (1, 2, 5)]  # edge 0–1 in three triangles; 1–2 in two, same way round
    mesh = validate_mesh(V, F, "m")
    assert mesh.non_manifold_edges == 2 and len(mesh.triangles) == 4 and mesh.sharp.all()
    b = engine.ModelBuilder()
    b.add_body("ball", joint="free", shape={"type": "sphere", "radius": 0.1})
    model = b.finalize()
    q = model.neutral_q()
    q[:3] = (0.3, 0.3, 0.095)  # above triangle (0, 1, 2), 5 mm into it
    scene = Scene(model, q0=q)
    scene.add_static_collider("soup", {"type": "mesh", "vertices": V, "triangles": F})
    c = scene_detector(scene.finalize()).detect(*link_poses(model, q))
    assert len(c) >= 1 and c.depth.max() == pytest.approx(0.005) and np.allclose(c.normal[np.argmax(c.depth)], (0, 0, 1))


def contacts_of(model, q, scene):
    return scene_detector(scene.finalize()).detect(*link_poses(model, q))


def test_a_box_on_a_plane_and_across_a_floor_seam_touches_at_its_four_corners():
    b = engine.ModelBuilder()
    b.add_body("box", joint="free", shape={"type": "box", "size": (0.4, 0.4, 0.4)})
    model = b.finalize()
    q = model.neutral_q()
    q[:3] = (0.0, 0.0, 0.199)  # 1 mm deep, straddling the floor's diagonal
    for floor in ("plane", "mesh"):
        scene = Scene(model, q0=q)
        if floor == "plane":
            scene.set_ground()
        else:
            scene.add_static_collider("floor", FLOOR)
        c = contacts_of(model, q, scene)
        assert len(c) == 4, floor
        assert np.allclose(c.depth, 0.001) and np.allclose(c.normal, (0, 0, 1))
        assert np.allclose(sorted(map(tuple, np.round(c.point[:, :2], 9))), [(-0.2, -0.2), (-0.2, 0.2), (0.2, -0.2), (0.2, 0.2)])
        assert len(set(c.feature.tolist())) == 4


def quat_of(rotvec):
    from scipy.spatial.transform import Rotation
    return Rotation.from_rotvec(rotvec).as_quat(scalar_first=True), Rotation.from_rotvec(rotvec).as_matrix()


def test_a_box_tilted_across_a_floor_seam_keeps_its_contact_at_its_lowest_corner():
    """A box poking into a mesh floor across the seam of its two triangles: on each triangle EPA's closest point is
    on the seam with a tilted normal, and each left the contact to the other, so none was found (a 200-sweep pile
    read 85 mm deep). Each triangle now takes its face normal for the part of the box over it. The first pose is
    the one found; the others are random tilts and positions along the seam, 0.5–10 mm deep."""
    b = engine.ModelBuilder()
    b.add_body("box", joint="free", shape={"type": "box", "size": (0.2, 0.2, 0.2)})
    model = b.finalize()
    scene = Scene(model)
    scene.add_static_collider("floor", FLOOR)
    detector = scene_detector(scene.finalize())
    corners = np.array([(x, y, z) for x in (-0.1, 0.1) for y in (-0.1, 0.1) for z in (-0.1, 0.1)])
    rng = np.random.default_rng(7)
    poses = [(np.array([1.06519532, -0.41912918, 1.07595297]), np.array([0.02120769, 0.01349786]), 0.0061465587)]
    for _ in range(400):
        s = rng.uniform(-0.15, 0.15)
        poses.append((rng.normal(size=3) * rng.choice([0.3, 2.0]), s + rng.normal(size=2) * 0.03,
                      rng.uniform(0.0005, 0.01)))
    for rotvec, xy, deep in poses:
        quat, R = quat_of(rotvec)
        q = model.neutral_q()
        q[:2], q[2] = xy, -(corners @ R.T)[:, 2].min() - deep
        q[3:7] = quat
        c = detector.detect(*link_poses(model, q))
        assert len(c) and c.depth.max() == pytest.approx(deep, abs=1e-9), (rotvec, xy, deep)
        assert c.normal[:, 2].min() > 0.99


def test_a_box_on_a_box_gets_the_overlap_rectangle():
    b = engine.ModelBuilder()
    for name in ("a", "b"):
        b.add_body(name, joint="free", shape={"type": "box", "size": (0.5, 0.5, 0.5)})
    model = b.finalize()
    q = model.neutral_q()
    q[:3] = (0, 0, 0.25)
    q[7:10] = (0.1, 0.05, 0.749)
    scene = Scene(model, q0=q)
    scene.set_body_contacts()
    c = contacts_of(model, q, scene)
    assert len(c) == 4 and np.allclose(c.depth, 0.001) and np.allclose(c.normal, (0, 0, -1))  # pushing a down
    assert np.allclose(sorted(map(tuple, np.round(c.point[:, :2], 9))), [(-0.15, -0.2), (-0.15, 0.25), (0.25, -0.2), (0.25, 0.25)])


def test_a_capsule_over_a_stair_nose_gets_the_edge_normal_and_over_a_flat_seam_the_face_normal():
    V, F = staircase_mesh(3, rise=0.15, run=0.3)
    b = engine.ModelBuilder()
    b.add_body("rod", joint="free", shape={"type": "capsule", "radius": 0.02, "length": 0.2, "axis": (0, 1, 0)})
    model = b.finalize()
    scene = Scene(model)
    scene.add_static_collider("stairs", {"type": "mesh", "vertices": V, "triangles": F})
    q = model.neutral_q()
    q[:3] = (-0.01, 0.0, 0.165)  # in front of the first step's nose (x = 0, z = 0.15)
    c = contacts_of(model, q, scene)
    deepest = np.argmax(c.depth)
    expected = np.array([-0.01, 0.0, 0.015]) / np.hypot(0.01, 0.015)
    assert np.allclose(c.normal[deepest], expected, atol=1e-6)
    assert c.depth[deepest] == pytest.approx(0.02 - np.hypot(0.01, 0.015))
    q[:3] = (0.15, 0.0, 0.169)  # on the first tread, across its triangles' diagonal: the tread's normal only
    c = contacts_of(model, q, scene)
    assert len(c) and np.allclose(c.normal, (0, 0, 1)) and np.allclose(c.depth, 0.001)


def test_the_pair_filter_joints_closures_exclusions_collections_and_lists():
    b = engine.ModelBuilder()
    box = {"type": "box", "size": (0.2, 0.2, 0.2)}
    b.add_body("a", joint="free", shape=box)
    b.add_body("b", parent="a", joint="spherical", joint_origin=(0.15, 0, 0), shape=box)   # overlaps a: joined
    b.add_body("c", joint="free", shape={**box, "groups": [1]})                           # another collection
    b.add_body("d", joint="free", shape={**box, "groups": [0, 1]})                        # meets both
    b.add_body("e", joint="free", shape=box)
    model = b.finalize()
    q = model.neutral_q()
    for name, x in (("c", 0.0), ("d", 0.15), ("e", 0.3)):
        qs = model.q_slice(model.joint_names[model.body_index(name)]).start
        q[qs:qs + 3] = (x, 0.0, 0.0)
    scene = Scene(model, q0=q)
    scene.set_body_contacts()
    pairs = {tuple(sorted(p)) for p in zip(contacts_of(model, q, scene).body.tolist(),
                                            contacts_of(model, q, scene).other.tolist())}
    i = {n: model.body_index(n) for n in "abcde"}
    assert (i["a"], i["b"]) not in pairs                       # parent and child
    assert (i["a"], i["c"]) not in pairs and (i["c"], i["e"]) not in pairs  # no shared collection
    assert (i["c"], i["d"]) in pairs and (i["a"], i["d"]) in pairs and (i["d"], i["e"]) in pairs
    scene.disable_collision("d", "e")
    pairs = {tuple(sorted(p)) for p in zip(*(lambda c: (c.body.tolist(), c.other.tolist()))(contacts_of(model, q, scene)))}
    assert (i["d"], i["e"]) not in pairs and (i["c"], i["d"]) in pairs
    scene.set_body_contacts(bodies=["a", "d"])                 # only these two among the bodies
    pairs = {tuple(sorted(p)) for p in zip(*(lambda c: (c.body.tolist(), c.other.tolist()))(contacts_of(model, q, scene)))}
    assert pairs == {(i["a"], i["d"])}


def test_a_compound_collides_with_every_part_and_combines_materials_as_blender():
    b = engine.ModelBuilder()
    b.add_body("dumbbell", joint="free", mass=2.0, inertia=box_inertia(2.0, (1.0, 0.2, 0.2)),
               shape={"type": "compound", "friction": 0.8, "restitution": 0.5, "shapes": [
                   {"type": "sphere", "radius": 0.1, "center": (-0.4, 0, 0)},
                   {"type": "box", "size": (0.2, 0.2, 0.2), "center": (0.4, 0, 0), "friction": 0.3},
                   {"type": "cylinder", "radius": 0.02, "length": 0.8, "axis": (1, 0, 0)}]})
    model = b.finalize()
    q = model.neutral_q()
    q[2] = 0.0995
    scene = Scene(model, q0=q)
    scene.set_ground(friction=0.5, restitution=0.9)
    c = contacts_of(model, q, scene)
    touching = c.depth > 0
    assert touching.sum() == 5  # the sphere's lowest point and the box's four corners
    mu = np.sort(np.unique(np.round(c.friction[touching], 9)))
    assert np.allclose(mu, [0.3 * 0.5, 0.8 * 0.5])  # the product (Bullet's btManifoldResult), part over compound
    assert np.allclose(c.restitution[touching], 0.5 * 0.9)
