"""A sequence replay buffer of whole episodes (SOLD's replay convention).

Step ``t`` of an episode holds the frame ``x_t``, the action that *led to* it (``a_0 = 0``) and the reward received on
arriving (``r_0 = NaN``, masked by the reward loss). ``sample(batch, length)`` draws episodes uniformly among those at
least ``length`` long and offsets uniformly over ``[0, len − length]`` *inclusive* (the released code never draws
the last window; ``inclusive_last=False`` reproduces that).
"""

from __future__ import annotations

import numpy as np

from sold.errors import SoldError


class SequenceReplayBuffer:
    def __init__(self, *, capacity_steps: int = 100_000, inclusive_last: bool = True):
        if capacity_steps < 1:
            raise SoldError(f"capacity_steps must be >= 1, got {capacity_steps}")
        self.capacity_steps, self.inclusive_last = capacity_steps, inclusive_last
        self.episodes: list[dict[str, list]] = []

    def __len__(self) -> int:
        return sum(len(e["frames"]) for e in self.episodes)

    def start(self, obs: np.ndarray, action_dim: int = 2) -> None:
        """Begin an episode with its first frame."""
        self.episodes.append({"frames": [np.asarray(obs)], "actions": [np.zeros(action_dim, np.float32)],
                              "rewards": [np.nan]})
        while len(self) > self.capacity_steps and len(self.episodes) > 1:
            self.episodes.pop(0)

    def add(self, obs: np.ndarray, action: np.ndarray, reward: float) -> None:
        if not self.episodes:
            raise SoldError("call start(first_obs) before add()")
        ep = self.episodes[-1]
        a = np.asarray(action, np.float32).reshape(-1)
        if a.shape != ep["actions"][0].shape:
            raise SoldError(f"action-size mismatch: the buffer stores {ep['actions'][0].shape[0]}-d actions, got "
                            f"{a.shape[0]}")
        ep["frames"].append(np.asarray(obs))
        ep["actions"].append(a)
        ep["rewards"].append(float(reward))

    def _eligible(self, length: int) -> list[int]:
        return [i for i, e in enumerate(self.episodes) if len(e["frames"]) >= length]

    def can_sample(self, length: int) -> bool:
        return bool(self._eligible(length))

    def sample(self, batch: int, length: int, rng: np.random.Generator):
        """``frames [B, L, H, W, 3]``, ``actions [B, L, A]``, ``rewards [B, L]``."""
        ok = self._eligible(length)
        if not ok:
            raise SoldError(f"no stored episode is at least {length} steps long (sequences must cover "
                            "context + horizon)")
        f, a, r = [], [], []
        for i in rng.choice(ok, batch):
            ep = self.episodes[i]
            n = len(ep["frames"])
            hi = n - length + 1 if self.inclusive_last else max(n - length, 1)
            o = int(rng.integers(0, hi))
            f.append(np.stack(ep["frames"][o: o + length]))
            a.append(np.stack(ep["actions"][o: o + length]))
            r.append(np.array(ep["rewards"][o: o + length], np.float32))
        return np.stack(f), np.stack(a), np.stack(r)
