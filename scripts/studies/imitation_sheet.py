"""Contact sheet of a trained imitation policy, drawn by the viewer's renderer (needs .[learn] and .[viewer]).

    python scripts/studies/imitation_sheet.py --run runs/long_humanoid_maba --out docs/results/learning_sheet.png

Loads ``checkpoint.zip`` and ``vecnormalize.pkl`` of a ``train_imitation.py`` run, plays the
deterministic policy for ``--seconds`` from reference frame ``--start`` (no time limit other
than that), and tiles one image every ``--every`` seconds, each captioned with the time, the
step's reward and whether the character is still up; beside it, the same start with random
actions. Prints the return and the time before a fall for both.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def play(sim, act, seconds, every, renderer):
    """Run ``act(obs)`` from the current state; returns (return, seconds before a fall or None, images, labels)."""
    obs = sim.observation()
    images, labels = [renderer.frame(sim.q)], ["t = 0.00 s"]
    total, fell = 0.0, None
    stride = max(1, round(every / sim.dt))
    for k in range(1, round(seconds / sim.dt) + 1):
        r, fallen, diverged, _ = sim.step(act(obs))
        obs = sim.observation()
        total += r
        if (fallen or diverged) and fell is None:
            fell = sim.time
        if k % stride == 0:
            images.append(renderer.frame(sim.q))
            labels.append(f"t = {sim.time:.2f} s" + (", fallen" if fell is not None else f", r = {r:.2f}"))
        if fell is not None and sim.time >= fell + every:
            break
    return total, fell, images, labels


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--every", type=float, default=0.5)
    p.add_argument("--start", type=int, default=0)
    args = p.parse_args(argv)
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    from engine.apps.envs.core import ImitationSim
    from engine.apps.envs.render import FrameRenderer, contact_sheet
    import engine.envs  # noqa: F401

    run = Path(args.run)
    state = json.loads((run / "state.json").read_text())
    cfg = state["args"]
    model = PPO.load(str(run / "checkpoint.zip"), device="cpu")
    sim = ImitationSim(cfg["character"], spd=cfg["spd"], dt=cfg["dt"], sim_dt=cfg["sim_dt"],
                       episode_seconds=args.seconds + 1.0)
    import gymnasium as gym
    dummy = DummyVecEnv([lambda: gym.make("RedMax/Imitate-v0", character=cfg["character"])])
    norm = VecNormalize.load(str(run / "vecnormalize.pkl"), dummy)
    norm.training = False
    renderer = FrameRenderer(sim)
    sim.reset(args.start)
    ret, fell, images, labels = play(sim, lambda o: model.predict(norm.normalize_obs(o[None]), deterministic=True)[0][0],
                                     args.seconds, args.every, renderer)
    rng = np.random.default_rng(0)
    sim.reset(args.start)
    r_ret, r_fell, r_images, r_labels = play(sim, lambda o: rng.uniform(-1, 1, sim.n_actions), args.seconds,
                                             args.every, renderer)
    title = (f"{cfg['character']} {sim.motion.name}, {cfg['spd']} SPD, PPO policy after {state['samples']:,} samples "
             f"({state['cpu_seconds']:.0f} CPU s)\nreturn {ret:.1f}, "
             + (f"fell at {fell:.2f} s" if fell is not None else f"up for all {args.seconds:.0f} s")
             + f" — random actions from the same start: return {r_ret:.1f}, "
             + (f"fell at {r_fell:.2f} s" if r_fell is not None else "did not fall"))
    contact_sheet(images, labels, args.out, columns=min(7, len(images)), title=title)
    random_path = Path(args.out).with_name(Path(args.out).stem + "_random.png")
    contact_sheet(r_images, r_labels, random_path, columns=min(7, len(r_images)), title="random actions, same start")
    print(json.dumps({"policy_return": ret, "policy_fell_at": fell, "random_return": r_ret, "random_fell_at": r_fell,
                      "seconds": args.seconds, "start": args.start}))
    print(f"wrote {args.out} and {random_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
