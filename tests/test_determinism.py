"""Bit-for-bit reproducibility: a step's result may not depend on where its arrays sit in memory."""
import numpy as np

import engine


def _scratch(nv: int, gap: int) -> list[np.ndarray]:
    """PCG's four scratch vectors (nv,) as views of one buffer, ``gap`` doubles apart."""
    buf = np.zeros(4 * (nv + gap))
    return [buf[i * (nv + gap):i * (nv + gap) + nv] for i in range(4)]


def test_pcg_step_does_not_depend_on_where_its_scratch_arrays_are():
    """Scratch vectors packed back to back (under 256 bytes apart: a vectorised loop's run-time alias
    check then sends it down the scalar path) and spread out (the vector path) give identical steps:
    no kernel reorders a sum on one path only (engine/_jit.py, no "reassoc")."""
    scene = engine.scenes.centipede(2, gait=False, friction=0.6)
    scene.set_body_contacts(0.3, bodies=["lower_r0", "lower_r1"])
    nv = scene.model.nv
    assert 4 < nv < 32  # packed vectors then start < 256 bytes apart
    sims = [engine.Simulator(scene, "pcg", dt=1 / 240) for _ in range(2)]
    sims[0]._stepper._vec = _scratch(nv, 0)
    sims[1]._stepper._vec = _scratch(nv, 64)
    for sim in sims:
        sim.step(30)
    assert np.array_equal(sims[0].state.q, sims[1].state.q)
    assert np.array_equal(sims[0].state.qd, sims[1].state.qd)
