"""Body shapes are read once: copies of one mesh share one convex hull and one set of hull faces, and each body's
shape dict is parsed once per model (``ModelBuilder.add_body``), however many stages ask for its parts — with the
same arrays the detection read when every copy was computed on its own (issue #33: 2000 planks were 2000 face
computations and three parses each)."""
from __future__ import annotations

import numpy as np
import pytest

import engine
from engine import geometry
from engine.contact import colliders
from engine.contact.handler import scene_detector
from engine.scene import Scene

CUBE = np.array([[x, y, z] for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)])
PLANK = CUBE * (0.45, 1.0, 0.1)  # one plank mesh (a bridge's), scaled in its own frame


def _rotation(angle):
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def plank_scene(n=24, compound_every=0):
    """``n`` planks hinged in a row, each shape a Convex Hull of the same vertices placed at its own centre and
    angle in its link frame (as the add-on gives them); every ``compound_every``-th a compound of two copies."""
    b = engine.ModelBuilder()
    parent = -1
    for i in range(n):
        hull = {"type": "convex", "vertices": PLANK.copy(), "center": (0.013 * i, 0.0, 0.001 * i),
                "rotation": _rotation(-0.35 + 0.03 * i)}
        shape = hull
        if compound_every and i % compound_every == 0:
            shape = {"type": "compound", "shapes": [hull, {**hull, "center": (0.0, 0.2, 0.0)}]}
        parent = b.add_body(f"plank{i}", parent=parent, joint="revolute", axis=(0, 1, 0), joint_origin=(0.5, 0, 0),
                            mass=1.0, shape=shape)
    scene = Scene(b.finalize())
    scene.set_ground(-1.0)
    scene.set_body_contacts()
    return scene


@pytest.fixture()
def counted(monkeypatch):
    """Counts of qhull runs for hull vertices, of hull-face computations and of shape parts parsed."""
    counts = {"hull": 0, "faces": 0, "parsed": 0}

    def counting(name, module, attr):
        real = getattr(module, attr)

        def wrapper(*args, **kwargs):
            counts[name] += 1
            return real(*args, **kwargs)
        monkeypatch.setattr(module, attr, wrapper)

    counting("hull", geometry, "_hull_indices")
    counting("faces", colliders, "_hull_faces")
    counting("parsed", geometry, "parse_shape")
    monkeypatch.setattr(geometry, "_HULLS", {})
    monkeypatch.setattr(colliders, "_FACES", {})
    return counts


def test_identical_planks_make_one_hull_and_one_set_of_faces(counted):
    scene = plank_scene(24).finalize()
    assert counted == {"hull": 1, "faces": 0, "parsed": 24}
    model = scene.model
    hulls = [model.shape_parts(b)[0].hull for b in range(model.n_bodies)]
    assert all(h is hulls[0] for h in hulls) and not hulls[0].flags.writeable  # one shared, read-only array
    detector = scene_detector(scene)
    assert detector.shapes.vcount.tolist() == [8] * 24
    assert counted == {"hull": 1, "faces": 1, "parsed": 24}


def test_each_body_is_parsed_once_by_every_stage_that_reads_its_shapes(counted):
    scene = plank_scene(12, compound_every=3)  # 4 compounds of two parts, 8 single hulls: 16 parts
    assert counted["parsed"] == 16
    model = scene.model
    assert len(colliders.body_shape_list(model)) == 16
    assert sum(len(engine.contact.shapes.contact_shapes(model, b)) for b in range(model.n_bodies)) == 16
    sim = engine.Simulator(scene, solver="pcg", dt=1 / 48)  # builds the contact stage (detection, shape arrays)
    sim.step(2)
    assert counted["parsed"] == 16 and counted["hull"] == 1 and counted["faces"] == 1
    model.body_shapes[5] = {"type": "sphere", "radius": 0.1}  # a replaced shape dict is parsed anew, once
    assert model.shape_parts(5)[0].kind == geometry.SPHERE and model.shape_parts(5)[0].radius == 0.1
    model.shape_parts(5)
    assert counted["parsed"] == 17


def test_shared_faces_are_the_faces_each_plank_had_on_its_own():
    """The shape arrays the detection reads equal those of each plank's hull and faces computed from its own link
    frame vertices (the way before the faces were shared), to round-off."""
    scene = plank_scene(24).finalize()
    model, arrays = scene.model, scene_detector(scene).shapes
    for i, (b, s) in enumerate(colliders.body_shape_list(model)):
        own = (s.vertices - s.center) @ s.rotation  # the round trip from the link frame
        normals, polys = colliders._hull_faces(own)
        v0, f0 = arrays.vstart[i], arrays.fstart[i]
        np.testing.assert_allclose(arrays.hverts[v0:v0 + arrays.vcount[i]], own, rtol=0, atol=1e-15)
        assert arrays.fcount[i] == len(polys)
        shared = {}  # (qhull lists the faces in another order for other round-off: match them by normal)
        for k in range(f0, f0 + arrays.fcount[i]):
            first, size = arrays.ffirst[k], arrays.fsize[k]
            shared[tuple(np.round(arrays.fnorm[k], 9))] = arrays.findex[first:first + size].tolist()
        for normal, poly in zip(normals, polys):
            mine = shared[tuple(np.round(normal, 9))]
            start = mine.index(int(poly[0]))  # the same polygon, counter-clockwise from another first vertex
            assert mine[start:] + mine[:start] == poly.tolist()


def test_a_static_convex_collider_keeps_its_hull_in_its_own_frame_and_shares_the_planks_faces(counted):
    scene = plank_scene(2)
    scene.add_static_collider("rock", {"type": "convex", "vertices": PLANK}, position=(3.0, 1.0, -0.5),
                              rotation=_rotation(0.4))
    rock = scene.static_colliders[-1].parts[0]
    np.testing.assert_allclose((rock.vertices - rock.center) @ rock.rotation, rock.hull, rtol=0, atol=1e-15)
    arrays = scene_detector(scene.finalize()).shapes
    assert arrays.body.tolist() == [0, 1, -1] and arrays.collider.tolist() == [-1, -1, 1]  # (collider 0: ground)
    np.testing.assert_array_equal(arrays.hverts[16:], rock.hull)
    assert counted["hull"] == 1 and counted["faces"] == 1
