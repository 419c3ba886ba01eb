"""``ColorReach2D``: a numpy-rendered multi-object reaching task (the CPU stand-in for SOLD's robot suite).

SOLD (Mosbach et al., ICML 2025) is evaluated on multi-object Fetch-robot scenes that need MuJoCo with a GL context
and are not on PyPI. This environment keeps what matters for the paper's claims — several objects in an RGB image, a
controllable agent, and tasks that need *relational* reasoning about the objects — and draws everything in numpy:

* a ``size × size`` RGB frame (default 32×32, uint8) on a dark background;
* a white "gripper" disc moved by continuous 2-D actions ``a ∈ [−1, 1]²``: ``g ← clip(g + step · a, 0, 1)``;
* ``num_objects`` coloured discs at random, non-overlapping positions (new ones each episode);
* task ``"specific"``: reach the red disc; task ``"distinct"``: reach the disc whose colour differs from all the
  others (a relational task: which colour is the target changes from episode to episode);
* task ``"push"`` (the 2-D counterpart of the paper's Push tasks): the discs are *pushable* — a disc the gripper
  would overlap is moved along the line from the gripper's centre to its own until they only touch (then disc–disc
  overlaps are resolved the same way, clipped to the frame) — and the goal is to push the odd-coloured disc to the
  centre of the frame; ``distance`` is then ``‖target − (½, ½)‖``;
* reward ``"dense"``: ``−distance``; ``"sparse"``: 1 when ``distance < success_radius`` else 0 (reach tasks:
  ``distance = ‖g − target‖``);
* ``info``: the true object states (positions, colours, target index, gripper), a segmentation map ``masks``
  ``[H, W]`` (0 = background, 1..N = objects, N + 1 = gripper), ``distance`` and ``success``.

Episodes end by truncation after ``max_steps`` steps (25 by default).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from sold.errors import SoldError

PALETTE = np.array([
    [230, 40, 40],    # 0 red
    [40, 200, 60],    # 1 green
    [50, 100, 240],   # 2 blue
    [235, 210, 40],   # 3 yellow
    [200, 60, 220],   # 4 magenta
    [40, 210, 220],   # 5 cyan
], dtype=np.uint8)
RED = 0
BACKGROUND = np.array([25, 25, 30], dtype=np.uint8)
GRIPPER = np.array([255, 255, 255], dtype=np.uint8)
TASKS = ("specific", "distinct", "push")
GOAL = np.array([0.5, 0.5])
"""Where task 'push' wants the odd-coloured disc."""
REWARDS = ("dense", "sparse")


class ColorReach2D(gym.Env):
    """Reach one of several coloured discs with a white gripper disc, from pixels (see the module docstring)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, *, num_objects: int = 3, task: str = "distinct", reward: str = "dense", size: int = 32,
                 max_steps: int = 25, step_size: float = 0.1, object_radius: float = 0.11,
                 gripper_radius: float = 0.08, success_radius: float = 0.1, render_mode: str | None = "rgb_array"):
        if task not in TASKS:
            raise SoldError(f"task must be one of {TASKS}, got {task!r}")
        if reward not in REWARDS:
            raise SoldError(f"reward must be one of {REWARDS}, got {reward!r}")
        if not isinstance(num_objects, (int, np.integer)) or not 1 <= num_objects <= 5:
            raise SoldError(f"num_objects must be an integer in 1..5, got {num_objects!r}")
        if task in ("distinct", "push") and num_objects < 3:
            raise SoldError(f"num_objects must be >= 3 for task {task!r} (one odd colour among equals), "
                            f"got {num_objects}")
        if not isinstance(size, (int, np.integer)) or size < 8:
            raise SoldError(f"size must be an integer >= 8, got {size!r}")
        if not isinstance(max_steps, (int, np.integer)) or max_steps < 1:
            raise SoldError(f"max_steps must be a positive integer, got {max_steps!r}")
        for name, v in (("step_size", step_size), ("object_radius", object_radius),
                        ("gripper_radius", gripper_radius), ("success_radius", success_radius)):
            if not (np.isfinite(v) and 0 < v < 0.5):
                raise SoldError(f"{name} must be in (0, 0.5), got {v!r}")
        self.num_objects, self.task, self.reward_type = int(num_objects), task, reward
        self.size, self.max_steps, self.step_size = int(size), int(max_steps), float(step_size)
        self.object_radius, self.gripper_radius = float(object_radius), float(gripper_radius)
        self.success_radius = float(success_radius)
        self.render_mode = render_mode
        self.observation_space = spaces.Box(0, 255, (self.size, self.size, 3), dtype=np.uint8)
        self.action_space = spaces.Box(-1.0, 1.0, (2,), dtype=np.float32)
        c = (np.arange(self.size) + 0.5) / self.size
        self._yy, self._xx = np.meshgrid(c, c, indexing="ij")  # [H, W] pixel centres in [0, 1]
        self._rng = np.random.default_rng()
        self._t = 0
        self.objects = np.zeros((self.num_objects, 2))
        self.colors = np.zeros(self.num_objects, dtype=np.int64)
        self.target = 0
        self.gripper = np.zeros(2)

    # ------------------------------------------------------------------ state
    @property
    def state_dim(self) -> int:
        """Length of :meth:`true_state`: gripper (2) + per object position (2) and colour (3)."""
        return 2 + 5 * self.num_objects

    def true_state(self) -> np.ndarray:
        """The true object state (for state-based references): ``[g_x, g_y, (x, y, r, g, b) per object]``."""
        cols = PALETTE[self.colors].astype(np.float64) / 255.0
        return np.concatenate([self.gripper, np.concatenate([self.objects, cols], 1).reshape(-1)]).astype(np.float32)

    def _place(self) -> None:
        rng, n, r = self._rng, self.num_objects, self.object_radius
        pts: list[np.ndarray] = []
        while len(pts) < n:  # rejection sampling of non-overlapping discs
            p = rng.uniform(r, 1 - r, 2)
            if all(np.linalg.norm(p - q) > 2.2 * r for q in pts):
                pts.append(p)
        self.objects = np.array(pts)
        if self.task == "specific":
            others = rng.integers(1, len(PALETTE), n)
            self.target = int(rng.integers(n))
            others[self.target] = RED
            self.colors = others
        else:
            common, odd = rng.choice(len(PALETTE), 2, replace=False)
            self.colors = np.full(n, common)
            self.target = int(rng.integers(n))
            self.colors[self.target] = odd
        self.gripper = rng.uniform(0.05, 0.95, 2)
        if self.pushable:  # the odd disc starts away from the goal, and nothing starts overlapped
            others = [q for i, q in enumerate(self.objects) if i != self.target]
            while np.linalg.norm(self.objects[self.target] - GOAL) < 0.25:
                p = rng.uniform(r, 1 - r, 2)
                if all(np.linalg.norm(p - q) > 2.2 * r for q in others):
                    self.objects[self.target] = p
            self._push()

    @property
    def pushable(self) -> bool:
        """Whether the gripper pushes the discs (task 'push')."""
        return self.task == "push"

    def _distance(self) -> float:
        ref = GOAL if self.pushable else self.gripper
        return float(np.linalg.norm(ref - self.objects[self.target]))

    def _push(self) -> None:
        """Move every disc the gripper overlaps out to contact along the centre line, then separate overlapping discs
        (each later disc is moved away from each earlier one), clipped to the frame."""
        r, rg = self.object_radius, self.gripper_radius
        lo, hi = r, 1.0 - r

        def away(p: np.ndarray, q: np.ndarray, dist: float) -> np.ndarray:
            d = p - q
            n = float(np.linalg.norm(d))
            if n >= dist:
                return p
            u = d / n if n > 1e-9 else np.array([1.0, 0.0])
            return np.clip(q + dist * u, lo, hi)

        for i in range(self.num_objects):
            self.objects[i] = away(self.objects[i], self.gripper, r + rg)
        for i in range(self.num_objects):
            for j in range(i):
                self.objects[i] = away(self.objects[i], self.objects[j], 2 * r)

    def _info(self) -> dict[str, Any]:
        d = self._distance()
        return {"object_positions": self.objects.copy(), "object_colors": PALETTE[self.colors].copy(),
                "target": self.target, "gripper": self.gripper.copy(), "masks": self.segmentation(),
                "distance": d, "success": bool(d < self.success_radius), "state": self.true_state()}

    # ------------------------------------------------------------------ rendering
    def _disc(self, p: np.ndarray, r: float) -> np.ndarray:
        return (self._xx - p[0]) ** 2 + (self._yy - p[1]) ** 2 < r ** 2

    def segmentation(self) -> np.ndarray:
        """``[H, W]`` int labels: 0 background, ``1..N`` objects, ``N + 1`` gripper (drawn on top)."""
        seg = np.zeros((self.size, self.size), dtype=np.int64)
        for i, p in enumerate(self.objects):
            seg[self._disc(p, self.object_radius)] = i + 1
        seg[self._disc(self.gripper, self.gripper_radius)] = self.num_objects + 1
        return seg

    def render(self) -> np.ndarray:
        seg = self.segmentation()
        table = np.concatenate([BACKGROUND[None], PALETTE[self.colors], GRIPPER[None]], 0)  # [N + 2, 3]
        return table[seg]

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._t = 0
        self._place()
        return self.render(), self._info()

    def step(self, action):
        a = np.asarray(action, dtype=np.float64).reshape(-1)
        if a.shape != (2,):
            raise SoldError(f"action must have 2 entries (dx, dy), got shape {np.shape(action)}")
        if not np.isfinite(a).all():
            raise SoldError(f"action must be finite, got {a}")
        self.gripper = np.clip(self.gripper + self.step_size * np.clip(a, -1.0, 1.0), 0.0, 1.0)
        if self.pushable:
            self._push()
        self._t += 1
        d = self._distance()
        reward = -d if self.reward_type == "dense" else float(d < self.success_radius)
        return self.render(), float(reward), False, self._t >= self.max_steps, self._info()

    def oracle_action(self) -> np.ndarray:
        """The action of a scripted controller that knows the target (an upper reference, never used in training):
        reach it, or for 'push' go behind it (on the far side from the goal) and push it towards the goal."""
        if self.pushable:
            obj = self.objects[self.target]
            to_goal = GOAL - obj
            n = float(np.linalg.norm(to_goal))
            u = to_goal / n if n > 1e-9 else np.zeros(2)
            behind = obj - (self.object_radius + self.gripper_radius) * u
            d = behind - self.gripper
            if np.linalg.norm(d) < 0.5 * self.step_size:   # in place: push through towards the goal
                d = u * min(n, self.step_size)
            return np.clip(d / self.step_size, -1.0, 1.0).astype(np.float32)
        d = self.objects[self.target] - self.gripper
        return np.clip(d / self.step_size, -1.0, 1.0).astype(np.float32)


class TrueStateObservation(gym.ObservationWrapper):
    """Replace the image observation by :meth:`ColorReach2D.true_state` ``(2 + 5 * num_objects,)`` in [0, 1], for
    state-based references (SB3's SAC on true object states, the issue's upper reference)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        if not hasattr(env.unwrapped, "true_state"):
            raise SoldError(f"TrueStateObservation needs an env with true_state(), got {type(env.unwrapped).__name__}")
        dim = int(env.unwrapped.state_dim)
        self.observation_space = spaces.Box(0.0, 1.0, (dim,), dtype=np.float32)

    def observation(self, observation: Any) -> np.ndarray:
        return self.env.unwrapped.true_state()


ENV_IDS = {"sold/ColorReach2D-v0": {}, "sold/Push2D-v0": {"task": "push"}}
"""The package's own gymnasium ids (registered on import of :mod:`sold.envs`): ColorReach2D with its defaults, and
its pushable variant (task 'push'); keyword arguments of :func:`gymnasium.make` override the defaults."""


def _register() -> None:
    for env_id, kwargs in ENV_IDS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point="sold.envs:ColorReach2D", kwargs=dict(kwargs))


_register()
