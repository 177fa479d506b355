"""The seed's Figure 7 at this machine's scale: PPO imitation learning with MABA vs dense SPD.

    python scripts/studies/figure7.py run --budget 600 --seeds 0 1 2 --out runs/fig7      # train (needs .[learn])
    python scripts/studies/figure7.py report --out runs/fig7 --figure docs/results/learning_fig7.png

``run`` trains ``scripts/train_imitation.py`` once per method and seed with the same network and
hyper-parameters; the two methods of one seed run at the same time (two processes, ``nice``;
``--parallel``: every seed at once), so that both see the same machine load — the machine is
shared, and wall-clock curves of runs made at different times would compare the load, not the
methods. The budget counts process CPU seconds by default (``--clock cpu``) for the same reason. ``report`` reads each run's
``curve.csv`` and ``eval.json`` and prints a markdown table; it draws the mean return (and the
range over seeds) against wall-clock seconds, process CPU seconds and samples.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np

METHODS = ("maba", "dense")
ROOT = Path(__file__).resolve().parents[2]


def run(args) -> int:
    out = Path(args.out)
    procs = []
    for seed in args.seeds:
        if not args.parallel:
            procs = []
        for m in METHODS:
            d = out / f"{m}_s{seed}"
            cmd = ["nice", "-n", str(args.nice), sys.executable, str(ROOT / "scripts" / "train_imitation.py"),
                   "--character", args.character, "--spd", m, "--seed", str(seed), "--budget", str(args.budget), "--clock", args.clock,
                   "--out", str(d), "--sim-dt", str(args.sim_dt), *args.extra]
            if (d / "checkpoint.zip").exists():
                cmd.append("--resume")
            d.mkdir(parents=True, exist_ok=True)
            print(" ".join(cmd), flush=True)
            procs.append(subprocess.Popen(cmd, stdout=open(d / "train.log", "a"), stderr=subprocess.STDOUT))
        if not args.parallel and _wait(procs, seed):
            return 1
    return 1 if args.parallel and _wait(procs, "all") else 0


def _wait(procs, what) -> bool:
    codes = [p.wait() for p in procs]
    if any(codes):
        print(f"seed {what}: exit codes {codes}", file=sys.stderr)
    return any(codes)


def _curve(d: Path) -> dict:
    with (d / "curve.csv").open() as f:
        rows = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]
    return {k: np.array([r[k] for r in rows]) for k in rows[0]} if rows else {}


def _smooth(y, k=5):
    y = np.asarray(y, float)
    out = np.empty_like(y)
    for i in range(len(y)):
        w = y[max(0, i - k + 1):i + 1]
        w = w[np.isfinite(w)]
        out[i] = w.mean() if len(w) else math.nan
    return out


def report(args) -> int:
    out = Path(args.out)
    runs = {}
    for d in sorted(out.glob("*_s*")):
        if (d / "curve.csv").exists() and (d / "eval.json").exists():
            m, s = d.name.rsplit("_s", 1)
            runs.setdefault(m, {})[int(s)] = (_curve(d), json.loads((d / "eval.json").read_text()))
    if not runs:
        print(f"no finished runs in {out}", file=sys.stderr)
        return 1
    lines = ["| method | seed | wall s | CPU s | samples | samples / CPU s | final training return (last 10 rollouts) | "
             "eval return, policy | eval return, random | ratio | policy upright mean / longest (s) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for m, by in runs.items():
        for s, (c, ev) in sorted(by.items()):
            final = np.nanmean(c["mean_return"][-10:])
            lines.append(f"| {m} | {s} | {ev['wall_seconds']:.0f} | {ev['cpu_seconds']:.0f} | {ev['samples']:,} | "
                         f"{ev['samples'] / max(ev['cpu_seconds'], 1e-9):,.0f} | {final:.2f} | "
                         f"{ev['policy']['mean_return']:.2f} | {ev['random']['mean_return']:.2f} | "
                         f"{ev['return_ratio']:.2f} | {ev['policy']['mean_seconds']:.2f} / {ev['policy']['max_seconds']:.2f} |")
    for m, by in runs.items():
        finals = [np.nanmean(c["mean_return"][-10:]) for c, _ in by.values()]
        evals = [ev["policy"]["mean_return"] for _, ev in by.values()]
        rate = [ev["samples"] / max(ev["cpu_seconds"], 1e-9) for _, ev in by.values()]
        lines.append(f"| **{m} mean** | {len(by)} seeds | | | | {np.mean(rate):,.0f} | {np.mean(finals):.2f} ± "
                     f"{np.std(finals):.2f} | {np.mean(evals):.2f} ± {np.std(evals):.2f} | | | |")
    print("\n".join(lines))
    if args.figure:
        _plot(runs, Path(args.figure))
        print(f"\nwrote {args.figure}")
    return 0


def _plot(runs, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2), sharey=True)
    for ax, key, label in zip(axes, ("wall_seconds", "cpu_seconds", "samples"),
                              ("wall-clock seconds (shared machine)", "process CPU seconds", "environment samples")):
        for i, (m, by) in enumerate(runs.items()):
            xs = [c[key] for c, _ in by.values()]
            ys = [_smooth(c["mean_return"]) for c, _ in by.values()]
            grid = np.linspace(0, min(x[-1] for x in xs), 200)
            Y = np.array([np.interp(grid, x, y) for x, y in zip(xs, ys)])
            for x, y in zip(xs, ys):
                ax.plot(x, y, color=f"C{i}", alpha=0.25, linewidth=0.7)
            ax.plot(grid, Y.mean(0), color=f"C{i}", linewidth=2, label=f"{m} SPD ({len(by)} seeds, mean)")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("training episode return (mean over a rollout, smoothed)")
    axes[0].legend()
    fig.suptitle("Imitation learning with PPO: MABA vs dense SPD (humanoid walk, ground contact, 1/30 s)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", default="runs/fig7")
    r.add_argument("--character", default="humanoid")
    r.add_argument("--budget", type=float, default=600.0, help="seconds per run on --clock")
    r.add_argument("--clock", default="cpu", choices=["wall", "cpu"])
    r.add_argument("--parallel", action="store_true", help="all seeds at once (2 × seeds processes)")
    r.add_argument("--sim-dt", type=float, default=1 / 30, help="simulation step of both methods (their largest stable)")
    r.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    r.add_argument("--nice", type=int, default=5)
    r.add_argument("extra", nargs=argparse.REMAINDER, help="after --: more train_imitation.py options")
    g = sub.add_parser("report")
    g.add_argument("--out", default="runs/fig7")
    g.add_argument("--figure", default=None)
    args = p.parse_args(argv)
    if args.cmd == "run":
        args.extra = [a for a in args.extra if a != "--"]
        return run(args)
    return report(args)


if __name__ == "__main__":
    sys.exit(main())
