"""Environments and batched evaluation (gymnasium; actions rescaled to [-1, 1] as in D4RL).

``make_env(env_id)`` wraps a gymnasium environment with ``RescaleAction(-1, 1)`` so every policy and data set works
in D4RL's action convention. ``Hopper-v5``/``HalfCheetah-v5`` need the ``mujoco`` wheel
(the ``habi[mujoco]`` extra); a clear one-line error names the extra when it is missing.

``evaluate_policy(act_batch, env_id, episodes, seed)`` runs ``episodes`` environments in lock-step with one batched
policy call per step and returns the exact per-episode returns (reset seeds ``seed, seed+1, ...``, so every method
is evaluated on the same initial states).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from habi.errors import HabiConfigError

KNOWN_ENVS = ("Pendulum-v1", "Hopper-v5", "HalfCheetah-v5", "Walker2d-v5")
MUJOCO_INSTALL = ('install the extra: `pip install "habi[mujoco]"` (in this repository: '
                  '`uv sync --all-packages --extra mujoco`)')


def require_mujoco(what: str) -> None:
    """Fail fast with one line naming the ``habi[mujoco]`` extra when the ``mujoco`` wheel is missing."""
    import importlib.util

    if importlib.util.find_spec("mujoco") is None:
        raise HabiConfigError(f"{what} needs MuJoCo, which is not installed; {MUJOCO_INSTALL}")


def make_env(env_id: str):
    """``gymnasium.make(env_id)`` with actions rescaled to [-1, 1]."""
    import gymnasium as gym
    from gymnasium.wrappers import RescaleAction

    try:
        env = gym.make(env_id)
    except gym.error.DependencyNotInstalled as exc:
        if "mujoco" in str(exc).lower():
            raise HabiConfigError(f"env_id {env_id!r} needs MuJoCo, which is not installed; {MUJOCO_INSTALL}") from exc
        raise HabiConfigError(f"env_id {env_id!r} needs an extra package: {exc}") from exc
    except gym.error.Error as exc:
        raise HabiConfigError(f"env_id {env_id!r} is not a gymnasium environment ({exc}); e.g. {KNOWN_ENVS}") from exc
    if not isinstance(env.action_space, gym.spaces.Box):
        raise HabiConfigError(f"env_id {env_id!r}: Habi needs a continuous (Box) action space")
    shape = env.action_space.shape
    return RescaleAction(env, np.full(shape, -1.0, np.float32), np.full(shape, 1.0, np.float32))


def env_dims(env_id: str) -> tuple[int, int]:
    """``(obs_dim, act_dim)`` of an environment."""
    env = make_env(env_id)
    try:
        return int(np.prod(env.observation_space.shape)), int(np.prod(env.action_space.shape))
    finally:
        env.close()


def evaluate_policy(act_batch: Callable[[np.ndarray], np.ndarray], env_id: str, *, episodes: int = 10,
                    seed: int = 0) -> np.ndarray:
    """Per-episode undiscounted returns ``(episodes,)`` of a batched policy ``(B, obs) -> (B, act)``."""
    if episodes < 1:
        raise HabiConfigError(f"episodes must be >= 1, got {episodes}")
    envs = [make_env(env_id) for _ in range(episodes)]
    obs = np.stack([e.reset(seed=seed + i)[0] for i, e in enumerate(envs)]).astype(np.float32)
    returns = np.zeros(episodes)
    alive = np.ones(episodes, dtype=bool)
    while alive.any():
        idx = np.nonzero(alive)[0]
        acts = np.asarray(act_batch(obs[idx]), dtype=np.float32)
        for j, i in enumerate(idx):
            o, r, term, trunc, _ = envs[i].step(acts[j])
            returns[i] += float(r)
            obs[i] = o
            if term or trunc:
                alive[i] = False
    for e in envs:
        e.close()
    return returns
