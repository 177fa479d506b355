"""The swing measures and starts of ``bench chains``' 512-link section (issue #22 line 1)."""
import numpy as np
import pytest

from engine.apps.bench.chains import chain_start, rk4_tip_track, swing_measures, tip_speed, tip_track


@pytest.mark.parametrize("phase", [0.0, 1.0, 2.5])
@pytest.mark.parametrize("fast", [0.0, 0.2])
def test_period_and_amplitude_of_a_slow_ellipse(phase, fast):
    """A swing whose period (12 s) is longer than the 10 s record, on both axes, plus an offset (and a
    faster mode of ``fast`` m): the period comes out exactly (within 1 % with the faster mode, which
    leaks into a record shorter than a period), and the amplitude (the largest excursion over the
    last half period) does not depend on the phase at the end."""
    t = np.linspace(0.0, 10.0, 301)
    w = 2 * np.pi / 12.0
    tip = np.zeros((len(t), 3))
    tip[:, 0] = 3.0 * np.sin(w * t + phase) + fast * np.sin(7.0 * t)
    tip[:, 1] = 1.0 * np.cos(w * t + phase) + 0.3
    m = swing_measures(t, tip)
    assert m["period"] == pytest.approx(12.0, rel=1e-2 if fast else 1e-6)
    assert m["amplitude"] == pytest.approx(3.0, rel=0.1)
    # a run with another period, measured over the reference's window
    m2 = swing_measures(t, tip, ref_period=6.0)
    assert m2["period"] == m["period"] and m2["amplitude"] <= m["amplitude"] + 1e-12


def test_starts_of_the_512_link_section():
    """tip256 and froude64 scale the issue's pattern to the stated tip speeds; mode1 starts at rest with
    the tip 5 % of the length aside."""
    v256 = tip_speed(chain_start(256, "issue"))
    assert tip_speed(chain_start(128, "tip256")) == pytest.approx(v256, rel=1e-6)
    v64 = tip_speed(chain_start(64, "issue"))
    assert tip_speed(chain_start(128, "froude64")) == pytest.approx(v64 * np.sqrt(2.0), rel=1e-6)
    sc = chain_start(32, "mode1")
    assert not sc.qd0.any()
    _, tip, _ = tip_track(sc, 30.0, t_end=1 / 30)
    assert np.linalg.norm(tip[0, :2]) == pytest.approx(0.05 * 3.2, rel=1e-3)
    with pytest.raises(KeyError, match="unknown start"):
        chain_start(8, "nope")


def test_rk4_reference_agrees_with_the_fine_redmax_step_on_a_gentle_chain():
    """RK4 on ABA (the section's reference) and the RedMax step at 1/960 s agree on a gentle 16-link
    chain to a first-order step's error over 2 s, and the fundamental-mode start swings with the
    period the measures find in both."""
    t, ref = rk4_tip_track(chain_start(16, "mode1"), 1920.0, t_end=2.0)
    _, tip, _ = tip_track(chain_start(16, "mode1"), 960.0, t_end=2.0)
    assert np.abs(tip - ref).max() < 2e-3
    assert swing_measures(t, tip)["period"] == pytest.approx(swing_measures(t, ref)["period"], rel=2e-3)
