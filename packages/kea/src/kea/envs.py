"""Sparse-reward test beds of the KEA paper (Yang et al., ICML 2025), as gymnasium ``Env``s.

* :class:`DeepSea` — bsuite's ``deep_sea`` with its exact semantics (Osband et al., 2020): an N×N grid, start at
  (row 0, col 0), every step moves one row down, a fixed per-cell Bernoulli(0.5) mapping ``M[row, col]`` says which
  action means "right"; "right" moves col+1 (clipped) and costs 0.01/N, "left" moves col−1 (clipped); +1 when the
  agent is in column N−1 and goes "right" (only possible in the last row). The episode terminates after exactly N
  steps; the observation is the flattened one-hot N×N grid, all zeros at termination. The optimal return is
  1 − N·0.01/N = 0.99 for every N and a uniformly random policy succeeds with probability 2^−N.
  The default mapping is bsuite's: ``np.random.RandomState(42).binomial(1, 0.5, (N, N))``.
* :class:`GridNav` — the paper's 2-D grid navigation task: a ``size × size`` open room, 4 actions, start in a corner,
  sparse +1 (and termination) at the opposite corner, truncation after ``max_steps``.

* :class:`SparseMountainCar` and :class:`SparseReacher` — sparse continuous control in the spirit of the paper's
  sparse DMC tasks: MountainCarContinuous with reward 1 only at the flag, and MuJoCo Reacher (extra ``kea[mujoco]``)
  with reward 1 only within 0.02 of the target.

``info["is_success"]`` says whether the step reached the goal (KEA's success gate reads it).
:func:`make_vec_env` builds the parallel environments KEA learns from. Both envs are registered with gymnasium as ``kea/DeepSea-v0`` and ``kea/GridNav-v0`` when this module is imported
(``gymnasium.make("kea.envs:kea/DeepSea-v0", size=10)`` imports it for you).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class DeepSea(gym.Env):
    """bsuite DeepSea (deterministic variant), gymnasium API.

    Observation: ``float32`` vector of shape ``(size*size,)`` (row-major one-hot of (row, col); zeros at the end).
    Actions: ``Discrete(2)``; which of 0/1 means "right" in cell (r, c) is ``action_mapping[r, c]``.
    """

    metadata = {"render_modes": []}

    def __init__(self, *, size: int = 10, seed: int | None = None, mapping_seed: int | None = 42) -> None:
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 2:
            raise ValueError(f"DeepSea size must be an integer >= 2, got {size!r}")
        self.size = int(size)
        self.move_cost = 0.01 / self.size
        ms = np.random.RandomState(mapping_seed) if mapping_seed is not None else np.random.RandomState(seed)
        self.action_mapping = ms.binomial(1, 0.5, (self.size, self.size)).astype(np.int64)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(self.size * self.size,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self.row = 0
        self.column = 0
        self._seed = seed
        if seed is not None:
            self.action_space.seed(seed)

    @property
    def optimal_return(self) -> float:
        """0.99 for every size: N "right" moves at 0.01/N each, plus the +1 goal reward."""
        return 1.0 - self.size * self.move_cost

    def right_action(self, row: int, column: int) -> int:
        """The action that means "right" in cell (row, column)."""
        return int(self.action_mapping[row, column])

    def optimal_actions(self) -> list[int]:
        """The all-"right" action sequence (the path along the diagonal)."""
        return [self.right_action(i, i) for i in range(self.size)]

    def _obs(self) -> np.ndarray:
        obs = np.zeros((self.size, self.size), dtype=np.float32)
        if self.row < self.size:
            obs[self.row, self.column] = 1.0
        return obs.reshape(-1)  # (size, size) -> (size*size,)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.row, self.column = 0, 0
        return self._obs(), {"row": 0, "column": 0}

    def step(self, action):
        a = int(action)
        if a not in (0, 1):
            raise ValueError(f"DeepSea action must be 0 or 1, got {action!r}")
        if self.row >= self.size:
            raise RuntimeError("DeepSea.step called after the episode terminated; call reset()")
        reward = 0.0
        right = a == self.action_mapping[self.row, self.column]
        if self.column == self.size - 1 and right:
            reward += 1.0
        if right:
            self.column = min(self.column + 1, self.size - 1)
            reward -= self.move_cost
        else:
            self.column = max(self.column - 1, 0)
        self.row += 1
        terminated = self.row == self.size
        success = bool(terminated and reward > 0.5)  # the +1 was collected: return 0.99, the optimum
        return self._obs(), float(reward), terminated, False, {"row": self.row, "column": self.column,
                                                               "is_success": success}

    def state_id(self, obs: np.ndarray) -> int:
        """Index of the one-hot cell (``size*size`` for the all-zero terminal observation)."""
        nz = np.flatnonzero(obs)
        return int(nz[0]) if nz.size else self.size * self.size


class GridNav(gym.Env):
    """2-D grid navigation with a sparse goal (the paper's entropy/novelty analysis task).

    A ``size × size`` open room; the agent starts at (0, 0), the goal is (size−1, size−1). Actions ``Discrete(4)``:
    0 up, 1 right, 2 down, 3 left (moves into walls leave the position unchanged). Reward +1 and ``terminated`` on
    reaching the goal, 0 otherwise; ``truncated`` after ``max_steps`` (default 4·size). Observation: one-hot of the
    cell, shape ``(size*size,)`` (``obs="onehot"``), or the coordinates scaled to [0, 1], shape ``(2,)``
    (``obs="xy"``).
    """

    metadata = {"render_modes": []}
    MOVES = ((-1, 0), (0, 1), (1, 0), (0, -1))

    def __init__(self, *, size: int = 15, max_steps: int | None = None, obs: str = "onehot",
                 seed: int | None = None) -> None:
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 2:
            raise ValueError(f"GridNav size must be an integer >= 2, got {size!r}")
        if obs not in ("onehot", "xy"):
            raise ValueError(f"GridNav obs must be 'onehot' or 'xy', got {obs!r}")
        self.size = int(size)
        self.max_steps = int(max_steps) if max_steps is not None else 4 * self.size
        if self.max_steps < 1:
            raise ValueError(f"GridNav max_steps must be >= 1, got {max_steps!r}")
        self.obs_kind = obs
        dim = self.size * self.size if obs == "onehot" else 2
        self.observation_space = spaces.Box(0.0, 1.0, shape=(dim,), dtype=np.float32)
        self.action_space = spaces.Discrete(4)
        self.pos = (0, 0)
        self.goal = (self.size - 1, self.size - 1)
        self.t = 0
        if seed is not None:
            self.action_space.seed(seed)

    @property
    def n_states(self) -> int:
        return self.size * self.size

    def _obs(self) -> np.ndarray:
        if self.obs_kind == "xy":
            return np.asarray(self.pos, dtype=np.float32) / (self.size - 1)
        o = np.zeros(self.size * self.size, dtype=np.float32)
        o[self.pos[0] * self.size + self.pos[1]] = 1.0
        return o

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.pos, self.t = (0, 0), 0
        return self._obs(), {"cell": self.pos}

    def step(self, action):
        a = int(action)
        if a not in (0, 1, 2, 3):
            raise ValueError(f"GridNav action must be in {{0,1,2,3}}, got {action!r}")
        dr, dc = self.MOVES[a]
        r = min(max(self.pos[0] + dr, 0), self.size - 1)
        c = min(max(self.pos[1] + dc, 0), self.size - 1)
        self.pos = (r, c)
        self.t += 1
        terminated = self.pos == self.goal
        truncated = (not terminated) and self.t >= self.max_steps
        return self._obs(), float(terminated), terminated, truncated, {"cell": self.pos, "is_success": terminated}


class SparseMountainCar(gym.Wrapper):
    """Sparse continuous control (a stand-in for the paper's sparse DMC tasks): gymnasium's
    ``MountainCarContinuous-v0`` with reward 1 on reaching the flag (``terminated``) and 0 otherwise — no action
    cost, so a return is either 0 or 1 — and ``info["is_success"]``. Truncation after ``max_episode_steps`` (500)."""

    def __init__(self, *, max_episode_steps: int = 500) -> None:
        bad = isinstance(max_episode_steps, bool) or not isinstance(max_episode_steps, (int, np.integer))
        if bad or max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be an integer >= 1, got {max_episode_steps!r}")
        super().__init__(gym.make("MountainCarContinuous-v0", max_episode_steps=int(max_episode_steps)))

    def step(self, action):
        obs, _, terminated, truncated, info = self.env.step(action)
        info = dict(info, is_success=bool(terminated))
        return obs, float(terminated), terminated, truncated, info


class SparseReacher(gym.Wrapper):
    """Sparse ``Reacher-v5`` (MuJoCo; extra ``kea[mujoco]``): reward 1 while the fingertip is within ``radius``
    (0.02) of the target, else 0; ``info["is_success"]``: the fingertip has been within the radius at some step of
    the episode so far (so the last step's flag tells whether the episode succeeded); 50-step episodes."""

    def __init__(self, *, radius: float = 0.02) -> None:
        if not (radius > 0):
            raise ValueError(f"radius must be > 0, got {radius!r}")
        try:
            env = gym.make("Reacher-v5")
        except (ImportError, gym.error.DependencyNotInstalled) as e:  # pragma: no cover - depends on the extra
            raise ImportError("SparseReacher needs MuJoCo: pip install 'kea[mujoco]'") from e
        super().__init__(env)
        self.radius = float(radius)
        self._hit = False

    def reset(self, **kwargs):
        self._hit = False
        return self.env.reset(**kwargs)

    def step(self, action):
        obs, _, terminated, truncated, info = self.env.step(action)
        dist = -float(info["reward_dist"])  # gymnasium's reward_dist = −‖fingertip − target‖
        hit = dist < self.radius
        self._hit = self._hit or hit
        return obs, float(hit), terminated, truncated, dict(info, is_success=self._hit, distance=dist)


def make_vec_env(make: Callable[[], gym.Env], *, num_envs: int = 4) -> gym.vector.SyncVectorEnv:
    """``num_envs`` copies of ``make()`` in a ``SyncVectorEnv`` with ``autoreset_mode=SAME_STEP`` (what
    :class:`kea.KEA` needs: the true final observation of every finished episode is in ``info["final_obs"]``).
    The paper runs 4 environments in parallel."""
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        raise ValueError(f"num_envs must be an integer >= 1, got {num_envs!r}")
    return gym.vector.SyncVectorEnv([make for _ in range(int(num_envs))],
                                    autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)


def make_gym_env(env_id: str, *, what: str = "--env") -> gym.Env:
    """A registered gymnasium environment for :class:`kea.KEA` (``gym.make(env_id)``; ``"pkg.module:Name-v0"``
    imports ``pkg.module`` first, so a user's own environment registers itself). Actions must be Discrete or Box;
    a Discrete observation is one-hot encoded into a 1-D Box; anything else is a clear error naming ``what``."""
    if not isinstance(env_id, str) or not env_id.strip():
        raise ValueError(f"{what} must be a registered gymnasium environment id, got {env_id!r}")
    try:
        env = gym.make(env_id)
    except (gym.error.Error, ModuleNotFoundError, ImportError) as exc:
        raise ValueError(f"{what} {env_id!r} is not a registered gymnasium environment ({type(exc).__name__}: "
                         f"{exc}); register it with gymnasium.register or pass 'your.module:YourEnv-v0'") from None
    act = env.action_space
    if not isinstance(act, (gym.spaces.Discrete, gym.spaces.Box)):
        env.close()
        raise ValueError(f"{what} {env_id!r}: the action space must be Discrete or Box, got {act!r}")
    obs = env.observation_space
    if isinstance(obs, gym.spaces.Discrete):
        n, start = int(obs.n), int(obs.start)
        box = gym.spaces.Box(0.0, 1.0, (n,), np.float32)
        env = gym.wrappers.TransformObservation(env, lambda o: np.eye(n, dtype=np.float32)[int(o) - start], box)
    elif not (isinstance(obs, gym.spaces.Box) and len(obs.shape) == 1):
        env.close()
        raise ValueError(f"{what} {env_id!r}: the observation space must be a 1-D Box or Discrete, got {obs!r} "
                         "(flatten it with a gymnasium wrapper first)")
    return env


def _register() -> None:
    for env_id, entry in (("kea/DeepSea-v0", "kea.envs:DeepSea"), ("kea/GridNav-v0", "kea.envs:GridNav"),
                          ("kea/SparseMountainCar-v0", "kea.envs:SparseMountainCar"),
                          ("kea/SparseReacher-v0", "kea.envs:SparseReacher")):
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry)


_register()
