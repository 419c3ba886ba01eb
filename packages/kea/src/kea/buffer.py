"""The one replay buffer both KEA modules learn from: SB3's ``ReplayBuffer`` plus a NovelD first-visit flag.

Stored per transition: ``s, a, s', r_ext, terminated`` (SB3 storage; ``handle_timeout_termination=False`` and only
gymnasium's ``terminated`` stored as done, so truncated transitions bootstrap) and ``first_visit`` (whether ``s'``
was new within its episode, for NovelD). Intrinsic rewards are *not* stored: they are recomputed for every sampled
minibatch with the current RND (KEA Sec. 3; stale intrinsic rewards are a known off-policy pitfall).
Indices are drawn from the caller's ``numpy.random.Generator`` (uniform replay, with replacement, as SB3).
"""

from __future__ import annotations

import numpy as np
from stable_baselines3.common.buffers import ReplayBuffer, ReplayBufferSamples


class KEAReplayBuffer(ReplayBuffer):
    """``ReplayBuffer(buffer_size, observation_space, action_space)`` for one environment, on CPU."""

    def __init__(self, buffer_size: int, observation_space, action_space) -> None:
        super().__init__(buffer_size, observation_space, action_space, device="cpu", n_envs=1,
                         handle_timeout_termination=False)
        self.first_visit = np.zeros((self.buffer_size,), dtype=np.float32)

    def add_transition(self, obs: np.ndarray, next_obs: np.ndarray, action, reward: float, terminated: bool,
                       first_visit: bool) -> None:
        self.first_visit[self.pos] = float(first_visit)
        self.add(obs[None], next_obs[None], np.asarray(action).reshape(1, -1), np.asarray([reward], np.float32),
                 np.asarray([float(terminated)], np.float32), [{}])

    def sample_with(self, batch_size: int, rng: np.random.Generator) -> tuple[ReplayBufferSamples, np.ndarray]:
        """Uniform minibatch of ``batch_size`` transitions and its first-visit flags ``(B,)``."""
        n = self.size()
        if batch_size > n:
            raise ValueError(f"batch_size={batch_size} is larger than the buffer ({n} transitions)")
        inds = rng.integers(0, n, size=batch_size)
        return self._get_samples(inds), self.first_visit[inds]
