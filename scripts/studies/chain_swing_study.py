"""Convergence study of the 512-link chain's swing (issue #22 line 1): RK4 on ABA at two steps
(step halving) as the converged reference, the RedMax step at fine steps (1/960 s and 1/1920 s) and at
1/30 s (pcg, direct), for a named start; the tip's track (30 Hz) and energy are cached in ``--cache``
so ``--report`` can compare them without re-running.

Starts (``engine.apps.bench.chains.chain_start``): ``issue`` (the scene's ±0.1 rad/s random joint rates: tip
64 m/s), ``tip256`` (the same pattern scaled so the tip moves at the 256-link chain's 15.5 m/s),
``froude64`` (scaled to the 64-link chain's tip speed relative to √(gL)), ``mode1`` (the fundamental
mode's shape, tip 5 % of the length aside, at rest).

    python scripts/studies/chain_swing_study.py --start issue --runs rk4_1920 rk4_3840 pcg_960 pcg_1920 pcg_30 direct_30
    python scripts/studies/chain_swing_study.py --start issue --report
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

import engine
from engine.algorithms.kinematics import joint_pass, world_pass
from engine.apps.bench.chains import T_END, chain_start, swing_measures, tip_track
from engine.energy import energy
from engine.errors import ModelError, SimulationError
from engine.integrators import rk4_step


def rk4_track(scene, hz, t_end=T_END):
    """(t, tip (k, 3), energy (k,)) sampled at 30 Hz, RK4 on ABA at 1/hz s (joint damping as forces)."""
    model, damping = scene.model, scene.joint_damping
    q, qd, h, stride = scene.q0.copy(), scene.qd0.copy(), 1.0 / hz, int(round(hz / 30))
    end = np.array([0.0, 0.0, -0.1])
    tips, energies = [], []

    def record():
        joint_pass(model.tree, q, model.data)
        world_pass(model.tree, model.data)
        tips.append(model.data.X0_r[-1] + model.data.X0_E[-1].T @ end)
        energies.append(energy(model, q, qd))

    record()
    for _ in range(int(round(t_end * 30))):
        try:
            for _ in range(stride):
                q, qd = rk4_step(model, q, qd, h, lambda q, qd, t: engine.aba(model, q, qd, -damping * qd))
        except ModelError:  # a stage's rates went to inf/nan (ABA refuses them)
            qd = np.full_like(qd, np.nan)
        if not np.all(np.isfinite(qd)) or np.abs(qd).max() > 1e6:
            raise SimulationError(f"RK4 at 1/{hz:.0f} s diverged at t = {len(tips) / 30:.2f} s")
        record()
    return np.linspace(0.0, T_END, len(tips)), np.array(tips), np.array(energies)


def run(start, name, n):
    kind, hz = name.split("_")
    scene = chain_start(n, start)
    if kind == "rk4":
        return rk4_track(scene, float(hz))
    return tip_track(scene, float(hz), kind, energy=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--links", type=int, default=512)
    ap.add_argument("--start", default="issue")
    ap.add_argument("--runs", nargs="*", default=[])
    ap.add_argument("--cache", default=".chain_study")
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--plot", help="write a figure of the cached runs of the issue's and the tip256 start here")
    args = ap.parse_args()
    os.makedirs(args.cache, exist_ok=True)
    for name in args.runs:
        path = os.path.join(args.cache, f"{args.links}_{args.start}_{name}.npz")
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            t, tip, e = run(args.start, name, args.links)
            np.savez(path, t=t, tip=tip, e=e)
            print(f"{args.start} {name}: {time.perf_counter() - t0:.0f} s wall, {time.process_time() - c0:.0f} s CPU",
                  flush=True)
        except SimulationError as err:
            print(f"{args.start} {name}: {err}", flush=True)
    if args.report:
        report(args)
    if args.plot:
        plot(args)


def plot(args):
    """Tip's horizontal y (m) for the issue's start and the tip256 start, and the issue start's energy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = {"rk4_7680": ("RK4 1/7680 s (reference)", "k", 2.5), "pcg_3840": ("pcg 1/3840 s", "tab:green", 1),
              "pcg_1920": ("pcg 1/1920 s", "tab:olive", 1), "pcg_960": ("pcg 1/960 s", "tab:blue", 1.5),
              "pcg_30": ("pcg 1/30 s", "tab:red", 1.5), "direct_30": ("direct 1/30 s", "tab:orange", 1)}
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    for ax, start, what in ((axes[0], "issue", "y"), (axes[1], "tip256", "y"), (axes[2], "issue", "e")):
        for name, (label, color, width) in styles.items():
            path = os.path.join(args.cache, f"{args.links}_{start}_{name}.npz")
            if not os.path.exists(path):
                continue
            d = np.load(path)
            ax.plot(d["t"], d["tip"][:, 1] if what == "y" else d["e"] / 1e3, color=color, lw=width, label=label)
        ax.set_xlabel("t (s)")
        ax.set_ylabel("tip y (m)" if what == "y" else "energy (kJ)")
        ax.set_title(f"{args.links} links, start '{start}': " + ("tip's horizontal y" if what == "y" else "energy"))
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.plot, dpi=90)
    print(f"wrote {args.plot}")


def report(args):
    runs = {}
    for f in sorted(os.listdir(args.cache)):
        pre = f"{args.links}_{args.start}_"
        if f.startswith(pre) and f.endswith(".npz"):
            d = np.load(os.path.join(args.cache, f))
            runs[f[len(pre):-4]] = (d["t"], d["tip"], d["e"])
    refs = sorted((k for k in runs if k.startswith("rk4")), key=lambda k: -float(k.split("_")[1]))
    print(f"{args.links} links, start {args.start}: runs {list(runs)}")
    for name, (t, tip, e) in runs.items():
        print(f"  {name}: E(0) {e[0]:.1f} J, E(10) {e[-1]:.1f} J, largest rise between samples "
              f"{np.max(np.diff(e)):.3g} J, max E − E(0) {np.max(e - e[0]):.3g} J")
    for ref in refs + [k for k in runs if k.startswith("pcg_960")]:
        tr, xr, _ = runs[ref]
        m0 = swing_measures(tr, xr)
        print(f"against {ref}: period {m0['period']:.3f} s, amplitude {m0['amplitude']:.3f} m, "
              f"RMS last 2 s {m0['rms_last2']:.3f} m")
        for name, (t, tip, _) in runs.items():
            if name == ref:
                continue
            m = swing_measures(t, tip, ref_period=m0["period"])
            d = np.sqrt(np.sum((tip - xr) ** 2, axis=1))
            print(f"  {name}: period {m['period']:.3f} s ({m['period'] / m0['period']:.4f}), amplitude "
                  f"{m['amplitude']:.3f} m ({m['amplitude'] / m0['amplitude']:.3f}), RMS last 2 s "
                  f"{m['rms_last2']:.3f} ({m['rms_last2'] / m0['rms_last2']:.3f}); tip distance: max "
                  f"{d.max():.3f} m, at 10 s {d[-1]:.3f} m")


if __name__ == "__main__":
    main()
