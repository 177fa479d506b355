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


@pytest.fixture(scope="module")
def landed_pile():
    """A pile of 27 boxes a third of a second after its drop: boxes on the floor, on each other and in the air."""
    sim = engine.Simulator(box_pile(27), "pcg", dt=1 / 48)
    sim.step(16)
    R, p = link_poses(sim.model, sim.state.q)
    return sim, R.copy(), p.copy()


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
