"""Baselines: behaviour cloning and deterministic distillation of the planner.

* **BC**: ``π(s) = tanh(MLP(s))`` regressing the data set's actions, ``L = ‖π(s) - a‖²``.
* **Distill-MSE**: the same MLP regressing the planner's best action ``a*(s)`` (Habi without latent, KL or
  candidate selection): it shows what the stochastic prior plus selection add.

Both are trained with Adam on a cosine-annealed lr (the same schedule as habitization), so that ``reproduce`` can
give them Habi's step budget, batch size and lr grid. Both act through :class:`MLPActor` with the same
``act``/``act_batch`` interface as the other policies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from habi.data import GaussianNormalizer
from habi.errors import HabiConfigError
from habi.nets import MLPPolicy


@dataclass(frozen=True)
class RegressConfig:
    """Training of an MLP policy by regression."""

    steps: int = 3000
    batch_size: int = 256
    lr: float = 3e-4
    hidden: int = 128
    schedule: str = "cosine"
    """'cosine' (annealed to 0 over ``steps``, the same schedule as habitization) or 'constant'."""

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1 or self.hidden < 1 or not self.lr > 0:
            raise HabiConfigError(f"regression steps, batch_size, hidden and lr must be positive, got {self}")
        if self.schedule not in ("cosine", "constant"):
            raise HabiConfigError(f"regression schedule must be 'cosine' or 'constant', got {self.schedule!r}")


class MLPActor:
    """Deterministic MLP policy on normalised states; ``act(observation) -> action``."""

    def __init__(self, *, net: MLPPolicy, normalizer: GaussianNormalizer) -> None:
        self.net, self.normalizer = net.eval(), normalizer
        self._mean = torch.tensor(normalizer.mean, dtype=torch.float32)
        self._std = torch.tensor(normalizer.std, dtype=torch.float32)

    def act_batch(self, observations: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            s = (torch.from_numpy(np.asarray(observations, dtype=np.float32)) - self._mean) / self._std
            return self.net(s).numpy()

    def act(self, observation: np.ndarray) -> np.ndarray:
        return self.act_batch(np.asarray(observation, dtype=np.float32)[None])[0]


def make_regressor(states: np.ndarray, targets: np.ndarray, *, normalizer: GaussianNormalizer,
                   config: RegressConfig, seed: int = 0, normalized: bool = True) -> tuple[MLPActor, Any]:
    """A fresh ``tanh(MLP(s))`` policy and ``step() -> loss``, one Adam update of the MSE to ``targets`` on a
    minibatch drawn with replacement (seeded; cosine schedule over ``config.steps``)."""
    if len(states) == 0:
        raise HabiConfigError("regress_policy: empty data set")
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    S = torch.from_numpy(np.asarray(states if normalized else normalizer(states), dtype=np.float32))
    Y = torch.from_numpy(np.asarray(targets, dtype=np.float32)).clamp(-0.999, 0.999)
    net = MLPPolicy(obs_dim=S.shape[1], act_dim=Y.shape[1], hidden=config.hidden)
    opt = torch.optim.Adam(net.parameters(), lr=config.lr, foreach=True)
    sched = (torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=config.steps) if config.schedule == "cosine"
             else None)

    def step() -> float:
        net.train()
        idx = torch.from_numpy(rng.integers(0, len(S), size=config.batch_size))
        loss = ((net(S[idx]) - Y[idx]) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        return float(loss.detach())

    return MLPActor(net=net, normalizer=normalizer), step


def regress_policy(states: np.ndarray, targets: np.ndarray, *, normalizer: GaussianNormalizer,
                   config: RegressConfig, seed: int = 0, normalized: bool = True) -> MLPActor:
    """Fit ``tanh(MLP(s)) ≈ target`` by MSE for ``config.steps`` steps; ``states (N, obs)`` (already normalised if
    ``normalized``)."""
    actor, step = make_regressor(states, targets, normalizer=normalizer, config=config, seed=seed,
                                 normalized=normalized)
    for _ in range(config.steps):
        step()
    actor.net.eval()
    return actor
