"""``ImitationEnv``: the Gymnasium face of ``engine.apps.envs.core.ImitationSim`` (DeepMimic-style imitation).

``gymnasium.make("RedMax/Imitate-v0", character="humanoid", spd="maba", dt=1/30)``; keywords as
``ImitationSim`` (character, spd, dt, sim_dt, motion, episode_seconds, action_scale, max_sweeps)
plus ``random_start`` (reference-state initialisation: start at a random frame of the first
motion period, drawn from the env's seeded generator; default True) and ``render_mode``
(``"rgb_array"``: a frame from ``engine.apps.viewer``, needs the viewer extra).

Episodes end with ``terminated`` on a fall (or a diverged step, ``info["diverged"]``) and
``truncated`` after ``episode_seconds``. The reward of the falling step is 0.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from .core import ImitationSim


class ImitationEnv(gym.Env):
    """A character imitating a reference motion on flat ground, actuated only by stable PD on its internal joints."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(self, character: str = "humanoid", spd: str = "maba", dt: float = 1 / 30, *,
                 random_start: bool = True, render_mode: str | None = None, **options):
        self.sim = ImitationSim(character, spd=spd, dt=dt, **options)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.render_mode = render_mode
        self.random_start = bool(random_start)
        self.metadata = dict(self.metadata, render_fps=round(1 / self.sim.dt))
        n = self.sim.n_actions
        self.action_space = spaces.Box(-1.0, 1.0, (n,), np.float32)
        self.observation_space = spaces.Box(-np.inf, np.inf, (self.sim.obs_size,), np.float32)
        self._viewer = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        start = options.get("start") if options else None
        if start is None:
            start = int(self.np_random.integers(self.sim.start_frames)) if self.random_start else 0
        obs = self.sim.reset(start)
        return obs, {"start_frame": self.sim.start, "phase": self.sim.phase()}

    def step(self, action):
        reward, fallen, diverged, truncated = self.sim.step(action)
        info = dict(self.sim.last, time=self.sim.time, phase=self.sim.phase(), fallen=fallen, diverged=diverged)
        return self.sim.observation(), reward, fallen or diverged, truncated and not (fallen or diverged), info

    def render(self):
        if self.render_mode != "rgb_array":
            return None
        if self._viewer is None:
            from .render import FrameRenderer
            self._viewer = FrameRenderer(self.sim)
        return self._viewer.frame(self.sim.q)

    def close(self):
        if self._viewer is not None:
            self._viewer.close()
            self._viewer = None
