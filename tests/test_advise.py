"""The settings advisor: its pick holds over the whole bake, its search stops early, its inputs are checked."""
import numpy as np
import pytest

from engine import scenes
from engine.__main__ import main
from engine.apps.advise import Advisor, Trial, judge
from engine.apps.advise.cli import build_scene, parse_params, scale_stiffness

FPS, FRAMES = 24, 48


# the thesis's step (linearly implicit Euler, no joints' geometric stiffness, no energy budget): a chain needs substeps
THESIS_STEP = {"integrator": "euler", "geometric_stiffness": False, "energy_guard": False}


def test_pick_is_stable_over_the_whole_bake_where_one_step_per_frame_is_not():
    scene = scenes.chain(10)
    assert not Trial(scene, "pcg", 1, FPS, options=THESIS_STEP).advance(FRAMES - 1).stable  # the advice is needed here
    advice = Advisor(scene, fps=FPS, frames=FRAMES, options=THESIS_STEP).run()
    assert advice.pick is not None and advice.pick.stable and advice.substeps > 1
    whole = Trial(scene, advice.solver, advice.substeps, FPS, options=THESIS_STEP).advance(FRAMES - 1)
    assert whole.stable, f"{advice.solver} × {advice.substeps}: {whole.verdict} {whole.detail}"
    # every other setting tried is either unstable or measured no cheaper than the pick
    for r in advice.trials:
        if r is not advice.pick and r.stable and r.complete:
            assert r.steady_seconds_per_frame >= advice.pick.steady_seconds_per_frame
    # the search stops early: per solver, nothing beyond its first stable substep count is tried
    for solver in {r.solver for r in advice.trials}:
        done = sorted(r.substeps for r in advice.trials if r.solver == solver and r.stable and r.complete)
        assert len(done) <= 1
    for solver in {r.solver for r in advice.trials} - {advice.solver}:  # a measured reason for each other choice
        assert any(line.startswith(f"{solver}: ") for line in advice.reasons), advice.reasons


def test_trials_resume_where_they_stopped():
    """Advancing a trial in pieces gives the same run as in one go (the advisor probes, then resumes)."""
    a = Trial(scenes.hanging_chain(8), "pcg", 2, 30)
    a.advance(3)
    a.advance(5)
    b = Trial(scenes.hanging_chain(8), "pcg", 2, 30)
    b.advance(8)
    assert a.run.frames == b.run.frames == 8 and a.run.steps == b.run.steps == 16
    np.testing.assert_array_equal(a.sim.state.q, b.sim.state.q)
    assert a.run.energy_rise == b.run.energy_rise


def test_judge_names_each_kind_of_failure():
    from engine.apps.advise import Run

    r = Run("pcg", 1, 0.01, frames=3, unconverged_steps=2, max_iterations=500)
    assert judge(r)[0] == "PCG not converged"
    r = Run("pcg", 1, 0.01, constraint_error=0.05)
    assert "0.05 m" in judge(r)[1]
    r = Run("explicit", 1, 0.01, energy_rise=5.0, energy_scale=10.0)
    assert judge(r)[0] == "energy growth" and judge(r, passive=False)[0] == "stable"


def test_diverging_setting_is_reported_as_diverged():
    run = Trial(scenes.tree(3), "explicit", 1, 30).advance(40)
    assert run.verdict in ("diverged", "energy growth") and not run.stable


def test_explicit_is_not_applicable_to_loop_closures_and_says_why():
    advice = Advisor(scenes.four_bar(), fps=30, frames=60).run()
    assert any(line.startswith("explicit: not applicable") for line in advice.reasons)
    assert advice.solver in ("pcg", "direct", "dense")


def test_cli_prints_recommendation_reasons_and_table(capsys):
    assert main(["advise", "chain", "--param", "n=10", "--fps", "24", "--frames", "48"]) == 0
    out = capsys.readouterr().out
    assert "Recommended: solver=" in out and "verdict" in out and "(* the recommendation)" in out


def test_cli_names_a_bad_scene_parameter(capsys):
    assert main(["advise", "hanging_chain", "--param", "links=64"]) == 2
    assert "'links'" in capsys.readouterr().err


def test_scene_sources_and_parameters():
    assert parse_params(["n=64", "variant=square", "car_mass=1500.0"]) == {"n": 64, "variant": "square", "car_mass": 1500.0}
    assert build_scene("hanging_chain", {"n": 5}).model.nv == 5
    assert build_scene("tree", {"n": 2}).model.nv == scenes.tree(2).model.nv  # n: the scene's first parameter
    with pytest.raises(ValueError, match="unknown scene 'nope'"):
        build_scene("nope")
    with pytest.raises(ValueError, match="exactly one"):
        build_scene("tree", scene_file="x.json")


def test_stiffness_scale_multiplies_every_spring():
    ref = scenes.tree(2)
    scaled = build_scene("tree", {"levels": 2}, stiffness=3.0)
    np.testing.assert_allclose(scaled.joint_stiffness, 3.0 * ref.joint_stiffness)
    np.testing.assert_allclose([p[4] for p in scaled.pairs], [3.0 * p[4] for p in ref.pairs])
    with pytest.raises(ValueError, match="≥ 0"):
        scale_stiffness(ref, -1.0)


def test_the_redmax_step_times_its_linear_solve():
    """StepStats.solve_seconds: the part of a RedMax step its linear solver changes (what the advisor bounds the
    other linear solvers by); a stepper without a linear solve reports none."""
    from engine import Simulator

    coupled = Simulator(scenes.tree(2), "pcg", dt=1 / 60)  # springs join moving bodies: PCG iterates
    coupled.step(5)
    assert 0 < coupled.stats.solve_seconds <= coupled.stats.wall_seconds
    scene = scenes.hanging_chain(8)
    pcg = Simulator(scene, "pcg", dt=1 / 60)  # no couplings: one exact block solve, which no linear solver beats
    pcg.step(5)
    assert pcg.stats.solve_seconds == 0
    direct = Simulator(scene, "direct", dt=1 / 60)
    direct.step(5)
    assert 0 < direct.stats.solve_seconds < direct.stats.wall_seconds
    explicit = Simulator(scene, "explicit", dt=1 / 600)
    explicit.step(5)
    assert explicit.stats.solve_seconds == 0
    run = Trial(scene, "explicit", 2, 60).advance(3)
    assert run.solve_share == 0.0
    run = Trial(scene, "pcg", 2, 60).advance(3)
    assert run.solve_share == 0.0  # the chain's block solve is exact: nothing to gain from another solver
    run = Trial(scenes.tree(2), "pcg", 2, 60).advance(3)
    assert 0 < run.solve_share <= 1


def test_every_solver_not_picked_has_a_reason_probed_or_not():
    """Solvers sharing PCG's step are probed only when they could pay; either way the advice says why."""
    advice = Advisor(scenes.hanging_chain(16), fps=30, frames=60).run()
    assert advice.pick is not None
    for solver in ("explicit", "pcg", "direct", "dense"):
        if solver != advice.solver:
            assert any(line.startswith(f"{solver}: ") for line in advice.reasons), (solver, advice.reasons)


def test_solvers_not_probed_yet_are_probed_when_nothing_is_stable():
    """PCG unstable at the only substep count offered: direct and dense are probed (they might step
    differently), take the same steps and share the verdict."""
    scene = scenes.chain(10)
    advice = Advisor(scene, fps=FPS, frames=FRAMES, substeps=[1], solvers=["pcg", "direct", "dense"],
                     options=THESIS_STEP).run()
    assert advice.pick is None
    assert {r.solver for r in advice.trials} == {"pcg", "direct", "dense"}


def test_the_redmax_step_is_probed_first_and_another_kind_of_step_only_within_the_budget():
    """The linearly implicit step is probed first; explicit (another stepper) is probed only while the advisor stays
    within PROBE_BUDGET of the bake: on a short bake its probe would cost more than that, and the advice says so."""
    from engine.apps.advise import PROBE_BUDGET

    scene = scenes.hanging_chain(16)
    short = Advisor(scene, fps=30, frames=60).run()  # a 60-frame bake of a 16-link chain: a few ms
    assert short.trials[0].solver == "pcg" and short.pick is not None
    assert "explicit" not in {r.solver for r in short.trials}
    assert any(line.startswith("explicit: not probed") and f"{100 * PROBE_BUDGET:g} %" in line
               for line in short.reasons), short.reasons
    # a bake long enough that a probe is a small part of it: explicit is probed (and judged as before)
    long = Advisor(scenes.hanging_chain(16), fps=30, frames=200_000, trial_frames=7).run()
    assert "explicit" in {r.solver for r in long.trials}
    assert not any(line.startswith("explicit: not probed") for line in long.reasons)


def test_another_kind_of_step_is_probed_when_nothing_is_stable():
    """PCG unstable at the only substep count offered: explicit, held back by the budget otherwise, is probed."""
    advice = Advisor(scenes.chain(10), fps=FPS, frames=FRAMES, substeps=[1], solvers=["pcg", "explicit"],
                     options=THESIS_STEP).run()
    assert advice.trials[0].solver == "pcg" and not advice.trials[0].stable
    assert "explicit" in {r.solver for r in advice.trials}


def test_a_setting_that_damps_the_motion_away_is_not_picked():
    """Issue #31: with the implicit Euler step a 1 m pendulum released at 60° loses most of its swing over a
    10 s bake at a few substeps: those trials are "damped" (the energy the step took, against the energy in
    motion, compounded over the bake), and the pick keeps ≥ 90 %; the default step (BDF2, its energy held)
    keeps all of it at one substep."""
    import math

    from engine.apps.advise import LIVELY

    scene = scenes.pendulum(angle=math.pi / 3, point_mass=True)
    advice = Advisor(scene, fps=24, frames=241, solvers=["pcg"], options={"integrator": "euler"}).run()
    damped = [r for r in advice.trials if r.verdict == "damped"]
    assert damped and min(r.substeps for r in damped) == 1
    assert advice.pick is not None and advice.pick.energy_kept >= LIVELY and advice.substeps > 8
    assert any("energy kept" in line for line in advice.reasons)
    lively = Advisor(scene, fps=24, frames=241, solvers=["pcg"]).run()
    assert lively.substeps == 1 and lively.pick.energy_kept == 1.0
