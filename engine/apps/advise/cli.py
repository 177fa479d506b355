"""``python -m engine advise``: scene sources (engine scene with parameters, scene file, URDF), the
command line, and the printed report (recommendation, reasons, the table of what was tried)."""
from __future__ import annotations

import ast
import inspect
import json
import sys

from ...errors import ModelError


def parse_params(items) -> dict:
    """``["n=64", "variant=square", "car_mass=1500"]`` → {"n": 64, ...}: values are Python literals
    (numbers, booleans, None, quoted strings) or else plain strings."""
    out = {}
    for item in items or []:
        key, sep, value = str(item).partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--param {item!r}: expected NAME=VALUE")
        try:
            out[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            out[key.strip()] = value.strip()
    return out


def build_scene(name: str | None = None, params: dict | None = None, *, scene_file=None, urdf=None,
                floating_base: bool = False, stiffness: float = 1.0):
    """An engine Scene from exactly one source: ``name`` of ``engine.scenes`` called with ``params``
    (keyword arguments; ``n`` goes to the first positional parameter, the scene's size), a JSON
    ``scene_file``, or a ``urdf`` file (no forces but gravity). ``stiffness`` multiplies every joint
    spring and spring/cable stiffness (stability maps over stiffness)."""
    from ... import scenes
    from ...scene import Scene
    from ...scene_file import load_scene
    from ...urdf import load_urdf

    if sum(x is not None for x in (name, scene_file, urdf)) != 1:
        raise ValueError("give exactly one of a scene name, a scene file or a URDF file")
    params = dict(params or {})
    if scene_file is not None or urdf is not None:
        if params:
            raise ValueError("scene parameters apply to engine scenes only, not to files")
        scene = load_scene(scene_file) if scene_file is not None else Scene(load_urdf(urdf, floating_base=floating_base),
                                                                             name=str(urdf))
    else:
        fn = getattr(scenes, str(name), None)
        if name not in scenes.SCENE_NAMES or not callable(fn):
            raise ValueError(f"unknown scene {name!r}; engine scenes: {', '.join(sorted(scenes.SCENE_NAMES))}")
        sig = inspect.signature(fn)
        if "n" in params and "n" not in sig.parameters:  # the size: the scene's first parameter
            first = next(iter(sig.parameters), None)
            if first is None:
                raise ValueError(f"scene {name!r} takes no size parameter")
            params[first] = params.pop("n")
        bad = [k for k in params if k not in sig.parameters]
        if bad:
            raise ValueError(f"scene {name!r} has no parameter {', '.join(map(repr, bad))}; "
                             f"it takes {', '.join(sig.parameters) or 'none'}")
        scene = fn(**params)
        if not hasattr(scene, "model"):
            raise ValueError(f"{name!r} is not a scene constructor")
    if stiffness != 1.0:
        scale_stiffness(scene, stiffness)
    return scene


def scale_stiffness(scene, factor: float) -> None:
    """Multiply every joint spring's and spring/cable's stiffness of ``scene`` by ``factor`` (≥ 0)."""
    if not factor >= 0:
        raise ModelError(f"stiffness factor must be ≥ 0, got {factor}")
    scene.joint_stiffness *= float(factor)
    for i, pair in enumerate(scene.pairs):
        scene.set_pair(i, stiffness=pair[4] * float(factor))


def _scene_names() -> tuple:
    from ...scenes import SCENE_NAMES

    return SCENE_NAMES


def add_advise_parser(sub) -> None:
    p = sub.add_parser("advise", help="recommend a solver and substeps for a scene, with measured reasons",
                       description="Short trial runs of each solver × substep count over the first part of the "
                                   "motion, judged on stability and cost; prints the recommended setting, the "
                                   "reasons and a table of what was tried.")
    p.add_argument("scene", nargs="?", help="an engine scene name, e.g. hanging_chain (size and other parameters: "
                                            "--param); one of " + ", ".join(sorted(_scene_names())))
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="scene parameter (repeatable), e.g. --param n=64; n is the scene's size")
    p.add_argument("--scene-file", metavar="FILE", help="a JSON scene file instead of a scene name")
    p.add_argument("--urdf", metavar="FILE", help="a URDF file instead of a scene name")
    p.add_argument("--fps", type=float, default=30.0, help="frame rate of the bake (default 30)")
    p.add_argument("--frames", type=int, default=250, help="length of the bake in frames (default 250)")
    p.add_argument("--solvers", default=None, help="comma-separated choices (default explicit,pcg,direct,dense)")
    p.add_argument("--max-substeps", type=int, default=64, help="largest substep count tried (default 64)")
    p.add_argument("--trial-frames", type=int, default=None, help="frames per trial (default 2.5 %% of the bake, ≥ 7)")
    p.add_argument("--json", action="store_true", help="print the advice as JSON")
    p.set_defaults(func=_advise)


def _advise(args) -> int:
    from .advisor import SUBSTEPS, Advisor

    try:
        scene = build_scene(args.scene, parse_params(args.param), scene_file=args.scene_file, urdf=args.urdf)
        solvers = [s.strip() for s in args.solvers.split(",")] if args.solvers else None
        ladder = [s for s in SUBSTEPS if s <= args.max_substeps] or [1]
        advisor = Advisor(scene, fps=args.fps, frames=args.frames, solvers=solvers, substeps=ladder,
                          trial_frames=args.trial_frames)
    except (ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    from ..common import single_threaded_blas

    with single_threaded_blas():  # timed as the benchmarks and sweeps are: LAPACK on one thread
        advice = advisor.run()
    print(json.dumps(advice.as_dict(), indent=1, default=float) if args.json else format_advice(advice))
    return 0 if advice.pick is not None else 1


def format_advice(advice) -> str:
    """The printed report: recommendation, reasons, table of trials."""
    lines = [f"{advice.scene}: {advice.dofs} dofs, bake of {advice.frames} frames at {advice.fps:g} fps"]
    if advice.pick is not None:
        lines.append(f"Recommended: solver={advice.solver} substeps={advice.substeps} "
                     f"(estimated bake {advice.estimated_bake_seconds():.3g} s CPU)")
    else:
        lines.append("No recommendation: nothing tried was stable.")
    lines += [f"  - {r}" for r in advice.reasons]
    lines.append(f"Advice took {advice.seconds:.3g} s ({advice.cpu_seconds:.3g} s CPU), trials of up to "
                 f"{advice.trial_frames} frames" + (f"; before it, {advice.warmup_seconds:.3g} s CPU loading the solvers' "
                                                    "kernels (once per process)." if advice.warmup_seconds > 0 else "."))
    head = ["solver", "substeps", "dt (ms)", "frames", "verdict", "ms/frame", "PCG its (mean/max)", "energy rise",
            "energy kept", "closure err (m)"]
    rows = [[r.solver, str(r.substeps), f"{1e3 * r.dt:.3g}", str(r.frames), r.verdict + (" *" if r is advice.pick else ""),
             f"{1e3 * r.steady_seconds_per_frame:.3g}" if r.timed_steps else "—",
             f"{r.mean_iterations:.1f}/{r.max_iterations}" if r.solver == "pcg" else "—",
             f"{100 * r.relative_energy_rise:.1f} %" if r.relative_energy_rise < 10 else "> 1000 %",
             f"{100 * r.energy_kept:.0f} %" if r.frames else "—", f"{r.constraint_error:.1g}"] for r in advice.trials]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines += ["", fmt.format(*head), fmt.format(*("-" * w for w in widths)), *(fmt.format(*row) for row in rows)]
    lines = [line.rstrip() for line in lines]
    if advice.pick is not None:
        lines.append("(* the recommendation)")
    return "\n".join(lines)
