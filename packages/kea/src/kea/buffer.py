"""The one replay buffer both KEA modules learn from: proportional prioritised replay (Schaul et al., 2016), as the
KEA paper's released DeepSea code uses it, with uniform replay as a real switch.

Stored per transition (flat ring storage, ``capacity`` rows; transitions of all parallel environments interleaved in
the order they were collected): ``s (obs_dim,)``, ``a`` (scalar index or ``(act_dim,)``), ``s' (obs_dim,)`` (the
true final observation on the last step of an episode), ``r_ext``, ``terminated`` (gymnasium's ``terminated``
only, so truncated transitions bootstrap), ``first_visit`` (``s'`` new within its episode, for NovelD) and
``by_standard`` (the action came from the standard module A^B; bookkeeping only, never used by the losses).
Intrinsic rewards are *not* stored: they are recomputed for every sampled minibatch with the current RND.

Prioritised sampling, priorities ``p_i = |δ_i| + ε`` (new transitions get the largest priority seen so far):

    P(i) = p_i^α / Σ_k p_k^α            w_i = (n · P(i))^(−β) / max_{j ∈ batch} w_j          (α = 0.6)

``β`` is annealed by the agent (0.4 → 1). The weights are normalised by the batch maximum, as released (not by the
buffer maximum). ``alpha = 0`` gives uniform sampling and unit weights exactly (``prioritized=False`` takes the
same path without computing priorities).
"""

from __future__ import annotations

import numpy as np


class PrioritizedReplayBuffer:
    """``PrioritizedReplayBuffer(capacity, obs_dim, action_shape, discrete, alpha=0.6, prioritized=True)``."""

    def __init__(self, capacity: int, obs_dim: int, *, action_shape: tuple[int, ...] = (), discrete: bool = True,
                 alpha: float = 0.6, eps: float = 1e-6, prioritized: bool = True) -> None:
        if capacity <= 0:
            raise ValueError(f"buffer capacity must be > 0, got {capacity}")
        if not (0.0 <= alpha <= 1.0):
            raise ValueError(f"per_alpha must be in [0, 1], got {alpha!r}")
        self.capacity, self.obs_dim = int(capacity), int(obs_dim)
        self.alpha, self.eps, self.prioritized = float(alpha), float(eps), bool(prioritized)
        self.observations = np.zeros((self.capacity, self.obs_dim), np.float32)
        self.next_observations = np.zeros((self.capacity, self.obs_dim), np.float32)
        self.actions = np.zeros((self.capacity, *action_shape), np.int64 if discrete else np.float32)
        self.rewards = np.zeros(self.capacity, np.float32)
        self.dones = np.zeros(self.capacity, np.float32)
        self.first_visit = np.zeros(self.capacity, np.float32)
        self.by_standard = np.zeros(self.capacity, bool)
        self._pa = np.zeros(self.capacity, np.float64)  # p_i^α
        self.max_priority = 1.0
        self.pos, self.full = 0, False

    def size(self) -> int:
        return self.capacity if self.full else self.pos

    def add(self, obs: np.ndarray, next_obs: np.ndarray, actions: np.ndarray, rewards: np.ndarray,
            terminated: np.ndarray, first_visit: np.ndarray, by_standard: np.ndarray) -> None:
        """Add ``n`` transitions (one per parallel environment): obs/next_obs ``(n, obs_dim)``, the rest ``(n,)``."""
        for i in range(obs.shape[0]):
            p = self.pos
            self.observations[p], self.next_observations[p] = obs[i], next_obs[i]
            self.actions[p] = actions[i]
            self.rewards[p], self.dones[p] = rewards[i], float(terminated[i])
            self.first_visit[p], self.by_standard[p] = float(first_visit[i]), bool(by_standard[i])
            self._pa[p] = self.max_priority ** self.alpha
            self.pos = (p + 1) % self.capacity
            self.full = self.full or self.pos == 0

    def probabilities(self) -> np.ndarray:
        """``P(i)`` over the stored transitions ``(size,)``."""
        n = self.size()
        if not self.prioritized or self.alpha == 0.0:
            return np.full(n, 1.0 / n)
        pa = self._pa[:n]
        return pa / pa.sum()

    def sample(self, batch_size: int, rng: np.random.Generator, *, beta: float = 1.0
               ) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
        """``(indices (B,), batch, weights (B,))``; batch keys: obs, next_obs, actions, rewards, dones, first_visit."""
        n = self.size()
        if batch_size > n:
            raise ValueError(f"batch_size={batch_size} is larger than the buffer ({n} transitions)")
        if not self.prioritized or self.alpha == 0.0:
            idx = rng.integers(0, n, size=batch_size)
            w = np.ones(batch_size, np.float32)
        else:
            cum = np.cumsum(self._pa[:n])
            idx = np.minimum(np.searchsorted(cum, rng.random(batch_size) * cum[-1], side="right"), n - 1)
            p = self._pa[idx] / cum[-1]
            w = (n * p) ** (-beta)
            w = (w / w.max()).astype(np.float32)
        batch = {"obs": self.observations[idx], "next_obs": self.next_observations[idx],
                 "actions": self.actions[idx], "rewards": self.rewards[idx], "dones": self.dones[idx],
                 "first_visit": self.first_visit[idx]}
        return idx, batch, w

    def update_priorities(self, idx: np.ndarray, td_abs: np.ndarray) -> None:
        """Set ``p_i = |δ_i| + ε`` for the sampled ``idx`` (duplicates: the last write wins)."""
        if not self.prioritized:
            return
        p = np.abs(np.asarray(td_abs, np.float64)) + self.eps
        self._pa[idx] = p ** self.alpha
        self.max_priority = max(self.max_priority, float(p.max()))
