"""``engine.control.SampledMotion``: a reference given per frame, interpolated on the joint
manifolds (what the add-on's Follow Animation samples at every substep)."""
import numpy as np
from hypothesis import given, settings

import engine
from engine.control import SampledMotion
from engine.integrators import configuration_difference

from trees import random_trees


@settings(max_examples=30, deadline=None)
@given(random_trees(max_bodies=6))
def test_interpolation_follows_each_joints_geodesic(tree):
    """Samples come back at α = 0 and 1; at α the step from sample k is α times the step to k + 1,
    the per-joint ``engine.joints.difference`` of the two samples."""
    model, rng = tree
    samples = [engine.random_configuration(model, rng, scale=0.8)[0] for _ in range(3)]
    motion = SampledMotion(model, samples)
    assert len(motion) == 3
    for k in range(2):
        step = np.zeros(model.nv)
        for j, name in enumerate(model.joint_names):
            qs, vs = model.q_slice(name), model.v_slice(name)
            if vs.stop > vs.start:
                step[vs] = engine.joints.difference(int(model.joint_type[j]), samples[k][qs], samples[k + 1][qs])
        np.testing.assert_allclose(configuration_difference(model, motion.at(k, 0.0), samples[k]), 0, atol=1e-12)
        np.testing.assert_allclose(configuration_difference(model, motion.at(k, 1.0), samples[k + 1]), 0, atol=1e-9)
        for alpha in (0.25, 0.5):
            np.testing.assert_allclose(configuration_difference(model, samples[k], motion.at(k, alpha)), alpha * step,
                                       atol=1e-9)
    np.testing.assert_array_equal(motion.at(2), samples[2])
