"""``python -m engine view``: open a scene in the viewer window, or render it headless
(``--screenshot``, ``--record``), or measure the viewer's speed (``--benchmark``).

Bad input (unknown scene, unreadable URDF or scene file, bad option) prints one
``error: ...`` line on stderr and exits with code 2.
"""
from __future__ import annotations

import sys
from pathlib import Path

from ...errors import ModelError, SimulationError
from ...simulator import SOLVERS

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")
VIDEO_SUFFIXES = (".gif", ".mp4")


MAX_FRAMES = 100_000  # --record keeps every frame until the file is written
MAX_SUBSTEPS = 1_000


class UsageError(Exception):
    """Bad command-line input: reported as one line, exit code 2."""


def add_view_parser(sub) -> None:
    from .session import available_scenes

    names = ", ".join(available_scenes())
    view = sub.add_parser(
        "view", help="open a scene in the desktop viewer (or render it headless: --screenshot, --record)",
        description=f"Watch and poke a scene live. Scenes: {names}; or --urdf FILE, or --scene-file FILE.json. "
                    "Headless: --screenshot / --record render offscreen (EGL); --benchmark measures frames per second.")
    view.add_argument("scene", nargs="?", help=f"a scene name ({names})")
    view.add_argument("--size", type=int, help="scene size (bridge: deck pieces = tower bodies, default 20 → 61 bodies; "
                                               "umbrella: bodies per rib; tree: levels; chain: links)")
    view.add_argument("--solver", default="pcg", help=f"one of {', '.join(SOLVERS)} (default pcg)")
    view.add_argument("--dt", type=float, default=1 / 60, metavar="SECONDS", help="scene time per frame (default 1/60)")
    view.add_argument("--substeps", type=int, default=1, help="solver steps per frame (default 1)")
    view.add_argument("--stiffness-scale", type=float, default=1.0, metavar="X", help="multiply every cable's and spring's stiffness")
    view.add_argument("--car-mass", type=float, default=1500.0, metavar="KG", help="bridge: mass of the crossing car (0: no car)")
    view.add_argument("--no-gravity", action="store_true", help="start with gravity off")
    view.add_argument("--urdf", metavar="FILE", help="open a URDF robot (root fixed to the world)")
    view.add_argument("--floating-base", action="store_true", help="with --urdf: the root floats (free joint)")
    view.add_argument("--scene-file", metavar="FILE", help="open a JSON scene file (docs/viewer.md)")
    view.add_argument("--save-scene", metavar="FILE", help="write the scene as a JSON scene file and exit")
    view.add_argument("--screenshot", metavar="IMAGE", help="render one frame offscreen to IMAGE (.png) and exit")
    view.add_argument("--record", metavar="VIDEO", help="render --frames frames offscreen to VIDEO (.gif, or .mp4 with imageio-ffmpeg)")
    view.add_argument("--frames", type=int, metavar="N", help="frames to simulate (--record: default 60; --screenshot: before the shot, default 0; "
                                                             "--benchmark: default 600)")
    view.add_argument("--resolution", default="1280x720", metavar="WxH", help="window or image size in pixels (default 1280x720)")
    view.add_argument("--show-ui", action="store_true", help="--screenshot/--record: include the control panel")
    view.add_argument("--benchmark", action="store_true", help="measure frames per second (simulation, + update, + drawing, real-time play) headless")
    view.add_argument("--play", action="store_true", help="window: start playing")
    view.set_defaults(func=run_view)


def _resolution(text: str):
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise UsageError(f"--resolution must look like 1280x720, got '{text}'") from None
    if not (16 <= w <= 8192 and 16 <= h <= 8192):
        raise UsageError(f"--resolution {text}: width and height must be between 16 and 8192")
    return w, h


def _check_args(args):
    sources = [x for x in (args.scene, args.urdf, args.scene_file) if x]
    if len(sources) != 1:
        from .session import available_scenes

        raise UsageError("give exactly one of a scene name, --urdf FILE or --scene-file FILE "
                         f"(scenes: {', '.join(available_scenes())})")
    if args.solver not in SOLVERS:
        raise UsageError(f"unknown solver '{args.solver}' (available: {', '.join(SOLVERS)})")
    if args.screenshot and Path(args.screenshot).suffix.lower() not in IMAGE_SUFFIXES:
        raise UsageError(f"--screenshot: '{args.screenshot}' must end in {', '.join(IMAGE_SUFFIXES)}")
    if args.record and Path(args.record).suffix.lower() not in VIDEO_SUFFIXES:
        raise UsageError(f"--record: '{args.record}' must end in .gif or .mp4")
    if sum(bool(x) for x in (args.screenshot, args.record, args.benchmark, args.save_scene)) > 1:
        raise UsageError("use one of --screenshot, --record, --benchmark, --save-scene at a time")
    if args.frames is not None and not 0 <= args.frames <= MAX_FRAMES:
        raise UsageError(f"--frames must be 0 … {MAX_FRAMES}, got {args.frames}")
    if not 1 <= args.substeps <= MAX_SUBSTEPS:
        raise UsageError(f"--substeps must be 1 … {MAX_SUBSTEPS}, got {args.substeps}")
    from ...errors import OutputPathError
    from ...output_paths import output_file

    for option, out in (("--screenshot", args.screenshot), ("--record", args.record), ("--save-scene", args.save_scene)):
        if out:
            try:
                output_file(out, option)
            except OutputPathError as err:
                raise UsageError(str(err)) from None
    return _resolution(args.resolution)


def _session(args):
    from .session import SceneParams, SceneSource, ViewerSession

    if args.urdf:
        source = SceneSource.urdf(args.urdf, floating_base=args.floating_base)
    elif args.scene_file:
        source = SceneSource.file(args.scene_file)
    else:
        source = SceneSource.preset(args.scene)
    params = SceneParams(size=args.size, stiffness_scale=args.stiffness_scale, car_mass=args.car_mass)
    return ViewerSession(source, params, solver=args.solver, dt=args.dt, substeps=args.substeps, gravity=not args.no_gravity)


def run_view(args) -> int:
    try:
        return _run(args)
    except (UsageError, ModelError, SimulationError, ValueError, OSError) as e:
        print("error: " + " ".join(str(e).split()), file=sys.stderr)
        return 2


def _run(args) -> int:
    resolution = _check_args(args)
    session = _session(args)
    if args.save_scene:
        from ...scene_file import save_scene

        print(f"wrote {save_scene(session.scene, args.save_scene)}")
        return 0
    try:
        from . import app
    except ImportError as e:
        raise UsageError(f"the viewer needs polyscope and imageio ({e}); pip install 'redmax-engine[viewer]'") from None
    headless = bool(args.screenshot or args.record or args.benchmark)
    try:
        backend = app.init_polyscope(headless, resolution)
    except Exception as e:
        raise UsageError(f"cannot open a window ({' '.join(str(e).split()) or type(e).__name__}); "
                         "render headless with --screenshot or --record") from None
    if headless and backend != app.HEADLESS_BACKEND:
        print(f"warning: rendering with polyscope's '{backend}' backend, which draws nothing (EGL unavailable?): images will be blank", file=sys.stderr)
    if args.screenshot:
        print(f"wrote {app.save_screenshot(session, args.screenshot, args.frames or 0, args.show_ui)}")
    elif args.record:
        frames = 60 if args.frames is None else args.frames
        print(f"wrote {app.record(session, args.record, frames, args.show_ui)}")
    elif args.benchmark:
        _print_benchmark(session, app.benchmark(session, frames=args.frames or 600), resolution, backend)
    else:
        if args.play:
            session.play()
        return app.run_window(session)
    return 0


def _print_benchmark(session, rows, resolution, backend) -> None:
    m, sc = session.scene.model, session.scene
    print(f"viewer benchmark: {session.source.label} ({m.n_bodies} bodies, {m.nv} dofs, {sc.n_pairs} springs/cables, "
          f"{len(sc.loop_closures)} loop closures), solver {session.solver}, dt = {session.dt:.6g} s, "
          f"{session.substeps} substep(s) per frame; drawing {resolution[0]}x{resolution[1]} with {backend}")
    print()
    print("| stage | frames | seconds | frames per second | real-time factor |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['stage']} | {r['frames']} | {r['seconds']:.3f} | {r['frames_per_second']:.1f} | {r['realtime_factor']:.2f} |")
