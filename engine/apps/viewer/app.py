"""The viewer window — polyscope's 3D view plus an ImGui panel with the controls and live plots —
and its headless uses: one screenshot, a recorded GIF/MP4, and the speed benchmark.

Only this module and ``render`` import polyscope. Headless rendering uses
polyscope's EGL backend (no display or GPU needed: Mesa's llvmpipe works);
when EGL cannot start, the ``openGL_mock`` backend runs the same code but
draws nothing (``init_polyscope`` reports which backend it got).
``REDMAX_VIEWER_BACKEND`` overrides the backend (e.g. ``openGL_mock``).
"""
from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path

import numpy as np
import polyscope as ps
import polyscope.imgui as psim

from ...errors import ModelError, SimulationError
from ...simulator import SOLVERS
from .render import SceneRenderer
from .session import SceneSource, ViewerSession, available_scenes

HEADLESS_BACKEND = "openGL3_egl"
MOCK_BACKEND = "openGL_mock"
PLOTS = (("realtime_factor", "real-time factor"), ("step_ms", "ms per step"), ("iterations", "PCG iterations"),
         ("energy", "energy (J)"), ("drift", "constraint drift (m)"))


def init_polyscope(headless: bool, resolution=(1280, 720)) -> str:
    """Start polyscope (once per process); returns the backend name. Raises RuntimeError when no
    window can be opened (interactive) — headless falls back to the mock backend."""
    ps.set_use_prefs_file(False)
    ps.set_program_name("RedMax viewer")
    ps.set_verbosity(0)
    ps.set_display_message_popups(False)
    ps.set_errors_throw_exceptions(True)
    forced = os.environ.get("REDMAX_VIEWER_BACKEND", "")
    if headless:
        ps.set_allow_headless_backends(True)
        try:
            ps.init(forced or HEADLESS_BACKEND)
        except Exception:
            if forced:
                raise
            ps.init(MOCK_BACKEND)
    elif forced:
        ps.init(forced)
    else:
        try:
            ps.init("openGL3_glfw")  # a real window; "auto" would silently pick a headless backend
        except Exception:
            _init_mock_quietly()  # polyscope's exit handler expects an initialized polyscope
            raise
    ps.set_window_size(int(resolution[0]), int(resolution[1]))
    if headless:  # images show the scene and, with --show-ui, this viewer's panel (not polyscope's own)
        ps.set_build_default_gui_panels(False)
    ps.set_up_dir("z_up")
    ps.set_front_dir("neg_y_front")
    ps.set_ground_plane_mode("tile")
    ps.set_background_color((1.0, 1.0, 1.0))
    return ps.get_render_engine_backend_name()


def _init_mock_quietly() -> None:
    try:
        ps.init(MOCK_BACKEND)
    except Exception:
        pass


class ViewerApp:
    """The per-frame callback: panel (controls, stats, plots), mouse drag, stepping, drawing updates."""

    def __init__(self, session: ViewerSession):
        self.session = session
        self.renderer = SceneRenderer(session)
        self.message = ""
        self.panel_width = 0.0  # pixels, known once the panel was drawn
        self._aimed_version = None  # the scene version the camera was last fitted to
        self._pending: dict = {}  # slider values being edited, applied when the slider is released

    def frame(self) -> None:
        self.panel()
        self.mouse()
        s = self.session
        try:
            s.advance()
        except Exception as e:  # a diverging simulation pauses with a message instead of closing the window
            s.pause()
            self.message = str(e)
        self.renderer.update()
        if self._aimed_version != self.renderer.version:  # a new scene: fit it beside the panel
            self.renderer.look_at_frames([s.frame()], covered_right=self.panel_width)
            self._aimed_version = self.renderer.version

    def _act(self, action, *args, **kwargs) -> None:
        """Run a session action; a bad value shows as a message in the panel."""
        try:
            action(*args, **kwargs)
            self.message = ""
        except (ValueError, ModelError, SimulationError) as e:
            self.message = str(e)

    def _slider_float(self, key, label, value, lo, hi, fmt, apply, log=False) -> None:
        """A float slider whose action runs once, when the user lets go (rebuilds are not free)."""
        flags = psim.ImGuiSliderFlags_Logarithmic if log else 0
        self._slider(key, value, lambda shown: psim.SliderFloat(label, shown, lo, hi, fmt, flags), apply)

    def _slider_int(self, key, label, value, lo, hi, apply) -> None:
        self._slider(key, value, lambda shown: psim.SliderInt(label, shown, lo, hi), apply)

    def _slider(self, key, value, draw, apply) -> None:
        """Show the value being dragged (kept in ``_pending``) and apply it once on release."""
        _, v = draw(self._pending.get(key, value))
        self._pending[key] = v
        if psim.IsItemDeactivatedAfterEdit():
            self._pending.pop(key, None)
            self._act(apply, v)
        elif not psim.IsItemActive():
            self._pending.pop(key, None)

    def panel(self) -> None:
        s = self.session
        self.panel_width = psim.GetWindowWidth() + 10  # the panel window's width, plus its margin
        psim.PushItemWidth(150)
        if psim.Button("Pause" if s.playing else "Play") or (psim.IsKeyPressed(psim.ImGuiKey_Space, False)
                                                             and not psim.GetIO().WantCaptureKeyboard):
            s.toggle_play()
        psim.SameLine()
        if psim.Button("Step"):
            s.pause()
            self._act(s.step_frame)
        psim.SameLine()
        if psim.Button("Reset"):
            s.reset()
        psim.SameLine()
        _, s.realtime = psim.Checkbox("real time", s.realtime)

        if psim.CollapsingHeader("Stats", psim.ImGuiTreeNodeFlags_DefaultOpen):
            for line in s.status_lines():
                psim.TextUnformatted(line)
            for key, label in PLOTS:
                values = np.asarray(s.history[key], dtype=np.float32)
                if values.size:
                    psim.PlotLines(f"##{key}", values, overlay_text=f"{label}: {values[-1]:.4g}", graph_size=(260, 36))

        if psim.CollapsingHeader("Simulation", psim.ImGuiTreeNodeFlags_DefaultOpen):
            self._slider_float("dt", "time step (s)", s.dt, 1 / 480, 1 / 15, "%.5f", s.set_dt, log=True)
            self._slider_int("substeps", "substeps per frame", s.substeps, 1, 16, s.set_substeps)
            changed, k = psim.Combo("solver", SOLVERS.index(s.solver), list(SOLVERS))
            if changed:
                self._act(s.set_solver, SOLVERS[k])
            changed, on = psim.Checkbox("gravity", s.gravity)
            if changed:
                s.set_gravity(on)

        if psim.CollapsingHeader("Scene", psim.ImGuiTreeNodeFlags_DefaultOpen):
            preset = s.preset
            if s.source.kind == "preset":
                names = list(available_scenes())
                changed, k = psim.Combo("scene", names.index(s.source.name), names)
                if changed:
                    self._act(s.set_scene, SceneSource.preset(names[k]))
                    preset = s.preset
            else:
                psim.TextUnformatted(f"scene: {s.source.label}")
            if preset is not None and preset.default_size is not None:
                size = s.params.size if s.params.size is not None else preset.default_size
                self._slider_int("size", f"size ({preset.size_label})", size, *preset.size_range,
                                 lambda v: s.set_params(size=int(v)))
            if s.scene.n_pairs:
                self._slider_float("stiffness", "cable stiffness x", s.params.stiffness_scale, 0.01, 100.0, "%.3g",
                                   lambda v: s.set_params(stiffness_scale=float(v)), log=True)
            if preset is not None and preset.has_car:
                self._slider_float("car", "car mass (kg)", s.params.car_mass, 0.0, 1e6, "%.0f",
                                   lambda v: s.set_params(car_mass=float(v)), log=True)
            m = s.scene.model
            psim.TextUnformatted(f"{m.n_bodies} bodies, {m.nv} dofs, {s.scene.n_pairs} springs/cables, "
                                 f"{len(s.scene.loop_closures)} loop closures")

        if psim.CollapsingHeader("Mouse drag", psim.ImGuiTreeNodeFlags_DefaultOpen):
            psim.TextUnformatted("shift + left-drag a body to pull it")
            _, s.drag_frequency = psim.SliderFloat("pull stiffness (Hz)", s.drag_frequency, 0.2, 10.0, "%.2f",
                                                   psim.ImGuiSliderFlags_Logarithmic)
            if s.drag is not None:
                psim.TextUnformatted(f"pulling '{m.body_names[s.drag.body]}' with {np.linalg.norm(s.drag_force()):.4g} N")

        if self.message:
            psim.TextColored((0.9, 0.1, 0.1, 1.0), self.message)
        psim.PopItemWidth()

    def mouse(self) -> None:
        """Shift + left button on a body grabs it; moving the mouse moves the target in the plane
        facing the camera; releasing the button lets go."""
        s = self.session
        io = psim.GetIO()
        ps.set_do_default_mouse_interaction(not (io.KeyShift or s.drag is not None))
        if s.drag is None:
            if io.KeyShift and psim.IsMouseClicked(0) and not io.WantCaptureMouse:
                origin, direction = self._mouse_ray(io.MousePos)
                hit = s.pick(origin, direction)
                if hit is not None:
                    self._act(s.grab, *hit)
        elif psim.IsMouseDown(0):
            origin, direction = self._mouse_ray(io.MousePos)
            s.drag_along_ray(origin, direction, ps.get_view_camera_parameters().get_look_dir())
        else:
            s.release()

    @staticmethod
    def _mouse_ray(pos):
        camera = ps.get_view_camera_parameters()
        return np.asarray(camera.get_position(), float), np.asarray(ps.screen_coords_to_world_ray((pos[0], pos[1])), float)


# ------------------------------------------------------------------ entry points
def run_window(session: ViewerSession) -> int:
    app = ViewerApp(session)
    ps.set_user_callback(app.frame)
    ps.show()
    return 0


def _simulate(session: ViewerSession, frames: int) -> list:
    """The scene's geometry (``session.frame()``) at the start and after each of ``frames`` frames."""
    out = [session.frame()]
    for _ in range(frames):
        session.step_frame()
        out.append(session.frame())
    return out


def _image(app: ViewerApp, frame, show_ui: bool) -> np.ndarray:
    """RGB image (h, w, 3) uint8 of one frame's geometry."""
    app.renderer.update(frame)
    buf = ps.screenshot_to_buffer(transparent_bg=False, include_UI=show_ui)  # the UI: drawn by the callback
    return np.ascontiguousarray(buf[:, :, :3])


def _panel_only_callback(app: ViewerApp):
    def callback():
        app.panel()
    return callback


def save_screenshot(session: ViewerSession, path, frames: int = 0, show_ui: bool = False) -> Path:
    """Step ``frames`` frames, then write one image (PNG, JPG …) of the scene to ``path``."""
    import imageio.v3 as iio

    app = ViewerApp(session)
    if show_ui:
        ps.set_user_callback(_panel_only_callback(app))
    frames_drawn = _simulate(session, frames)
    app.renderer.look_at_frames(frames_drawn)
    image = _image(app, frames_drawn[-1], show_ui)
    if show_ui:  # now that the panel was drawn once, its width is known: fit the scene beside it
        app.renderer.look_at_frames(frames_drawn, covered_right=app.panel_width)
        image = _image(app, frames_drawn[-1], show_ui)
    iio.imwrite(path, image)
    return Path(path)


def record(session: ViewerSession, path, frames: int, show_ui: bool = False) -> Path:
    """Write ``frames`` + 1 images (the start and after each frame) as a GIF or MP4, played in real time."""
    import imageio.v3 as iio

    path = Path(path)
    app = ViewerApp(session)
    if show_ui:
        ps.set_user_callback(_panel_only_callback(app))
    frames_drawn = _simulate(session, frames)  # first simulate, so that the camera sees the whole motion
    app.renderer.look_at_frames(frames_drawn)
    if show_ui:
        _image(app, frames_drawn[0], show_ui)  # draws the panel once: its width
        app.renderer.look_at_frames(frames_drawn, covered_right=app.panel_width)
    images = [_image(app, f, show_ui) for f in frames_drawn]
    if path.suffix.lower() == ".gif":
        iio.imwrite(path, np.stack(images), duration=1000.0 * session.dt, loop=0)
    else:
        if importlib.util.find_spec("imageio_ffmpeg") is None:
            raise ModelError("recording an .mp4 needs imageio-ffmpeg (pip install imageio-ffmpeg); or record a .gif")
        import imageio.v2 as iio2

        with iio2.get_writer(path, fps=1.0 / session.dt) as writer:
            for image in images:
                writer.append_data(image)
    return path


def benchmark(session: ViewerSession, frames: int = 600, draw_frames: int = 120, realtime_seconds: float = 5.0) -> list[dict]:
    """Frames per second of wall time of the viewer's work on ``session``'s scene, in stages:
    simulation; + scene update (draw buffers, no drawing); + drawing (one frame per draw);
    and playing in real time (``advance`` per drawn frame, the interactive frame loop).
    Returns rows {"stage", "frames", "seconds", "frames_per_second", "realtime_factor"}."""
    app = ViewerApp(session)
    ps.set_user_callback(app.frame)
    ps.set_frame_tick_limit_fps_mode("ignore_limits")
    s = session
    for _ in range(3):  # warm-up: compile or load the kernels, first draws
        s.step_frame()
        app.renderer.update()
        ps.frame_tick()
    rows = []

    def timed(stage, n, body):
        s.reset()
        t0 = time.perf_counter()
        for _ in range(n):
            body()
        seconds = time.perf_counter() - t0
        rows.append({"stage": stage, "frames": n, "seconds": seconds, "frames_per_second": n / seconds,
                     "realtime_factor": n * s.dt / seconds})

    timed("simulation", frames, s.step_frame)
    timed("simulation + scene update", frames, lambda: (s.step_frame(), app.renderer.update(s.frame())))
    ps.set_user_callback(_panel_only_callback(app))  # frame_tick draws the scene and the panel
    timed("simulation + scene update + draw", draw_frames,
          lambda: (s.step_frame(), app.renderer.update(), ps.frame_tick()))
    ps.set_user_callback(app.frame)  # the interactive frame: panel, advance(), update, draw
    s.reset()
    s.play()
    t0 = time.perf_counter()
    drawn = 0
    while time.perf_counter() - t0 < realtime_seconds:
        ps.frame_tick()
        drawn += 1
    drawn_per_second = drawn / (time.perf_counter() - t0)
    s.pause()
    scene_seconds, wall_seconds = s.played_since_play()  # first to last advance: frames due = frames made?
    frames = round(scene_seconds / s.dt)
    rows.append({"stage": f"playing in real time ({drawn_per_second:.1f} drawn frames/s, {s.dropped_frames} frames dropped)",
                 "frames": frames,
                 "seconds": wall_seconds, "frames_per_second": frames / wall_seconds,
                 "realtime_factor": scene_seconds / wall_seconds})
    return rows
