"""The contact stabilization's shortcuts against the long way: detection restricted to some bodies finds exactly
the full detection's contacts of those bodies, and a projection that passes over contacts whose trees did not move
gives the projection of full Gauss–Seidel sweeps."""
from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.algorithms.kinematics import link_poses
from engine.contact.jacobian import contact_point_maps
from engine.contact.sparse_space import SparseContactSpace
from engine.scenes.collisions import box_pile


def _pile_after(n, steps):
    """(simulator, link rotations, link positions) of a pile of n boxes after ``steps`` steps of 1/48 s."""
    sim = engine.Simulator(box_pile(n), "pcg", dt=1 / 48)
    sim.step(steps)
    R, p = link_poses(sim.model, sim.state.q)
    return sim, R.copy(), p.copy()


@pytest.fixture(scope="module")
def landed_pile():
    """A pile of 27 boxes a third of a second after its drop: boxes on the floor, on each other and in the air."""
    return _pile_after(27, 16)


def _by_key(c):
    order = np.argsort(c.feature, kind="stable")
    return c.feature[order], c.depth[order], c.point[order], c.body[order], c.other_bodies()[order]


def test_detection_of_some_bodies_is_the_full_detection_of_their_contacts(landed_pile):
    sim, R, p = landed_pile
    detector = sim.contact.detector
    full = detector.detect(R, p)
    rng = np.random.default_rng(7)
    for _ in range(3):
        bodies = rng.random(sim.model.n_bodies) < 0.3
        part = detector.detect(R, p, bodies=bodies)
        other = full.other_bodies()
        mine = bodies[full.body] | ((other >= 0) & bodies[np.maximum(other, 0)])
        assert mine.any() and not mine.all()
        expected = _by_key(full.select(mine))
        for got, want in zip(_by_key(part), expected):
            np.testing.assert_array_equal(got, want)
    assert len(detector.detect(R, p, bodies=np.zeros(sim.model.n_bodies, bool))) == 0


def test_projection_passing_over_settled_contacts_equals_full_sweeps(landed_pile):
    sim, R, p = landed_pile
    h = sim.contact
    contacts = h.detector.detect(R, p)
    F = np.empty((len(contacts), 3, 6))
    contact_point_maps(np.ascontiguousarray(contacts.point), np.ascontiguousarray(contacts.normal), F)
    space = SparseContactSpace(sim.model, h.trees, sim.state.q, contacts, F)
    target = contacts.depth + 2e-3  # every touching contact pushed out 2 mm, the gaps closing no more than 2 mm
    k, nv = len(contacts), sim.model.nv
    runs = [space.solve(np.zeros(nv), target, np.zeros(k), np.zeros(3 * k), max_iter=500, tol=1e-12, skip_settled=s)
            for s in (False, True)]
    (lam_full, dq_full, sweeps_full), (lam_skip, dq_skip, sweeps_skip) = runs
    assert np.abs(dq_full).max() > 1e-3
    np.testing.assert_allclose(dq_skip, dq_full, rtol=0, atol=1e-12)
    np.testing.assert_allclose(lam_skip, lam_full, rtol=0, atol=1e-12)
    assert abs(sweeps_skip - sweeps_full) <= 1
    with pytest.raises(ValueError, match="without friction"):
        space.solve(np.zeros(nv), target, np.full(k, 0.5), np.zeros(3 * k), skip_settled=True)


@pytest.fixture(scope="module")
def settled_pile():
    """A pile of 64 boxes a second after its drop, most of them on others."""
    return _pile_after(64, 48)


@pytest.mark.parametrize("hops", [0, 1, 3])
def test_projection_on_the_contacts_near_deep_ones_equals_the_projection_on_all(settled_pile, monkeypatch, hops):
    """The end-of-step projection formed on the contacts within a few trees of a deep one (the others held, re-solved
    on all of them when it moved a tree beyond) gives the projection on all the contacts."""
    import engine.contact.handler as handler

    sim, R, p = settled_pile
    h = sim.contact
    contacts = h.detector.detect(R, p)
    depth = np.minimum(contacts.depth, 0.5 * h.stabilize_depth)
    other = contacts.other_bodies()
    paired = np.flatnonzero(other >= 0)
    degree = np.bincount(np.concatenate([contacts.body[paired], other[paired]]), minlength=sim.model.n_bodies)
    deep = paired[[np.argmax(degree[contacts.body[paired]] + degree[other[paired]])]]  # a box-on-box contact 3 mm deep
    depth[deep] = 3e-3
    contacts = contacts.with_depth(depth)
    full = h._projection(h._sparse_space(sim.state.q, contacts, None, None), contacts.depth)
    assert np.abs(full).max() > 1e-3
    monkeypatch.setattr(handler, "PROJECTION_HOPS", hops)
    trees = h._contact_trees(contacts)
    near = h._near(*trees, h._deep_trees(contacts, *trees))
    assert near[deep].all() and not near.all()
    solves = []
    original = h._projection
    monkeypatch.setattr(h, "_projection", lambda space, d: solves.append(len(d)) or original(space, d))
    dq = h._sparse_projection(sim.state.q, contacts)
    np.testing.assert_array_equal(dq, full)
    assert solves[0] == near.sum() and solves == sorted(solves)  # (re-solved on a grown region when it moved beyond)
    assert hops < 3 or len(solves) == 1  # the default reaches far enough here


def test_depth_bounds_hold_where_the_bodies_moved(landed_pile):
    """The bound on each step-start pair's depth at moved poses (``CollisionDetector.depth_bounds``, which picks the
    bodies the stabilization detects again) is at least every depth the narrow phase finds for that pair there."""
    from engine.contact.detection import KEY_SHIFT_B
    from engine.spatial import rotation_exp

    sim, R, p = landed_pile
    detector = sim.contact.detector
    found = detector.detect(R, p)
    rng = np.random.default_rng(3)
    covered = 0
    for scale in (1e-4, 1e-3, 5e-3):
        turn = rotation_exp(rng.normal(size=(len(p), 3)) * scale / 0.2)
        R1, p1 = np.einsum("kij,kjl->kil", turn, R), p + rng.normal(size=p.shape) * scale
        bound = detector.depth_bounds(found, R1, p1)
        assert np.isfinite(bound).all()  # boxes on boxes and on the floor mesh: all covered
        end = detector.detect(R1, p1)
        pair = found.feature >> KEY_SHIFT_B
        for key, depth in zip(end.feature >> KEY_SHIFT_B, end.depth):
            mine = pair == key
            if mine.any():
                covered += 1
                assert depth <= bound[mine].max() + 1e-9
    assert covered > 100
