"""Train an imitation policy with stable-baselines3 PPO on ``RedMax/Imitate-v0`` (needs the ``.[learn]`` extra).

    python scripts/train_imitation.py --character humanoid --spd maba --seed 0 --budget 600 --out runs/maba_s0
    python scripts/train_imitation.py --out runs/maba_s0 --resume --budget 1200   # continue to 1200 s in all

Writes into --out:

* ``curve.csv`` — one row per PPO rollout: wall-clock seconds of training, process CPU seconds,
  environment samples, and the mean return / length (s) of the training episodes that ended in
  that rollout (stochastic policy);
* ``curve.png`` — return against wall-clock seconds and against samples;
* ``checkpoint.zip`` + ``vecnormalize.pkl`` + ``state.json`` — the policy, the observation
  normaliser and the counters, saved every ``--checkpoint-every`` seconds and at the end;
  ``--resume`` continues from them (the curve goes on from the saved clock and sample count);
* ``eval.json`` — at the end: deterministic policy and random policy over ``--eval-episodes``
  episodes each (same start frames): mean return, mean and longest time before a fall (s).

Progress goes to stdout every ``--progress`` seconds. Training stops at ``--budget`` seconds
(``--clock wall``: wall clock; ``--clock cpu``: this process's CPU time, which a busy shared
machine does not stretch) or ``--total-steps`` samples, whichever comes first. Torch runs on
one CPU thread.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CURVE_FIELDS = ["wall_seconds", "cpu_seconds", "samples", "episodes", "mean_return", "mean_length_seconds"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--character", default="humanoid", choices=["humanoid", "dog", "snake"])
    p.add_argument("--spd", default="maba", choices=["maba", "dense", "sparse", "pcg"])
    p.add_argument("--dt", type=float, default=1 / 30, help="control step (s)")
    p.add_argument("--sim-dt", type=float, default=None, help="simulation step (s), default = dt")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--budget", type=float, default=600.0, help="seconds of training in all (resumed runs included), on --clock")
    p.add_argument("--clock", default="wall", choices=["wall", "cpu"],
                   help="what --budget counts: wall-clock seconds, or this process's CPU seconds (fair on a shared machine)")
    p.add_argument("--total-steps", type=int, default=10**9, help="stop after this many samples")
    p.add_argument("--n-envs", type=int, default=4, help="environments stepped in turn in this process")
    p.add_argument("--n-steps", type=int, default=512, help="PPO rollout length per environment")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--gamma", type=float, default=0.95)
    p.add_argument("--net", default="64,64", help="hidden layer sizes of policy and value networks")
    p.add_argument("--log-std", type=float, default=-1.0, help="initial log standard deviation of the actions")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--resume", action="store_true", help="continue from --out/checkpoint.zip")
    p.add_argument("--progress", type=float, default=30.0, help="seconds between progress lines")
    p.add_argument("--checkpoint-every", type=float, default=120.0, help="seconds between checkpoints")
    p.add_argument("--eval-episodes", type=int, default=10)
    return p.parse_args(argv)


def make_env(args, seed_offset=0):
    import gymnasium as gym
    import engine.envs  # noqa: F401

    return gym.make("RedMax/Imitate-v0", character=args.character, spd=args.spd, dt=args.dt, sim_dt=args.sim_dt)


def evaluate(args, model, vecnorm, episodes: int) -> dict:
    """Deterministic policy vs random actions from the same start frames (seeded): returns and times upright."""
    env = make_env(args)
    rng = np.random.default_rng(12345)
    out = {}
    for name in ("policy", "random"):
        returns, lengths = [], []
        for e in range(episodes):
            obs, _ = env.reset(seed=1000 + e)
            total, done = 0.0, False
            while not done:
                if name == "policy":
                    a, _ = model.predict(vecnorm.normalize_obs(obs[None]), deterministic=True)
                    a = a[0]
                else:
                    a = rng.uniform(-1, 1, env.action_space.shape).astype(np.float32)
                obs, r, term, trunc, info = env.step(a)
                total += r
                done = term or trunc
            returns.append(total)
            lengths.append(info["time"])  # seconds until the fall, or the whole episode
        out[name] = {"mean_return": float(np.mean(returns)), "returns": [float(r) for r in returns],
                     "mean_seconds": float(np.mean(lengths)), "max_seconds": float(np.max(lengths)),
                     "seconds": [float(x) for x in lengths]}
    out["return_ratio"] = out["policy"]["mean_return"] / max(out["random"]["mean_return"], 1e-12)
    return out


def plot_curve(rows, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    ok = [r for r in rows if math.isfinite(r["mean_return"])]
    axes[0].plot([r["wall_seconds"] for r in ok], [r["mean_return"] for r in ok])
    axes[0].set_xlabel("wall-clock seconds of training")
    axes[1].plot([r["samples"] for r in ok], [r["mean_return"] for r in ok])
    axes[1].set_xlabel("environment samples")
    axes[0].set_ylabel("mean training episode return")
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        import torch
        from stable_baselines3 import PPO
        from stable_baselines3.common.callbacks import BaseCallback
        from stable_baselines3.common.env_util import make_vec_env
        from stable_baselines3.common.vec_env import VecNormalize
    except ImportError as e:
        print(f"error: training needs the learn extra (pip install -e '.[learn]'): {e}", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    state_path, ckpt, norm_path, curve_path = out / "state.json", out / "checkpoint.zip", out / "vecnormalize.pkl", out / "curve.csv"
    venv = make_vec_env(lambda: make_env(args), n_envs=args.n_envs, seed=args.seed)
    state = {"wall_seconds": 0.0, "cpu_seconds": 0.0, "samples": 0, "args": vars(args)}
    rows = []
    if args.resume:
        if not ckpt.exists():
            print(f"error: --resume: no checkpoint in {out}", file=sys.stderr)
            return 2
        state = json.loads(state_path.read_text())
        venv = VecNormalize.load(str(norm_path), venv)
        model = PPO.load(str(ckpt), env=venv, device="cpu")
        with curve_path.open() as f:
            rows = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]
        print(f"resumed at {state['samples']} samples, {state['wall_seconds']:.0f} s", flush=True)
    else:
        venv = VecNormalize(venv, norm_obs=True, norm_reward=False, clip_obs=10.0)
        net = [int(x) for x in args.net.split(",") if x]
        model = PPO("MlpPolicy", venv, n_steps=args.n_steps, batch_size=args.batch_size, n_epochs=args.epochs,
                    learning_rate=args.lr, gamma=args.gamma, gae_lambda=0.95, clip_range=0.2, seed=args.seed,
                    policy_kwargs=dict(net_arch=dict(pi=net, vf=net), log_std_init=args.log_std), device="cpu",
                    verbose=0)
    wall0, cpu0, samples0 = state["wall_seconds"], state["cpu_seconds"], state["samples"]
    t_start, c_start = time.perf_counter(), time.process_time()
    clock = {"progress": 0.0, "checkpoint": 0.0}

    def spent() -> float:
        """Seconds of the budget used so far (resumed runs included), on the chosen clock."""
        if args.clock == "cpu":
            return cpu0 + time.process_time() - c_start
        return wall0 + time.perf_counter() - t_start

    def save():
        model.save(str(ckpt))
        venv.save(str(norm_path))
        state.update(wall_seconds=wall0 + time.perf_counter() - t_start, cpu_seconds=cpu0 + time.process_time() - c_start,
                     samples=model.num_timesteps)  # the loaded model keeps counting
        state_path.write_text(json.dumps(state, indent=1))
        with curve_path.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=CURVE_FIELDS)
            w.writeheader()
            w.writerows(rows)

    class Curve(BaseCallback):
        def __init__(self):
            super().__init__()
            self.returns, self.lengths = [], []

        def _on_step(self) -> bool:
            for info in self.locals.get("infos", []):
                ep = info.get("episode")
                if ep is not None:
                    self.returns.append(ep["r"])
                    self.lengths.append(ep["l"] * args.dt)
            return spent() < args.budget

        def _on_rollout_end(self) -> None:
            wall = time.perf_counter() - t_start
            row = {"wall_seconds": wall0 + wall, "cpu_seconds": cpu0 + time.process_time() - c_start,
                   "samples": self.num_timesteps, "episodes": len(self.returns),
                   "mean_return": float(np.mean(self.returns)) if self.returns else math.nan,
                   "mean_length_seconds": float(np.mean(self.lengths)) if self.lengths else math.nan}
            rows.append(row)
            self.returns, self.lengths = [], []
            if wall - clock["progress"] >= args.progress:
                clock["progress"] = wall
                print(f"[{args.character} {args.spd} seed {args.seed}] {row['wall_seconds']:7.0f} s  "
                      f"{row['samples']:>9,} samples  {row['samples'] / max(row['wall_seconds'], 1e-9):6.0f}/s  "
                      f"return {row['mean_return']:7.2f}  episode {row['mean_length_seconds']:5.2f} s", flush=True)
            if wall - clock["checkpoint"] >= args.checkpoint_every:
                clock["checkpoint"] = wall
                save()

    remaining = args.total_steps - samples0
    if spent() < args.budget and remaining > 0:
        model.learn(total_timesteps=remaining, callback=Curve(), reset_num_timesteps=not args.resume)
    save()
    plot_curve(rows, out / "curve.png", f"{args.character}, {args.spd} SPD, seed {args.seed}")
    venv.training = False
    ev = evaluate(args, model, venv, args.eval_episodes)
    ev.update(samples=state["samples"], wall_seconds=state["wall_seconds"], cpu_seconds=state["cpu_seconds"])
    (out / "eval.json").write_text(json.dumps(ev, indent=1))
    print(f"done: {state['samples']:,} samples in {state['wall_seconds']:.0f} s wall ({state['cpu_seconds']:.0f} s CPU); "
          f"policy return {ev['policy']['mean_return']:.2f} vs random {ev['random']['mean_return']:.2f} "
          f"(×{ev['return_ratio']:.1f}); upright {ev['policy']['mean_seconds']:.2f} s mean, "
          f"{ev['policy']['max_seconds']:.2f} s longest", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
