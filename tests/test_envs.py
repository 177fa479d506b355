"""Gymnasium imitation environments (engine.envs): API conformance, determinism, the four SPD methods
agreeing, vector environments, and the contact stage / reward against independent computations."""
import copy

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")

import engine.envs  # noqa: E402,F401  (registers RedMax/Imitate-v0)
from engine.contact.shapes import Contacts  # noqa: E402
from engine.contact.pgs import solve_contacts  # noqa: E402
from engine.contact.space import ContactSpace  # noqa: E402
from engine.apps.envs.core import CHARACTERS, ImitationSim, ground_contact_update, imitation_reward  # noqa: E402
from engine.algorithms.kinematics import link_poses  # noqa: E402

ID = "RedMax/Imitate-v0"


def _rollout(env, seed, actions):
    """(observations, rewards) of ``actions`` from reset(seed) until an episode ends; a vector env's
    arrays get a leading step axis (seed: one per environment)."""
    obs, _ = env.reset(seed=seed)
    out = [obs]
    rewards = []
    for a in actions:
        obs, r, term, trunc, _ = env.step(a)
        out.append(obs)
        rewards.append(r)
        if np.any(term) or np.any(trunc):
            break
    return np.array(out), np.array(rewards)


@pytest.mark.slow
@pytest.mark.parametrize("character", list(CHARACTERS))
def test_check_env(character):
    from gymnasium.utils.env_checker import check_env

    env = gym.make(ID, character=character, spd="maba", dt=1 / 30)
    with pytest.warns(UserWarning):  # only the unbounded-Box notes (as MuJoCo's envs); errors would raise
        check_env(env.unwrapped, skip_render_check=True)
    assert env.action_space.shape == (env.unwrapped.sim.model.nv - 6,)


def test_same_seed_and_actions_give_identical_trajectories():
    env = gym.make(ID, character="humanoid")
    actions = np.random.default_rng(0).uniform(-1, 1, (40,) + env.action_space.shape).astype(np.float32)
    runs = [_rollout(gym.make(ID, character="humanoid"), 7, actions) for _ in range(2)]
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    assert len(runs[0][1]) >= 5
    # the seed picks the start frame (reference-state initialisation) from the env's generator
    starts = [env.reset(seed=s)[1]["start_frame"] for s in range(10)]
    assert starts == [env.reset(seed=s)[1]["start_frame"] for s in range(10)]
    assert len(set(starts)) > 1


@pytest.mark.parametrize("character,steps", [("humanoid", 12), ("snake", 30)])
def test_four_spd_methods_give_the_same_transitions(character, steps):
    """From the same state (and contact warm start) each method's control step lands on the same state to 1e-8,
    along a trajectory with ground contact (the states are re-synchronised before each step)."""
    sims = {m: ImitationSim(character, spd=m) for m in ("maba", "dense", "sparse", "pcg")}
    ref = sims["maba"]
    actions = np.random.default_rng(3).uniform(-0.5, 0.5, (steps, ref.n_actions))
    for s in sims.values():
        s.reset(5)
    contacts = 0
    for k, a in enumerate(actions):
        q, qd, warm = ref.q.copy(), ref.qd.copy(), ref.cd.warm.copy()
        results = {}
        for m, s in sims.items():
            s.q[:], s.qd[:], s.cd.warm[:] = q, qd, warm
            results[m] = s.step(a)
        for m, s in sims.items():
            assert results[m][1:] == results["maba"][1:], (m, k)
            assert abs(results[m][0] - results["maba"][0]) <= 1e-8
            np.testing.assert_allclose(s.q, ref.q, rtol=0, atol=1e-8, err_msg=f"{m} step {k}")
            np.testing.assert_allclose(s.qd, ref.qd, rtol=0, atol=1e-8, err_msg=f"{m} step {k}")
        contacts += ref.last["contacts"]
        if results["maba"][1] or results["maba"][2]:
            break
    assert k >= 5 and contacts > 0  # enough steps compared, with contacts on the way


def test_vector_envs_sync_and_async_match_single_envs():
    n = 2
    seeds = [11, 12]
    rng = np.random.default_rng(1)
    singles = [gym.make(ID, character="snake") for _ in range(n)]
    actions = rng.uniform(-1, 1, (6, n) + singles[0].action_space.shape).astype(np.float32)
    expected = [_rollout(e, s, actions[:, i]) for i, (e, s) in enumerate(zip(singles, seeds))]
    for cls in (gym.vector.SyncVectorEnv, gym.vector.AsyncVectorEnv):
        venv = cls([lambda: gym.make(ID, character="snake") for _ in range(n)])
        try:
            got, rews = _rollout(venv, seeds, actions)
            assert len(rews) == len(actions)  # the snake cannot fall: no episode ends in 6 steps
            for i in range(n):
                steps = len(expected[i][1])
                np.testing.assert_array_equal(got[:steps + 1, i], expected[i][0], err_msg=cls.__name__)
                np.testing.assert_array_equal(rews[:steps, i], expected[i][1], err_msg=cls.__name__)
        finally:
            venv.close()


def test_contact_stage_matches_engine_contact_space_and_pgs():
    """The env's fused contact kernel = ContactSpace (Cholesky path, metric M + h K_d: the operator SPD
    solves with, so that PD and contact act on the same system) + solve_contacts on the same contacts."""
    sim = ImitationSim("humanoid")
    sim.reset(3)
    q = sim.q.copy()
    q[2] -= 0.01  # press the feet 1 cm into the floor
    v = sim.qd.copy()
    v_new = v.copy()
    sim.cd.warm[:] = 0.0
    k = ground_contact_update(sim.model.tree, sim.cd, q, v_new, sim.sim_dt, 500)
    assert k >= 2
    cd = sim.cd
    contacts = Contacts(cd.body[:k].copy(), cd.point[:k].copy(), np.tile([0.0, 0.0, 1.0], (k, 1)),
                        cd.depth[:k].copy(), np.arange(k), cd.mu[:k].copy())
    space = ContactSpace(sim.model, q, contacts, "cholesky", joint_diag=sim.cd.joint_diag)  # M + h K_d
    h = sim.sim_dt
    d = contacts.depth
    target = np.where(d < 0, d / h, 0.2 * np.maximum(d - 2e-4, 0.0) / h)
    lam, u, _ = solve_contacts(space.A, space.velocity(v), target, contacts.friction, max_iter=500, tol=1e-8)
    np.testing.assert_allclose(v_new, v + space.response(lam), rtol=0, atol=1e-6)
    u_after = space.velocity(v_new)
    assert np.all(u_after[0::3] >= target - 1e-6)  # no contact approaches faster than allowed
    assert np.all(lam[0::3] >= 0)


def test_reference_touches_the_ground_and_scores_one_on_itself():
    for character in CHARACTERS:
        sim = ImitationSim(character, episode_seconds=1.0)
        spec = sim.spec
        bodies = [sim.model.body_index(b) for b, _, _ in spec.contacts]
        centres = np.array([c for _, c, _ in spec.contacts])
        radii = np.array([r for _, _, r in spec.contacts])
        for f in range(0, len(sim.ref.q), 7):
            R, p = link_poses(sim.model, sim.ref.q[f])
            z = np.einsum("ij,ij->i", R[bodies, 2, :], centres) + p[bodies, 2] - radii
            assert abs(z.min()) < 1e-9, (character, f)
        f = 4
        q, qd = sim.ref.q[f].copy(), sim.ref.qd[f].copy()
        imitation_reward(sim.model.tree, sim.rd, q, qd, sim.ref.q[f], sim.ref.qd[f], sim.ref.ee[f], sim.ref.com[f],
                         sim.zero)
        np.testing.assert_allclose(sim.rd.out[:5], 1.0, atol=1e-12)
        q[7:] = sim.ref.q[f + 3][7:]  # another pose: every term but COM drops below 1
        imitation_reward(sim.model.tree, sim.rd, q, qd * 0.5, sim.ref.q[f], sim.ref.qd[f], sim.ref.ee[f],
                         sim.ref.com[f], sim.zero)
        assert sim.rd.out[1] < 1 and sim.rd.out[2] < 1 and sim.rd.out[0] < 1


def test_zero_action_walks_a_little_then_falls_and_terminates():
    """Zero action = the reference as PD target: the humanoid walks a little before falling, and
    the episode ends with terminated (not truncated) on the fall."""
    env = gym.make(ID, character="humanoid")
    env.reset(seed=0, options={"start": 0})
    steps, term = 0, False
    while not term:
        _, r, term, trunc, info = env.step(np.zeros(env.action_space.shape, np.float32))
        steps += 1
        assert not trunc and not info["diverged"]
    assert info["fallen"] and r == 0.0
    assert steps >= 5


def test_bad_parameters_are_refused_by_name():
    with pytest.raises(ValueError, match="character"):
        ImitationSim("octopus")
    with pytest.raises(ValueError, match="spd"):
        ImitationSim("humanoid", spd="lu")
    with pytest.raises(ValueError, match="multiple"):
        ImitationSim("humanoid", dt=1 / 30, sim_dt=1 / 45)
    with pytest.raises(ValueError, match="sim_dt"):
        ImitationSim("humanoid", dt=1 / 30, sim_dt=1 / 10)
    sim = ImitationSim("humanoid")
    sim.reset(0)
    with pytest.raises(ValueError, match="action"):
        sim.step(np.zeros(3))
    with pytest.raises(ValueError, match="start frame"):
        sim.reset(sim.start_frames)


def test_bench_learn_quick_rows_and_stability_verdicts():
    """``bench learn --quick`` end to end in-process (never timed): every character × method × kind
    has a row, and the stability verdict follows the diverged counts."""
    from engine.apps.bench.learn import largest_stable_step, run_learn

    res = run_learn(quick=True)
    methods = {r.method for r in res.rows if r.scene == "throughput_humanoid"}
    assert methods == {f"{m}-{k}" for m in ("maba", "dense", "sparse", "pcg") for k in ("gym", "sim")}
    assert all(r.extra["steps_per_second"] > 0 for r in res.rows if r.scene.startswith("throughput_"))
    for c in CHARACTERS:
        rows = [r for r in res.rows if r.scene == f"stability_{c}"]
        assert {r.method for r in rows} == {"maba", "dense", "sparse", "pcg"}
        for m in ("maba", "dense"):
            h = largest_stable_step(res.rows, c, m)
            stable = sorted((r.extra["dt"], r.extra["diverged"]) for r in rows if r.method == m)
            assert np.isnan(h) or all(d == 0 for dt, d in stable if dt <= h)
        # the four methods compute the same transitions, so they share the verdict
        verdicts = {tuple(sorted((r.n, r.extra["diverged"]) for r in rows if r.method == m)) for m in
                    ("maba", "dense", "sparse", "pcg")}
        assert len(verdicts) == 1
    assert "Largest stable step" in res.extra_text


def test_train_script_writes_curves_and_resumes(tmp_path):
    """scripts/train_imitation.py on a tiny budget, then resumed (needs the learn extra: skipped in CI)."""
    pytest.importorskip("stable_baselines3")
    import csv
    import importlib.util
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "train_imitation.py"
    spec = importlib.util.spec_from_file_location("train_imitation", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    common = ["--character", "snake", "--n-envs", "2", "--n-steps", "64", "--batch-size", "64", "--epochs", "1",
              "--eval-episodes", "1", "--progress", "0", "--out", str(tmp_path)]
    assert mod.main(common + ["--total-steps", "256"]) == 0
    first = json.loads((tmp_path / "state.json").read_text())
    assert first["samples"] == 256
    assert mod.main(common + ["--total-steps", "512", "--resume"]) == 0
    with (tmp_path / "curve.csv").open() as f:
        rows = list(csv.DictReader(f))
    samples = [float(r["samples"]) for r in rows]
    assert samples == sorted(samples) and samples[-1] == 512 and len(rows) == 4
    walls = [float(r["wall_seconds"]) for r in rows]
    assert walls == sorted(walls)
    ev = json.loads((tmp_path / "eval.json").read_text())
    assert ev["samples"] == 512 and set(ev) >= {"policy", "random", "return_ratio"}
    assert (tmp_path / "curve.png").stat().st_size > 0


def test_standing_reference_stands_still():
    """Zero action on a standing reference (the start pose lowered onto the floor): the humanoid stays up
    and still for 3 s. With contact impulses on M instead of M + h K_d (SPD's operator), SPD's explicit
    torques fought the contact and it toppled within about a second."""
    sim = ImitationSim("humanoid", episode_seconds=3.0)
    q = sim.scene.q0.copy()
    R, p = link_poses(sim.model, q)
    spheres = [(sim.model.body_index(b), np.array(c), r) for b, c, r in sim.spec.contacts]
    q[2] -= min((R[b] @ c + p[b])[2] - r for b, c, r in spheres)
    ref = copy.copy(sim.ref)  # a private table: the reference tables are shared between sims
    ref.q = np.ascontiguousarray(np.broadcast_to(q, sim.ref.q.shape))
    ref.qd = np.zeros_like(sim.ref.qd)
    sim.ref = ref
    sim.reset(0)
    for _ in range(90):
        _, fallen, diverged, _ = sim.step(np.zeros(sim.n_actions))
        assert not fallen and not diverged
    assert abs(sim.q[2] - q[2]) < 0.01 and np.abs(sim.qd).max() < 0.05
    assert sim.last["contacts"] == 8 and sim.last["pgs_sweeps"] < 50
